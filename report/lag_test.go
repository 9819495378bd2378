package report

import (
	"bytes"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/habench/habench/schema"
)

// TestLagChartGapsAndLabel: a lag line is not drawn across the seconds a node could not be
// read, and its legend says how long its lag was unknown (summary.json lag_unknown_s).
func TestLagChartGapsAndLabel(t *testing.T) {
	xys := plotter.XYs{{X: 1, Y: 0}, {X: 2, Y: 0}, {X: 3, Y: 0}, {X: 13, Y: 0.005}, {X: 14, Y: 0}}
	segs := splitGaps(xys)
	if len(segs) != 2 || len(segs[0]) != 3 || segs[1][0].X != 13 {
		t.Errorf("segments %v, want 1-3 and 13-14", segs)
	}
	if got := splitGaps(xys[:3]); len(got) != 1 {
		t.Errorf("no gap: %v", got)
	}
	res, err := Load(quick)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[1] // qasync: n1, n2, n3
	r.Summary.Nodes[2].LagUnknownS = 9
	panels, _ := runPanels(r)
	var labels []string
	for _, p := range panels {
		if p.title != Panels[0].Title {
			continue
		}
		for _, l := range p.lines {
			labels = append(labels, l.label)
		}
	}
	if len(labels) != 3 || labels[2] != "n3 (unknown for 9 s)" || labels[1] != "n2" {
		t.Errorf("lag panel labels %q, want n3 with its unknown seconds", labels)
	}
}

// TestCompareSaysLagUnknown: compare's max lag of a run in which a node's lag was unknown
// for a while is called a lower bound under the table, naming the node.
func TestCompareSaysLagUnknown(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	run := func(unknown float64) *Run {
		return &Run{Name: "a", topology: map[string]any{"name": "a", "kind": "galera"}, Manifest: schema.Manifest{},
			Summary: &schema.Summary{TPS: 100, LatencyMs: map[string]float64{"avg": 1},
				Nodes: []schema.NodeLag{{Node: "n1", LagMaxS: f(0)}, {Node: "n3", LagMaxS: f(0.005), LagUnknownS: unknown}}}}
	}
	c := Compare(&Results{Runs: []*Run{run(0)}}, &Results{Runs: []*Run{run(9)}})
	var out bytes.Buffer
	c.WriteText(&out)
	if s := out.String(); !strings.Contains(s, "max lag after is a lower bound: n3 unknown for 9 s") || strings.Contains(s, "max lag before is") {
		t.Errorf("compare:\n%s", s)
	}
}
