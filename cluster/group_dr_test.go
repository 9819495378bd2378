package cluster_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// TestGroupDRPlanAndValidation (no servers): the DR replica n4 loads no Group
// Replication plugin, is super_read_only and gets a member's group_replication_* user
// option with loose_; every member lets repl read replication_group_members before the
// group is bootstrapped; n4's last step points it at n1 with managed source failover.
// Fewer than 4 nodes, multi-primary and MariaDB are refused.
func TestGroupDRPlanAndValidation(t *testing.T) {
	spec := topology.Spec{Name: "drplan", Kind: topology.GroupDR, Flavor: topology.MySQL,
		Options: map[string]string{"group_replication_member_expel_timeout": "0"}}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if spec.Nodes != 4 || spec.Group.Mode != topology.GroupSinglePrimary {
		t.Fatalf("defaults: %d nodes, mode %q; want 4, single-primary", spec.Nodes, spec.Group.Mode)
	}
	if got := fmt.Sprint(spec.Sites); got != "[{dc1 [n1 n2 n3]} {dc2 [n4]}]" {
		t.Errorf("default sites %s, want dc1 the group, dc2 the DR replica", got)
	}
	own := topology.Spec{Name: "drplan", Kind: topology.GroupDR, Nodes: 5, Flavor: topology.MySQL,
		Sites: topology.Sites{{Name: "east", Nodes: []string{"n1", "n2", "n4"}}, {Name: "west", Nodes: []string{"n3", "n5"}}}}
	own.Defaults()
	if err := own.Validate(); err != nil || own.Sites[0].Name != "east" {
		t.Errorf("the user's own sites: %v %v", own.Sites, err)
	}
	caps := topology.CapabilitiesFor(topology.MySQL, topology.V(9, 7, 4))
	addr := func(n string) (string, int) { i, _ := strconv.Atoi(n[1:]); return fmt.Sprintf("10.0.0.%d", i), 3306 }
	p, err := topology.BuildPlan(spec, caps, addr)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(n topology.NodePlan) map[string]string {
		m := map[string]string{}
		for _, o := range n.Options {
			m[o.Name] = o.Value
		}
		return m
	}
	if len(p.Nodes) != 4 || p.Nodes[3].Role != topology.RoleReplica || p.Nodes[0].Role != topology.RolePrimary {
		t.Fatalf("nodes %+v", p.Nodes)
	}
	m1, m4 := opts(p.Nodes[0]), opts(p.Nodes[3])
	if !strings.HasPrefix(m1["plugin_load_add"], "group_replication.so") || m1["group_replication_member_expel_timeout"] != "0" {
		t.Errorf("n1 options %v", m1)
	}
	if !strings.Contains(m1["loose_group_replication_group_seeds"], "10.0.0.3:") || strings.Contains(m1["loose_group_replication_group_seeds"], "10.0.0.4") {
		t.Errorf("seeds %q: want n1-n3 only", m1["loose_group_replication_group_seeds"])
	}
	if _, ok := m4["plugin_load_add"]; ok || m4["super_read_only"] != "ON" || m4["loose_group_replication_member_expel_timeout"] != "0" {
		t.Errorf("n4 options %v", m4)
	}
	// Each member's grant comes after its users and before it bootstraps or joins.
	granted, users := map[string]int{}, map[string]int{}
	for i, st := range p.Steps {
		switch {
		case strings.Contains(strings.Join(st.SQL, ";"), "GRANT SELECT ON performance_schema.replication_group_members"):
			granted[st.Node] = i
		case st.Desc == "create users and the recovery channel":
			users[st.Node] = i
		case st.Wait == topology.WaitGroupOnline:
			g, ok := granted[st.Node]
			if u, uok := users[st.Node]; !ok || !uok || g < u {
				t.Errorf("%s: %s at step %d, its grant at %d (%v), its users at %d (%v): want users, grant, then this", st.Node, st.Desc, i, g, ok, u, uok)
			}
		}
	}
	if len(granted) != 3 {
		t.Errorf("grants on %v, want the 3 members", granted)
	}
	last := p.Steps[len(p.Steps)-1]
	sqlText := strings.Join(last.SQL, "; ")
	for _, want := range []string{"SOURCE_HOST='10.0.0.1'", "SOURCE_AUTO_POSITION=1", "SOURCE_CONNECTION_AUTO_FAILOVER=1",
		"asynchronous_connection_failover_add_managed('', 'GroupReplication', '" + topology.GroupName("drplan") + "', '10.0.0.1', 3306, '', 80, 60)", "START REPLICA"} {
		if last.Node != "n4" || last.Wait != topology.WaitReplicaRunning || !strings.Contains(sqlText, want) {
			t.Errorf("last step on %s (wait %q): %s; want %s", last.Node, last.Wait, sqlText, want)
		}
	}
	if _, err := topology.BuildPlan(spec, topology.CapabilitiesFor(topology.MySQL, topology.V(8, 0, 22)), addr); err == nil {
		t.Error("MySQL 8.0.22 (no managed failover): planned")
	}
	for _, bad := range []struct {
		mutate func(*topology.Spec)
		field  string
	}{
		{func(s *topology.Spec) { s.Nodes = 3 }, "nodes"},
		{func(s *topology.Spec) { s.Group.Mode = topology.GroupMultiPrimary }, "group.mode"},
		{func(s *topology.Spec) { s.Flavor = topology.MariaDB }, "flavor"},
	} {
		s := spec
		bad.mutate(&s)
		var fe *topology.FieldError
		if err := s.Validate(); !asFieldError(err, &fe) || fe.Field != bad.field {
			t.Errorf("want a FieldError on %s, got %v", bad.field, err)
		}
	}
}

