package knob_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/habench/habench/internal/testenv/prereq"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/topology"
)

func settings(t *testing.T, ss ...string) []topology.KnobSetting {
	t.Helper()
	var out []topology.KnobSetting
	for _, s := range ss {
		k, err := topology.ParseKnob(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

// global reads @@GLOBAL.name on node n over its admin socket, independently of package knob.
func global(t *testing.T, c *cluster.Cluster, n *cluster.Node, name string) string {
	t.Helper()
	db, err := c.OpenAdmin(n)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v sql.NullString
	if err := db.QueryRow("SELECT @@GLOBAL." + name).Scan(&v); err != nil {
		t.Fatalf("node %s: %s: %v", n.Name, name, err)
	}
	return v.String
}

// snapshot reads the named variables on every node.
func snapshot(t *testing.T, c *cluster.Cluster, names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range c.Nodes {
		for _, v := range names {
			m[n.Name+"."+v] = global(t, c, n, v)
		}
	}
	return m
}

func equalMaps(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

// TestApplyReadBackRestore sets the studies' knobs on an async pair of each flavor, checks
// every node's value directly on the server, that the manifest entries say what the
// server took (the buffer pool rounded), and that Restore brings every value back.
func TestApplyReadBackRestore(t *testing.T) {
	t.Parallel()
	for _, f := range []topology.Flavor{topology.MariaDB, topology.MySQL} {
		t.Run(string(f), func(t *testing.T) {
			s := testenv.Store(t)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "kna"+string(f[:2])), topology.Async, 2, f))
			if err != nil {
				t.Fatal(err)
			}
			// knob show without names: the catalog knobs of an async cluster, not the wsrep
			// variables every MariaDB server has, nor Group Replication's.
			shown, err := knob.Show(ctx, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, v := range shown {
				names = append(names, v.Knob)
			}
			if !slices.Contains(names, "sync_binlog") || slices.ContainsFunc(names, func(n string) bool {
				return strings.HasPrefix(n, "wsrep_") || strings.HasPrefix(n, "gcs.") || strings.HasPrefix(n, "group_replication_")
			}) {
				t.Errorf("knob show on async %s: %v", f, names)
			}
			workers := c.Capabilities().ParallelWorkersVar()
			vars := []string{"sync_binlog", "innodb_flush_log_at_trx_commit", "innodb_buffer_pool_size", workers, "max_connections"}
			before := snapshot(t, c, vars...)
			ks := settings(t, "sync_binlog=7", "innodb_flush_log_at_trx_commit=2", "innodb_buffer_pool_size=200000000", "parallel_workers=3", "n2:max_connections=77")
			a, err := knob.Apply(ctx, c, ks, knob.Options{Restarter: s})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(c.Dir(), knob.PendingFile)); err != nil {
				t.Errorf("no pending record while knobs are applied: %v", err)
			}
			for _, n := range c.Nodes {
				if v := global(t, c, n, "sync_binlog"); v != "7" {
					t.Errorf("%s sync_binlog = %s", n.Name, v)
				}
				if v := global(t, c, n, "innodb_flush_log_at_trx_commit"); v != "2" {
					t.Errorf("%s innodb_flush_log_at_trx_commit = %s", n.Name, v)
				}
				if v := global(t, c, n, workers); v != "3" {
					t.Errorf("%s %s = %s", n.Name, workers, v)
				}
			}
			if v := global(t, c, c.Nodes[1], "max_connections"); v != "77" {
				t.Errorf("n2 max_connections = %s", v)
			}
			if v := global(t, c, c.Nodes[0], "max_connections"); v != before["n1.max_connections"] {
				t.Errorf("n1 max_connections changed to %s (set only on n2)", v)
			}
			rep := a.Report()
			if len(rep.Nodes) != 9 {
				t.Fatalf("%d node entries, want 4 knobs x 2 nodes + 1: %+v", len(rep.Nodes), rep.Nodes)
			}
			for _, e := range rep.Nodes {
				onServer := global(t, c, c.Node(e.Node), strings.TrimSpace(e.Variable))
				if e.Effective != onServer {
					t.Errorf("%s %s: recorded effective %q, server says %q", e.Node, e.Variable, e.Effective, onServer)
				}
				if e.Before != before[e.Node+"."+e.Variable] {
					t.Errorf("%s %s: recorded before %q, was %q", e.Node, e.Variable, e.Before, before[e.Node+"."+e.Variable])
				}
				switch e.Variable {
				case "innodb_buffer_pool_size":
					if e.Matches || e.Effective == "200000000" || e.Note == "" {
						t.Errorf("buffer pool: %+v: want the server's rounded size, Matches false and a note", e)
					}
				case workers:
					if e.Method != string(knob.MethodApplierRestart) || (e.Node == "n2") != strings.Contains(e.Note, "SQL (applier) thread stopped") {
						t.Errorf("parallel workers entry %+v", e)
					}
				default:
					if !e.Matches {
						t.Errorf("%+v does not match", e)
					}
				}
				t.Logf("%s %-32s before %-10s effective %-10s %s", e.Node, e.Variable, e.Before, e.Effective, e.Note)
			}
			// The replica still applies after its applier restart.
			if h := c.Health(ctx, c.Nodes[1]); !strings.HasPrefix(h, "io=Yes sql=Yes") {
				t.Errorf("replica after the knobs: %s", h)
			}
			if err := a.Restore(ctx); err != nil {
				t.Fatal(err)
			}
			equalMaps(t, "after restore", snapshot(t, c, vars...), before)
			rep = a.Report()
			if rep.Restored == nil || !*rep.Restored {
				t.Errorf("report restored = %v", rep.Restored)
			}
			for _, e := range rep.Nodes {
				if e.Restored == nil || *e.Restored != e.Before {
					t.Errorf("%s %s: restored %v, before %s", e.Node, e.Variable, e.Restored, e.Before)
				}
			}
			if _, err := os.Stat(filepath.Join(c.Dir(), knob.PendingFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("pending record left after restore: %v", err)
			}
		})
	}
}

// TestUnknownVariableChangesNothing: an unknown variable among valid ones is one error
// naming it (ER 1193) and nothing is changed; a value the server refuses after another
// knob was set rolls that knob back.
func TestUnknownVariableChangesNothing(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "knu"), topology.Async, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, c, "sync_binlog", "max_connections")
	_, err = knob.Apply(ctx, c, settings(t, "sync_binlog=5", "no_such_knob_var=1"), knob.Options{Restarter: s})
	var fe *topology.FieldError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "no_such_knob_var") || !strings.Contains(err.Error(), "1193") {
		t.Fatalf("unknown variable: %v, want a FieldError naming it with ER 1193", err)
	}
	t.Logf("unknown: %v", err)
	equalMaps(t, "after unknown variable", snapshot(t, c, "sync_binlog", "max_connections"), before)
	// sync_binlog is set on both nodes before max_connections='many' fails on n1.
	_, err = knob.Apply(ctx, c, settings(t, "sync_binlog=5", "max_connections=many"), knob.Options{Restarter: s})
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "max_connections=many") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("bad value: %v", err)
	}
	t.Logf("bad value: %v", err)
	equalMaps(t, "after a refused value", snapshot(t, c, "sync_binlog", "max_connections"), before)
	if _, err := os.Stat(filepath.Join(c.Dir(), knob.PendingFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pending record left after a failed apply: %v", err)
	}
	// A provider option on a server without Galera: refused before any change.
	if _, err := knob.Apply(ctx, c, settings(t, "sync_binlog=5", "gcs.fc_limit=32"), knob.Options{}); err == nil || !strings.Contains(err.Error(), "Galera") {
		t.Errorf("provider option without Galera: %v", err)
	}
	equalMaps(t, "after provider option refused", snapshot(t, c, "sync_binlog", "max_connections"), before)
}

