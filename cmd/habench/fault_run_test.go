package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/habench/habench/internal/testmachine"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// TestConvergenceDivergedAndDown: after a run the nodes are compared by GTID position and
// CHECKSUM TABLE. A replica whose rows were changed behind replication's back (with
// sql_log_bin=0) is "diverged" with the table named, and the run fails saying so; a
// replica killed before the run is "down" at once (not after the catch-up timeout), and a
// run that killed it itself (habench fault) only warns.
func TestConvergenceDivergedAndDown(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	name := testenv.Name(t, "cv1")
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
	sb := &cluster.Store{StateDir: state}
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
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd, out3, err3 := startHabench(t, ctx, state, "sysbench", "oltp_read_only", "run", "--cluster", name, "--tables", "2", "--table-size", "1000", "--threads", "1", "--time", "6", "--report-interval", "1", "--results", res3)
	done := make(chan result, 1)
	go func() {
		cmd.Wait() // its exit code is ProcessState's (-1 when killed)
		done <- result{code: cmd.ProcessState.ExitCode(), stdout: out3.String(), stderr: err3.String()}
	}()
	// Once the first run's workload is under way (its first interval line): it holds the
	// cluster's run lock, and the kill below falls inside its workload.
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(out3.String(), "[ 1s ]"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run's workload did not start within 2 min:\n%s\n%s", out3.String(), err3.String())
		}
	}
	// A second run on the same cluster meanwhile is refused, naming the first.
	if r2 := habench(t, state, "sysbench", "oltp_read_only", "run", "--cluster", name, "--tables", "2", "--table-size", "1000", "--time", "1"); r2.code != 1 ||
		!strings.Contains(r2.stderr, "another run is going on (pid ") || !strings.Contains(r2.stderr, "oltp_read_only run") {
		t.Errorf("a second run on the cluster: exit %d, stderr %q", r2.code, r2.stderr)
	}
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

