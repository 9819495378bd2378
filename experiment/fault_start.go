package experiment

import (
	"context"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// start: start the node's server again; it rejoins its topology (a group member its
// group, a Galera node by IST or SST, a replica the current source, also after a promote).
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "start",
			Aux:   true,
			Order: 30,
			Help: "start it again: a group member rejoins its group, a Galera node rejoins (IST or SST),\n" +
				"a replica replicates from the current source (also after a promote)",
			Past:     "started",
			Existing: true,
			Leaves:   scenario.NodeUp,
		},
		Ops: []cluster.Op{cluster.OpStartNode},
		Inject: func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ scenario.FaultArgs, _ *schema.FaultRecord) (string, error) {
			return "", in.start(ctx, c, n)
		},
		CaughtUp: CaughtUpAfterAction,
	})
}