// TestReadOnlyKnobRestartsSandbox: a variable the server refuses at runtime (back_log, ER
// 1238) goes into the node's option file and the node is restarted; other knobs set on
// that node survive the restart; Restore puts the original option file back, restarts,
// and every value is as before. Replication is running again after each restart.
func TestReadOnlyKnobRestartsSandbox(t *testing.T) {
	for _, f := range []topology.Flavor{topology.MariaDB, topology.MySQL} {
		t.Run(string(f), func(t *testing.T) { testReadOnlyKnobRestartsSandbox(t, f) })
	}
}

func testReadOnlyKnobRestartsSandbox(t *testing.T, f topology.Flavor) {
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "knr"+string(f[:2])), topology.Async, 2, f))
	if err != nil {
		t.Fatal(err)
	}
	n2 := c.Nodes[1]
	origCnf, err := c.ReadOptionFile(n2)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, c, "back_log", "sync_binlog")
	pid := n2.PID
	a, err := knob.Apply(ctx, c, settings(t, "n2:back_log=77", "sync_binlog=3"), knob.Options{Restarter: s})
	if err != nil {
		t.Fatal(err)
	}
	if n2.PID == pid {
		t.Errorf("n2 was not restarted (pid %d)", pid)
	}
	if v := global(t, c, n2, "back_log"); v != "77" {
		t.Errorf("n2 back_log = %s after restart", v)
	}
	if v := global(t, c, n2, "sync_binlog"); v != "3" {
		t.Errorf("n2 sync_binlog = %s: lost at the restart", v)
	}
	if v := global(t, c, c.Nodes[0], "back_log"); v != before["n1.back_log"] {
		t.Errorf("n1 back_log = %s, only n2 was asked", v)
	}
	for _, e := range a.Values() {
		if e.Variable == "back_log" && (e.Method != string(knob.MethodRestart) || e.Effective != "77" || !e.Matches) {
			t.Errorf("back_log entry %+v", e)
		}
	}
	if cnf, _ := c.ReadOptionFile(n2); !strings.Contains(cnf, "back_log=77") {
		t.Errorf("n2 option file lacks back_log=77:\n%s", cnf)
	}
	if h := c.Health(ctx, n2); !strings.HasPrefix(h, "io=Yes sql=Yes") {
		t.Errorf("n2 after restart: %s", h)
	}
	t0 := time.Now()
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	equalMaps(t, "after restore", snapshot(t, c, "back_log", "sync_binlog"), before)
	if cnf, _ := c.ReadOptionFile(n2); cnf != origCnf {
		t.Errorf("n2 option file not restored:\n%s\nwant\n%s", cnf, origCnf)
	}
	if h := c.Health(ctx, n2); !strings.HasPrefix(h, "io=Yes sql=Yes") {
		t.Errorf("n2 after restore: %s", h)
	}
	t.Logf("%s: restore with a restart of n2 took %v", f, time.Since(t0).Round(time.Millisecond))
}

