package experiment

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/workload"
)

// search runs a capacity search against a cluster whose every objective holds up to
// capacity events/s and not above; calib is the calibration's TPS (0: start given).
func search(ob *scenario.Objective, calib float64, capacity int) *capacitySearch {
	s := &capacitySearch{ob: ob}
	if ob.Start == 0 {
		s.add(schema.CapacityProbe{TPS: calib})
		s.calib = calib
	}
	for r, more := s.next(); more; r, more = s.next() {
		p := schema.CapacityProbe{Rate: r, Met: r <= capacity}
		if !p.Met {
			p.Missed = []string{"p99"}
		}
		s.add(p)
	}
	return s
}

// TestCapacitySearchConverges: from a calibration run between 1 and 4 times the
// capacity, or from a start: 20 times too low, the search ends within 8 runs (the
// calibration included) on a met rate at or below the capacity with a missed one within
// 5% above it (or the next whole rate), and names what bound it; never probing the same rate twice.
func TestCapacitySearchConverges(t *testing.T) {
	for _, capacity := range []int{7, 120, 450, 1000, 5230} {
		for _, k := range []float64{1.0, 1.1, 1.3, 2, 3, 4} {
			ob := &scenario.Objective{Precision: scenario.DefaultPrecision, MaxProbes: scenario.DefaultMaxProbes, FCPaused: -1}
			s := search(ob, k*float64(capacity), capacity)
			checkConverged(t, fmt.Sprintf("capacity %d, calibration x%.1f", capacity, k), s, capacity, 8)
		}
		ob := &scenario.Objective{Precision: 0.05, MaxProbes: 12, Start: max(1, capacity/20), FCPaused: -1}
		checkConverged(t, fmt.Sprintf("capacity %d, start %d", capacity, ob.Start), search(ob, 0, capacity), capacity, 12)
	}
}

func checkConverged(t *testing.T, name string, s *capacitySearch, capacity, runs int) {
	t.Helper()
	c := s.result()
	var rates []int
	for _, p := range c.Probes {
		rates = append(rates, p.Rate)
	}
	if !c.Converged || c.Rate > capacity || c.Missed <= capacity || (float64(c.Missed) > float64(c.Rate)*1.05+0.5 && c.Missed > c.Rate+1) || len(c.Probes) > runs || c.Note != "" {
		t.Errorf("%s: rate %d missed %d converged %v after %d runs %v (note %q), want met <= %d < missed within 5%% in <= %d runs",
			name, c.Rate, c.Missed, c.Converged, len(c.Probes), rates, c.Note, capacity, runs)
	}
	if !slices.Equal(c.BoundBy, []string{"p99"}) {
		t.Errorf("%s: bound by %v", name, c.BoundBy)
	}
	seen := map[int]bool{}
	for _, r := range rates {
		if seen[r] {
			t.Errorf("%s: rate %d probed twice: %v", name, r, rates)
		}
		seen[r] = true
	}
}

// TestCapacitySearchUnconverged: a search that never meets the objective, one that always
// does, and one out of runs each stop with a note saying so (and sweep.md prints it).
func TestCapacitySearchUnconverged(t *testing.T) {
	ob := &scenario.Objective{Precision: 0.05, MaxProbes: 8, FCPaused: -1}
	never := search(ob, 1000, 0).result()
	if never.Rate != 0 || never.Converged || !strings.Contains(never.Note, "not met at any rate probed, down to") {
		t.Errorf("never met: %+v", never)
	}
	always := search(ob, 1000, 1<<30).result()
	if always.Missed != 0 || always.Converged || !strings.Contains(always.Note, "the capacity is higher") {
		t.Errorf("always met: %+v", always)
	}
	short := &scenario.Objective{Precision: 0.01, MaxProbes: 4, FCPaused: -1}
	out := search(short, 1000, 500).result()
	if out.Converged || len(out.Probes) != 4 || !strings.Contains(out.Note, "stopped after 4 runs (max_probes 4): between") {
		t.Errorf("out of runs: %+v", out)
	}
}

