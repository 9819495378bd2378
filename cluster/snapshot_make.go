package cluster

// Making a data snapshot from a one-node deployment, and deploying from one: what the
// SnapshotStores of the local sandbox (sandbox_snapshot.go) and of the hosts provider
// (hosts_snapshot.go) share.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/habench/habench/topology"
)

// snapshotFromServer deploys one (a single node: the snapshot's server), runs prep on it
// (PrepareS: how long it took) and keep, which makes snap of its datadir; the server is
// destroyed in any case. Errors: the deploy's, prep's, keep's and the destroy's.
func (s *Store) snapshotFromServer(ctx context.Context, one topology.Spec, snap *Snapshot, prep func(context.Context, *Cluster) error, keep func(context.Context, *Cluster, *Snapshot) error) (_ *Snapshot, err error) {
	c, err := s.Provide(ctx, one)
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
