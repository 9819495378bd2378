package cluster_test

// The longest tests of the package, declared last on purpose: once the serial tests have
// run, go test (1.26) starts the waiting parallel tests of a package last declared first
// (cmd/habench/zz_longest_test.go), so a long test declared here starts first instead of
// ending the package alone. TestGroupMemberRestartRejoins, 105 s, began 73 s in and was
// the package's last 60 s with nothing beside it in one CI-like run (the package 178 s),
// and began first in another (128 s). Where a test is declared changes only the suite's
// time, never what it checks.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/topology"
)

// TestGroupMemberRestartRejoins: group members do not start Group Replication on boot
// (start_on_boot OFF), so a started or restarted member must be brought back into the
// group by habench. RestartNode of a secondary and of the primary (as a knob that needs a
// restart does) leaves every member ONLINE, the primary where it was, and state.json's
// roles equal to the servers'; StartNode after StopNode and after KillNode (the group may
// still list the killed member as UNREACHABLE) rejoins the member; after the whole group
// was stopped, the first member started bootstraps it again. The group_replication_mode
// knob, restored, puts back the primary the group had.
func TestGroupMemberRestartRejoins(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "rvgr"), topology.Group, 3, topology.MySQL))
	if err != nil {
		t.Fatal(err)
	}
	single := map[string]topology.Role{"n1": topology.RolePrimary, "n2": topology.RoleSecondary, "n3": topology.RoleSecondary}

	t0 := time.Now()
	if err := s.RestartNode(ctx, c, "n2"); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart of secondary n2: %v", time.Since(t0).Round(time.Millisecond))
	if st := memberState(t, ctx, c, "n2"); st != "ONLINE SECONDARY" {
		t.Fatalf("n2 after RestartNode: %s, want ONLINE SECONDARY", st)
	}
	checkRoles(t, ctx, s, c.Name, single, topology.GroupSinglePrimary)

	t0 = time.Now()
	if err := s.RestartNode(ctx, c, "n1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart of primary n1: %v", time.Since(t0).Round(time.Millisecond))
	if st := memberState(t, ctx, c, "n1"); st != "ONLINE PRIMARY" {
		t.Errorf("n1 after RestartNode: %s, want ONLINE PRIMARY (the primary it was)", st)
	}
	c = checkRoles(t, ctx, s, c.Name, single, topology.GroupSinglePrimary)
	if err := writeOn(ctx, c, c.Writer(), "CREATE DATABASE probe_restart"); err != nil {
		t.Errorf("write on the writer %s after restarts: %v", c.Writer().Name, err)
	}

	if err := s.StopNode(c, "n3"); err != nil {
		t.Fatal(err)
	}
	if h := c.Health(ctx, c.Node("n3")); h != "server not running" {
		t.Errorf("n3 health after StopNode: %q", h)
	}
	want := fmt.Sprintf("group %s: single-primary mode, 2/3 members ONLINE, primary n1; n3 not running", topology.GroupName(c.Name))
	if got := c.GroupStatus(ctx); got != want {
		t.Errorf("GroupStatus with n3 stopped:\n got %q\nwant %q", got, want)
	}
	if err := s.StartNode(ctx, c, "n3"); err != nil {
		t.Fatal(err)
	}
	if st := memberState(t, ctx, c, "n3"); st != "ONLINE SECONDARY" {
		t.Errorf("n3 after StopNode+StartNode: %s, want ONLINE SECONDARY", st)
	}

	if err := s.KillNode(c, "n2"); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if err := s.StartNode(ctx, c, "n2"); err != nil {
		t.Fatal(err)
	}
	t.Logf("start of killed n2 until ONLINE: %v", time.Since(t0).Round(time.Millisecond))
	if st := memberState(t, ctx, c, "n2"); st != "ONLINE SECONDARY" {
		t.Errorf("n2 after KillNode+StartNode: %s, want ONLINE SECONDARY", st)
	}
	c = checkRoles(t, ctx, s, c.Name, single, topology.GroupSinglePrimary)

	// The group_replication_mode knob on a group whose primary is n2 (not the first node):
	// multi-primary for the run, then back to single-primary with n2 the primary again.
	if err := cluster.SwitchGroupModeTo(ctx, c, topology.GroupMultiPrimary, ""); err != nil {
		t.Fatal(err)
	}
	if err := cluster.SwitchGroupModeTo(ctx, c, topology.GroupSinglePrimary, "n2"); err != nil {
		t.Fatal(err)
	}
	n2primary := map[string]topology.Role{"n1": topology.RoleSecondary, "n2": topology.RolePrimary, "n3": topology.RoleSecondary}
	c = checkRoles(t, ctx, s, c.Name, n2primary, topology.GroupSinglePrimary)
	ks := []topology.KnobSetting{{Name: "group_replication_mode", Value: "multi-primary"}}
	a, err := knob.Apply(ctx, c, ks, knob.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkRoles(t, ctx, s, c.Name, map[string]topology.Role{"n1": topology.RolePrimary, "n2": topology.RolePrimary, "n3": topology.RolePrimary}, topology.GroupMultiPrimary)
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	c = checkRoles(t, ctx, s, c.Name, n2primary, topology.GroupSinglePrimary)

	// The whole group stopped: the first member started bootstraps it again (it becomes
	// the primary), the others join it.
	for _, n := range []string{"n1", "n2", "n3"} {
		if err := s.StopNode(c, n); err != nil {
			t.Fatal(err)
		}
	}
	t0 = time.Now()
	for _, n := range []string{"n3", "n1", "n2"} {
		if err := s.StartNode(ctx, c, n); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("whole group stopped, started again (n3 bootstraps): %v", time.Since(t0).Round(time.Millisecond))
	checkRoles(t, ctx, s, c.Name, map[string]topology.Role{"n1": topology.RoleSecondary, "n2": topology.RoleSecondary, "n3": topology.RolePrimary}, topology.GroupSinglePrimary)
}
