package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// TestFaultPromote drives `habench fault` on a 3-node MariaDB async sandbox: promote n2
// while n1 runs (n1 and n3 then replicate from n2, and n2's option file keeps it
// writable), kill the writer, promote n3 with the old source down, start n2 (it comes
// back as n3's replica and gets a row written on n3 meanwhile); bad input is one line,
// exit 2, and every fault is in the cluster's faults log.
func TestFaultPromote(t *testing.T) {
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	name := testenv.Name("fp1")
	must := func(args ...string) result {
		t.Helper()
		r := habench(t, state, args...)
		if r.code != 0 {
			t.Fatalf("habench %v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
		return r
	}
	must("deploy", "--name", name, "--kind", "async", "--nodes", "3", "--flavor", "mariadb")
	sb := &cluster.Sandbox{StateDir: state}
	open := func(node string) *sql.DB {
		t.Helper()
		c, err := sb.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		db, err := c.OpenAdmin(c.Node(node))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	exec := func(node, q string) {
		t.Helper()
		if _, err := open(node).Exec(q); err != nil {
			t.Fatalf("%s: %s: %v", node, q, err)
		}
	}
	// waitRow waits until node has row id in ft.t.
	waitRow := func(node string, id int) {
		t.Helper()
		db := open(node)
		deadline := time.Now().Add(20 * time.Second)
		for {
			var n int
			if db.QueryRow("SELECT COUNT(*) FROM ft.t WHERE id=?", id).Scan(&n); n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never got row %d", node, id)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	roles := func() string {
		t.Helper()
		c, err := sb.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, n := range c.Nodes {
			s = append(s, n.Name+"="+string(n.Role))
		}
		return strings.Join(s, " ")
	}
	exec("n1", "CREATE DATABASE ft")
	exec("n1", "CREATE TABLE ft.t (id INT PRIMARY KEY)")
	exec("n1", "INSERT INTO ft.t VALUES (1)")
	waitRow("n2", 1)

	r := must("fault", "promote", "n2", "--cluster", name)
	if !strings.Contains(r.stdout, "promoted n2") || !strings.Contains(r.stdout, "old source n1 up") {
		t.Errorf("promote output: %q", r.stdout)
	}
	if got := roles(); got != "n1=replica n2=source n3=replica" {
		t.Errorf("roles after promote n2: %s", got)
	}
	exec("n2", "INSERT INTO ft.t VALUES (2)")
	waitRow("n1", 2)
	waitRow("n3", 2)
	cnf, _ := os.ReadFile(filepath.Join(state, "clusters", name, "n2", "my.cnf"))
	if v, ok := cluster.OptionLineValue(string(cnf), "read_only"); !ok || v != "OFF" {
		t.Errorf("n2's option file: read_only = %q (%v), want OFF so a restart keeps it the source", v, ok)
	}

	must("fault", "kill", "writer", "--cluster", name) // n2
	r = must("fault", "promote", "n3", "--cluster", name)
	if !strings.Contains(r.stdout, "old source n2 down") || !strings.Contains(r.stdout, "repointed when started: n2") {
		t.Errorf("promote with the old source down: %q", r.stdout)
	}
	exec("n3", "INSERT INTO ft.t VALUES (3)")
	waitRow("n1", 3)
	must("fault", "start", "n2", "--cluster", name)
	waitRow("n2", 3)
	if got := roles(); got != "n1=replica n2=replica n3=source" {
		t.Errorf("roles at the end: %s", got)
	}

	for _, bad := range [][]string{
		{"fault", "explode", "n1", "--cluster", name},
		{"fault", "kill", "n9", "--cluster", name},
		{"fault", "promote", "n3", "--cluster", name}, // the source already
		{"fault", "kill", "n1"},
	} {
		r := habench(t, state, bad...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("habench %v: exit %d, stderr %q; want exit 2 and one line", bad, r.code, r.stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(state, "clusters", name, "faults.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var f struct{ Action, Node string }
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("faults log line %q: %v", line, err)
		}
		actions = append(actions, f.Action+" "+f.Node)
	}
	if got := strings.Join(actions, ", "); !strings.HasPrefix(got, "promote n2, kill n2, promote n3, start n2") {
		t.Errorf("faults log: %s", got)
	}
	must("destroy", name)
	noClusters(t, state, name)
}

// TestConvergenceDivergedAndDown: after a run the nodes are compared by GTID position and
// CHECKSUM TABLE. A replica whose rows were changed behind replication's back (with
// sql_log_bin=0) is "diverged" with the table named, and the run fails saying so; a
// replica killed before the run is "down" at once (not after the catch-up timeout), and a
// run that killed it itself (habench fault) only warns.
func TestConvergenceDivergedAndDown(t *testing.T) {
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	name := testenv.Name("cv1")
	must := func(args ...string) result {
		t.Helper()
		r := habench(t, state, args...)
		if r.code != 0 {
			t.Fatalf("habench %v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
		return r
	}
	must("deploy", "--name", name, "--kind", "async", "--nodes", "3", "--flavor", "mariadb")
	must("sysbench", "oltp_read_only", "prepare", "--cluster", name, "--tables", "2", "--table-size", "1000")
	sb := &cluster.Sandbox{StateDir: state}
	c, err := sb.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	db, err := c.OpenAdmin(c.Node("n2"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; n != 1000 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		db.QueryRow("SELECT COUNT(*) FROM sbtest.sbtest2").Scan(&n)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET SESSION sql_log_bin=0", "UPDATE sbtest.sbtest2 SET k=k+1 WHERE id=5"} {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()

	type conv struct {
		Convergence *struct {
			Writer string
			Nodes  []struct {
				Node, State, Reason string
				Tables              []string
			}
		} `json:"convergence"`
	}
	readConv := func(dir string) map[string]string {
		t.Helper()
		sums, _ := filepath.Glob(filepath.Join(dir, "*", "summary.json"))
		if len(sums) != 1 {
			t.Fatalf("want one summary.json in %s, got %v", dir, sums)
		}
		b, _ := os.ReadFile(sums[0])
		var s conv
		if err := json.Unmarshal(b, &s); err != nil || s.Convergence == nil {
			t.Fatalf("summary.json convergence: %v\n%s", err, b)
		}
		m := map[string]string{}
		for _, n := range s.Convergence.Nodes {
			m[n.Node] = n.State + " " + strings.Join(n.Tables, ",")
		}
		return m
	}
	res := t.TempDir()
	r := habench(t, state, "sysbench", "oltp_read_only", "run", "--cluster", name, "--tables", "2", "--table-size", "1000", "--threads", "1", "--time", "1", "--results", res)
	if r.code != 1 || !strings.Contains(r.stderr, "replica n2 has the writer's GTID position but different rows in sbtest2") {
		t.Errorf("run on a diverged replica: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := readConv(res); got["n2"] != "diverged sbtest2" || got["n3"] != "converged " || got["n1"] != "converged " {
		t.Errorf("convergence: %v", got)
	}

	// Put n2 right again (same statement backwards), kill n3: "down" within seconds.
	conn, _ = db.Conn(t.Context())
	conn.ExecContext(t.Context(), "SET SESSION sql_log_bin=0")
	conn.ExecContext(t.Context(), "UPDATE sbtest.sbtest2 SET k=k-1 WHERE id=5")
	conn.Close()
	must("fault", "kill", "n3", "--cluster", name)
	res2 := t.TempDir()
	start := time.Now()
	r = habench(t, state, "sysbench", "oltp_read_only", "run", "--cluster", name, "--tables", "2", "--table-size", "1000", "--threads", "1", "--time", "1", "--results", res2)
	if took := time.Since(start); r.code != 1 || !strings.Contains(r.stderr, "replica n3 is down") || took > 60*time.Second {
		t.Errorf("run with n3 killed before it: exit %d after %v, stderr %q", r.code, took, r.stderr)
	}
	if got := readConv(res2); !strings.HasPrefix(got["n3"], "down") || got["n2"] != "converged " {
		t.Errorf("convergence with n3 down: %v", got)
	}

	// A fault of the run's own time: n3 killed during it is expected down, a warning.
	must("fault", "start", "n3", "--cluster", name)
	res3 := t.TempDir()
	done := make(chan result, 1)
	go func() {
		done <- habench(t, state, "sysbench", "oltp_read_only", "run", "--cluster", name, "--tables", "2", "--table-size", "1000", "--threads", "1", "--time", "4", "--results", res3)
	}()
	time.Sleep(2 * time.Second)
	must("fault", "kill", "n3", "--cluster", name)
	r = <-done
	if r.code != 0 || !strings.Contains(r.stdout, "WARNING: faults were injected during the run (habench fault): kill n3 at") {
		t.Errorf("run with n3 killed during it by habench fault: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if got := readConv(res3); !strings.HasPrefix(got["n3"], "down") {
		t.Errorf("convergence after the fault: %v", got)
	}
	must("destroy", name)
	noClusters(t, state, name)
}

// TestScenarioFaults: a scenario's faults: schedule kills a replica 1 s into the workload
// and starts it 3 s in; the run completes, its manifest lists both faults on the samples
// clock in order, the output warns, and the convergence check finds the restarted replica
// caught up with the same rows.
func TestScenarioFaults(t *testing.T) {
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	name := testenv.Name("sf1")
	f := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(f, []byte("name: sf\ntopologies:\n  - {name: "+name+", kind: async, nodes: 3, flavor: mariadb}\n"+
		"workload:\n  test: oltp_read_write\n  options: {tables: 2, table-size: 1000, threads: 2, time: 6}\n"+
		"faults:\n  - {at: 1s, action: kill, node: n3}\n  - {at: 3s, action: start, node: n3}\n"), 0o644)
	res := t.TempDir()
	r := habench(t, state, "run", f, "--results", res, "--quiet")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "WARNING: faults were injected during the run (habench fault): kill n3 at ") {
		t.Errorf("no fault warning:\n%s", r.stdout)
	}
	mans, _ := filepath.Glob(filepath.Join(res, "*", "*", "manifest.json"))
	sums, _ := filepath.Glob(filepath.Join(res, "*", "*", "summary.json"))
	if len(mans) != 1 || len(sums) != 1 {
		t.Fatalf("want one cell, got %v %v", mans, sums)
	}
	var man struct {
		Faults []struct {
			AtS    float64 `json:"at_s"`
			Action string  `json:"action"`
			Node   string  `json:"node"`
			Error  string  `json:"error"`
		} `json:"faults"`
		IntervalsOffsetS float64 `json:"intervals_offset_s"`
	}
	b, _ := os.ReadFile(mans[0])
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Faults) != 2 || man.Faults[0].Action != "kill" || man.Faults[1].Action != "start" || man.Faults[0].Error != "" || man.Faults[1].Error != "" {
		t.Fatalf("manifest faults: %+v", man.Faults)
	}
	// On the samples clock: the workload starts at intervals_offset_s.
	if d := man.Faults[0].AtS - man.IntervalsOffsetS; d < 0.8 || d > 2 {
		t.Errorf("kill at %.2fs, workload at %.2fs: want about 1 s after it", man.Faults[0].AtS, man.IntervalsOffsetS)
	}
	if man.Faults[1].AtS-man.Faults[0].AtS < 1.5 {
		t.Errorf("start %.2fs after the kill, want about 2 s", man.Faults[1].AtS-man.Faults[0].AtS)
	}
	var sum struct {
		Convergence struct {
			Nodes []struct{ Node, State string }
		}
	}
	b, _ = os.ReadFile(sums[0])
	json.Unmarshal(b, &sum)
	for _, n := range sum.Convergence.Nodes {
		if n.State != "converged" {
			t.Errorf("node %s %s after the restart, want converged", n.Node, n.State)
		}
	}
	if len(sum.Convergence.Nodes) != 3 {
		t.Errorf("convergence of %d nodes", len(sum.Convergence.Nodes))
	}
	noClusters(t, state, name)
}

// TestDurabilityFailoverScenario runs the shipped scenarios/durability-failover.yaml: the
// source of an async and of a semi-sync AFTER_SYNC topology (no timeout fallback) is
// killed mid-run under 1 Mbit/s links and n2 is promoted. The probe writer finds
// acknowledged commits lost on async and none on semi-sync; n2 and n3 converge.
func TestDurabilityFailoverScenario(t *testing.T) {
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	res := t.TempDir()
	r := habench(t, state, "run", "../../scenarios/durability-failover.yaml", "--results", res, "--quiet")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	type sum struct {
		Probe *struct {
			Acknowledged     int64  `json:"acknowledged"`
			LostAcknowledged int64  `json:"lost_acknowledged_commits"`
			CheckedOn        string `json:"checked_on"`
		} `json:"probe"`
		Convergence struct {
			Nodes []struct{ Node, State string }
		}
	}
	read := func(cell string) sum {
		t.Helper()
		fs, _ := filepath.Glob(filepath.Join(res, "*", "*-"+cell, "summary.json"))
		if len(fs) != 1 {
			t.Fatalf("cell %s: summary.json files %v", cell, fs)
		}
		b, _ := os.ReadFile(fs[0])
		var s sum
		if err := json.Unmarshal(b, &s); err != nil || s.Probe == nil {
			t.Fatalf("cell %s: no probe in summary.json (%v)", cell, err)
		}
		for _, n := range s.Convergence.Nodes {
			if n.Node != "n1" && n.State != "converged" {
				t.Errorf("cell %s: %s %s after the promotion", cell, n.Node, n.State)
			}
		}
		return s
	}
	as, ss := read("dfasync"), read("dfsemi")
	t.Logf("async: %d of %d acknowledged commits lost; semi-sync: %d of %d", as.Probe.LostAcknowledged, as.Probe.Acknowledged, ss.Probe.LostAcknowledged, ss.Probe.Acknowledged)
	if as.Probe.LostAcknowledged == 0 || as.Probe.CheckedOn != "n2" {
		t.Errorf("async: %+v, want acknowledged commits lost on n2", *as.Probe)
	}
	if ss.Probe.LostAcknowledged != 0 || ss.Probe.Acknowledged == 0 || ss.Probe.CheckedOn != "n2" {
		t.Errorf("semi-sync AFTER_SYNC without fallback: %+v, want none lost", *ss.Probe)
	}
	if strings.Contains(r.stdout, "(failed)") {
		t.Errorf("a fault failed:\n%s", r.stdout)
	}
	noClusters(t, state, "dfasync", "dfsemi")
}
