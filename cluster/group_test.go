package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// groupView is what node n (over its admin socket) reports about every member:
// "host:port" -> "STATE ROLE".
func groupView(t *testing.T, ctx context.Context, c *cluster.Cluster, n *cluster.Node) map[string]string {
	t.Helper()
	db, err := c.OpenAdmin(n)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT MEMBER_HOST, MEMBER_PORT, MEMBER_STATE, MEMBER_ROLE FROM performance_schema.replication_group_members")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var host, state, role string
		var port int
		if err := rows.Scan(&host, &port, &state, &role); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%s:%d", host, port)] = state + " " + role
	}
	return out
}

// checkRoles asserts that every member is ONLINE in n1's view, that the roles in the
// state file on disk are the ones performance_schema reports, and that they are want
// (node name -> role).
func checkRoles(t *testing.T, ctx context.Context, s *cluster.Store, name string, want map[string]topology.Role, wantMode string) *cluster.Cluster {
	t.Helper()
	c, err := s.Load(name) // what state.json says
	if err != nil {
		t.Fatal(err)
	}
	view := groupView(t, ctx, c, c.Nodes[0])
	if len(view) != len(c.Nodes) {
		t.Fatalf("n1 sees %d members, want %d: %v", len(view), len(c.Nodes), view)
	}
	for _, n := range c.Nodes {
		ps := view[n.Addr()]
		if ps != "ONLINE "+strings.ToUpper(string(n.Role)) {
			t.Errorf("%s: performance_schema says %q, state.json role %s", n.Name, ps, n.Role)
		}
		if n.Role != want[n.Name] {
			t.Errorf("%s: role %s, want %s", n.Name, n.Role, want[n.Name])
		}
	}
	if c.Spec.Group.Mode != wantMode {
		t.Errorf("state.json group mode %q, want %q", c.Spec.Group.Mode, wantMode)
	}
	ms, err := c.GroupMembers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.SinglePrimary != (wantMode == topology.GroupSinglePrimary) {
			t.Errorf("%s: group_replication_single_primary_mode = %v in mode %s", m.Node, m.SinglePrimary, wantMode)
		}
	}
	return c
}

// writeOn runs a write on node n; nil when it committed.
func writeOn(ctx context.Context, c *cluster.Cluster, n *cluster.Node, q string) error {
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, q)
	return err
}

// TestGroupDeployAndSwitchMode deploys a 3-member single-primary group on MySQL: every
// member ONLINE, the roles in state.json are the ones performance_schema reports, the
// primary takes writes that reach the secondaries and a secondary refuses them. Then it
// switches the running group to multi-primary (every member a primary, a write on n3
// commits) and back to single-primary with n1 as the primary, the state file following
// the servers each time.
func TestGroupDeployAndSwitchMode(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "cgr"), topology.Group, 3, topology.MySQL))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("group x3 single-primary deployed in %v (network %s)", time.Since(start).Round(time.Millisecond), c.Network)
	single := map[string]topology.Role{"n1": topology.RolePrimary, "n2": topology.RoleSecondary, "n3": topology.RoleSecondary}
	c = checkRoles(t, ctx, s, c.Name, single, topology.GroupSinglePrimary)
	for _, n := range c.Nodes {
		if h := c.Health(ctx, n); h != "group ONLINE "+strings.ToUpper(string(n.Role)) {
			t.Errorf("%s health %q", n.Name, h)
		}
	}

	// The group replicates, and a secondary is read-only (super_read_only, error 1290).
	if err := writeOn(ctx, c, c.Nodes[0], "CREATE DATABASE probe"); err != nil {
		t.Fatal(err)
	}
	err = writeOn(ctx, c, c.Nodes[2], "CREATE DATABASE probe3")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 {
		t.Errorf("write on secondary n3: %v, want error 1290 (super_read_only)", err)
	}
	db3, _ := c.OpenAdmin(c.Nodes[2])
	defer db3.Close()
	var found int
	for deadline := time.Now().Add(20 * time.Second); found == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		db3.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='probe'").Scan(&found)
	}
	if found != 1 {
		t.Error("the primary's write did not reach n3")
	}

	t0 := time.Now()
	if err := cluster.SwitchGroupMode(ctx, c, topology.GroupMultiPrimary); err != nil {
		t.Fatal(err)
	}
	t.Logf("switch to multi-primary took %v", time.Since(t0).Round(time.Millisecond))
	multi := map[string]topology.Role{"n1": topology.RolePrimary, "n2": topology.RolePrimary, "n3": topology.RolePrimary}
	c = checkRoles(t, ctx, s, c.Name, multi, topology.GroupMultiPrimary)
	if err := writeOn(ctx, c, c.Nodes[2], "CREATE DATABASE probe3"); err != nil {
		t.Errorf("write on n3 in multi-primary mode: %v", err)
	}

	t0 = time.Now()
	if err := cluster.SwitchGroupMode(ctx, c, topology.GroupSinglePrimary); err != nil {
		t.Fatal(err)
	}
	t.Logf("switch to single-primary took %v", time.Since(t0).Round(time.Millisecond))
	c = checkRoles(t, ctx, s, c.Name, single, topology.GroupSinglePrimary)
	// Asking for the mode the group is in changes nothing.
	if err := cluster.SwitchGroupMode(ctx, c, topology.GroupSinglePrimary); err != nil {
		t.Errorf("switch to the current mode: %v", err)
	}
	var fe *topology.FieldError
	if err := cluster.SwitchGroupMode(ctx, c, "ring"); !errors.As(err, &fe) || fe.Field != "group.mode" {
		t.Errorf("unknown mode: %v, want a FieldError on group.mode", err)
	}
}

// TestBackgroundStepFailureEndsWait: a Background step whose statement fails ends its wait
// at once with that statement's error (reported once), instead of waiting out the
// readiness timeout. Runs on a single MariaDB node, where the group wait can never be met.
func TestBackgroundStepFailureEndsWait(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "cbg"), topology.Single, 1, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	plan := topology.Plan{Steps: []topology.Step{{
		Node: "n1", Desc: "failing background step", Background: true, Wait: topology.WaitGroupOnline,
		SQL: []string{"DO SLEEP(0.3)", "SELECT no_such_function_hb()"},
	}}}
	t0 := time.Now()
	err = s.RunPlan(ctx, c, plan)
	if err == nil || !strings.Contains(err.Error(), "no_such_function_hb") || strings.Count(err.Error(), "Error 1305") != 1 {
		t.Fatalf("RunPlan = %v, want the statement's error once", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("the failing statement ended the wait after %v", d)
	}
	// A background step without the group wait is refused.
	plan.Steps[0].Wait = topology.WaitReplicaRunning
	if err := s.RunPlan(ctx, c, plan); err == nil {
		t.Error("background step with a replica wait accepted")
	}
}

// memberState reads node's own MEMBER_STATE and MEMBER_ROLE ("ONLINE PRIMARY").
func memberState(t *testing.T, ctx context.Context, c *cluster.Cluster, node string) string {
	t.Helper()
	db, err := c.OpenAdmin(c.Node(node))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, err := cluster.ReadGroupMember(ctx, db, node)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(m.State + " " + m.Role)
}
