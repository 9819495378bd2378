package experiment

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/report"
	"github.com/habench/habench/results"
)

// TestLinkCostOneNumber (issue 31): a same-path control cell's link cost is one number,
// computed once (results.LinkCostMs per run, results.Median over the cell's runs), read
// from the runs' manifests by the sweep (sweep.json's link_added_rtt_ms, comparison.md)
// and by the report (report.md's cells): here two repeats whose pairs have an even count
// and a lossy pair, where the two computations used to differ (+0.035 ms and +0.040 ms),
// both +0.030 ms. Runs of one topology have no baseline: no "(baseline)" label, no vs
// base columns.
func TestLinkCostOneNumber(t *testing.T) {
	dir := t.TempDir()
	pairs := [][]results.LinkRTT{
		{{AddedMs: 0.030, Samples: 20}, {AddedMs: 0.040, Samples: 20}},
		{{AddedMs: 0.020, Samples: 20}, {AddedMs: 0.030, Samples: 20}, {AddedMs: 0.100, Samples: 20, Lossy: true}},
	}
	res := &report.Results{Kind: report.KindSweep, Name: "lc", Dir: dir}
	var rows []results.ComparisonRow
	for i, rtt := range pairs {
		impairment, _ := json.Marshal(map[string]any{"backend": "userspace", "rtt": rtt})
		m := report.Manifest{Topology: map[string]any{"name": "a", "kind": "async"}, Links: map[string]json.RawMessage{"impairment": impairment},
			Extra: map[string]any{"links_control": "same path: the userspace link at zero delay", "cell": "links=none",
				"axes": map[string]any{"topology": "a", "links": "none", "repeat": fmt.Sprint(i + 1)}}}
		run := filepath.Join(dir, fmt.Sprintf("c00%d-a", i+1))
		os.MkdirAll(run, 0o755)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(run, "manifest.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := &results.Summary{TPS: 100 + float64(i), LatencyMs: map[string]float64{"avg": 1, "p95": 2}}
		res.Runs = append(res.Runs, &report.Run{Name: "a links=none", Topology: "a", Cell: "links=none", Dir: run, Manifest: m, Summary: sum})
		rows = append(rows, results.ComparisonRow{Topology: "a", Cell: i + 1, Group: "links=none", Dir: filepath.Base(run), Summary: sum,
			LinksControl: "same path: the userspace link at zero delay", LinkAddedMs: linkAdded(filepath.Join(run, "manifest.json"))})
	}
	cells := res.Cells(nil)
	for i := range rows {
		rows[i].Stats = cells[0]
	}
	f := &results.SweepFile{Scenario: "lc", Workload: "oltp_read_write", Axes: []results.SweepAxis{
		{Name: "topology", Kind: results.AxisTopology, Values: []string{"a"}}, {Name: "links", Kind: results.AxisLinks, Values: []string{"none"}}}}
	cmp := report.ComparisonMarkdown(f, rows)
	out, err := report.Render(res, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := string(out.Markdown)
	if !strings.Contains(cmp, "a +0.030 ms") || !strings.Contains(md, "its cost +0.030 ms round trip") {
		t.Errorf("link cost: want +0.030 ms in both\ncomparison.md:\n%s\nreport.md:\n%s", cmp, md)
	}
	for _, no := range []string{"(baseline)", "vs base", "- baseline:"} {
		if strings.Contains(md, no) {
			t.Errorf("report.md of one topology has %q:\n%s", no, md)
		}
	}
}
