package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// rebuild: the node starts again from nothing and gets everything from the others, the way
// its kind does it (cluster.RebuildOf): a Galera node is stopped cleanly, its data removed
// and started empty, so that it rejoins by full state transfer (SST with the topology's
// galera.sst: rsync or mariabackup); a group member clones a member's data (CLONE
// INSTANCE from an ONLINE secondary, else the primary), shuts down, starts on the cloned
// data and recovers the rest from the group. The action ends when the node is Synced or
// ONLINE again (the start waits for it). A lasting action: the run reports the workload
// (served by the donor and the others) before and while it ran. Refused when the scenario
// is read where the kind has no rebuild or the provider cannot do it (cluster.RebuildWhy).
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "rebuild",
			Order: 110,
			Help: "the node starts from nothing and gets everything from the others: Galera: stopped,\n" +
				"emptied and started (SST); group: CLONE INSTANCE from a member, restarted, recovered;\n" +
				"the fault took until it was Synced / ONLINE again",
			Past:   "rebuilt",
			Params: []scenario.FaultParam{scenario.DurationParam("timeout", "group: how long the clone and the recipient's shutdown may take (default 10m)")},
			Check: func(t topology.Spec, _ string) string {
				if why := cluster.RebuildWhy(t); why != "" {
					return "cannot rebuild a node: " + why
				}
				return ""
			},
			Leaves:  scenario.NodeUp,
			Lasting: true,
		},
		Ops:      []cluster.Op{cluster.OpStopNode, cluster.OpStartNode},
		Inject:   injectRebuild,
		CaughtUp: CaughtUpAfterAction,
		Disrupts: DisruptsNode,
	})
}

// injectRebuild rebuilds n the way its kind does (rebuildBySST, rebuildByClone).
func injectRebuild(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, args scenario.FaultArgs, rec *schema.FaultRecord) (string, error) {
	if cluster.RebuildOf(c.Spec) == cluster.RebuildClone {
		return rebuildByClone(ctx, in, c, n, args, rec)
	}
	return rebuildBySST(ctx, in, c, n, rec)
}

// rebuildByClone clones n's data from another member (cluster.Cluster.CloneNode), starts
// it, which rejoins the group and waits until it is ONLINE; rec.Bytes is the size of its
// datadir after it. The detail names the donor and gives the two steps' times.
func rebuildByClone(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, args scenario.FaultArgs, rec *schema.FaultRecord) (string, error) {
	timeout := args.Duration("timeout")
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	cl, err := c.CloneNode(ctx, n, timeout)
	if err != nil {
		return "", err
	}
	t1 := time.Now()
	if err := in.start(ctx, c, n); err != nil {
		return "", fmt.Errorf("start on the data cloned from %s: %w", cl.Donor, err)
	}
	rejoined := time.Since(t1).Seconds()
	rec.Outcome, rec.Bytes = "rejoined", dataBytes(c, n)
	return fmt.Sprintf("cloned from %s in %.2f s (with its shutdown), started and ONLINE in %.2f s with %d bytes", cl.Donor, cl.Took.Seconds(), rejoined, rec.Bytes), nil
}

// rebuildBySST stops n (a stop that took SIGKILL is recorded as Escalated, and the
// rebuild goes on: the data is removed anyway), empties its datadir and starts it, which
// waits until it has rejoined; rec.Bytes is the size of its datadir after the state
// transfer (what it received). The detail gives the three steps' times.
func rebuildBySST(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, rec *schema.FaultRecord) (string, error) {
	t0 := time.Now()
	if err := escalated(rec, in.nodeOp(ctx, c, cluster.OpStopNode, n)); err != nil {
		return "", err
	}
	stopped := time.Since(t0).Seconds()
	removed, err := c.WipeNode(ctx, in.Store, n)
	if err != nil {
		return "", err
	}
	t1 := time.Now()
	if err := in.start(ctx, c, n); err != nil {
		return "", fmt.Errorf("rejoin after removing %d bytes of data: %w", removed, err)
	}
	rejoined := time.Since(t1).Seconds()
	rec.Outcome, rec.Bytes = "rejoined", dataBytes(c, n)
	method := c.Spec.Galera.SST
	if method == "" {
		method = "default"
	}
	return fmt.Sprintf("stopped in %.2f s, %d bytes of data removed, rejoined by SST (%s) in %.2f s with %d bytes", stopped, removed, method, rejoined, rec.Bytes), nil
}

// dataBytes is the size of n's datadir in bytes where this machine holds it (a local
// sandbox), else 0 (a user's host: not measured).
func dataBytes(c *cluster.Cluster, n *cluster.Node) int64 {
	if c.Provider().Name() != topology.ProviderSandbox {
		return 0
	}
	return cluster.DirBytes(filepath.Join(n.Dir, "data"))
}
