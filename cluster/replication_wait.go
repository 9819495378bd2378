package cluster

// The replication waits of a plan's steps (topology.WaitReplicaRunning,
// WaitSemiSyncReady), over an admin connection, wherever the servers run; the group's and
// Galera's are in group.go and galera.go.

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/habench/habench/topology"
)

// ReplicaStatus reads SHOW REPLICA|SLAVE STATUS into a column->value map (nil, nil when
// the node is not a replica).
func ReplicaStatus(ctx context.Context, db *sql.DB, caps topology.Capabilities) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, caps.ShowReplicaStatus())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(cols))
	for i, c := range cols {
		m[c] = vals[i].String
	}
	return m, rows.Err()
}

func waitReplicaRunning(ctx context.Context, db *sql.DB, caps topology.Capabilities, node string) error {
	var last map[string]string
	start := time.Now()
	for {
		st, err := ReplicaStatus(ctx, db, caps)
		if err == nil && st != nil {
			last = st
			io, sqlr := st[caps.ReplicaStatusColumn("io_running")], st[caps.ReplicaStatusColumn("sql_running")]
			if io == "Yes" && sqlr == "Yes" {
				return nil
			}
			// A thread that stopped with an error will not recover by waiting
			// ("Connecting" is a retry in progress and may).
			if e := st[caps.ReplicaStatusColumn("last_io_error")]; io == "No" && e != "" {
				return fmt.Errorf("node %s: replica receiver stopped: %s", node, e)
			}
			if e := st[caps.ReplicaStatusColumn("last_sql_error")]; sqlr == "No" && e != "" {
				return fmt.Errorf("node %s: replica applier stopped: %s", node, e)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: replica threads not running after %v (io=%q sql=%q io_error=%q sql_error=%q)", node, waited(start),
				last[caps.ReplicaStatusColumn("io_running")], last[caps.ReplicaStatusColumn("sql_running")],
				last[caps.ReplicaStatusColumn("last_io_error")], last[caps.ReplicaStatusColumn("last_sql_error")])
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func waitSemiSyncClients(ctx context.Context, db *sql.DB, caps topology.Capabilities, want int, node string) error {
	v := caps.SemiSyncNames()
	var name string
	var n int
	start := time.Now()
	for {
		err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v.StatusPrefix+"clients'").Scan(&name, &n)
		if err == nil && n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: %d semi-sync replicas connected after %v, want %d (last error: %v)", node, n, waited(start), want, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
