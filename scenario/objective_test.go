package scenario_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/scenario"
)

// TestObjectiveParse: an objective section is read with its defaults, its latency bounds
// in percentile order, and the dry run shows the search and counts max_probes runs per
// cell in the estimate.
func TestObjectiveParse(t *testing.T) {
	y := `name: cap
topologies:
  - {name: g, kind: galera, nodes: 3, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {time: 10, warmup-time: 2}
objective:
  p99.9: 80ms
  p95: 20ms
  lag: 1500ms
  fc_paused: 5%
  errors: 0.002
  failover: true
`
	s := mustParse(t, y)
	o := s.Objective
	if o == nil {
		t.Fatal("no objective")
	}
	if len(o.Latency) != 2 || o.Latency[0].Key() != "p95" || o.Latency[0].Max != 20*time.Millisecond || o.Latency[1].Key() != "p99.9" || o.Latency[1].Max != 80*time.Millisecond {
		t.Errorf("latency bounds %+v, want p95 20ms then p99.9 80ms", o.Latency)
	}
	if o.Lag != 1500*time.Millisecond || o.FCPaused != 0.05 || o.Errors != 0.002 {
		t.Errorf("lag %v fc_paused %v errors %v", o.Lag, o.FCPaused, o.Errors)
	}
	if o.Precision != scenario.DefaultPrecision || o.MaxProbes != scenario.DefaultMaxProbes || o.Start != 0 {
		t.Errorf("defaults: precision %v max_probes %d start %d", o.Precision, o.MaxProbes, o.Start)
	}
	if got, want := o.String(), "p95 ≤ 20ms, p99.9 ≤ 80ms, lag ≤ 1.5s, fc_paused ≤ 5%, errors ≤ 0.2%, rate kept up"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
	p, err := s.Plan(scenario.ScaleFull)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p.Print(&out, nil)
	if !strings.Contains(out.String(), "capacity search per cell: the highest --rate with p95 ≤ 20ms") || !strings.Contains(out.String(), "at most 8 runs") ||
		!strings.Contains(out.String(), "then one run at the rate found with the writer killed after warmup + time, going on 40s (started again after 30s)") {
		t.Errorf("dry run without the search's line:\n%s", out.String())
	}
	if s := mustParse(t, strings.Replace(y, "failover: true", "failover: 15s", 1)); s.Objective.Failover != 15*time.Second {
		t.Errorf("failover: 15s read as %v", s.Objective.Failover)
	}
	// Without the objective the same cell is one run: the search is max_probes of them.
	plain := mustParse(t, strings.Split(y, "objective:")[0])
	pp, err := plain.Plan(scenario.ScaleFull)
	if err != nil {
		t.Fatal(err)
	}
	c, pc := p.EstimateCell(p.Cells[0]), pp.EstimateCell(pp.Cells[0])
	// 8 runs, and the failover run: warmup + time + 40 s + the per-run overhead.
	if want := 8*pc + 2*time.Second + 10*time.Second + scenario.DefaultFailoverTail + scenario.EstimatePerCell; c != want || o.Failover != scenario.DefaultFailoverTail {
		t.Errorf("estimate %v with the objective, %v without: want %v (failover %v)", c, pc, want, o.Failover)
	}
}

// TestObjectiveRefused: every objective the scenario cannot measure or search is one
// error naming the field and the value.
func TestObjectiveRefused(t *testing.T) {
	head := "name: cap\ntopologies:\n  - {name: s1, kind: single, flavor: mariadb}\n  - {name: a2, kind: async, nodes: 2, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n  options: {time: 10}\n"
	for _, tc := range []struct{ tail, want string }{
		{"objective: {lag: 1s}\n", `objective.lag "1s": topologies[0] s1 has one node`},
		{"objective: {fc_paused: 5%}\n", `objective.fc_paused "5%": topologies[0] s1 is single`},
		{"objective: {p99: fast}\n", `objective.p99 "fast": want a latency above 0`},
		{"objective: {p100: 5ms}\n", `objective.p100 "5ms": unknown objective`},
		{"objective: {latency: 5ms}\n", `objective.latency "5ms": unknown objective`},
		{"objective: {errors: 150%}\n", `objective.errors "150%": want a percentage from 0% to 100%`},
		{"objective: {p99: 5ms, max_probes: 2}\n", `objective.max_probes "2": want a whole number from 3 to 30`},
		{"objective: {p99: 5ms, precision: 0}\n", `objective.precision "0": want a percentage from 0.5% to 50%`},
		{"objective: {precision: 5%}\n", "no bound"},
		{"objective: [p99]\n", "want a mapping"},
		{"objective: {p99: 5ms}\nfaults: [{at: 5s, action: kill, node: writer}]\n", "every probe of the search would inject the faults"},
		{"objective: {p99: 5ms, failover: true}\n", `objective.failover "40s": topologies[0] s1 is single: the failover run is for a group or Galera`},
		{"objective: {p99: 5ms, failover: yes please}\n", `objective.failover "yes please": want true (the run goes on 40s after the kill), false, or how long it goes on, 5s to 10m`},
		{"objective: {p99: 5ms, failover: 1s}\n", `objective.failover "1s": want true`},
	} {
		_, err := scenario.ParseScenario([]byte(head + tc.tail))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%q: %v, want one line with %q", tc.tail, err, tc.want)
		}
	}
	for _, tc := range []struct{ opts, want string }{
		{"{time: 10, rate: 100}", `workload.options.rate "100": the objective's capacity search sets the rate`},
		{"{time: 0, events: 1000}", `workload.options.time "0s": the capacity search measures each probe over a time window`},
	} {
		y := strings.Replace(head, "{time: 10}", tc.opts, 1) + "objective: {p99: 5ms}\n"
		_, err := scenario.ParseScenario([]byte(y))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("options %s: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestFormatPercent: fractions print as short percentages, without float noise.
func TestFormatPercent(t *testing.T) {
	for f, want := range map[float64]string{0.05: "5%", 0.0014: "0.14%", 0.005: "0.5%", 0: "0%", 1: "100%", 0.123456789: "12.3457%"} {
		if got := scenario.FormatPercent(f); got != want {
			t.Errorf("FormatPercent(%v) = %q, want %q", f, got, want)
		}
	}
}