// TestGroupDRFollowsPrimary deploys a 3-member group with a DR replica (MySQL): a write
// on the primary reaches the replica; after group_replication_set_as_primary(n2) and
// after the primary is killed, the replica replicates from the new primary and has its
// writes; a restarted DR replica replicates again by itself, a restarted member rejoins.
func TestGroupDRFollowsPrimary(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "cdr"), topology.GroupDR, 4, topology.MySQL)
	// No 5 s grace before a killed primary is expelled: the election comes sooner.
	spec.Options = map[string]string{"group_replication_member_expel_timeout": "0"}
	start := time.Now()
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("group-dr 3+1 deployed in %v (network %s)", time.Since(start).Round(time.Millisecond), c.Network)
	want := map[string]topology.Role{"n1": topology.RolePrimary, "n2": topology.RoleSecondary, "n3": topology.RoleSecondary, "n4": topology.RoleReplica}
	for _, n := range c.Nodes {
		if n.Role != want[n.Name] {
			t.Errorf("%s: role %s, want %s", n.Name, n.Role, want[n.Name])
		}
	}
	if got := fmt.Sprint(c.Spec.Sites); got != "[{dc1 [n1 n2 n3]} {dc2 [n4]}]" {
		t.Errorf("sites %s, want dc1 the group, dc2 the DR replica", got)
	}
	dr := c.Node("n4")
	if h := c.Health(ctx, dr); !strings.HasPrefix(h, "io=Yes sql=Yes") || !strings.HasSuffix(h, "from n1") {
		t.Errorf("n4 health %q", h)
	}
	if got, want := c.GroupStatus(ctx), "3/3 members ONLINE, primary n1"; !strings.Contains(got, want) {
		t.Errorf("GroupStatus %q, want %q in it", got, want)
	}
	drdb, err := c.OpenAdmin(dr)
	if err != nil {
		t.Fatal(err)
	}
	defer drdb.Close()

	// caughtUp writes on node w and waits until the DR replica has w's GTID set.
	caughtUp := func(w *cluster.Node, q string) time.Duration {
		t.Helper()
		db, err := c.OpenAdmin(w)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("write on %s: %v", w.Name, err)
		}
		var gtids string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&gtids); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		for {
			var ok int
			if err := drdb.QueryRowContext(ctx, "SELECT GTID_SUBSET(?, @@GLOBAL.gtid_executed)", gtids).Scan(&ok); err == nil && ok == 1 {
				return time.Since(t0)
			}
			if time.Since(t0) > 30*time.Second {
				t.Fatalf("the DR replica lacks %s's write after 30 s: %s", w.Name, c.Health(ctx, dr))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// follows waits until the DR replica's channel replicates from node w.
	follows := func(w *cluster.Node, since time.Time) time.Duration {
		t.Helper()
		for {
			host, port, state := drChannel(ctx, drdb)
			if host == w.Host && port == w.Port && state == "ON" {
				return time.Since(since)
			}
			if time.Since(since) > 60*time.Second {
				t.Fatalf("the DR replica replicates from %s:%d (%s), not %s, 60 s after the primary change", host, port, state, w.Name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	t.Logf("write on n1 applied on the DR replica after %v", caughtUp(c.Node("n1"), "CREATE DATABASE drprobe").Round(time.Millisecond))

	// A planned switch: the group makes n2 the primary.
	var uuid string
	db2, err := c.OpenAdmin(c.Node("n2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db2.QueryRowContext(ctx, "SELECT @@server_uuid").Scan(&uuid); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	var msg sql.NullString
	if err := db2.QueryRowContext(ctx, "SELECT group_replication_set_as_primary(?)", uuid).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	db2.Close() // n2 dies below: no pooled connection to it
	w, err := c.CurrentWriter(ctx, cluster.WriterAlias)
	if err != nil || w.Name != "n2" {
		t.Fatalf("writer after set_as_primary(n2): %v %v", w, err)
	}
	t.Logf("set_as_primary(n2): the DR replica replicates from n2 after %v", follows(w, t0).Round(time.Millisecond))
	t.Logf("write on n2 applied on the DR replica after %v", caughtUp(w, "CREATE TABLE drprobe.t (id INT PRIMARY KEY)").Round(time.Millisecond))
	if h := c.Health(ctx, dr); !strings.HasSuffix(h, "from n2") {
		t.Errorf("n4 health %q, want from n2", h)
	}

	// An unplanned change: the primary n2 dies, the group elects another member.
	t0 = time.Now()
	if err := s.KillNode(c, "n2"); err != nil {
		t.Fatal(err)
	}
	var nw *cluster.Node
	for nw == nil || nw.Name == "n2" {
		if time.Since(t0) > 60*time.Second {
			t.Fatal("no new primary 60 s after the primary was killed")
		}
		time.Sleep(50 * time.Millisecond)
		nw = c.WriterNow(ctx)
	}
	elected := time.Since(t0)
	t.Logf("primary n2 killed: %s elected after %v, the DR replica replicates from it after %v", nw.Name, elected.Round(time.Millisecond), follows(nw, t0).Round(time.Millisecond))
	t.Logf("write on %s applied on the DR replica after %v", nw.Name, caughtUp(nw, "INSERT INTO drprobe.t VALUES (1)").Round(time.Millisecond))

	// The killed member rejoins as a secondary; the DR replica stays on the primary.
	if err := s.StartNode(ctx, c, "n2"); err != nil {
		t.Fatal(err)
	}
	if st := memberState(t, ctx, c, "n2"); st != "ONLINE SECONDARY" {
		t.Errorf("n2 after StartNode: %s, want ONLINE SECONDARY", st)
	}
	// A restarted DR replica replicates again by itself (no rejoin step).
	t0 = time.Now()
	if err := s.RestartNode(ctx, c, "n4"); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart of the DR replica: %v", time.Since(t0).Round(time.Millisecond))
	drdb.Close()
	if drdb, err = c.OpenAdmin(dr); err != nil {
		t.Fatal(err)
	}
	t.Logf("after the restart, a write on %s applied on the DR replica after %v", nw.Name, caughtUp(nw, "INSERT INTO drprobe.t VALUES (2)").Round(time.Millisecond))
	if c, err = s.Load(c.Name); err != nil {
		t.Fatal(err)
	}
	if r := c.Node("n4").Role; r != topology.RoleReplica {
		t.Errorf("n4 recorded as %s after the changes, want replica", r)
	}
	if err := cluster.WaitTopologyReady(ctx, c); err != nil {
		t.Errorf("WaitTopologyReady: %v", err)
	}
}

// drChannel is the DR replica's default channel: the host and port it is configured to
// replicate from and its receiver's SERVICE_STATE (ON, OFF, CONNECTING).
func drChannel(ctx context.Context, db *sql.DB) (host string, port int, state string) {
	db.QueryRowContext(ctx, `SELECT c.HOST, c.PORT, s.SERVICE_STATE FROM performance_schema.replication_connection_configuration c
 JOIN performance_schema.replication_connection_status s USING (CHANNEL_NAME) WHERE CHANNEL_NAME = ''`).Scan(&host, &port, &state)
	return host, port, state
}