// TestScenarioFaults: a scenario's faults: schedule kills both replicas of a semi-sync
// source (timeout 500 ms) 1 s into the workload and starts them 2.5 s in (of 9 s: a start
// takes 1.3 to 2.5 s here, and one still going when the workload ends finishes: the run
// waits for it); the run completes, its manifest lists the faults on the samples clock in order (scheduled: the
// run's own), the output warns of the scenario's faults and of the fallback to async (how long, how many commits of all
// were acknowledged without a replica), summary.json's semisync section is degraded, each
// restarted replica has its caught-up time, and the convergence check finds both caught
// up with the same rows.
func TestScenarioFaults(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	name := testenv.Name(t, "wnsf")
	f := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(f, []byte("name: sf\ntopologies:\n  - {name: "+name+", kind: semisync, nodes: 3, flavor: mariadb, semisync: {timeout: 500ms}}\n"+
		"workload:\n  test: oltp_read_write\n  options: {tables: 2, table-size: 1000, threads: 2, rate: 100, time: 9}\n"+
		"faults:\n  - {at: 1s, action: kill, node: n2}\n  - {at: 1s, action: kill, node: n3}\n"+
		"  - {at: 2.5s, action: start, node: n2}\n  - {at: 2.5s, action: start, node: n3}\n"), 0o644)
	res := t.TempDir()
	r := habench(t, state, "run", f, "--results", res, "--quiet")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "WARNING: the scenario's faults were injected during the run: kill n2 at ") || strings.Contains(r.stdout, "habench fault") {
		t.Errorf("no warning of the scenario's own faults (or they are said to be another command's):\n%s", r.stdout)
	}
	if w := regexp.MustCompile(`WARNING: semi-sync fell back to async: OFF for \d+\.\d s in all, n1 from \d+\.\d s to .*; \d+ of \d+ commits \(\d+\.\d%\) were acknowledged to clients without any replica having them.*`).FindString(r.stdout); w == "" {
		t.Errorf("no semi-sync fallback warning:\n%s", r.stdout)
	} else {
		t.Log(w)
	}
	mans, _ := filepath.Glob(filepath.Join(res, "*", "*", "manifest.json"))
	sums, _ := filepath.Glob(filepath.Join(res, "*", "*", "summary.json"))
	if len(mans) != 1 || len(sums) != 1 {
		t.Fatalf("want one cell, got %v %v", mans, sums)
	}
	var man struct {
		Faults []struct {
			AtS       float64 `json:"at_s"`
			Action    string  `json:"action"`
			Node      string  `json:"node"`
			Error     string  `json:"error"`
			Scheduled bool    `json:"scheduled"`
		} `json:"faults"`
		IntervalsOffsetS float64 `json:"intervals_offset_s"`
		Warnings         []string
	}
	b, _ := os.ReadFile(mans[0])
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	var acts []string
	for _, f := range man.Faults {
		acts = append(acts, fmt.Sprint(f.Action, " ", f.Node, " ", f.Scheduled, f.Error))
	}
	if strings.Join(acts, ",") != "kill n2 true,kill n3 true,start n2 true,start n3 true" {
		t.Fatalf("manifest faults: %+v", man.Faults)
	}
	// On the samples clock: the workload starts at intervals_offset_s.
	if d := man.Faults[0].AtS - man.IntervalsOffsetS; d < 0.8 || d > 2 {
		t.Errorf("kill at %.2fs, workload at %.2fs: want about 1 s after it", man.Faults[0].AtS, man.IntervalsOffsetS)
	}
	if man.Faults[2].AtS-man.Faults[0].AtS < 1.2 {
		t.Errorf("start %.2fs after the kill, want about 1.5 s", man.Faults[2].AtS-man.Faults[0].AtS)
	}
	if !slices.ContainsFunc(man.Warnings, func(w string) bool { return strings.HasPrefix(w, "semi-sync fell back to async") }) {
		t.Errorf("manifest warnings %q lack the semi-sync fallback", man.Warnings)
	}
	var sum struct {
		Convergence struct {
			Nodes []struct{ Node, State string }
		}
		SemiSync *schema.SemiSyncSummary `json:"semisync"`
		Faults   []schema.FaultSummary   `json:"faults"`
	}
	b, _ = os.ReadFile(sums[0])
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("%s: %v", sums[0], err)
	}
	if len(sum.Faults) != 4 {
		t.Errorf("summary.json: %d faults %+v, want the 2 kills and 2 starts", len(sum.Faults), sum.Faults)
	}
	for _, n := range sum.Convergence.Nodes {
		if n.State != "converged" {
			t.Errorf("node %s %s after the restart, want converged", n.Node, n.State)
		}
	}
	if len(sum.Convergence.Nodes) != 3 {
		t.Errorf("convergence of %d nodes", len(sum.Convergence.Nodes))
	}
	if ss := sum.SemiSync; ss == nil || !ss.Degraded || ss.NoTx == 0 || len(ss.Off) == 0 {
		t.Errorf("semisync section %+v: want degraded, with commits acknowledged without a replica and an OFF period", ss)
	} else {
		t.Logf("semi-sync: %.0f of %.0f commits without a replica, OFF %+v", ss.NoTx, ss.NoTx+ss.YesTx, ss.Off)
	}
	for _, f := range sum.Faults {
		if f.Action == "start" && f.CaughtUpS == nil {
			t.Errorf("start %s at %.2f s: no caught-up time", f.Node, f.AtS)
		}
		t.Logf("%s %s at %.2f s: caught up after %s", f.Action, f.Node, f.AtS, fmtCaught(f.CaughtUpS))
	}
	noClusters(t, state, name)
}

