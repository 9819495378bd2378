package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/schema"
)

// workersOn returns how many of the run's 3 workers (one per node of n1, n2, n3 at the
// start) were on node at run time at (seconds, the moves' clock), from the moves before it.
func workersOn(moves []schema.MoveSummary, node string, at float64) int {
	on := map[string]int{"n1": 1, "n2": 1, "n3": 1}
	for _, m := range moves {
		if m.AtS < at {
			on[m.From] -= m.Workers
			on[m.To] += m.Workers
		}
	}
	return on[node]
}

// failoverRun runs the default workload at rate for secs seconds on topology row (a
// scenario's topologies: entry) with faults (a scenario's faults: lines) and extra (more
// top-level scenario lines) and checks the run: exit 0 after the planned time, the NOTE
// naming the fault noted, the faults' steps in order, and for every kill and restart (each
// inside the workload, 15 s before its end at least) a worker that left the node,
// committed elsewhere within 15 s, and the cluster's view change within 15 s, in
// summary.json and report.md. It returns the summary.
func failoverRun(t *testing.T, state, row, rate, secs, extra, faults, noted string, steps []string) schema.Summary {
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
	var sum schema.Summary
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
		if f.AtS > end-1 {
			t.Errorf("%s %s at %.2f s: the workload ended at %.2f s; every kill and restart must fall inside it (its workers' failover measured): a longer time", f.Action, f.Node, f.AtS, end)
			continue
		}
		if f.AtS > end-15 && (f.FailoverWorkers < 1 || f.ClientFailoverS == nil || f.ViewChangeS == nil) {
			// The run ended before the step's failover could complete: nothing to measure.
			t.Logf("%s %s at %.2f s: %.2f s before the workload's end, its failover not complete by then", f.Action, f.Node, f.AtS, end-f.AtS)
			continue
		}
		if n := workersOn(sum.WriterMoves, f.Node, f.AtS-0.5); n <= 0 {
			// Its worker had moved away before (its node a donor, or hung): none to move now.
			t.Logf("%s %s at %.2f s: no worker on %s then (the moves before it: %d), nothing to fail over", f.Action, f.Node, f.AtS, f.Node, n)
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
