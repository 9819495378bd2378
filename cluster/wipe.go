package cluster

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// OpWipeNode removes a stopped node's data, so that its next start gets everything by
// state transfer (a rebuild by RebuildSST: Galera).
const OpWipeNode Op = "wipe node data"

// NodeWiper is what a provider that offers OpWipeNode implements: WipeNode empties the
// datadir of node n, whose server must be stopped (an error when it runs: nothing is
// removed then), and returns the bytes it removed.
type NodeWiper interface {
	WipeNode(ctx context.Context, s *Store, c *Cluster, n *Node) (removed int64, err error)
}

// WipeNode empties node n's datadir through c's provider (NodeWiper): the provider's
// *UnsupportedError when it does not offer OpWipeNode. Returns the bytes removed.
func (c *Cluster) WipeNode(ctx context.Context, s *Store, n *Node) (int64, error) {
	if err := c.Refuse(OpWipeNode, "wipe node "+n.Name); err != nil {
		return 0, err
	}
	p, ok := c.Provider().(NodeWiper)
	if !ok {
		return 0, &UnsupportedError{Cluster: c.Name, Provider: providerNoun(c.Provider().Name()), Op: OpWipeNode, What: "wipe node " + n.Name, Why: "it cannot empty its servers' datadirs"}
	}
	return p.WipeNode(ctx, s, c, n)
}

// WipeNode removes the sandbox node's datadir (n.Dir/data) and makes it again, empty, as
// a Galera joiner is deployed (topology.NodePlan.EmptyDatadir).
func (sandboxProvider) WipeNode(_ context.Context, _ *Store, c *Cluster, n *Node) (int64, error) {
	if ourProcess(n.PID, n.StartTicks) {
		return 0, fmt.Errorf("node %s: its server (pid %d) runs: stop it before wiping its data", n.Name, n.PID)
	}
	if n.Dir == "" {
		return 0, fmt.Errorf("node %s: no directory recorded", n.Name)
	}
	data := filepath.Join(n.Dir, "data")
	size := DirBytes(data)
	if err := os.RemoveAll(data); err != nil {
		return 0, fmt.Errorf("node %s: remove %s: %w", n.Name, data, err)
	}
	if err := os.Mkdir(data, 0o700); err != nil {
		return size, fmt.Errorf("node %s: make %s: %w", n.Name, data, err)
	}
	return size, nil
}

// DirBytes is the size of the regular files under dir in bytes (0 when it cannot be read).
func DirBytes(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}
