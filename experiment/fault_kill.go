package experiment

import (
	"context"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// kill: SIGKILL of the node's server (a crash), through its provider (a sandbox signals
// the process, an existing cluster runs its ssh: section's kill command).
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:     "kill",
			Aux:      true,
			Order:    10,
			Help:     "SIGKILL of the node's server (a crash)",
			Past:     "killed",
			Existing: true,
			Leaves:   scenario.NodeDown,
		},
		Ops: []cluster.Op{cluster.OpKillNode},
		Inject: func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ scenario.FaultArgs, _ *schema.FaultRecord) (string, error) {
			return "", in.nodeOp(ctx, c, cluster.OpKillNode, n)
		},
		CaughtUp: CaughtUpAfterDown,
		Disrupts: DisruptsNode,
	})
}
