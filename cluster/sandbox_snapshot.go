package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/habench/habench/topology"
)

// LoadSnapshot is the local sandbox's SnapshotStore.LoadSnapshot: snapshot name in
// SnapshotsDir() on this machine.
func (sandboxProvider) LoadSnapshot(_ context.Context, _ topology.Spec, name string) (*Snapshot, error) {
	return LoadSnapshot(name)
}

// MakeSnapshot is the local sandbox's SnapshotStore.MakeSnapshot: it deploys a single
// node named name, runs prep on it (the prepare), removes the accounts the deploy made,
// resets binary logs and GTIDs, stops the server cleanly and moves its datadir into
// SnapshotsDir() without its identity (scrubIdentity). The node is destroyed in any case.
func (sandboxProvider) MakeSnapshot(ctx context.Context, s *Store, spec topology.Spec, name string, shape DataShape, prep func(context.Context, *Cluster) error) (*Snapshot, error) {
	bins, err := s.Installation(ctx, spec.Installation, spec.Flavor)
	if err != nil {
		return nil, err
	}
	inst := InstallationOf(bins)
	sname := SnapshotName(inst, shape)
	unlock, err := lockSnapshot(sname)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if old, err := LoadSnapshot(sname); err == nil {
		if !old.Unchecked() {
			return old, nil
		}
		// Made by an older habench, without a list of its files: made again.
		if err := os.RemoveAll(old.dir); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", sname, err)
		}
	}
	one := topology.Spec{Name: name, Kind: topology.Single, Nodes: 1, Flavor: spec.Flavor, Installation: spec.Installation, Credentials: spec.Credentials}
	one.Options = snapshotGaleraOptions(bins)
	return s.snapshotFromServer(ctx, one, &Snapshot{Name: sname, Installation: inst, Shape: shape}, prep, s.keepDatadir)
}

// keepDatadir forgets c's single node's identity, stops it cleanly and moves its datadir
// to snap's directory with snapshot.json.
func (s *Store) keepDatadir(ctx context.Context, c *Cluster, snap *Snapshot) error {
	n := c.Nodes[0]
	if err := forgetIdentity(ctx, c, n); err != nil {
		return err
	}
	if err := s.StopNode(c, n.Name); err != nil {
		return fmt.Errorf("stop snapshot server: %w", err)
	}
	final := filepath.Join(SnapshotsDir(), snap.Name)
	tmp := filepath.Join(SnapshotsDir(), "."+snap.Name+".tmp")
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	src, dst := filepath.Join(n.Dir, "data"), filepath.Join(tmp, "data")
	if c.Spec.Options["wsrep_on"] == "ON" {
		pos, err := galeraPosition(filepath.Join(src, "grastate.dat"))
		if err != nil {
			return err
		}
		snap.GaleraPosition = pos
	}
	if err := os.Rename(src, dst); err != nil {
		if err := copyDatadir(src, dst); err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	snap.Created = time.Now().UTC()
	err := scrubIdentity(dst)
	if err == nil {
		snap.Files, err = listSnapshotFiles(dst)
	}
	if err == nil {
		err = saveSnapshot(tmp, snap)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("snapshot %s: %w", snap.Name, err)
	}
	snap.dir = final
	return nil
}

// VerifySnapshot is the local sandbox's SnapshotStore.VerifySnapshot: snap's data
// directory on this machine against its file list.
func (sandboxProvider) VerifySnapshot(_ context.Context, _ topology.Spec, snap *Snapshot) error {
	return snap.verifyLocal()
}

// DeployFromSnapshot is the local sandbox's SnapshotStore.DeployFromSnapshot: snap's files
// checked (VerifySnapshot), then Deploy with every node's datadir a copy of snap's
// (nodeFromSnapshot).
func (sandboxProvider) DeployFromSnapshot(ctx context.Context, s *Store, spec topology.Spec, snap *Snapshot) (*Cluster, error) {
	if err := snap.verifyLocal(); err != nil {
		return nil, err
	}
	s.memo() // the copy shares the store's installations
	sb := *s
	sb.snapshot = snap
	return sb.Deploy(ctx, spec)
}

// nodeFromSnapshot makes node n's datadir a copy of s.snapshot's and gives it its Galera
// state (galera kinds: safe to bootstrap on the node the plan bootstraps, the one that
// does not start empty).
func (s *Store) nodeFromSnapshot(c *Cluster, n *Node, np topology.NodePlan) error {
	if err := copyDatadir(filepath.Join(s.snapshot.dir, "data"), filepath.Join(n.Dir, "data")); err != nil {
		return err
	}
	if !isGaleraKind(c.Spec.Kind) || s.snapshot.GaleraPosition == "" {
		return nil // without a position the joiners get the data by state transfer
	}
	st := GaleraState(s.snapshot.GaleraPosition, !np.EmptyDatadir)
	return os.WriteFile(filepath.Join(n.Dir, "data", "grastate.dat"), []byte(st), 0o660)
}