// TestKeepPersistsToOptionFile: knob set (Keep) leaves values in place and writes them into
// the option file, so a restart keeps them.
func TestKeepPersistsToOptionFile(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "knk"), topology.Single, 1, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := knob.Apply(ctx, c, settings(t, "sync_binlog=9", "max_connections=123"), knob.Options{Keep: true, Restarter: s}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), knob.PendingFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kept knobs left a pending record: %v", err)
	}
	if err := s.RestartNode(ctx, c, "n1"); err != nil {
		t.Fatal(err)
	}
	equalMaps(t, "after restart", snapshot(t, c, "sync_binlog", "max_connections"), map[string]string{"n1.sync_binlog": "9", "n1.max_connections": "123"})
}

// deployGalera deploys a one-node Galera cluster: a MariaDB single sandbox whose option
// file then gets the wsrep options, restarted and waited for until Synced (enough for
// provider options and applier threads; the Galera topology kind comes from its own
// provider). Bootstrapping with the options from the start races the sandbox's user
// creation against the node becoming ready (ER 1047).
func deployGalera(ctx context.Context, t *testing.T, s *cluster.Store, name string) *cluster.Cluster {
	t.Helper()
	const provider = "/usr/lib/galera/libgalera_smm.so"
	if _, err := os.Stat(provider); err != nil {
		prereq.Missing(t, "%s missing (apt-get install galera-4, or `make deps`)", provider)
	}
	c, err := s.Deploy(ctx, testenv.Spec(t, name, topology.Single, 1, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	cnf, err := c.ReadOptionFile(n)
	if err != nil {
		t.Fatal(err)
	}
	cnf = cluster.SetOptionLines(cnf, []topology.Option{{Name: "wsrep_on", Value: "ON"}, {Name: "wsrep_provider", Value: provider},
		{Name: "wsrep_cluster_address", Value: "gcomm://"}, {Name: "wsrep_cluster_name", Value: name}, {Name: "innodb_autoinc_lock_mode", Value: "2"}})
	if err := c.WriteOptionFile(n, cnf); err != nil {
		t.Fatal(err)
	}
	if err := s.RestartNode(ctx, c, n.Name); err != nil {
		t.Fatal(err)
	}
	db, err := c.OpenAdmin(n)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var k, v string
		if db.QueryRow("SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'").Scan(&k, &v) == nil && v == "Synced" {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("one-node Galera not Synced after 30s (%q)", v)
		}
	}
}

// TestProviderOptions: gcs.fc_limit and gcs.fc_factor go through wsrep_provider_options,
// which changes only those keys (the whole string is read back: every other key is as
// before); wsrep_slave_threads (alias applier_threads) is set by its MariaDB name; Restore
// brings every key back to its value from before. Kept (knob set), the keys are merged into
// the option file's wsrep_provider_options and survive a restart.
func TestProviderOptions(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := deployGalera(ctx, t, s, testenv.Name(t, "kng"))
	n1 := c.Nodes[0]
	fullBefore := global(t, c, n1, "wsrep_provider_options")
	threadsBefore := global(t, c, n1, "wsrep_slave_threads")
	a, err := knob.Apply(ctx, c, settings(t, "fc_limit=33", "gcs.fc_factor=0.5", "applier_threads=4"), knob.Options{Restarter: s})
	if err != nil {
		t.Fatal(err)
	}
	fullAfter := global(t, c, n1, "wsrep_provider_options")
	before, _ := topology.ParseShownProviderOptions(fullBefore)
	after, _ := topology.ParseShownProviderOptions(fullAfter)
	if len(before) < 20 || len(after) != len(before) {
		t.Fatalf("provider options: %d keys before, %d after", len(before), len(after))
	}
	for i, o := range after {
		want := before[i].Value
		switch o.Key {
		case "gcs.fc_limit":
			want = "33"
		case "gcs.fc_factor":
			want = "0.5"
		}
		if o.Key != before[i].Key || o.Value != want {
			t.Errorf("after setting: %s = %s (was %s = %s), want %s", o.Key, o.Value, before[i].Key, before[i].Value, want)
		}
	}
	if v := global(t, c, n1, "wsrep_slave_threads"); v != "4" {
		t.Errorf("wsrep_slave_threads = %s", v)
	}
	for _, e := range a.Values() {
		if e.Method == string(knob.MethodProvider) && (e.ProviderOptions != fullAfter || !e.Matches) {
			t.Errorf("provider entry %+v: want the whole string read back and a match", e)
		}
		t.Logf("%s %s before %s effective %s (%s)", e.Node, e.Variable, e.Before, e.Effective, e.Method)
	}
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	// Galera shows a restored 1.0 as 1: every key is back, up to the spelling of numbers.
	restored, _ := topology.ParseShownProviderOptions(global(t, c, n1, "wsrep_provider_options"))
	if len(restored) != len(before) {
		t.Fatalf("%d keys after restore, %d before", len(restored), len(before))
	}
	for i, o := range restored {
		if o.Key != before[i].Key || !knob.Same(before[i].Value, o.Value) {
			t.Errorf("after restore: %s = %s, before %s = %s", o.Key, o.Value, before[i].Key, before[i].Value)
		}
	}
	if got := global(t, c, n1, "wsrep_slave_threads"); got != threadsBefore {
		t.Errorf("wsrep_slave_threads after restore %s, want %s", got, threadsBefore)
	}
	// The same server registered as an existing cluster: discovered as a Galera node, and
	// provider options work through it the same way.
	ex, err := s.Register(ctx, topology.Spec{Name: testenv.Name(t, "knxg"), ExistingSpec: topology.ExistingSpec{
		DSNs: []string{"tcp(" + n1.Addr() + ")/"}, User: c.User, Password: c.Password}})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Spec.Kind != topology.Galera || ex.Nodes[0].Role != topology.RoleNode {
		t.Errorf("discovered %s, role %s; want galera, node", ex.Spec.Kind, ex.Nodes[0].Role)
	}
	ea, err := knob.Apply(ctx, ex, settings(t, "gcs.fc_limit=48", "wsrep_applier_threads=3"), knob.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := topology.ProviderOptionValue(global(t, c, n1, "wsrep_provider_options"), "gcs.fc_limit"); v != "48" {
		t.Errorf("through the existing cluster: gcs.fc_limit = %s", v)
	}
	if err := ea.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := topology.ProviderOptionValue(global(t, c, n1, "wsrep_provider_options"), "gcs.fc_limit"); v != "16" || global(t, c, n1, "wsrep_slave_threads") != threadsBefore {
		t.Errorf("through the existing cluster, after restore: gcs.fc_limit = %s", v)
	}
	// Kept: merged into the option file, so a restart keeps it.
	if _, err := knob.Apply(ctx, c, settings(t, "gcs.fc_limit=40"), knob.Options{Keep: true, Restarter: s}); err != nil {
		t.Fatal(err)
	}
	cnf, _ := c.ReadOptionFile(n1)
	if line, _ := cluster.OptionLineValue(cnf, "wsrep_provider_options"); !strings.Contains(line, "gcs.fc_limit=40") {
		t.Errorf("option file wsrep_provider_options = %q", line)
	}
	if err := s.RestartNode(ctx, c, "n1"); err != nil {
		t.Fatal(err)
	}
	if v, _ := topology.ProviderOptionValue(global(t, c, n1, "wsrep_provider_options"), "gcs.fc_limit"); v != "40" {
		t.Errorf("gcs.fc_limit after restart = %s, want 40 from the option file", v)
	}
}

// TestGroupMemberKnobs: a one-node Group Replication group (MySQL 9.7, bootstrapped by
// hand on a single sandbox) registered as an existing cluster is discovered as group with
// a primary, in single-primary mode, and GroupStatus shows the group's own name; the flow
// control knobs and group_replication_mode are set through it, read back and restored;
// group_replication_mode with a node list and the applier parallelism on a group are
// refused before anything changes.
func TestGroupMemberKnobs(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "kngr"), topology.Single, 1, topology.MySQL)
	spec.Options = map[string]string{"plugin_load_add": "group_replication.so"}
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	db, err := c.OpenAdmin(n)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	groupName := "aaaaaaaa-1111-2222-3333-" + fmt.Sprintf("%012d", os.Getpid())
	for _, q := range []string{
		"SET GLOBAL group_replication_group_name = '" + groupName + "'",
		fmt.Sprintf("SET GLOBAL group_replication_local_address = '%s:%d'", n.Host, n.Port+10000),
		"SET GLOBAL group_replication_bootstrap_group = ON", "START GROUP_REPLICATION", "SET GLOBAL group_replication_bootstrap_group = OFF",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ex, err := s.Register(ctx, topology.Spec{Name: testenv.Name(t, "knxr"), ExistingSpec: topology.ExistingSpec{
		DSNs: []string{"tcp(" + n.Addr() + ")/"}, User: c.User, Password: c.Password}})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Spec.Kind != topology.Group || ex.Nodes[0].Role != topology.RolePrimary || ex.Spec.Group.Mode != topology.GroupSinglePrimary {
		t.Fatalf("discovered %s, role %s, mode %q; want group, primary, single-primary", ex.Spec.Kind, ex.Nodes[0].Role, ex.Spec.Group.Mode)
	}
	// The group's own name, not one derived from the registration's name.
	if got, want := ex.GroupStatus(ctx), "group "+groupName+": single-primary mode, 1/1 members ONLINE, primary n1"; got != want {
		t.Errorf("GroupStatus of the existing group:\n got %q\nwant %q", got, want)
	}
	vars := []string{"group_replication_flow_control_applier_threshold", "group_replication_flow_control_certifier_threshold", "group_replication_flow_control_mode"}
	before := snapshot(t, c, vars...)
	for _, bad := range [][]string{{"gr_fc_applier_threshold=1000", "n1:group_replication_mode=multi-primary"}, {"gr_fc_applier_threshold=1000", "replica_parallel_workers=4"}} {
		if _, err := knob.Apply(ctx, ex, settings(t, bad...), knob.Options{}); err == nil {
			t.Errorf("%v applied", bad)
		} else {
			t.Logf("refused: %v", err)
		}
		equalMaps(t, "after a refused knob", snapshot(t, c, vars...), before)
	}
	vars = append(vars, "group_replication_single_primary_mode")
	before = snapshot(t, c, vars...)
	a, err := knob.Apply(ctx, ex, settings(t, "gr_fc_applier_threshold=250000", "group_replication_flow_control_certifier_threshold=250000", "group_replication_flow_control_mode=DISABLED", "group_replication_mode=multi-primary"), knob.Options{})
	if err != nil {
		t.Fatal(err)
	}
	equalMaps(t, "applied", snapshot(t, c, vars...), map[string]string{"n1.group_replication_flow_control_applier_threshold": "250000",
		"n1.group_replication_flow_control_certifier_threshold": "250000", "n1.group_replication_flow_control_mode": "DISABLED",
		"n1.group_replication_single_primary_mode": "0"})
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	equalMaps(t, "restored", snapshot(t, c, vars...), before)
}

// TestQuotedValueStaysOneValue: a knob value is one string literal whatever the server's
// sql_mode. With NO_BACKSLASH_ESCAPES in effect (an existing server may run with it), a
// value holding \' must not end the literal early and set another variable: here it would
// set max_connections=7. The value is taken whole (with its backslash doubled in that
// mode, which the read-back reports as not matching), max_connections is untouched, and
// Restore puts init_connect back.
func TestQuotedValueStaysOneValue(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "rvkq"), topology.Single, 1, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	db, err := c.OpenAdmin(n)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',NO_BACKSLASH_ESCAPES')"); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, c, "max_connections", "init_connect")
	value := `x\', GLOBAL max_connections=7 -- `
	a, err := knob.Apply(ctx, c, []topology.KnobSetting{{Name: "init_connect", Value: value}}, knob.Options{})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if v := global(t, c, n, "max_connections"); v != before["n1.max_connections"] {
		t.Errorf("max_connections = %s, was %s: the value escaped its literal", v, before["n1.max_connections"])
	}
	if v := global(t, c, n, "init_connect"); !strings.Contains(v, "GLOBAL max_connections=7 --") {
		t.Errorf("init_connect = %q, want the whole value %q", v, value)
	}
	if err := a.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	equalMaps(t, "restored", snapshot(t, c, "max_connections", "init_connect"), before)
}

