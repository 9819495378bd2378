package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/results"
	"github.com/habench/habench/topology"
)

// TestClientFailoverMultiWriter (acceptance of issue 31's client failover): on a 3-node
// Galera cluster and on a 3-member multi-primary group, each run of the default workload
// (oltp_read_write on every node, one worker per node, at a low rate) has a node killed
// and started, then a rolling restart (one run per topology: a scenario refuses faults on
// a sandbox it did not deploy, and a deployment per fault would double the test). Each
// takes away nodes the workers write to: the run says it fails over, goes on to its
// planned end and exits 0; each kill and restart has, in summary.json and report.md's
// Faults table, the worker that left the node, how long it took to commit elsewhere and
// when the cluster's view lost the node; the killed node's worker went back to it once it
// was live again.
func TestClientFailoverMultiWriter(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	testenv.Installation(t, topology.MySQL)
	// Every kill and restart step falls inside the workload, 15 s before its end at least,
	// and is checked. A Galera step takes 15 s to 25 s with the suite beside it (the
	// restarted node's IST, then its catching up: a rolling restart begun at 14 s ran its
	// steps at 39, 59 and 75 s), so Galera runs 150 s at rate 20. A group member's takes
	// 20 s to 90 s on 2 shared cores: its clean stop waits 50 s (Group Replication's fixed
	// TRANSACTION_KILL_TIMEOUT) when a commit was waiting for certification as it left,
	// and its start recovers what it missed; the killed member's start (crash recovery,
	// then the group's recovery) 20 s to 40 s. So the group runs at rate 6 (fewer commits in
	// flight), without the probe writer (a commit every 5 ms on n1 would hold n1's stop 50
	// s each time) and for 240 s. The two topologies run side by side.
	cases := []struct {
		name, row, rate, time, extra string
	}{
		{testenv.Name(t, "cfga"), "kind: galera, nodes: 3, flavor: mariadb", "20", "150", ""},
		{testenv.Name(t, "cfmp"), "kind: group, nodes: 3, flavor: mysql, group: {mode: multi-primary}", "6", "240", "probe: false\n"},
	}
	testenv.SideBySide(t, []string{cases[0].name, cases[1].name}, func(t *testing.T, i int) {
		c := cases[i]
		state := stateDir(t)
		defer noClusters(t, state, c.name)
		sum := failoverRun(t, state, "{name: "+c.name+", "+c.row+"}", c.rate, c.time, c.extra,
			"  - {at: 4s, action: kill, node: n3}\n  - {at: 9s, action: start, node: n3}\n  - {at: 14s, action: rolling-restart, node: writer}\n",
			"kill n3 at 4s, rolling-restart writer at 14s", []string{"kill n3", "start n3", "restart n2", "restart n3", "restart n1"})
		back := false
		for _, m := range sum.WriterMoves {
			back = back || (m.To == "n3" && m.FirstCommitS != nil && m.AtS < sum.Faults[3].AtS)
		}
		if !back {
			t.Errorf("the killed n3's worker did not go back to it before its restart in the rolling restart: moves %+v", sum.WriterMoves)
		}
	})
}

