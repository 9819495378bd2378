package report

import (
	"strings"
	"testing"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// TestReplicationTable: sweep.md's replication section gives each point's figures as mean
// [95% CI] over its repeats, "(1 run)" without an interval, empty where the point has
// none; a sweep without any figure has no section.
func TestReplicationTable(t *testing.T) {
	lo, hi := 0.1, 0.5
	flo, fhi := 0.05, 0.25
	f := &schema.SweepFile{Summary: []*stats.Cell{
		{Topology: "g3", Group: "knob.fc=1000", Runs: []string{"a", "b"}, TPS: stats.Sample{N: 2, Mean: 105, CILo: ptr(90.0), CIHi: ptr(120.0)},
			LagAvgS: &stats.Sample{N: 2, Mean: 0.3, CILo: &lo, CIHi: &hi}, FCPaused: &stats.Sample{N: 2, Mean: 0.15, CILo: &flo, CIHi: &fhi}},
		{Topology: "g3", Group: "knob.fc=25000", Runs: []string{"c"}, TPS: stats.Sample{N: 1, Mean: 120}, BacklogMax: &stats.Sample{N: 1, Mean: 12}},
	}}
	md := SweepMarkdown(f)
	for _, want := range []string{
		"## Replication and flow control per point",
		"| g3 | knob.fc=1000 | 2 | 105.0 [90.0-120.0] | 0.300 [0.100-0.500] |  |  | 15.00 [5.00-25.00] |",
		"| g3 | knob.fc=25000 | 1 | 120.0 (1 run) |  |  | 12 (1 run) |  |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("sweep.md without %q:\n%s", want, md)
		}
	}
	f.Summary[0].LagAvgS, f.Summary[0].FCPaused, f.Summary[1].BacklogMax = nil, nil, nil
	if strings.Contains(SweepMarkdown(f), "Replication and flow control") {
		t.Error("a replication section without figures")
	}
}

func ptr(v float64) *float64 { return &v }
