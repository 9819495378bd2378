package cluster

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/habench/habench/topology"
)

// The replication kinds: single, async and semisync share the source/replica behaviour
// (the nil defaults of KindOps); semisync adds its acknowledging replicas to the source's
// readiness and health.
func init() {
	RegisterKindOps(KindOps{}, topology.Single, topology.Async)
	RegisterKindOps(KindOps{
		Ready: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) error {
			if n.Role == topology.RoleSource {
				return waitSemiSyncClients(ctx, db, c.Capabilities(), max(1, c.Spec.SemiSync.WaitForReplicas), n.Name)
			}
			return ReplicationReady(ctx, c, n, db)
		},
		Health: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) string {
			if n.Role == topology.RoleReplica {
				return ReplicationHealth(ctx, c, n, db)
			}
			v := c.Capabilities().SemiSyncNames()
			var k, status, clients string
			db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v.StatusPrefix+"status'").Scan(&k, &status)
			db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v.StatusPrefix+"clients'").Scan(&k, &clients)
			return fmt.Sprintf("ok, semi-sync %s with %s replica(s) acknowledging", orNull(status), orNull(clients))
		},
	}, topology.SemiSync)
}

// ReplicationReady waits until replica n's receiver and applier threads run (nil at once
// for a node of another role). Error: the replica's last errors, or ctx's.
func ReplicationReady(ctx context.Context, c *Cluster, n *Node, db *sql.DB) error {
	if n.Role != topology.RoleReplica {
		return nil
	}
	return waitReplicaRunning(ctx, db, c.Capabilities(), n.Name)
}

// ReplicationHealth is "ok" for a source, else the replica threads, Seconds_Behind and
// last errors from SHOW REPLICA|SLAVE STATUS ("not replicating" without a channel).
func ReplicationHealth(ctx context.Context, c *Cluster, n *Node, db *sql.DB) string {
	if n.Role != topology.RoleReplica {
		return "ok"
	}
	caps := c.Capabilities()
	st, err := ReplicaStatus(ctx, db, caps)
	if err != nil {
		return err.Error()
	}
	if st == nil {
		return "not replicating"
	}
	s := fmt.Sprintf("io=%s sql=%s behind=%ss", st[caps.ReplicaStatusColumn("io_running")], st[caps.ReplicaStatusColumn("sql_running")], orNull(st[caps.ReplicaStatusColumn("seconds_behind")]))
	if e := st[caps.ReplicaStatusColumn("last_io_error")] + st[caps.ReplicaStatusColumn("last_sql_error")]; e != "" {
		s += " error=" + e
	}
	return s
}

// ReplicationStuck says why a replica cannot catch up by itself: its applier stopped
// (with its last error), or its receiver stopped with an error. "" for a running replica
// and for a node without a replication channel; never settling.
func ReplicationStuck(ctx context.Context, c *Cluster, n *Node, db *sql.DB) (stuck string, settling bool) {
	caps := c.Capabilities()
	st, err := ReplicaStatus(ctx, db, caps)
	if err != nil || st == nil {
		return "", false
	}
	io, sqlRun := st[caps.ReplicaStatusColumn("io_running")], st[caps.ReplicaStatusColumn("sql_running")]
	ioErr, sqlErr := st[caps.ReplicaStatusColumn("last_io_error")], st[caps.ReplicaStatusColumn("last_sql_error")]
	switch {
	case sqlRun != "Yes":
		stuck = "applier stopped"
		if sqlErr != "" {
			stuck += ": " + sqlErr
		}
	case io == "No" && ioErr != "":
		stuck = "receiver stopped: " + ioErr
	}
	return stuck, false
}

func orNull(s string) string {
	if s == "" {
		return "NULL"
	}
	return s
}
