package main

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/topology"
)

// runDir returns the one run directory under parent.
func runDir(t *testing.T, parent string) string {
	t.Helper()
	es, err := os.ReadDir(parent)
	if err != nil || len(es) != 1 {
		t.Fatalf("%s: %v entries, err %v", parent, len(es), err)
	}
	return filepath.Join(parent, es[0].Name())
}

// sampledNodes returns, per metric, the nodes that have samples in samples.csv.
func sampledNodes(t *testing.T, dir string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]string{}
	for _, r := range rows[1:] {
		if !slices.Contains(m[r[2]], r[1]) {
			m[r[2]] = append(m[r[2]], r[1])
			sort.Strings(m[r[2]])
		}
	}
	return m
}

// shape is the set of key paths of a JSON document (map keys; list elements as []).
func shape(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out[prefix+"."+k] = true
			shape(e, prefix+"."+k, out)
		}
	case []any:
		for _, e := range x {
			shape(e, prefix+"[]", out)
		}
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExistingClusterLikeSandbox (an existing cluster works as a sandbox): deploy a MariaDB async sandbox
// of 3 nodes, register the same servers as an existing cluster through TCP DSNs for the
// benchmark user, and run the same `habench sysbench oltp_read_write run` on both: the
// discovered roles equal the sandbox's, both results have samples for every node and
// summaries of the same shape. Knobs through the existing cluster are set, read back and
// restored (checked on the servers over the sandbox's own sockets); read-only knobs, link
// impairment and --links are refused on it. Destroying the existing cluster only forgets
// it: the servers keep running; then the sandbox is destroyed.
func TestExistingClusterLikeSandbox(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	sbName, exName := testenv.Name(t, "kns"), testenv.Name(t, "knx")
	must := func(args ...string) result {
		t.Helper()
		r := habench(t, state, args...)
		if r.code != 0 {
			t.Fatalf("habench %s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}
	must("deploy", "--name", sbName, "--kind", "async", "--nodes", "3", "--flavor", "mariadb")
	s := &cluster.Store{StateDir: state}
	sbx, err := s.Load(sbName)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"register", "--name", exName, "--user", sbx.User, "--password", sbx.Password}
	for _, n := range sbx.Nodes {
		args = append(args, "--dsn", fmt.Sprintf("tcp(%s)/", n.Addr()))
	}
	r := must(args...)
	if !strings.Contains(r.stdout, "registered existing cluster "+exName+": async, 3 node(s)") {
		t.Errorf("register output:\n%s", r.stdout)
	}
	ex, err := s.Load(exName)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Spec.Kind != sbx.Spec.Kind || len(ex.Nodes) != len(sbx.Nodes) {
		t.Fatalf("discovered %s with %d nodes, sandbox %s with %d", ex.Spec.Kind, len(ex.Nodes), sbx.Spec.Kind, len(sbx.Nodes))
	}
	for i, n := range ex.Nodes {
		if n.Role != sbx.Nodes[i].Role || n.Addr() != sbx.Nodes[i].Addr() {
			t.Errorf("node %s discovered %s at %s, sandbox %s at %s", n.Name, n.Role, n.Addr(), sbx.Nodes[i].Role, sbx.Nodes[i].Addr())
		}
	}
	if st := must("status", exName); !strings.Contains(st.stdout, "existing cluster") || strings.Count(st.stdout, "io=Yes sql=Yes") != 2 {
		t.Errorf("status of the existing cluster:\n%s", st.stdout)
	}

	opts := []string{"--tables", "2", "--table-size", "1000"}
	must(append([]string{"sysbench", "oltp_read_write", "prepare", "--cluster", sbName}, opts...)...)
	dirs := map[string]string{}
	for _, name := range []string{sbName, exName} {
		dirs[name] = filepath.Join(t.TempDir(), name)
		must(append([]string{"sysbench", "oltp_read_write", "run", "--cluster", name, "--threads", "2", "--time", "5", "--report-interval", "1", "--results", dirs[name]}, opts...)...)
	}
	shapes := map[string]map[string]bool{}
	for name, parent := range dirs {
		d := runDir(t, parent)
		sampled := sampledNodes(t, d)
		for _, metric := range []string{"lag_s", "heartbeat_seq_behind", "sampler_errors"} {
			if !reflect.DeepEqual(sampled[metric], []string{"n1", "n2", "n3"}) {
				t.Errorf("%s: %s sampled on %v, want every node", name, metric, sampled[metric])
			}
		}
		for _, metric := range []string{"backlog_trx", "io_running", "sql_running"} {
			if !reflect.DeepEqual(sampled[metric], []string{"n2", "n3"}) {
				t.Errorf("%s: %s sampled on %v, want the replicas", name, metric, sampled[metric])
			}
		}
		sum := readJSON(t, filepath.Join(d, "summary.json"))
		if sum["tps"].(float64) <= 0 || sum["replicas_consistent"] != true || len(sum["nodes"].([]any)) != 3 {
			t.Errorf("%s: summary tps %v consistent %v nodes %d", name, sum["tps"], sum["replicas_consistent"], len(sum["nodes"].([]any)))
		}
		shapes[name] = map[string]bool{}
		shape(sum, "", shapes[name])
		t.Logf("%s: %.1f TPS, p95 %.2f ms, %d summary keys, sampled %d metrics", name, sum["tps"], sum["latency_ms"].(map[string]any)["p95"], len(shapes[name]), len(sampled))
		man := readJSON(t, filepath.Join(d, "manifest.json"))
		if p := man["cluster"].(map[string]any)["provider"]; (name == exName) != (p == topology.ProviderExisting) {
			t.Errorf("%s: manifest provider %v", name, p)
		}
		for _, n := range man["nodes"].([]any) {
			if v := n.(map[string]any)["variables"].(map[string]any)["version"]; !strings.Contains(fmt.Sprint(v), "MariaDB") {
				t.Errorf("%s: node variables not read back: %v", name, n)
			}
		}
	}
	// Host metrics need host access: the sandbox has it (this machine), the existing
	// cluster registered without SSH has none, so only the sandbox's summary has hosts.
	if !shapes[sbName][".hosts"] || shapes[exName][".hosts"] {
		t.Errorf("summary hosts: sandbox %v, existing %v (want only the sandbox)", shapes[sbName][".hosts"], shapes[exName][".hosts"])
	}
	// Keys a summary has only when something happened (a node unreadable for a while, a
	// lag not measurable: a loaded CI-like run had both on the sandbox) are not its shape.
	eventKeys := []string{".hosts", ".node_states", ".nodes[].lag_unknown_s", ".outages"}
	for _, sh := range shapes {
		maps.DeleteFunc(sh, func(k string, _ bool) bool {
			return slices.ContainsFunc(eventKeys, func(p string) bool { return strings.HasPrefix(k, p) })
		})
	}
	if !reflect.DeepEqual(shapes[sbName], shapes[exName]) {
		t.Errorf("summary shapes differ:\nsandbox %v\nexisting %v", shapes[sbName], shapes[exName])
	}

	// Knobs through the existing cluster: set, read back, restored. Checked independently
	// on the servers over the sandbox's admin sockets.
	read := func(node int, v string) string {
		db, err := sql.Open("mysql", sbx.AdminDSN(sbx.Nodes[node]))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var s string
		if err := db.QueryRow("SELECT @@GLOBAL." + v).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := []string{read(0, "sync_binlog"), read(1, "max_connections"), read(1, "slave_parallel_threads")}
	kdir := filepath.Join(t.TempDir(), "knobs")
	r = must(append([]string{"sysbench", "oltp_read_write", "run", "--cluster", exName, "--threads", "2", "--time", "2", "--results", kdir,
		"--set", "sync_binlog=7", "--set", "n2:max_connections=77", "--set", "n2:parallel_workers=2"}, opts...)...)
	if !strings.Contains(r.stdout, "knobs (restored after the run):") || !strings.Contains(r.stdout, "n2    max_connections=77") {
		t.Errorf("run output does not show the knobs:\n%s", r.stdout)
	}
	man := readJSON(t, filepath.Join(runDir(t, kdir), "manifest.json"))
	knobs, _ := man["knobs"].(map[string]any)
	if knobs == nil || knobs["restored"] != true {
		t.Fatalf("manifest knobs: %v", knobs)
	}
	entries := knobs["nodes"].([]any)
	if len(entries) != 5 {
		t.Errorf("%d knob entries, want sync_binlog x3 + 2 on n2", len(entries))
	}
	for _, e := range entries {
		m := e.(map[string]any)
		if m["matches"] != true || m["restored"] != m["before"] {
			t.Errorf("knob entry %v", m)
		}
		if m["variable"] == "sync_binlog" && m["effective"] != "7" {
			t.Errorf("sync_binlog effective %v", m["effective"])
		}
	}
	after := []string{read(0, "sync_binlog"), read(1, "max_connections"), read(1, "slave_parallel_threads")}
	if !reflect.DeepEqual(after, before) {
		t.Errorf("values after the run %v, before %v", after, before)
	}
	if _, err := os.Stat(filepath.Join(state, "clusters", exName, "knobs-pending.json")); !os.IsNotExist(err) {
		t.Errorf("pending knob record left: %v", err)
	}

	// Refusals on the existing cluster, each one clear error line, exit 2, nothing changed.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"knob", "set", exName, "back_log=100"}, "does not restart the servers of existing cluster"},
		{[]string{"knob", "set", exName, "sync_binlog=3", "no_such_variable_x=1"}, "ER 1193"},
		{[]string{"knob", "show", exName, "sync_binlog", "no_such_variable_x"}, `NAME "no_such_variable_x": no node could read it (ER 1193)`},
		{[]string{"netem", "apply", "--cluster", exName, "--all", "1ms"}, "existing cluster"},
		{append([]string{"sysbench", "oltp_read_write", "run", "--cluster", exName, "--time", "1", "--links", "1ms"}, opts...), "existing cluster"},
	} {
		r := habench(t, state, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("habench %s: exit %d, stderr %q; want exit 2 and one line with %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
	if v := read(0, "sync_binlog"); v != before[0] {
		t.Errorf("sync_binlog %s after refused knobs, was %s", v, before[0])
	}
	if r := must("knob", "show", exName, "sync_binlog"); strings.Count(r.stdout, "sync_binlog") < 3 || !strings.Contains(r.stdout, "n1  ") {
		t.Errorf("knob show sync_binlog: want a row per node:\n%s", r.stdout)
	}

	// Forgetting the existing cluster leaves the servers running.
	r = must("destroy", exName)
	if !strings.Contains(r.stdout, "forgot existing cluster "+exName) || !strings.Contains(r.stdout, "not touched") {
		t.Errorf("destroy output: %s", r.stdout)
	}
	sbx, _ = s.Load(sbName)
	for _, n := range sbx.Nodes {
		if !n.Running() {
			t.Errorf("sandbox node %s stopped when the existing cluster was forgotten", n.Name)
		}
	}
	if st := must("status", sbName); strings.Count(st.stdout, "io=Yes sql=Yes") != 2 {
		t.Errorf("sandbox after forgetting:\n%s", st.stdout)
	}
	must("destroy", sbName)
	noClusters(t, state, sbName)
}

// TestKnobsRestoredAfterInterrupt: a run with --set (a runtime knob, and a read-only one
// that restarts n2) interrupted with SIGINT exits 130 with every value and n2's option
// file restored; while it runs, knob set on the same cluster is refused and status says
// a run holds knobs. Killed with SIGKILL instead, the run leaves knobs-pending.json and
// `habench knob restore` puts the values back.
func TestKnobsRestoredAfterInterrupt(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	name := testenv.Name(t, "kni")
	if r := habench(t, state, "deploy", "--name", name, "--kind", "async", "--nodes", "2", "--flavor", "mariadb"); r.code != 0 {
		t.Fatalf("deploy: %s", r.stderr)
	}
	opts := []string{"--tables", "1", "--table-size", "500"}
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_write", "prepare", "--cluster", name}, opts...)...); r.code != 0 {
		t.Fatalf("prepare: %s", r.stderr)
	}
	s := &cluster.Store{StateDir: state}
	c, err := s.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	read := func(node int, v string) string {
		db, err := sql.Open("mysql", c.AdminDSN(c.Nodes[node]))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var s string
		if err := db.QueryRow("SELECT @@GLOBAL." + v).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	state0 := func() []string { return []string{read(0, "sync_binlog"), read(1, "sync_binlog"), read(1, "back_log")} }
	before := state0()
	cnf0, _ := c.ReadOptionFile(c.Nodes[1])
	pending := filepath.Join(c.Dir(), "knobs-pending.json")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(habenchBin, append([]string{"sysbench", "oltp_read_write", "run", "--cluster", name, "--time", "60", "--report-interval", "1",
				"--set", "sync_binlog=7", "--set", "n2:back_log=77"}, opts...)...)
			cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
			var out syncBuffer
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(time.Minute)
			for !strings.Contains(out.String(), "[ 2s ]") {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("run did not start: %s", out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got := state0(); !reflect.DeepEqual(got, []string{"7", "7", "77"}) {
				t.Errorf("during the run: sync_binlog n1, n2, back_log n2 = %v", got)
			}
			if r := habench(t, state, "knob", "set", name, "sync_binlog=2"); r.code == 0 || !strings.Contains(r.stderr, "holds knobs") {
				t.Errorf("knob set during a run with knobs: exit %d %s", r.code, r.stderr)
			}
			if r := habench(t, state, "status", name); !strings.Contains(r.stdout, "holds knobs") {
				t.Errorf("status during the run does not say a run holds knobs:\n%s", r.stdout)
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			ee, _ := err.(*exec.ExitError)
			if sig == syscall.SIGINT {
				if ee == nil || ee.ExitCode() != 130 {
					t.Errorf("exit %v after SIGINT, want 130", err)
				}
			} else {
				if _, err := os.Stat(pending); err != nil {
					t.Fatalf("no pending record after kill -9: %v", err)
				}
				if r := habench(t, state, "status", name); !strings.Contains(r.stdout, "habench knob restore "+name) {
					t.Errorf("status after kill -9 does not point at knob restore:\n%s", r.stdout)
				}
				r := habench(t, state, "knob", "restore", name)
				if r.code != 0 || !strings.Contains(r.stdout, "RESTORED") {
					t.Fatalf("knob restore: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
			}
			if got := state0(); !reflect.DeepEqual(got, before) {
				t.Errorf("after %s: %v, before %v", sig, got, before)
			}
			if cnf, _ := c.ReadOptionFile(c.Nodes[1]); cnf != cnf0 {
				t.Errorf("n2 option file not restored after %s:\n%s", sig, cnf)
			}
			if _, err := os.Stat(pending); !os.IsNotExist(err) {
				t.Errorf("pending record left after %s: %v", sig, err)
			}
			if r := habench(t, state, "status", name); r.code != 0 || strings.Count(r.stdout, "io=Yes sql=Yes") != 1 {
				t.Errorf("status after %s:\n%s%s", sig, r.stdout, r.stderr)
			}
		})
	}
}

// TestKnobAndRegisterBadInput: malformed knobs and registrations are exit 2 with one line
// naming the field and value, before anything is contacted or written.
func TestKnobAndRegisterBadInput(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"sysbench", "oltp_read_write", "run", "--cluster", "knzz", "--set", "sync_binlog"}, []string{"--set", `"sync_binlog"`, "NAME=VALUE"}},
		{[]string{"sysbench", "oltp_read_write", "run", "--set", "sync_binlog=1"}, []string{"--set", "needs --cluster"}},
		{[]string{"sysbench", "oltp_read_write", "prepare", "--cluster", "knzz", "--set", "sync_binlog=1"}, []string{"--set", "only for run"}},
		{[]string{"sysbench", "oltp_read_write", "run", "--cluster", "knzz", "--set", "sync_binlog=1", "--set", "sync-binlog=0"}, []string{"already set by sync_binlog=1"}},
		{[]string{"knob", "set", "knzz", "x9:sync_binlog=1"}, []string{"--set", `node "x9"`}},
		{[]string{"knob", "set", "knzz", "sync_binlog=1"}, []string{`cluster "knzz"`, "no such cluster"}},
		{[]string{"knob", "set", "knzz"}, []string{"want CLUSTER and at least one NAME=VALUE"}},
		{[]string{"register", "--name", "knzz", "--dsn", "u:secretpw@tcp(192.0.2.10:3306)/"}, []string{"dsns[0]", "HABENCH_TEST_NETWORK_GUARD=1"}},
		{[]string{"register", "--name", "knzz", "--dsn", "u:secretpw@tcp(db.example.com:3306)/"}, []string{"dsns[0]", "resolves no names"}},
		{[]string{"register", "--name", "knzz"}, []string{"dsns", "need"}},
		{[]string{"register", "--dsn", "tcp(127.0.0.1:1)/"}, []string{"--name"}},
		{[]string{"register", "--name", "knzz", "--kind", "ring", "--dsn", "tcp(127.0.0.1:1)/"}, []string{`kind "ring"`}},
	} {
		r := habench(t, state, c.args...)
		line := strings.TrimSpace(r.stderr)
		ok := r.code == 2 && !strings.Contains(line, "\n") && !strings.Contains(line, "secretpw")
		for _, w := range c.want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			t.Errorf("habench %s: exit %d, stderr %q; want exit 2, one line with %q", strings.Join(c.args, " "), r.code, line, c.want)
		}
	}
	if cs, _ := (&cluster.Store{StateDir: state}).List(); len(cs) != 0 {
		t.Errorf("bad input left %d cluster(s)", len(cs))
	}
}

// TestForgetRefusedWithPendingKnobs: destroy (forget) of an existing cluster whose servers
// still carry a run's knobs (knobs-pending.json left by an interrupted run) is refused,
// alone and with --all, and the record stays so that knob restore can still put the values
// back; once the record is gone, destroy forgets the cluster. No server is needed: the
// registration is written as register writes it.
func TestForgetRefusedWithPendingKnobs(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	dir := filepath.Join(state, "clusters", "rvfk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := `{"name":"rvfk","provider":"existing","network":"existing","state":"ready","user":"u",
 "spec":{"name":"rvfk","provider":"existing","kind":"single","nodes":1,"flavor":"mariadb"},
 "binaries":{"flavor":"mariadb","version":"10.11.19","version_text":"10.11.19-MariaDB"},
 "nodes":[{"name":"n1","role":"source","host":"127.0.0.1","port":1}]}`
	pending := filepath.Join(dir, knob.PendingFile)
	for p, b := range map[string]string{filepath.Join(dir, "state.json"): st,
		pending: `{"cluster":"rvfk","pid":0,"requested":["sync_binlog=0"],"entries":[{"node":"n1","knob":"sync_binlog","target":{"Knob":"sync_binlog","Variable":"sync_binlog","Method":"set_global","Value":"0"},"before":"1","changed":true}]}`} {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"destroy", "rvfk"}, {"destroy", "--all"}} {
		r := habench(t, state, args...)
		line := strings.TrimSpace(r.stderr)
		if r.code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, `name "rvfk"`) || !strings.Contains(line, "habench knob restore rvfk") {
			t.Errorf("habench %s: exit %d, stderr %q; want exit 2 naming the cluster and knob restore", strings.Join(args, " "), r.code, line)
		}
		if _, err := os.Stat(pending); err != nil {
			t.Fatalf("after %v: %v", args, err)
		}
	}
	os.Remove(pending)
	if r := habench(t, state, "destroy", "rvfk"); r.code != 0 || !strings.Contains(r.stdout, "forgot existing cluster rvfk") {
		t.Errorf("destroy without pending knobs: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("registration left: %v", err)
	}
}

// TestSweepKeepsRegistrationWhenRestoreFails: a sweep that registered an existing cluster
// for the run (dsns) and could not restore a knob on it (its server killed during the cell)
// does not forget the cluster: the registration and its pending record stay, and the run
// fails naming the restore to run. (Before the store's destroy hooks, the sweep's forget
// went around the CLI's refusal and took the record with the registration.)
func TestSweepKeepsRegistrationWhenRestoreFails(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	srv := testserver.StartMariaDB(t)
	state := stateDir(t)
	name := testenv.Name(t, "rkr")
	scen := filepath.Join(t.TempDir(), "s.yaml")
	body := fmt.Sprintf(`name: rkr
topologies:
  - {name: %s, provider: existing, dsns: ["root@tcp(127.0.0.1:%d)/"]}
workload:
  test: oltp_read_only
  options: {tables: 1, table-size: 100, threads: 1, rate: 20, time: 60}
sweep:
  knob.max_connections: [123]
`, name, srv.Port)
	if err := os.WriteFile(scen, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(habenchBin, "run", scen, "--results", t.TempDir())
	cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Kill the server once the run has changed the knob: its pending record alone is not
	// enough (Apply writes it before it sets anything, and a server killed before the SET
	// rightly leaves nothing to restore).
	pending := filepath.Join(state, "clusters", name, knob.PendingFile)
	db := srv.Open(t, "")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var v int
		if _, err := os.Stat(pending); err == nil && db.QueryRow("SELECT @@GLOBAL.max_connections").Scan(&v) == nil && v == 123 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s and max_connections=123 within 2 min", pending)
		}
	}
	db.Close()
	srv.Kill(t)
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-done // the output is read once the process is gone
		t.Fatalf("the run did not end within 3 min of its server's kill:\n%s", stderr.String())
	}
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(stderr.String(), "not forgotten") || !strings.Contains(stderr.String(), "this run could not restore knobs max_connections=123: habench knob restore "+name) {
		t.Errorf("exit %d, stderr %q: want a failure saying the cluster was not forgotten and the restore to run", cmd.ProcessState.ExitCode(), stderr.String())
	}
	for _, f := range []string{pending, filepath.Join(state, "clusters", name, "state.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after the run: %v", err)
		}
	}
	os.Remove(pending) // the server is gone: nothing to restore
	if r := habench(t, state, "destroy", name); r.code != 0 {
		t.Errorf("destroy after removing the record: exit %d %s", r.code, r.stderr)
	}
}

// TestDriverLinesStayOffStderr: a server that drops the connection makes go-sql-driver
// log "[mysql] ... unexpected EOF" on its own line; the command's stderr is still the one
// error line (the driver's line goes to the debug log).
func TestDriverLinesStayOffStderr(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	r := habench(t, stateDir(t), "register", "--name", "rvdl", "--dsn", "u:p@tcp("+ln.Addr().String()+")/")
	line := strings.TrimSpace(r.stderr)
	if r.code != 1 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "habench: error: node n1") {
		t.Errorf("register against a server that hangs up: exit %d, stderr %q; want exit 1 and one error line", r.code, r.stderr)
	}
}

// TestDropCachesRefusedWithoutHostAccess: a scenario with cell: {drop_caches: true} over a
// registered cluster without ssh: (habench cannot reach its hosts) is refused in one line
// naming the field and the cluster before anything runs or is written; no server is
// needed (the registration is written as register writes it).
func TestDropCachesRefusedWithoutHostAccess(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	dir := filepath.Join(state, "clusters", "ckreg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := `{"name":"ckreg","provider":"existing","network":"existing","state":"ready","user":"u",
 "spec":{"name":"ckreg","provider":"existing","kind":"single","nodes":1,"flavor":"mariadb"},
 "binaries":{"flavor":"mariadb","version":"10.11.19","version_text":"10.11.19-MariaDB"},
 "nodes":[{"name":"n1","role":"source","host":"127.0.0.1","port":1}]}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(st), 0o600); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "drop.yaml")
	y := "name: ckdrop\ntopologies:\n  - {provider: existing, cluster: ckreg}\ncell: {drop_caches: true}\nworkload: {test: oltp_read_write}\n"
	if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(t.TempDir(), "res")
	r := habench(t, state, "run", f, "--results", res, "--quiet")
	line := strings.TrimSpace(r.stderr)
	if r.code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, `cell.drop_caches "true"`) || !strings.Contains(line, "ckreg") || !strings.Contains(line, "ssh") {
		t.Errorf("exit %d, stderr %q: want exit 2, one line naming cell.drop_caches, the cluster and its missing ssh:", r.code, line)
	}
	t.Logf("refused: %s", line)
	if entries, _ := os.ReadDir(res); len(entries) != 0 {
		t.Errorf("results written: %v", entries)
	}
}
