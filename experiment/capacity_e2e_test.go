package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// TestCapacitySearchSingleNode: a capacity search on a single MariaDB node (one worker,
// so it takes about one core) ends on a rate whose own run met the objective and a rate
// within 10% above it whose run missed it, both read back from their summary.json files
// here, not from the search's verdicts; it names what bound the cell, stays within
// max_probes runs, starts with a closed-loop calibration run, and sweep.md shows it.
func TestCapacitySearchSingleNode(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	sb := testenv.Store(t)
	name := testenv.Name(t, "cap")
	const p99Bound = 15.0 // ms
	y := `name: capsingle
topologies:
  - {name: ` + name + `, kind: single, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, time: 2, threads: 1, report-interval: 1}
cell: {warmup: 1s}
objective: {p99: 15ms, errors: 5%, precision: 10%}
`
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	dir, _, err := (&experiment.ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir(), Stdout: &out}).Run(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	f, err := experiment.ReadSweepFile(dir)
	if err != nil || len(f.Cells) != 1 {
		t.Fatalf("sweep file %v", err)
	}
	cell := f.Cells[0]
	c := cell.Capacity
	if cell.Status != schema.StatusDone || c == nil {
		t.Fatalf("cell %s %s, capacity %+v", cell.Status, cell.Error, c)
	}
	var rates []int
	for _, p := range c.Probes {
		rates = append(rates, p.Rate)
	}
	t.Logf("capacity %d/s, missed %d/s (%v), calibration %.0f tps, probes %v", c.Rate, c.Missed, c.BoundBy, c.CalibrationTPS, rates)
	if !c.Converged || c.Rate <= 0 || c.Missed <= c.Rate || float64(c.Missed) > float64(c.Rate)*1.1+0.5 && c.Missed > c.Rate+1 {
		t.Fatalf("not converged to 10%%: %+v", c)
	}
	if len(c.Probes) > scenario.DefaultMaxProbes || rates[0] != 0 || c.CalibrationTPS <= 0 {
		t.Errorf("runs %v (calibration %.1f tps): want a calibration run first and at most %d", rates, c.CalibrationTPS, scenario.DefaultMaxProbes)
	}
	if len(c.BoundBy) == 0 || slices.ContainsFunc(c.BoundBy, func(b string) bool { return b != "p99" && b != "rate" && b != "errors" }) {
		t.Errorf("bound by %v", c.BoundBy)
	}
	// Each run's own summary, judged here.
	for _, p := range c.Probes {
		if p.Rate != c.Rate && p.Rate != c.Missed {
			continue
		}
		var sum schema.Summary
		b, err := os.ReadFile(filepath.Join(dir, p.Dir, schema.SummaryFile))
		if err != nil || json.Unmarshal(b, &sum) != nil || sum.Rate == nil {
			t.Fatalf("probe at %d/s: summary %v", p.Rate, err)
		}
		errs := float64(sum.IgnoredErrors) / float64(max(sum.Transactions, 1))
		met := sum.Rate.Met && sum.LatencyMs["p99"] <= p99Bound && errs <= 0.05 && sum.Transactions > 0
		if sum.Rate.Target != p.Rate || met != (p.Rate == c.Rate) {
			t.Errorf("probe at %d/s: its run's target %d, rate met %v, p99 %.2f ms, errors %.3f per transaction: want met only at %d/s",
				p.Rate, sum.Rate.Target, sum.Rate.Met, sum.LatencyMs["p99"], errs, c.Rate)
		}
		if p.Rate == c.Rate && (cell.Dir != p.Dir || cell.TPS != sum.TPS) {
			t.Errorf("the cell's headline is from %s (%.1f tps), want the run at %d/s, %s (%.1f tps)", cell.Dir, cell.TPS, c.Rate, p.Dir, sum.TPS)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if err != nil || !strings.Contains(string(md), "## Capacity") || !strings.Contains(string(md), "| 1 | "+name+" |") {
		t.Errorf("sweep.md without the capacity table (%v):\n%s", err, md)
	}
	if !strings.Contains(out.String(), "capacity probe 1: calibration, closed loop") {
		t.Errorf("output without the probes' lines:\n%s", out.String())
	}
}
