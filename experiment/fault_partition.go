package experiment

import (
	"context"
	"fmt"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// partition and heal: a standing link partition of a node (or of a site: its members
// cut off from every other member) and its removal, as netem apply --partition and netem
// clear do.
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "partition",
			Aux:   true,
			Order: 50,
			Help: "cut the node off from every other node, both directions (a standing link impairment,\n" +
				"as netem apply --partition; needs a netns sandbox)",
			Past:      "partitioned",
			LinkEvent: "applied",
			Check:     partitionCheck,
		},
		Ops: []cluster.Op{cluster.OpLinks},
		Inject: func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ scenario.FaultArgs, _ *schema.FaultRecord) (string, error) {
			return "", in.applyPartition(ctx, c, n.Name, false, netem.Request{Partition: []string{n.Name}})
		},
		InjectSite: func(ctx context.Context, in *Injector, c *cluster.Cluster, site, groups string) error {
			return in.applyPartition(ctx, c, site, false, netem.Request{Groups: groups})
		},
		Disrupts: DisruptsNode,
	})
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:      "heal",
			Aux:       true,
			Order:     60,
			Help:      "remove the partition (as netem clear)",
			Past:      "healed",
			LinkEvent: "cleared",
			Check:     partitionCheck,
		},
		Ops: []cluster.Op{cluster.OpLinks},
		Inject: func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ scenario.FaultArgs, _ *schema.FaultRecord) (string, error) {
			return "", in.applyPartition(ctx, c, n.Name, true, netem.Request{Partition: []string{n.Name}})
		},
		InjectSite: func(ctx context.Context, in *Injector, c *cluster.Cluster, site, groups string) error {
			return in.applyPartition(ctx, c, site, true, netem.Request{Groups: groups})
		},
		CaughtUp: CaughtUpAfterAction,
	})
}

// partitionCheck: a partition needs links between the nodes (network netns) and two nodes.
func partitionCheck(t topology.Spec, network string) string {
	if network == cluster.NetLoopback {
		return "partitions need network netns (nodes on loopback share one interface)"
	}
	if t.Nodes < 2 {
		return fmt.Sprintf("topology %s has one node: nothing to partition it from", t.Name)
	}
	return ""
}
