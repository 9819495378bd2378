package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/habench/habench/topology"
)

// SnapshotKinds are the kinds a sandbox deploys from a data snapshot; the others
// (group-dr) load their data through a prepare as before.
var SnapshotKinds = map[topology.Kind]bool{topology.Single: true, topology.Async: true, topology.SemiSync: true,
	topology.Group: true, topology.Galera: true, topology.GaleraArbitrator: true}

// OnDiskOptions are server options that change the data's layout on disk or what a
// CREATE TABLE makes (page size, default row format, character set...): a deployment that
// sets one of them gets no snapshot (made without them) and prepares as before.
var OnDiskOptions = []string{"innodb_page_size", "innodb_data_file_path", "innodb_undo_tablespaces",
	"innodb_default_row_format", "innodb_file_per_table", "innodb_checksum_algorithm", "innodb_log_file_size",
	"innodb_redo_log_capacity", "lower_case_table_names", "character_set_server", "collation_server",
	"default_storage_engine", "innodb_compression_default", "innodb_encrypt_tables", "explicit_defaults_for_timestamp"}

// SnapshotRefusal says why spec cannot start from a snapshot ("" when it can): its
// provider keeps no snapshots (no SnapshotStore), a kind not in SnapshotKinds, or an
// option of OnDiskOptions.
func SnapshotRefusal(spec topology.Spec) string {
	if _, why := snapshotStore(spec); why != "" {
		return why
	}
	if !SnapshotKinds[spec.Kind] {
		return "kind " + string(spec.Kind) + " prepares its data as before"
	}
	for k := range spec.Options {
		for _, o := range OnDiskOptions {
			if normOptionName(k) == o {
				return "option " + k + " changes the data on disk"
			}
		}
	}
	return ""
}

func normOptionName(k string) string {
	b := []byte(k)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	s := string(b)
	if len(s) > 6 && s[:6] == "loose_" {
		s = s[6:]
	}
	return s
}

// LoadSnapshot is the local sandbox's SnapshotStore.LoadSnapshot: snapshot name in
// SnapshotsDir() on this machine.
func (sandboxProvider) LoadSnapshot(_ context.Context, _ topology.Spec, name string) (*Snapshot, error) {
	return LoadSnapshot(name)
}

