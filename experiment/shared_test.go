package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// TestMain destroys the package's shared deployments after its tests.
func TestMain(m *testing.M) { testenv.MainWithShared(m) }

// SharedGroup is sharedGroup for the package's external tests (experiment_test).
var SharedGroup = sharedGroup

// sharedGroup is the package's 3-member single-primary MySQL group for the tests that run
// workloads on a group, read it, or stop and start a member (testenv.Shared): a test has
// it to itself and must not destroy it. Before each hand-over the state file is read
// again, stopped members are started, n1 is made the primary again, the sbtest database
// is dropped, every member's certifier and applier queues are empty and the flow-control
// thresholds are set back to their defaults.
func sharedGroup(t *testing.T) (*cluster.Store, *cluster.Cluster) {
	t.Helper()
	return testenv.Shared(t, "grp", func(name string) topology.Spec {
		return topology.Spec{Name: name, Kind: topology.Group, Nodes: 3, Flavor: topology.MySQL}
	}, resetGroup)
}

// resetGroup is sharedGroup's reset.
func resetGroup(ctx context.Context, sb *cluster.Store, c *cluster.Cluster) (*cluster.Cluster, error) {
	c, err := c.Reload()
	if err != nil {
		return nil, err
	}
	sb.StopGrace = 0
	for _, n := range c.Nodes {
		if c.NodeDown(n) {
			if err := sb.StartNode(ctx, c, n.Name); err != nil {
				return nil, err
			}
		}
	}
	if err := cluster.WaitTopologyReady(ctx, c); err != nil {
		return nil, err
	}
	ms, err := c.GroupMembers(ctx)
	if err != nil {
		return nil, err
	}
	db, err := c.OpenAdmin(c.Nodes[0])
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for _, m := range ms {
		if m.Node == "n1" && m.Role != "PRIMARY" {
			if _, err := db.ExecContext(ctx, "SELECT group_replication_set_as_primary('"+m.MemberID+"')"); err != nil {
				return nil, fmt.Errorf("make n1 the primary again: %w", err)
			}
		}
	}
	if err := cluster.SwitchGroupModeTo(ctx, c, topology.GroupSinglePrimary, ""); err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS sbtest"); err != nil {
		return nil, err
	}
	if err := waitQueuesEmpty(ctx, db); err != nil {
		return nil, err
	}
	for _, n := range c.Nodes {
		ndb, err := c.OpenAdmin(n)
		if err != nil {
			return nil, err
		}
		_, err = ndb.ExecContext(ctx, "SET GLOBAL group_replication_flow_control_certifier_threshold=DEFAULT, GLOBAL group_replication_flow_control_applier_threshold=DEFAULT")
		ndb.Close()
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// waitQueuesEmpty waits (polling every 100 ms, at most a minute) until no member of the
// group db belongs to has transactions in its certifier or applier queue: the last user's
// load applied everywhere.
func waitQueuesEmpty(ctx context.Context, db *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	const q = "SELECT COALESCE(SUM(COUNT_TRANSACTIONS_IN_QUEUE + COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE), 0) FROM performance_schema.replication_group_member_stats"
	for {
		var n int64
		err := db.QueryRowContext(ctx, q).Scan(&n)
		if err == nil && n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group queues not empty (%d transactions, %v): %w", n, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
