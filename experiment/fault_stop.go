package experiment

import (
	"context"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// stop: a clean shutdown (SIGTERM, SIGKILL after the stop grace: recorded as Escalated,
// a crash, not a failure).
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "stop",
			Aux:   true,
			Order: 20,
			Help: "clean shutdown (SIGTERM); a server still up --stop-grace (90 s) later is killed with SIGKILL:\n" +
				"that is a crash, and habench says so (a warning, exit status 1, \"escalated\" in the faults log)",
			Past:     "stopped",
			Existing: true,
			Leaves:   scenario.NodeDown,
		},
		Ops: []cluster.Op{cluster.OpStopNode},
		Inject: func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ scenario.FaultArgs, rec *schema.FaultRecord) (string, error) {
			return "", escalated(rec, in.nodeOp(ctx, c, cluster.OpStopNode, n))
		},
		CaughtUp: CaughtUpAfterDown,
		Disrupts: DisruptsNode,
	})
}