// failoverRun runs the default workload at rate for secs seconds on topology row (a
// scenario's topologies: entry) with faults (a scenario's faults: lines) and extra (more
// top-level scenario lines) and checks the run: exit 0 after the planned time, the NOTE
// naming the fault noted, the faults' steps in order, and for every kill and restart (each
// inside the workload, 15 s before its end at least) a worker that left the node,
// committed elsewhere within 15 s, and the cluster's view change within 15 s, in
// summary.json and report.md. It returns the summary.
func failoverRun(t *testing.T, state, row, rate, secs, extra, faults, noted string, steps []string) results.Summary {
	t.Helper()
	f := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(f, []byte("name: client-failover\ntopologies:\n  - "+row+"\n"+
		"workload:\n  test: oltp_read_write\n  options: {tables: 2, table-size: 1000, threads: 3, rate: "+rate+", time: "+secs+", report-interval: 1}\n"+
		extra+"faults:\n"+faults), 0o644)
	res := t.TempDir()
	r := executeWithin(t, 10*time.Minute, []string{habenchBin, "run", f, "--results", res, "--quiet"}, "HABENCH_STATE_DIR="+state)
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "WARNING: ") || strings.HasPrefix(l, "NOTE: ") {
			t.Log(l)
		}
	}
	var sum results.Summary
	if r.code != 0 {
		t.Fatalf("run with %s: exit %d\n%s\n%s", noted, r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "NOTE: client failover: the scenario's faults take away nodes the workers write to ("+noted+")") {
		t.Errorf("no NOTE of the client failover naming %s:\n%s", noted, r.stdout)
	}
	sums, _ := filepath.Glob(filepath.Join(res, "*", "*", "summary.json"))
	if len(sums) != 1 {
		t.Fatalf("summaries %v, want one", sums)
	}
	b, _ := os.ReadFile(sums[0])
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(filepath.Dir(sums[0]), "report.md"))
	planned, _ := strconv.ParseFloat(secs, 64)
	t.Logf("%s: measured %.1f s of %s, %.1f TPS, %d reconnects, unknown outcome %d, errors %v", noted, sum.TimeS, secs, sum.TPS, sum.Reconnects, sum.UnknownOutcome, sum.ErrorsByCode)
	if sum.Error != "" || sum.TimeS < 0.98*planned {
		t.Errorf("run error %q, measured %.1f s: want the planned %s s", sum.Error, sum.TimeS, secs)
	}
	var man struct {
		IntervalsOffsetS float64 `json:"intervals_offset_s"`
	}
	b, _ = os.ReadFile(filepath.Join(filepath.Dir(sums[0]), "manifest.json"))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	end := man.IntervalsOffsetS + sum.TimeS // the workload's end on samples.csv's clock
	var got []string
	for _, f := range sum.Faults {
		got = append(got, f.Action+" "+f.Node)
		t.Logf("%-7s %s at %6.2f s: view changed after %s s, %d workers elsewhere after %s s; recovery %s s, outage %q %v, caught up %s s",
			f.Action, f.Node, f.AtS, fmtCaught(f.ViewChangeS), f.FailoverWorkers, fmtCaught(f.ClientFailoverS), fmtCaught(f.RecoveryS), f.Outage, f.ErrorsByCode, fmtCaught(f.CaughtUpS))
		if f.Action != "kill" && f.Action != "restart" {
			continue
		}
		if f.AtS > end-15 {
			t.Errorf("%s %s at %.2f s: the workload ended at %.2f s; every kill and restart must fall inside it, 15 s before its end at least (its workers' failover measured): a longer time", f.Action, f.Node, f.AtS, end)
			continue
		}
		if f.FailoverWorkers < 1 || f.ClientFailoverS == nil || *f.ClientFailoverS > 15 {
			t.Errorf("%s %s: %d workers elsewhere after %s s, want its worker committing on another node within 15 s", f.Action, f.Node, f.FailoverWorkers, fmtCaught(f.ClientFailoverS))
		}
		if f.ViewChangeS == nil || *f.ViewChangeS > 15 {
			t.Errorf("%s %s: the cluster's view change after %s s, want one within 15 s", f.Action, f.Node, fmtCaught(f.ViewChangeS))
		}
	}
	if strings.Join(got, ", ") != strings.Join(steps, ", ") {
		t.Errorf("faults %q, want %q", got, steps)
	}
	for _, m := range sum.WriterMoves {
		t.Logf("move %s -> %s at %.2f s: %d workers (%d abandoned), first commit %s, all committed %s", m.From, m.To, m.AtS, m.Workers, m.Abandoned, fmtCaught(m.FirstCommitS), fmtCaught(m.SettledS))
	}
	for _, want := range []string{"| cluster view changed after s | workers elsewhere after s |", " (1 worker) |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if p := sum.Probe; p != nil {
		t.Logf("probe: %d acknowledged, %d lost", p.Acknowledged, p.LostAcknowledged)
	}
	return sum
}
