package cluster

import (
	"context"
	"fmt"
)

// Health is a one-line health text for node n: "server not running", connection errors,
// on a group member its state and role and, where its view of the group is not every
// node ONLINE, what it sees (GroupView.Note: "sees n3 UNREACHABLE"),
// on a Galera node its wsrep state, cluster status and size (GaleraStatus.String),
// "ok" (with semi-sync status and acknowledging replicas on a semi-sync source), or the
// replica threads, Seconds_Behind and last errors from SHOW REPLICA|SLAVE STATUS.
func (c *Cluster) Health(ctx context.Context, n *Node) string {
	if n.IsAux() {
		return c.auxHealth(ctx, n)
	}
	adopted := ""
	if c.NodeDown(n) {
		pid := c.Adopt(n)
		if pid == 0 {
			return "server not running"
		}
		adopted = fmt.Sprintf("restarted outside habench (pid %d, now recorded); ", pid)
	}
	h := c.health(ctx, n)
	return adopted + h
}

// health is Health for a node whose server runs: KindOps.Health of c's kind.
func (c *Cluster) health(ctx context.Context, n *Node) string {
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return "not accepting connections: " + err.Error()
	}
	if f := c.ops().Health; f != nil {
		return f(ctx, c, n, db)
	}
	return ReplicationHealth(ctx, c, n, db)
}
