package experiment

import (
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"testing"

	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
)

// sweepGoldenDir is the sweep directory the comparison.md goldens are
// rendered from (a 10-cell sweep written by habench), and sweepGoldens where they are.
const (
	sweepGoldenDir = "../report/testdata/sweep10"
	sweepGoldens   = "../report/testdata/sweepmd"
)

// mixedSweep (the same as report's sweepMixed) turns sweep10's records into a sweep that went badly: cell 4
// failed (an error with a '|'), cell 10 never ran, cells 2 and 5 have warnings (one
// shared), so the goldens cover every branch of sweep.md and comparison.md's error lines.
func mixedSweep(f *schema.SweepFile) {
	c := f.Cells
	c[3].Status, c[3].Error = schema.StatusFailed, "sysbench exited 1 | lost connection"
	c[9] = schema.CellRecord{Index: c[9].Index, Axes: c[9].Axes, Topology: c[9].Topology, Kind: c[9].Kind, Flavor: c[9].Flavor, Test: c[9].Test, Threads: c[9].Threads, Links: c[9].Links, Status: schema.StatusPending}
	c[8].Status, c[8].Error = schema.StatusFailed, "interrupted"
	esc := "fault stop n1: escalated to SIGKILL (a crash)"
	c[1].Warnings = []string{esc, "restart: n2 slow"}
	c[4].Warnings = []string{esc}
}

// TestComparisonMarkdownGolden: comparison.md of sweep10 (as written, and
// mixedSweep's), from the executor's rows (sweepRun.rows over sweep.json and the cells'
// summary.json) rendered by report.ComparisonMarkdown, is byte for byte the committed
// golden that experiment.comparisonMarkdown wrote before it moved (commit c581123). HABENCH_UPDATE_GOLDEN=1 writes
// them instead.
func TestComparisonMarkdownGolden(t *testing.T) {
	yml, err := os.ReadFile(filepath.Join(sweepGoldenDir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, variant := range []string{"sweep10", "sweep10-mixed"} {
		s, err := scenario.ParseScenario(yml)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Plan("full")
		if err != nil {
			t.Fatal(err)
		}
		f, err := schema.ReadSweep(sweepGoldenDir)
		if err != nil {
			t.Fatal(err)
		}
		if variant == "sweep10-mixed" {
			mixedSweep(f)
		}
		sw := &sweepRun{plan: p, file: f, dir: sweepGoldenDir}
		got := map[string]string{}
		if rows := sw.rows(); len(rows) > 0 {
			got["comparison.md"] = report.ComparisonMarkdown(sw.file, rows)
		}
		if len(got) != 1 {
			t.Fatalf("%s: no comparison rows", variant)
		}
		for name, md := range got {
			path := filepath.Join(sweepGoldens, variant+"."+name)
			if os.Getenv("HABENCH_UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if md != string(want) {
				t.Errorf("%s: differs from %s:\n%s", name, path, md)
			}
		}
	}
}
