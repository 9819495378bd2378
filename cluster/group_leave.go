package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/habench/habench/topology"
)

// LeaveGroupTimeout bounds LeaveGroup's STOP GROUP_REPLICATION.
const LeaveGroupTimeout = time.Minute

// LeaveGroup makes member n leave its group in a planned way, STOP GROUP_REPLICATION on
// n, as the MySQL manual's rolling upgrade does before it shuts a member down. The
// member leaves while its plugin still runs, so the commits in flight on it are certified
// or refused at once; a shutdown without it (SIGTERM while in the group) waits up to Group
// Replication's fixed 50 s TRANSACTION_KILL_TIMEOUT for them (docs/topologies.md: 57 s
// against 6 s under load). The member is OFFLINE and super_read_only afterwards; its
// clients get errors (1290, 3100), not a lost connection. A no-op (nil) when n is not a
// group member: a kind without a group, or a group-dr replica. Errors: n cannot be
// reached, or the statement failed or took longer than LeaveGroupTimeout, naming n.
func (c *Cluster) LeaveGroup(ctx context.Context, n *Node) error {
	if !c.Spec.Is(topology.Group) || !slices.Contains(c.groupNodes(), n) {
		return nil
	}
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, LeaveGroupTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, "STOP GROUP_REPLICATION"); err != nil {
		return fmt.Errorf("node %s: STOP GROUP_REPLICATION: %w", n.Name, err)
	}
	return nil
}
