package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/schema"
)

// sweepMixed turns sweep10's records into a sweep that went badly: cell 4 failed (an
// error with a '|'), cell 9 was interrupted, cell 10 never ran, cells 2 and 5 have
// warnings (one shared), so the goldens cover every branch of sweep.md.
func sweepMixed(f *schema.SweepFile) {
	c := f.Cells
	c[3].Status, c[3].Error = schema.StatusFailed, "sysbench exited 1 | lost connection"
	c[9] = schema.CellRecord{Index: c[9].Index, Axes: c[9].Axes, Topology: c[9].Topology, Kind: c[9].Kind, Flavor: c[9].Flavor, Test: c[9].Test, Threads: c[9].Threads, Links: c[9].Links, Status: schema.StatusPending}
	c[8].Status, c[8].Error = schema.StatusFailed, "interrupted"
	esc := "fault stop n1: escalated to SIGKILL (a crash)"
	c[1].Warnings = []string{esc, "restart: n2 slow"}
	c[4].Warnings = []string{esc}
}

// TestSweepMarkdownGolden: sweep.md rendered from testdata/sweep10's sweep.json (as
// written, and sweepMixed's) is byte for byte the golden, which the sweep executor's own
// renderer (experiment.sweepMarkdown, commit c581123) wrote before it moved here.
func TestSweepMarkdownGolden(t *testing.T) {
	for _, variant := range []string{"sweep10", "sweep10-mixed"} {
		f, err := schema.ReadSweep(filepath.Join("testdata", "sweep10"))
		if err != nil {
			t.Fatal(err)
		}
		if variant == "sweep10-mixed" {
			sweepMixed(f)
		}
		want, err := os.ReadFile(filepath.Join("testdata", "sweepmd", variant+".sweep.md"))
		if err != nil {
			t.Fatal(err)
		}
		if got := SweepMarkdown(f); got != string(want) {
			t.Errorf("%s: sweep.md differs from the golden:\n%s\nwant:\n%s", variant, got, want)
		}
	}
}

// TestSweepMarkdownWarnings: sweep.md lists the cells' warnings, each distinct one once
// with the cells it happened in, and has no section without any.
func TestSweepMarkdownWarnings(t *testing.T) {
	esc := "fault stop n1: escalated to SIGKILL (a crash)"
	cells := []schema.CellRecord{{Index: 1}, {Index: 2, Warnings: []string{esc, "restart: n2 slow"}}, {Index: 3, Warnings: []string{esc}}}
	got := cellWarnings(cells)
	want := "\n## Warnings\n\n- ⚠ cells 2, 3: " + esc + "\n- ⚠ cell 2: restart: n2 slow\n"
	if got != want {
		t.Errorf("cellWarnings:\n%q\nwant\n%q", got, want)
	}
	if got := cellWarnings(cells[:1]); got != "" {
		t.Errorf("no warnings: %q, want no section", got)
	}
}

// TestComparisonMarkdownGolden: comparison.md rendered from testdata/sweep10's results
// files alone (sweep.json and comparison.json, read by ReadComparison) is byte for byte
// the golden the sweep executor's own renderer (experiment.comparisonMarkdown, commit
// c581123) wrote from its in-memory rows before it moved here.
func TestComparisonMarkdownGolden(t *testing.T) {
	dir := filepath.Join("testdata", "sweep10")
	f, err := schema.ReadSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadComparison(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 || rows[0].Group != "knob.durability=1/1" {
		t.Fatalf("comparison.json: %d rows, first group %q; want 10 rows in group knob.durability=1/1", len(rows), rows[0].Group)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "sweepmd", "sweep10.comparison.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ComparisonMarkdown(f, rows); got != string(want) {
		t.Errorf("comparison.md differs from the golden:\n%s\nwant:\n%s", got, want)
	}
}

// TestComparisonMarkdownLinksAndMissing: comparison.md names the standing links from
// sweep.json's links, explains a links axis and its same-path control, and says which
// topology of sweep.json's first axis has no row; ReadComparison of a directory without
// comparison.json names the file.
func TestComparisonMarkdownLinksAndMissing(t *testing.T) {
	f := &schema.SweepFile{Scenario: "lk", Baseline: "a", Workload: "oltp_read_write", Scale: "small", Links: "delay=5ms",
		Axes: []schema.SweepAxis{{Name: "topology", Kind: schema.AxisTopology, Values: []string{"a", "b"}}, {Name: "links", Kind: schema.AxisLinks, Values: []string{"none", "delay=5ms"}}}}
	rows := []schema.ComparisonRow{{Topology: "a", Cell: 1, Group: "links=none", LinksControl: "zero-delay link", Summary: &schema.Summary{TPS: 10}}}
	md := ComparisonMarkdown(f, rows)
	for _, want := range []string{"as `habench netem apply delay=5ms`", "Links are one-way delays", "ran through the userspace link at zero delay", "## links=none", "**b was not run**"} {
		if !strings.Contains(md, want) {
			t.Errorf("comparison.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "**a was not run**") {
		t.Errorf("comparison.md says the topology with a row was not run:\n%s", md)
	}
	dir := t.TempDir()
	if _, err := ReadComparison(dir, f); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, schema.ComparisonName)) {
		t.Errorf("ReadComparison without the file: %v, want an error naming it", err)
	}
}
