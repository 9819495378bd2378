package experiment

import (
	"context"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// restart: stop, then start; a stop that took SIGKILL left the node down all the same, so
// it is started again (the record's Escalated says it was a crash).
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:     "restart",
			Aux:      true,
			Order:    40,
			Help:     "stop, then start (also after a stop that took SIGKILL, exit status 1 then)",
			Past:     "restarted",
			Existing: true,
			Leaves:   scenario.NodeUp,
		},
		Ops: []cluster.Op{cluster.OpStopNode, cluster.OpStartNode},
		Inject: func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ scenario.FaultArgs, rec *schema.FaultRecord) (string, error) {
			if err := escalated(rec, in.nodeOp(ctx, c, cluster.OpStopNode, n)); err != nil {
				return "", err
			}
			return "", in.start(ctx, c, n)
		},
		CaughtUp: CaughtUpAfterAction,
		Disrupts: DisruptsNode,
	})
}
