package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// rebuild: stop the node cleanly, remove its data and start it empty, so that it rejoins
// by full state transfer (Galera SST with the topology's galera.sst: rsync or
// mariabackup); the action ends when the node is Synced again (the start waits for it).
// A lasting action: the run reports the workload (served by the donor and the others)
// before and while it ran. Refused when the scenario is read where the provider cannot
// empty a datadir or the kind cannot rejoin from nothing (cluster.WipeWhy).
func init() {
	RegisterFaultAction(FaultAction{
		Name:  "rebuild",
		Order: 110,
		Help: "stop the node, remove its data and start it empty: it rejoins by full state transfer\n" +
			"(Galera SST); the fault took until it was Synced again",
		Past: "rebuilt",
		Ops:  []cluster.Op{cluster.OpStopNode, cluster.OpWipeNode, cluster.OpStartNode},
		Check: func(t topology.Spec, _ string) string {
			if why := cluster.WipeWhy(t); why != "" {
				return "cannot rebuild a node: " + why
			}
			return ""
		},
		Inject:   injectRebuild,
		CaughtUp: CaughtUpAfterAction,
		Leaves:   NodeUp,
		Lasting:  true,
	})
}

// injectRebuild stops n (a stop that took SIGKILL is recorded as Escalated, and the
// rebuild goes on: the data is removed anyway), empties its datadir and starts it, which
// waits until it has rejoined; rec.Bytes is the size of its datadir after the state
// transfer (what it received). The detail gives the three steps' times.
func injectRebuild(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, _ FaultArgs, rec *FaultRecord) (string, error) {
	t0 := time.Now()
	if err := escalated(rec, in.nodeOp(ctx, c, cluster.OpStopNode, n)); err != nil {
		return "", err
	}
	stopped := time.Since(t0).Seconds()
	removed, err := c.WipeNode(ctx, in.Sandbox, n)
	if err != nil {
		return "", err
	}
	t1 := time.Now()
	if err := in.start(ctx, c, n); err != nil {
		return "", fmt.Errorf("rejoin after removing %d bytes of data: %w", removed, err)
	}
	rejoined := time.Since(t1).Seconds()
	rec.Outcome, rec.Bytes = "rejoined", cluster.DirBytes(filepath.Join(n.Dir, "data"))
	method := c.Spec.Galera.SST
	if method == "" {
		method = "default"
	}
	return fmt.Sprintf("stopped in %.2f s, %d bytes of data removed, rejoined by SST (%s) in %.2f s with %d bytes", stopped, removed, method, rejoined, rec.Bytes), nil
}
