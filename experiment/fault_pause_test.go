package experiment_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// TestPauseStallsAndResumes: on a real 2-node async MariaDB sandbox under oltp_write_only
// on the source, the scenario fault {at: 3s, action: pause, node: n1, duration: 2s}
// SIGSTOPs the source for 2 s. The run records it (manifest faults with took_s about 2,
// summary.json faults, report.md's Faults table), the workload stalls (report intervals
// with no commits while it is stopped, recovery_s at least 1.5 s) and recovers after
// SIGCONT (commits in the last intervals; the server is running, not stopped, at the end).
func TestPauseStallsAndResumes(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "pause"), topology.Async, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	o := smallOptions(2, 9*time.Second)
	o.Tables = 1
	// At a fixed rate, so the TPS the recovery is measured against is the rate, whatever
	// else loads the machine: saturating, run V's TPS fell from ~1450 before the pause to
	// ~650 after it as other tests started, and the stall read as never recovered.
	o.Rate = 300
	b, stdout := preparedBench(ctx, t, s, c, "oltp_write_only", o, "n1")
	b.Faults = []scenario.FaultEvent{{At: schema.Duration(3 * time.Second), Action: "pause", Node: "n1", Args: scenario.FaultArgs{"duration": "2s"}}}
	out, err := b.Run(ctx)
	t.Logf("output:\n%s", stdout.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var man struct {
		Faults []schema.RunFault `json:"faults"`
	}
	raw, err := os.ReadFile(filepath.Join(out.Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Faults) != 1 || man.Faults[0].Action != "pause" || man.Faults[0].Node != "n1" || man.Faults[0].Error != "" ||
		!man.Faults[0].Scheduled || man.Faults[0].Took < 1.95 || man.Faults[0].Took > 3 {
		t.Fatalf("manifest faults %+v, want the scheduled pause of n1 taking about 2 s", man.Faults)
	}
	at := man.Faults[0].AtS
	if len(out.Summary.Faults) != 1 {
		t.Fatalf("summary faults %+v, want one", out.Summary.Faults)
	}
	fs := out.Summary.Faults[0]
	if fs.Action != "pause" || fs.RecoveryS == nil || *fs.RecoveryS < 1.5 || *fs.RecoveryS > 5 || fs.MinTPS == nil || *fs.MinTPS > 0 {
		t.Errorf("summary fault %+v (recovery %v, min TPS %v), want a stall of about 2 s with TPS 0 and recovery", fs, deref(fs.RecoveryS), deref(fs.MinTPS))
	}
	if fs.Outage != "n1" {
		t.Errorf("summary fault outage %q, want n1's (its statements hung while it was stopped)", fs.Outage)
	}
	t.Logf("pause at %.2f s took %.2f s: recovery %v s, min TPS %v, outage of %s; outages %+v", at, man.Faults[0].Took, deref(fs.RecoveryS), deref(fs.MinTPS), fs.Outage, out.Summary.Outages)
	stalled, after := 0, 0.0
	for _, iv := range intervals(t, out.Dir) {
		if iv[0] > at+0.5 && iv[0] <= at+2.1 && iv[1] == 0 {
			stalled++ // an interval that ended while n1 was stopped, without a commit (the
			// intervals' clock and samples.csv's differ by some milliseconds)
		}
		if iv[0] > at+3.5 {
			after += iv[1]
		}
	}
	if stalled < 1 || after == 0 {
		t.Errorf("intervals: %d with TPS 0 while paused (want >= 1), TPS %.0f summed after SIGCONT (want > 0)", stalled, after)
	}
	if cv := out.Summary.Convergence; cv == nil || len(cv.Nodes) != 2 || !cv.OK() || cv.CheckedTables != 1 {
		t.Errorf("convergence %+v, want both nodes converged with 1 table checked", cv)
	}
	md, _ := os.ReadFile(filepath.Join(out.Dir, "report.md"))
	if !strings.Contains(string(md), "| pause | n1 |") {
		t.Errorf("report.md's Faults table has no pause of n1:\n%s", md)
	}
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.Node("n1").PID), "stat"))
	if err != nil || strings.Contains(string(st), ") T ") {
		t.Errorf("n1's server after the run: %q, %v; want it running, not stopped", st, err)
	}

	// A pause without duration whose resume the workload's end never reaches: the run
	// sends SIGCONT itself and warns.
	o.Time = 3 * time.Second
	b = &experiment.Bench{Workload: b.Workload, Options: o, Target: b.Target, Cluster: c, ResultsDir: t.TempDir(), Stdout: stdout,
		Injector: &experiment.Injector{Store: s},
		Faults: []scenario.FaultEvent{{At: schema.Duration(time.Second), Action: "pause", Node: "n2"},
			{At: schema.Duration(time.Minute), Action: "resume", Node: "n2"}}}
	out, err = b.Run(ctx)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	st, err = os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.Node("n2").PID), "stat"))
	if err != nil || strings.Contains(string(st), ") T ") {
		t.Errorf("n2's server after a run that ended before its resume: %q, %v; want it running, not stopped", st, err)
	}
	raw, err = os.ReadFile(filepath.Join(out.Dir, "manifest.json"))
	if err != nil || !strings.Contains(string(raw), "n2 was still paused when the run ended: habench sent it SIGCONT") {
		t.Errorf("manifest of the second run (%v) has no warning that n2 was resumed:\n%s", err, raw)
	}
}

// intervals reads intervals.csv of dir: elapsed_s and tps per row.
func intervals(t *testing.T, dir string) [][2]float64 {
	f, err := os.Open(filepath.Join(dir, "intervals.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("intervals.csv: %d rows, %v", len(rows), err)
	}
	var out [][2]float64
	for _, r := range rows[1:] {
		e, _ := strconv.ParseFloat(r[0], 64)
		tps, _ := strconv.ParseFloat(r[2], 64)
		out = append(out, [2]float64{e, tps})
	}
	return out
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
