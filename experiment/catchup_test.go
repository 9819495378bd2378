package experiment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
)

// TestWaitConsistentWaitsForOnlineMembers: in a 3-member group with no writes, n3 with
// Group Replication stopped has the writer's GTID set but is OFFLINE, so the run's
// catch-up wait is not over (an expelled member that rejoins is RECOVERING with the same
// GTID set while it applies its cached transactions); once n3 is started again the wait
// ends with n3 ONLINE.
func TestWaitConsistentWaitsForOnlineMembers(t *testing.T) {
	t.Parallel()
	_, c := sharedGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var nodes []sampler.Node
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		nodes = append(nodes, sampler.Node{Name: n.Name, Role: n.Role, Caps: c.Capabilities(), DB: db})
	}
	n3 := nodes[2]
	if _, err := n3.DB.ExecContext(ctx, "STOP GROUP_REPLICATION"); err != nil {
		t.Fatal(err)
	}
	// 8 s: with the suite beside it, a member-state query alone took more than the 3 s
	// this once allowed (at -parallel 2 the wait ended on that query's deadline, not on
	// n3's OFFLINE state).
	wctx, wcancel := context.WithTimeout(ctx, 8*time.Second)
	pos, err := waitConsistent(wctx, c, nodes)
	wcancel()
	if err == nil || !strings.Contains(err.Error(), "GTID sets equal, but n3 OFFLINE") {
		t.Fatalf("n3 OFFLINE: waitConsistent returned %v (positions %v), want the GTID sets equal but n3 not ONLINE", err, pos)
	}
	if pos["n3"] != pos["n1"] {
		t.Fatalf("n3's GTID set differs from n1's without writes: %v", pos)
	}
	started := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		_, err := n3.DB.ExecContext(ctx, "START GROUP_REPLICATION")
		started <- err
	}()
	if _, err := waitConsistent(ctx, c, nodes); err != nil {
		t.Fatalf("after START GROUP_REPLICATION on n3: %v", err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	m, err := cluster.ReadGroupMember(ctx, n3.DB, "n3")
	if err != nil || m.State != "ONLINE" {
		t.Fatalf("waitConsistent returned with n3 %q (%v)", m.State, err)
	}
}