func fmtCaught(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

// TestDurabilityFailoverScenario runs the shipped scenarios/durability-failover.yaml: the
// source of an async and of a semi-sync AFTER_SYNC topology (no timeout fallback) is
// killed mid-run under 1 Mbit/s links and n2 is promoted. The probe writer finds
// acknowledged commits lost on async and none on semi-sync; n2 and n3 converge.
func TestDurabilityFailoverScenario(t *testing.T) {
	testmachine.Alone(t) // it measures round trips or timing: nothing else may load the machine
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
			Failed           int64  `json:"failed"`
			Unknown          int64  `json:"unknown"`
			LostAcknowledged int64  `json:"lost_acknowledged_commits"`
			CheckedOn        string `json:"checked_on"`
			History          string `json:"history"`
		} `json:"probe"`
		Convergence struct {
			Nodes []struct{ Node, State string }
		}
		Nodes []struct {
			Node    string `json:"node"`
			RoleEnd string `json:"role_end"`
		} `json:"nodes"`
		Faults []struct {
			Action     string   `json:"action"`
			RecoveryS  *float64 `json:"recovery_s"`
			Errors     int64    `json:"errors"`
			Reconnects int64    `json:"reconnects"`
			CaughtUpS  *float64 `json:"caught_up_s"`
		} `json:"faults"`
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
		// The probe's history is in the results, and its counts are those of the summary.
		if s.Probe.History != "probe-history.jsonl" {
			t.Errorf("cell %s: probe history %q, want probe-history.jsonl", cell, s.Probe.History)
		} else if commits, lost := probeHistoryCounts(t, filepath.Join(filepath.Dir(fs[0]), s.Probe.History)); commits != s.Probe.Acknowledged+s.Probe.Failed+s.Probe.Unknown || lost != s.Probe.LostAcknowledged {
			t.Errorf("cell %s: probe history: %d commits, %d acknowledged missing from the final read; summary %+v", cell, commits, lost, *s.Probe)
		}
		if len(s.Convergence.Nodes) != 3 {
			t.Errorf("cell %s: convergence of %d nodes %+v, want n1, n2 and n3", cell, len(s.Convergence.Nodes), s.Convergence.Nodes)
		}
		for _, n := range s.Convergence.Nodes {
			if n.Node != "n1" && n.State != "converged" {
				t.Errorf("cell %s: %s %s after the promotion", cell, n.Node, n.State)
			}
		}
		// The workers follow the promote within a second (no outage), but the kill
		// disturbed the workload: its recovery is not 0; n2 is the source at the end
		// and caught up after the promote (the heartbeat followed it).
		if len(s.Faults) != 2 || s.Faults[0].RecoveryS == nil || *s.Faults[0].RecoveryS <= 0 || s.Faults[0].Errors+s.Faults[0].Reconnects == 0 {
			ivs, _ := os.ReadFile(filepath.Join(filepath.Dir(fs[0]), "intervals.csv"))
			t.Errorf("cell %s: faults %+v, want the kill's recovery > 0 with its errors; intervals.csv:\n%s", cell, s.Faults, ivs)
		} else if s.Faults[1].CaughtUpS == nil {
			t.Errorf("cell %s: the promote's caught_up_s is null", cell)
		}
		n2 := false
		for _, n := range s.Nodes {
			if n.Node == "n2" {
				n2 = true
				if n.RoleEnd != "source" {
					t.Errorf("cell %s: n2 role at the end %q, want source", cell, n.RoleEnd)
				}
			}
		}
		if len(s.Nodes) != 3 || !n2 {
			t.Errorf("cell %s: nodes %+v, want n1, n2 and n3", cell, s.Nodes)
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
	// The run's own kill and rate limits are expected: no sampler or RTT warnings.
	for _, w := range []string{"sampler failed", "link differs", "no delay requested"} {
		if strings.Contains(r.stdout+r.stderr, w) {
			t.Errorf("output has %q:\n%s\n%s", w, r.stdout, r.stderr)
		}
	}
	noClusters(t, state, "dfasync", "dfsemi")
}

// probeHistoryCounts reads a probe-history.jsonl: how many commits it has, and how many
// acknowledged ones the final read (its last operation, a read) does not have.
func probeHistoryCounts(t *testing.T, path string) (commits, lostAcknowledged int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type mop struct {
		F     string  `json:"f"`
		Value *int64  `json:"value"`
		List  []int64 `json:"list"`
	}
	var acked []int64
	var final map[int64]bool
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var op struct {
			Outcome string `json:"outcome"`
			Value   []mop  `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &op); err != nil || len(op.Value) != 1 {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		switch m := op.Value[0]; m.F {
		case "append":
			commits++
			if op.Outcome == "ok" {
				acked = append(acked, *m.Value)
			}
		case "r":
			final = map[int64]bool{}
			for _, v := range m.List {
				final[v] = true
			}
		}
	}
	if final == nil {
		t.Fatalf("%s: no final read", path)
	}
	for _, v := range acked {
		if !final[v] {
			lostAcknowledged++
		}
	}
	return commits, lostAcknowledged
}

// TestFailoverGroupAndGalera: acceptance of the fault scenarios on the two kinds with
// their own failover. A single-primary group's primary is killed mid-run: the workers
// follow the new primary (writer auto, the default), the run completes, and
// summary.json/report.md give the fault's recovery time (the writer's outage), the
// convergence (n1 down, expected) and the commits on the new primary. A Galera node that
// takes no writes is killed: the writer n1 stalls until the cluster evicts it, the run
// completes, and the recovery time is that stall. A list-append checker runs beside: on
// the group its sessions follow the writer too and commit on the new primary.
func TestFailoverGroupAndGalera(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MySQL)
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	f := filepath.Join(t.TempDir(), "s.yaml")
	gname, ganame := testenv.Name(t, "fog"), testenv.Name(t, "foa")
	os.WriteFile(f, []byte("name: failover\ntopologies:\n"+
		"  - {name: "+gname+", kind: group, nodes: 3, flavor: mysql, options: {group_replication_member_expel_timeout: \"0\"}}\n"+
		"  - {name: "+ganame+", kind: galera, nodes: 3, flavor: mariadb}\n"+
		"workload:\n  test: oltp_write_only\n  nodes: {"+ganame+": [n2]}\n  options: {tables: 2, table-size: 1000, threads: 2, rate: 100, time: 24, report-interval: 2}\n"+
		"checker: {workload: list-append, threads: 2, keys: 3, rate: 50}\n"+
		"faults:\n  - {at: 4s, action: kill, node: writer}\n"), 0o644)
	res := t.TempDir()
	r := habench(t, state, "run", f, "--results", res, "--quiet")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	type summary struct {
		Faults []struct {
			Action, Node, Outage string
			RecoveryS            *float64 `json:"recovery_s"`
		} `json:"faults"`
		PerEndpoint map[string]struct {
			Transactions int64 `json:"transactions"`
		} `json:"per_endpoint"`
		Convergence struct {
			Nodes []struct{ Node, State string }
		}
		Checks *struct {
			Ops, OK       int
			FollowsWriter bool `json:"follows_writer"`
			AnomalyCount  int  `json:"anomaly_count"`
		} `json:"checks"`
		dir string
	}
	read := func(topo string) (summary, string) {
		t.Helper()
		fs, _ := filepath.Glob(filepath.Join(res, "*", "*-"+topo, "summary.json"))
		if len(fs) != 1 {
			t.Fatalf("%s: %v", topo, fs)
		}
		var s summary
		b, _ := os.ReadFile(fs[0])
		if err := json.Unmarshal(b, &s); err != nil || len(s.Faults) != 1 {
			t.Fatalf("%s: faults %+v (%v)", topo, s.Faults, err)
		}
		s.dir = filepath.Dir(fs[0])
		md, _ := os.ReadFile(filepath.Join(filepath.Dir(fs[0]), "report.md"))
		html, _ := os.ReadFile(filepath.Join(filepath.Dir(fs[0]), "report.html"))
		if !strings.Contains(string(html), "fault: kill n1 at ") {
			t.Errorf("%s: report.html's time series do not mark the fault", topo)
		}
		return s, string(md)
	}
	g, gmd := read(gname)
	if f := g.Faults[0]; f.Node != "n1" || f.Outage != "writer" || f.RecoveryS == nil || *f.RecoveryS <= 0 || *f.RecoveryS > 20 {
		t.Errorf("group: fault %+v (recovery %v), want the writer's outage ending within 20 s", f, f.RecoveryS)
	} else {
		t.Logf("group: primary killed, workers committed on the new primary %.2f s later", *f.RecoveryS)
	}
	if g.PerEndpoint["n2"].Transactions+g.PerEndpoint["n3"].Transactions == 0 {
		t.Errorf("group: no commit on a new primary: %+v", g.PerEndpoint)
	}
	if len(g.Convergence.Nodes) != 3 {
		t.Errorf("group: convergence of %d nodes %+v, want n1 (down), n2 and n3", len(g.Convergence.Nodes), g.Convergence.Nodes)
	}
	for _, n := range g.Convergence.Nodes {
		if want := map[bool]string{true: "down", false: "converged"}[n.Node == "n1"]; n.State != want {
			t.Errorf("group: %s %s, want %s", n.Node, n.State, want)
		}
	}
	if !strings.Contains(gmd, "## Node states") || !strings.Contains(gmd, "-> PRIMARY") {
		t.Errorf("group report.md lacks n1 down and a new PRIMARY in its node states:\n%s", gmd)
	}
	if !strings.Contains(gmd, "## Faults") || !strings.Contains(gmd, "| kill | n1 |") {
		t.Errorf("group report.md lacks the fault table:\n%s", gmd)
	}
	// The checker followed the primary as the workers did: committed operations on n2 or n3.
	if g.Checks == nil || !g.Checks.FollowsWriter {
		t.Errorf("group: checks %+v, want the checker following the writer", g.Checks)
	} else {
		byNode := checkerCommitsByNode(t, g.dir)
		t.Logf("group checker: %d ops, %d ok, %d anomalies; committed by node %v", g.Checks.Ops, g.Checks.OK, g.Checks.AnomalyCount, byNode)
		if byNode["n1"] == 0 || byNode["n2"]+byNode["n3"] == 0 {
			t.Errorf("group checker: committed by node %v, want n1's before the kill and the new primary's after", byNode)
		}
	}
	// Galera: n1 (the first node, "writer") killed while the workers write on n2.
	ga, gamd := read(ganame)
	// The writes on n2 stall until the cluster evicts n1 (evs.suspect_timeout, 5 s by
	// default): an outage of at least 1 s, so the recovery is at least that long.
	if f := ga.Faults[0]; f.Node != "n1" || f.RecoveryS == nil || *f.RecoveryS < 1 || *f.RecoveryS > 20 {
		t.Errorf("galera: fault %+v (recovery %v), want n1 and n2's writes stalled for 1 s or more and back within 20 s", f, f.RecoveryS)
	}
	if ga.PerEndpoint["n2"].Transactions == 0 {
		t.Errorf("galera: no commit on n2")
	}
	if len(ga.Convergence.Nodes) != 3 {
		t.Errorf("galera: convergence of %d nodes %+v, want n1 (down), n2 and n3", len(ga.Convergence.Nodes), ga.Convergence.Nodes)
	}
	for _, n := range ga.Convergence.Nodes {
		if want := map[bool]string{true: "down", false: "converged"}[n.Node == "n1"]; n.State != want {
			t.Errorf("galera: %s %s, want %s", n.Node, n.State, want)
		}
	}
	if !strings.Contains(gamd, "## Faults") {
		t.Errorf("galera report.md lacks the fault table")
	}
	t.Logf("galera: fault %+v, recovery %s s", ga.Faults[0], fmtCaught(ga.Faults[0].RecoveryS))
	if ga.Checks == nil || ga.Checks.FollowsWriter || ga.Checks.OK == 0 {
		t.Errorf("galera: checks %+v, want committed operations on every node, no writer followed (Galera takes writes on all)", ga.Checks)
	}
	noClusters(t, state, gname, ganame)
}

// checkerCommitsByNode counts the committed operations of the history.jsonl in dir by node.
func checkerCommitsByNode(t *testing.T, dir string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var op struct{ Node, Outcome string }
		if err := json.Unmarshal([]byte(line), &op); err != nil {
			t.Fatalf("history.jsonl: %v: %s", err, line)
		}
		if op.Outcome == "ok" {
			out[op.Node]++
		}
	}
	return out
}