// MakeSnapshot is the local sandbox's SnapshotStore.MakeSnapshot: it deploys a single
// node named name, runs prep on it (the prepare), removes the accounts the deploy made,
// resets binary logs and GTIDs, stops the server cleanly and moves its datadir into
// SnapshotsDir() without its identity (scrubIdentity). The node is destroyed in any case.
func (sandboxProvider) MakeSnapshot(ctx context.Context, s *Sandbox, spec topology.Spec, name string, shape DataShape, prep func(context.Context, *Cluster) error) (*Snapshot, error) {
	bins, err := ResolveInstallation(ctx, spec.Installation, spec.Flavor)
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

// snapshotFromServer deploys one (a single node: the snapshot's server), runs prep on it
// (PrepareS: how long it took) and keep, which makes snap of its datadir; the server is
// destroyed in any case. Errors: the deploy's, prep's, keep's and the destroy's.
func (s *Sandbox) snapshotFromServer(ctx context.Context, one topology.Spec, snap *Snapshot, prep func(context.Context, *Cluster) error, keep func(context.Context, *Cluster, *Snapshot) error) (_ *Snapshot, err error) {
	c, err := s.Deploy(ctx, one)
	if err != nil {
		return nil, fmt.Errorf("snapshot server: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if derr := s.Destroy(cctx, c.Name); derr != nil {
			err = errors.Join(err, fmt.Errorf("destroy snapshot server %s: %w", c.Name, derr))
		}
	}()
	t0 := time.Now()
	if err := prep(ctx, c); err != nil {
		return nil, err
	}
	snap.PrepareS = time.Since(t0).Seconds()
	if err := keep(ctx, c, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// snapshotGaleraOptions are the options of a snapshot's server on a MariaDB installation
// with a Galera provider: a one-node Galera cluster, so the data is committed through
// wsrep and InnoDB records the Galera position that grastate.dat gives the nodes of a
// Galera deployment (a MariaDB joiner takes its position from InnoDB after an IST; without
// one it fails the state transfer). Other servers ignore that position. nil otherwise.
func snapshotGaleraOptions(b *Binaries) map[string]string {
	if b.Flavor != topology.MariaDB || b.WsrepProvider == "" {
		return nil
	}
	return map[string]string{"wsrep_on": "ON", "wsrep_provider": b.WsrepProvider, "wsrep_cluster_address": "gcomm://",
		"binlog_format": "ROW", "innodb_autoinc_lock_mode": "2"}
}

// lockSnapshot holds SnapshotsDir()/.NAME.lock: one maker of a snapshot at a time.
func lockSnapshot(name string) (func(), error) {
	if err := os.MkdirAll(SnapshotsDir(), 0o755); err != nil {
		return nil, err
	}
	return lockFile(filepath.Join(SnapshotsDir(), "."+name+".lock"), false)
}

// keepDatadir forgets c's single node's identity, stops it cleanly and moves its datadir
// to snap's directory with snapshot.json.
func (s *Sandbox) keepDatadir(ctx context.Context, c *Cluster, snap *Snapshot) error {
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

// forgetIdentity drops the accounts the deploy created (each deployment creates its own)
// and empties the binary logs and GTID history, so nodes started from the data begin with
// none, as after a fresh initialisation.
func forgetIdentity(ctx context.Context, c *Cluster, n *Node) error {
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var qs []string
	if c.Spec.Options["wsrep_on"] == "ON" {
		qs = append(qs, "SET SESSION wsrep_on=OFF") // the position stays the prepare's
	}
	for _, q := range append(qs, "SET SESSION sql_log_bin=0",
		fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%', '%s'@'%%'", topology.BenchUser, topology.ReplUser),
		"SET SESSION sql_log_bin=1", c.Binaries.Caps().ResetBinlogs()) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("snapshot server: %s: %w", q, err)
		}
	}
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
func (sandboxProvider) DeployFromSnapshot(ctx context.Context, s *Sandbox, spec topology.Spec, snap *Snapshot) (*Cluster, error) {
	if err := snap.verifyLocal(); err != nil {
		return nil, err
	}
	sb := *s
	sb.snapshot = snap
	return sb.Deploy(ctx, spec)
}

// nodeFromSnapshot makes node n's datadir a copy of s.snapshot's and gives it its Galera
// state (galera kinds: safe to bootstrap on the node the plan bootstraps, the one that
// does not start empty).
func (s *Sandbox) nodeFromSnapshot(c *Cluster, n *Node, np topology.NodePlan) error {
	if err := copyDatadir(filepath.Join(s.snapshot.dir, "data"), filepath.Join(n.Dir, "data")); err != nil {
		return err
	}
	if !isGaleraKind(c.Spec.Kind) || s.snapshot.GaleraPosition == "" {
		return nil // without a position the joiners get the data by state transfer
	}
	st := GaleraState(s.snapshot.GaleraPosition, !np.EmptyDatadir)
	return os.WriteFile(filepath.Join(n.Dir, "data", "grastate.dat"), []byte(st), 0o660)
}

func isGaleraKind(k topology.Kind) bool {
	return k == topology.Galera || k == topology.GaleraArbitrator
}

// usersAfterJoins moves the plan's "create users" step after the last step that starts a
// node: nodes that all start at the snapshot's position then join a cluster still at that
// position and need no state transfer at all (an IST still runs the SST script, about 5 s
// per joiner); the users reach them by replication.
func usersAfterJoins(plan *topology.Plan) {
	var users []topology.Step
	var rest []topology.Step
	for _, st := range plan.Steps {
		if st.Desc == "create users" {
			users = append(users, st)
		} else {
			rest = append(rest, st)
		}
	}
	last := -1
	for i, st := range rest {
		if st.Start {
			last = i
		}
	}
	out := append(append(append([]topology.Step{}, rest[:last+1]...), users...), rest[last+1:]...)
	plan.Steps = out
}

// diskUsage is the space fi takes on disk in bytes (its size when the blocks are unknown).
func diskUsage(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
