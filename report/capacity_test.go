package report

import (
	"strings"
	"testing"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// TestCapacityTable: sweep.md's Capacity section has per cell the sustained and missed
// rates, what bound it, the measures at the sustained rate, the failover run and the note,
// then every probe; a sweep without a search has none.
func TestCapacityTable(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	sf := &schema.SweepFile{Axes: []schema.SweepAxis{{Name: "topology", Kind: schema.AxisTopology}, {Name: "knob.fc", Kind: schema.AxisKnob}},
		Cells: []schema.CellRecord{
			{Index: 1, Topology: "g3", Axes: map[string]string{"knob.fc": "1000"}, Values: map[string]string{"knob.fc": "1000/1000"}, Status: "done",
				Capacity: &schema.Capacity{Objective: "p99 ≤ 100ms, lag ≤ 1s, errors ≤ 0%, rate kept up", Rate: 410, Missed: 428, BoundBy: []string{"lag"}, Converged: true,
					Probes: []schema.CapacityProbe{{TPS: 512.3}, {Rate: 410, TPS: 409.8, Met: true, LatencyMs: map[string]float64{"p99": 41.25}, LagMaxS: f(0.31), BacklogMaxTrx: f(12)},
						{Rate: 428, TPS: 420.1, Missed: []string{"lag"}, Why: []string{"lag 1.4 s > 1s"}}},
					Failover: &schema.CapacityFailover{Rate: 410, Node: "n1", FailoverS: f(7.5), NewWriter: "n2", NewWriterS: f(6.1)}}},
			{Index: 2, Topology: "g3", Axes: map[string]string{"knob.fc": "25000"}, Status: "failed", Error: "the failover run at 300/s: 2 acknowledged commits lost"},
			{Index: 3, Topology: "g3", Axes: map[string]string{"knob.fc": "250000"}, Status: "done",
				Capacity: &schema.Capacity{Rate: 0, Missed: 12, BoundBy: []string{"p99"}, Note: "the objective was not met at any rate probed, down to 12/s (p99) after 8 runs"}},
		}}
	lo, hi := 380.0, 440.0
	sf.Summary = []*stats.Cell{{Topology: "g3", Group: "knob.fc=1000", Runs: []string{"a", "b"}, CapacityRate: &stats.Sample{N: 2, Mean: 410, CILo: &lo, CIHi: &hi}, FailoverS: &stats.Sample{N: 1, Mean: 7.5}}}
	md := SweepMarkdown(sf)
	for _, want := range []string{
		"## Capacity\n\nThe highest open-loop rate (--rate) at which every objective held over the measured window: p99 ≤ 100ms, lag ≤ 1s, errors ≤ 0%, rate kept up.",
		"| cell | topology | knob.fc | sustained /s | missed /s | bound by | at the sustained rate | failover s | runs | note |",
		"| 1 | g3 | 1000/1000 | 410 | 428 | lag | p99 41.2 ms, lag 0.31 s, backlog 12 trx | 7.50 (n1 killed; n2 named after 6.1 s) | 3 |  |",
		"| 2 | g3 | 25000 | | | | | | | failed: the failover run at 300/s: 2 acknowledged commits lost |",
		"| 3 | g3 | 250000 | none | 12 | p99 |  |  | 0 | the objective was not met at any rate probed, down to 12/s (p99) after 8 runs |",
		"| g3 | knob.fc=1000 | 2 | 410.0 [380.0-440.0] | 7.50 (1 run) |",
		"- cell 1: calibration 512.3 tps; 410/s met (409.8 tps, p99 41.2 ms, lag 0.31 s, backlog 12 trx); 428/s missed (420.1 tps): lag 1.4 s > 1s",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("sweep.md without %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "- cell 3") {
		t.Error("a probe line for a cell without probes")
	}
	sf.Cells, sf.Summary = sf.Cells[1:2], nil
	if strings.Contains(SweepMarkdown(sf), "Capacity") {
		t.Error("a Capacity section without a search")
	}
}

// TestCapacityChart: a sweep whose points carry a capacity search gets, per axis, the
// capacity chart (sustained rate and failover time) after the TPS chart, with a line per
// topology; a sweep without one gets only the TPS chart.
func TestCapacityChart(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	pts := []SweepPoint{
		{Topology: "g3", Axis: "wsrep_slave_threads", Value: "1", TPS: 320, P95Ms: 40, Capacity: f(322), FailoverS: f(6.1)},
		{Topology: "g3", Axis: "wsrep_slave_threads", Value: "4", TPS: 270, P95Ms: 35, Capacity: f(269)},
		{Topology: "g3", Axis: "wsrep_slave_threads", Value: "16", TPS: 260, P95Ms: 50, Capacity: f(263), FailoverS: f(6.4)},
	}
	cs, err := SweepCharts(pts)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Title != "sweep of wsrep_slave_threads" || cs[1].Title != "capacity against wsrep_slave_threads" || cs[1].Series != 1 ||
		!strings.Contains(cs[1].SVG, "sustained rate against wsrep_slave_threads") || !strings.Contains(cs[1].SVG, "failover time at that rate") {
		var titles []string
		for _, c := range cs {
			titles = append(titles, c.Title)
		}
		t.Fatalf("charts %v", titles)
	}
	for i := range pts {
		pts[i].Capacity, pts[i].FailoverS = nil, nil
	}
	if cs, err := SweepCharts(pts); err != nil || len(cs) != 1 {
		t.Errorf("without a search: %d charts (%v), want the TPS chart alone", len(cs), err)
	}
}
