package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/habench/habench/topology"
)

// Kind group-dr: the group's members behave as a group's (groupNodes leaves the DR
// replicas out), the DR replicas as async replicas; the fields left nil (group ports,
// roles, the live writer) are the group's. A DR replica needs nothing to rejoin
// after a restart: its channel keeps SOURCE_CONNECTION_AUTO_FAILOVER and the managed
// source list, and the server starts replicating by itself (skip_replica_start is off).
func init() {
	// The group's behaviour, looked up when used (init functions of other files may run
	// after this one).
	group := func() *KindOps { return OpsOf(topology.Group) }
	member := func(n *Node) bool { return n.Role != topology.RoleReplica }
	RegisterKindOps(KindOps{
		Rejoin: func(ctx context.Context, s *Store, c *Cluster, n *Node) error {
			if !member(n) {
				return nil
			}
			return group().Rejoin(ctx, s, c, n)
		},
		AfterPlan: func(ctx context.Context, c *Cluster) error {
			if err := group().AfterPlan(ctx, c); err != nil {
				return err
			}
			return c.waitDRSourceLists(ctx, 10*time.Second)
		},
		Ready: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) error {
			if member(n) {
				return group().Ready(ctx, c, n, db)
			}
			return ReplicationReady(ctx, c, n, db)
		},
		Health: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) string {
			if member(n) {
				return group().Health(ctx, c, n, db)
			}
			h := ReplicationHealth(ctx, c, n, db)
			if src := c.drSource(ctx, db); src != "" {
				h += ", from " + src
			}
			return h
		},
		Stuck: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) (string, bool) {
			if member(n) {
				return group().Stuck(ctx, c, n, db)
			}
			return ReplicationStuck(ctx, c, n, db)
		},
	}, topology.GroupDR)
}

// drSourceListQuery counts the sources in the default channel's failover list.
const drSourceListQuery = "SELECT COUNT(*) FROM performance_schema.replication_asynchronous_connection_failover WHERE CHANNEL_NAME = ''"

// waitDRSourceLists waits until every DR replica's source list names every group member:
// the replica adds the members it learns from its source (n1) shortly after connecting,
// and until then it could not fail over to them. Error naming the replica and what its
// list holds after timeout.
func (c *Cluster) waitDRSourceLists(ctx context.Context, timeout time.Duration) error {
	want := len(c.groupNodes())
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, n := range c.Nodes {
		if n.Role != topology.RoleReplica {
			continue
		}
		db, err := c.OpenAdmin(n)
		if err != nil {
			return err
		}
		var have int
		for {
			err = db.QueryRowContext(wctx, drSourceListQuery).Scan(&have)
			if err == nil && have >= want {
				break
			}
			select {
			case <-wctx.Done():
				db.Close()
				return fmt.Errorf("node %s: its failover source list has %d of the group's %d members after %s (err: %v)", n.Name, have, want, timeout, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
		db.Close()
	}
	return nil
}

// drSource names the node a DR replica's channel is configured to replicate from now (the
// failover mechanism rewrites the channel's host and port when it switches), with "(a
// secondary; ...)" when that node is not the member the group calls PRIMARY now
// (groupWriterNow); "" when unreadable.
func (c *Cluster) drSource(ctx context.Context, db *sql.DB) string {
	var host string
	var port int
	if err := db.QueryRowContext(ctx, "SELECT HOST, PORT FROM performance_schema.replication_connection_configuration WHERE CHANNEL_NAME = ''").Scan(&host, &port); err != nil {
		return ""
	}
	name := c.nodeAt(host, port)
	switch p := groupWriterNow(ctx, c); {
	case p == nil:
		name += " (a secondary; the group has no primary now)"
	case p.Name != name:
		name += " (a secondary; the primary is " + p.Name + ")"
	}
	return name
}