// TestJudgeProbe: each objective is judged from the run's summary, with what missed it and
// by how much; a statement error misses "errors", a lost connection fails the cell.
func TestJudgeProbe(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	ob := &scenario.Objective{Latency: []scenario.LatencyBound{{Percentile: 99, Max: 50 * time.Millisecond}},
		Lag: time.Second, FCPaused: 0.05, Errors: 0.01, Precision: 0.05, MaxProbes: 8}
	good := func() *schema.Summary {
		return &schema.Summary{TPS: 99.5, TimeS: 10, Transactions: 995, IgnoredErrors: 3,
			LatencyMs: map[string]float64{"p99": 12.5}, Rate: &schema.RateSummary{Met: true},
			Nodes:  []schema.NodeLag{{Node: "n1", LagMaxS: f(0)}, {Node: "n2", LagMaxS: f(0.4)}},
			Galera: []schema.GaleraNodeSummary{{Node: "n1", PausedAvg: 0.01}, {Node: "n2", PausedAvg: 0.02}}}
	}
	p, err := judgeProbe(ob, 100, good(), nil)
	if err != nil || !p.Met || p.LatencyMs["p99"] != 12.5 || *p.LagMaxS != 0.4 || *p.FCPaused != 0.02 {
		t.Fatalf("within every bound: %+v %v", p, err)
	}
	for _, tc := range []struct {
		name   string
		change func(*schema.Summary)
		missed []string
		why    string
	}{
		{"p99", func(s *schema.Summary) { s.LatencyMs["p99"] = 63.2 }, []string{"p99"}, "p99 63.2ms > 50ms"},
		{"rate", func(s *schema.Summary) { s.Rate = &schema.RateSummary{Warning: "behind its target for 2.1 s"} }, []string{"rate"}, "rate 100/s: behind its target for 2.1 s"},
		{"lag", func(s *schema.Summary) { s.Nodes[1].LagMaxS = f(1.5) }, []string{"lag"}, "lag 1.5 s > 1s"},
		{"lag unknown", func(s *schema.Summary) { s.Nodes[1].LagUnknownS = 3 }, []string{"lag"}, "n2's lag unknown for 3.0 s"},
		{"galera fc", func(s *schema.Summary) { s.Galera[1].PausedAvg = 0.2 }, []string{"fc_paused"}, "fc_paused 20% > 5%"},
		{"group fc", func(s *schema.Summary) {
			s.Galera = nil
			s.Group = []schema.GroupMemberSummary{{Node: "n1", ThrottleTimeS: f(0.8)}}
		}, []string{"fc_paused"}, "fc_paused 8% > 5%"},
		{"fc unmeasured", func(s *schema.Summary) { s.Galera = nil }, []string{"fc_paused"}, "flow control not measured (group: the flow-control stats component)"},
		{"errors", func(s *schema.Summary) { s.IgnoredErrors = 20 }, []string{"errors"}, "ignored errors 20 in 995 transactions (2.01%) > 1%"},
		{"two", func(s *schema.Summary) { s.LatencyMs["p99"], s.Rate.Met = 70, false }, []string{"rate", "p99"}, "p99 70ms > 50ms"},
	} {
		s := good()
		tc.change(s)
		p, err := judgeProbe(ob, 100, s, nil)
		if err != nil || p.Met || !slices.Equal(p.Missed, tc.missed) || !slices.Contains(p.Why, tc.why) {
			t.Errorf("%s: met %v missed %v why %q (%v), want missed %v with %q", tc.name, p.Met, p.Missed, p.Why, err, tc.missed, tc.why)
		}
	}
	lockWait := fmt.Errorf("workload: %w", &workload.StatementError{Code: 1205, Err: errors.New("Lock wait timeout exceeded")})
	p, err = judgeProbe(ob, 100, good(), lockWait)
	if err != nil || p.Met || !slices.Equal(p.Missed, []string{"errors"}) {
		t.Errorf("statement error: %+v %v, want errors missed", p, err)
	}
	lost := fmt.Errorf("workload: %w", &workload.StatementError{Code: 2013, Err: errors.New("Lost connection")})
	if _, err := judgeProbe(ob, 100, good(), lost); !errors.Is(err, lost) {
		t.Errorf("lost connection: %v, want the cell's error", err)
	}
	if _, err := judgeProbe(ob, 100, nil, nil); err == nil {
		t.Error("no summary: no error")
	}
}