// TestSessionScopedKnobReadBack: on a MariaDB single, a variable with a session scope
// (tx_isolation) is read back in a new session too (schema.KnobValue.Session: what sessions
// opened after Apply start with), a global-only one (sync_binlog) has no session value;
// a session opened independently after Apply sees the same value.
func TestSessionScopedKnobReadBack(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "kns"), topology.Single, 1, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	a, err := knob.Apply(ctx, c, settings(t, "tx_isolation=READ-COMMITTED", "sync_binlog=3"), knob.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Restore(context.Background()) })
	seen := map[string]bool{}
	for _, v := range a.Values() {
		seen[v.Variable] = true
		switch v.Variable {
		case "tx_isolation":
			if v.Session != "READ-COMMITTED" || v.Effective != "READ-COMMITTED" || !v.Matches {
				t.Errorf("tx_isolation: %+v, want the new session's value READ-COMMITTED", v)
			}
		case "sync_binlog":
			if v.Session != "" || v.Effective != "3" {
				t.Errorf("sync_binlog: %+v, want no session value (a global-only variable)", v)
			}
		}
	}
	if !seen["tx_isolation"] || !seen["sync_binlog"] {
		t.Errorf("values %+v: want tx_isolation and sync_binlog read back", a.Values())
	}
	db, err := c.OpenAdmin(c.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got string
	if err := db.QueryRow("SELECT @@SESSION.tx_isolation").Scan(&got); err != nil || got != "READ-COMMITTED" {
		t.Errorf("a session opened after Apply: %q (%v)", got, err)
	}
}
