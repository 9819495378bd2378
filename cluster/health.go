package cluster

import (
	"context"
	"fmt"

	"github.com/habench/habench/topology"
)

// Health is a one-line health text for node n: "server not running", connection errors,
// on a group member its state and role and, where its view of the group is not every
// node ONLINE, what it sees (GroupView.Note: "sees n3 UNREACHABLE"),
// on a Galera node its wsrep state, cluster status and size (GaleraStatus.String),
// "ok" (with semi-sync status and acknowledging replicas on a semi-sync source), or the
// replica threads, Seconds_Behind and last errors from SHOW REPLICA|SLAVE STATUS.
func (c *Cluster) Health(ctx context.Context, n *Node) string {
	adopted := ""
	if !c.Existing() && !n.Running() {
		pid := c.Adopt(n)
		if pid == 0 {
			return "server not running"
		}
		adopted = fmt.Sprintf("restarted outside habench (pid %d, now recorded); ", pid)
	}
	h := c.health(ctx, n)
	return adopted + h
}

// health is Health for a node whose server runs.
func (c *Cluster) health(ctx context.Context, n *Node) string {
	caps := c.Capabilities()
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return "not accepting connections: " + err.Error()
	}
	if c.Spec.Kind == topology.Group {
		h := groupHealth(ctx, db, n)
		if v, err := c.ReadGroupView(ctx, db); err == nil {
			if note := v.Note(c, n.Name); note != "" {
				h += "; " + note
			}
		}
		return h
	}
	if c.Spec.Kind == topology.Galera {
		g, err := ReadGaleraStatus(ctx, db)
		if err != nil {
			return err.Error()
		}
		return g.String()
	}
	if n.Role != topology.RoleReplica {
		if c.Spec.Kind == topology.SemiSync {
			v := caps.SemiSyncNames()
			var k, status, clients string
			db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v.StatusPrefix+"status'").Scan(&k, &status)
			db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v.StatusPrefix+"clients'").Scan(&k, &clients)
			return fmt.Sprintf("ok, semi-sync %s with %s replica(s) acknowledging", orNull(status), orNull(clients))
		}
		return "ok"
	}
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

func orNull(s string) string {
	if s == "" {
		return "NULL"
	}
	return s
}
