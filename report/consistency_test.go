package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/schema"
)

func ip(n int) *int       { return &n }
func i64p(n int64) *int64 { return &n }

// consistencySweep is a 3-cell consistency sweep on one group: EVENTUAL with stale reads
// and a lost update, AFTER clean, BEFORE failed before it ran.
func consistencySweep() *schema.SweepFile {
	axis := "knob.group_replication_consistency"
	return &schema.SweepFile{Scenario: "cg", Workload: "oltp_read_write", Scale: "small",
		Axes: []schema.SweepAxis{{Name: "topology", Kind: schema.AxisTopology, Values: []string{"g3"}},
			{Name: axis, Kind: schema.AxisKnob, Values: []string{"EVENTUAL", "AFTER", "BEFORE"}}},
		Cells: []schema.CellRecord{
			{Index: 1, Topology: "g3", Axes: map[string]string{axis: "EVENTUAL"}, Values: map[string]string{axis: "EVENTUAL"},
				Status: schema.StatusDone, Dir: "c001", TPS: 101.5, LatencyMs: &schema.CellLatency{P95: 40.1},
				ReadChecks: i64p(400), StaleReads: i64p(100), Anomalies: ip(3), AnomalyTypes: map[string]int{"lost-update": 2, "G-single": 1}},
			{Index: 2, Topology: "g3", Axes: map[string]string{axis: "AFTER"}, Values: map[string]string{axis: "AFTER"},
				Status: schema.StatusDone, Dir: "c002", TPS: 60.25, LatencyMs: &schema.CellLatency{P95: 80.5},
				ReadChecks: i64p(300), StaleReads: i64p(0), Anomalies: ip(0)},
			{Index: 3, Topology: "g3", Axes: map[string]string{axis: "BEFORE"}, Status: schema.StatusPending},
		}}
}

// TestConsistencyTable: sweep.md gets one table with every cell, its knob value, TPS,
// p95, stale reads as count and %, and the anomalies by type; a sweep without read nodes
// or a checker gets none.
func TestConsistencyTable(t *testing.T) {
	f := consistencySweep()
	md := SweepMarkdown(f)
	if strings.Count(md, "## Consistency: cost and benefit") != 1 {
		t.Fatalf("sweep.md has not exactly one consistency table:\n%s", md)
	}
	table := md[strings.Index(md, "## Consistency"):]
	for _, want := range []string{
		"| cell | topology | knob.group_replication_consistency | TPS | p95 ms | stale reads | stale % | anomalies |",
		"| 1 | g3 | EVENTUAL | 101.50 | 40.10 | 100 of 400 | 25.00 | 1 G-single, 2 lost-update |",
		"| 2 | g3 | AFTER | 60.25 | 80.50 | 0 of 300 | 0.00 | none |",
		"| 3 | g3 | BEFORE | | | pending | | |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("consistency table lacks %q:\n%s", want, table)
		}
	}
	f.Cells[0].ReadChecks, f.Cells[0].StaleReads = nil, nil
	f.Cells[1].Anomalies, f.Cells[1].CheckerError = nil, "history: lost | gone"
	table = ConsistencyTable(f)
	for _, want := range []string{"| 1 | g3 | EVENTUAL | 101.50 | 40.10 | n/a | n/a |", "not checked: history: lost / gone |"} {
		if !strings.Contains(table, want) {
			t.Errorf("consistency table lacks %q:\n%s", want, table)
		}
	}
	for i := range f.Cells {
		f.Cells[i].ReadChecks, f.Cells[i].StaleReads, f.Cells[i].Anomalies, f.Cells[i].CheckerError = nil, nil, nil, ""
	}
	if md := SweepMarkdown(f); strings.Contains(md, "Consistency") {
		t.Errorf("sweep.md without read nodes or checker has a consistency table:\n%s", md)
	}
}

// TestComparisonAnomaliesColumn: comparison.md gets an anomalies column when a row has
// checker results (by type, summed over the point's runs; n/a for a row without a checker)
// and none otherwise.
func TestComparisonAnomaliesColumn(t *testing.T) {
	rows := []schema.ComparisonRow{
		{Topology: "a", Summary: &schema.Summary{TPS: 10, Checks: &schema.ChecksSummary{AnomalyCount: 2, AnomalyTypes: map[string]int{"lost-update": 2}}}},
		{Topology: "b", Summary: &schema.Summary{TPS: 12, Checks: &schema.ChecksSummary{}}},
		{Topology: "c", Summary: &schema.Summary{TPS: 12}},
		{Topology: "d", Summary: &schema.Summary{TPS: 9, Checks: &schema.ChecksSummary{Error: "no history"}}},
	}
	md := ComparisonTable(rows)
	lines := strings.Split(md, "\n")
	if !strings.Contains(lines[0], " anomalies |") || strings.Count(lines[0], "|") != strings.Count(lines[1], "|") {
		t.Fatalf("header without an anomalies column, or not as wide as its rule:\n%s", md)
	}
	for i, want := range []string{"| 2 lost-update |", "| none |", "| n/a |", "| not checked: no history |"} {
		if !strings.Contains(lines[2+i], want) {
			t.Errorf("row %d lacks %q: %s", i, want, lines[2+i])
		}
	}
	rows[0].Summary.Checks, rows[1].Summary.Checks, rows[3].Summary.Checks = nil, nil, nil
	if md := ComparisonTable(rows); strings.Contains(md, "anomalies") {
		t.Errorf("comparison without checker results has an anomalies column:\n%s", md)
	}
}

// TestPrintComparisonAnomaliesColumn: the terminal comparison gets an anomalies column
// (and its note) when a row has checker results, each row's cell as in comparison.md,
// and none otherwise.
func TestPrintComparisonAnomaliesColumn(t *testing.T) {
	rows := []schema.ComparisonRow{
		{Topology: "a", Summary: &schema.Summary{TPS: 10, Checks: &schema.ChecksSummary{AnomalyCount: 2, AnomalyTypes: map[string]int{"lost-update": 2}}}},
		{Topology: "b", Summary: &schema.Summary{TPS: 12, Checks: &schema.ChecksSummary{}}},
		{Topology: "c", Summary: &schema.Summary{TPS: 12}},
		{Topology: "d", Summary: &schema.Summary{TPS: 9, Checks: &schema.ChecksSummary{Error: "no history"}}},
	}
	var b strings.Builder
	PrintComparison(&b, rows)
	lines := strings.Split(b.String(), "\n")
	head := strings.Fields(lines[0])
	if !slices.Contains(head, "anomalies") || !strings.Contains(b.String(), "anomalies = what the checker workload's checks found") {
		t.Fatalf("terminal comparison without an anomalies column or its note:\n%s", b.String())
	}
	for i, want := range []string{"2 lost-update", "none", "n/a", "not checked: no history"} {
		if !strings.HasPrefix(strings.TrimSpace(lines[1+i]), rows[i].Topology) || !strings.Contains(lines[1+i], "  "+want+"  ") {
			t.Errorf("row %d lacks %q: %s", i, want, lines[1+i])
		}
	}
	rows[0].Summary.Checks, rows[1].Summary.Checks, rows[3].Summary.Checks = nil, nil, nil
	b.Reset()
	PrintComparison(&b, rows)
	if strings.Contains(b.String(), "anomalies") {
		t.Errorf("terminal comparison without checker results has an anomalies column:\n%s", b.String())
	}
}
