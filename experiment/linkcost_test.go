package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/report"
	"github.com/habench/habench/schema"
)

// linkCostScenario: one 2-node async topology, links none / 0.6ms, 2 repeats: the
// links=none cells are the same-path control (the userspace link at zero delay).
const linkCostScenario = `name: lc
topologies:
  - {name: lcasync, kind: async, nodes: 2, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, time: 5}
sweep:
  links: [none, 0.6ms]
  repeats: 2
`

// TestLinkCostOneNumber (issue 31): a same-path control cell's link cost is one number,
// computed once (schema.LinkCostMs per run, schema.Median over the cell's runs), read
// from the runs' manifests by the sweep (sweep.json's link_added_rtt_ms, comparison.md)
// and by the report (report.md's cells): here two repeats whose pairs have an even count
// and a lossy pair, where the two computations used to differ (+0.035 ms and +0.040 ms),
// both +0.030 ms. The sweep is of one topology, written as a run writes it (manifest
// extras of cellExtra, sweep.json of newSweepFile, the sweep's finish): it has no
// baseline, so nowhere a "(baseline)" label, a baseline line or fact, or vs base columns
// (report.md, comparison.md, the terminal's table).
func TestLinkCostOneNumber(t *testing.T) {
	saved := userspaceLinks
	userspaceLinks = func() bool { return true }
	defer func() { userspaceLinks = saved }()
	s := mustParse(t, linkCostScenario)
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := newSweepFile(p, []byte(linkCostScenario))
	sw := &sweepRun{r: &ScenarioRun{Scenario: s}, plan: p, file: f, dir: dir}
	if err := sw.save(); err != nil {
		t.Fatal(err)
	}
	controls := [][]schema.LinkRTT{
		{{AddedMs: 0.030, Samples: 20}, {AddedMs: 0.040, Samples: 20}},
		{{AddedMs: 0.020, Samples: 20}, {AddedMs: 0.030, Samples: 20}, {AddedMs: 0.100, Samples: 20, Lossy: true}},
	}
	for _, c := range p.Cells {
		rec := &f.Cells[c.Index-1]
		rtt := []schema.LinkRTT{{AddedMs: 1.2, Samples: 20}, {AddedMs: 1.2, Samples: 20}}
		extra := cellExtra(p, c)
		if p.SamePathControl(c) {
			rtt = controls[c.Repeat-1]
			rec.LinksControl = "same path: the userspace link at zero delay"
			extra["links_control"] = rec.LinksControl
		}
		tps := 100 + float64(c.Index)
		rd := fmt.Sprintf("c%03d-%s", c.Index, c.Topology)
		os.MkdirAll(filepath.Join(dir, rd), 0o755)
		m := map[string]any{"topology": map[string]any{"name": c.Topology, "kind": string(c.Deployment.Spec.Kind), "nodes": c.Deployment.Spec.Nodes},
			"workload": map[string]any{"name": "oltp_read_write"}, "extra": extra,
			"links": map[string]any{"impairment": map[string]any{"backend": "userspace", "rtt": rtt}}}
		sum := map[string]any{"tps": tps, "qps": 20 * tps, "threads": c.Options.Threads, "latency_ms": map[string]float64{"avg": 1, "p95": 2, "p99": 3}}
		for name, v := range map[string]any{"manifest.json": m, "summary.json": sum} {
			b, _ := json.Marshal(v)
			if err := os.WriteFile(filepath.Join(dir, rd, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rec.Dir, rec.Status, rec.TPS = rd, schema.StatusDone, tps
		rec.LatencyMs = &schema.CellLatency{Avg: 1, P95: 2, P99: 3}
		rec.LinkAddedMs = linkAdded(filepath.Join(dir, rd, "manifest.json"))
	}
	rows, err := sw.finish()
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cmp, md := read(report.ComparisonMarkdownFile), read("report.md")
	var term bytes.Buffer
	report.PrintComparison(&term, rows)
	if !strings.Contains(cmp, "lcasync +0.030 ms") || !strings.Contains(md, "its cost +0.030 ms round trip") {
		t.Errorf("link cost: want +0.030 ms in both\ncomparison.md:\n%s\nreport.md:\n%s", cmp, md)
	}
	if f.Baseline != "" {
		t.Errorf("sweep.json's baseline: %q, want none", f.Baseline)
	}
	outs := map[string]string{"report.md": md, "comparison.md": cmp, "the terminal's table": term.String()}
	// Manifests of an older habench name a baseline for one topology: `habench report`
	// does not show it either.
	for _, c := range p.Cells {
		path := filepath.Join(dir, f.Cells[c.Index-1].Dir, "manifest.json")
		var m map[string]any
		if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &m) != nil {
			t.Fatalf("%s: %v", path, err)
		}
		m["extra"].(map[string]any)["baseline"], m["extra"].(map[string]any)["baseline_why"] = "lcasync", "the first topology, as none is a single primary"
		b, _ := json.Marshal(m)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := report.Write(dir, report.Options{}); err != nil {
		t.Fatal(err)
	}
	outs["report.md of older manifests"] = read("report.md")
	for name, out := range outs {
		for _, no := range []string{"(baseline)", "vs base", "baseline:", "Baseline:", "/base"} {
			if strings.Contains(out, no) {
				t.Errorf("%s of one topology has %q:\n%s", name, no, out)
			}
		}
	}
}
