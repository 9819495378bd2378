package experiment

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/habench/habench/schema"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/report"
	"github.com/habench/habench/stats"
)

// agreeScenario: a single primary and a 2-node async, links none / 0.6ms, threads 1 / 4,
// 3 repeats: 24 cells, of which the single primary's 6 links=0.6ms cells are not run.
const agreeScenario = `name: swagree
topologies:
  - {name: swsingle, kind: single, flavor: mariadb}
  - {name: swasync, kind: async, nodes: 2, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, time: 5}
sweep:
  links: [none, 0.6ms]
  threads: [1, 4]
  repeats: 3
  reference: {threads: 4}
`

// agreeTPS are the synthetic runs' TPS by "topology links threads", one per repeat.
var agreeTPS = map[string][]float64{
	"swsingle none 1": {100, 104, 96},
	"swsingle none 4": {300, 310, 290},
	"swasync none 1":  {97, 105, 95},   // within noise of the single primary
	"swasync none 4":  {240, 244, 236}, // 80%: a difference
	"swasync 0.6ms 1": {50, 52, 48},
	"swasync 0.6ms 4": {200, 260, 140}, // noisy: within noise of none
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// writeAgreeSweep writes the run directories of agreeScenario's cells (manifest.json and
// summary.json as a run writes them), records them in sweep.json's cells and runs the
// sweep's finish: comparison.md/json, sweep.json's summaries, sweep_points.json,
// report.md/html/csv and sweep.csv. It returns the run and the comparison rows.
func writeAgreeSweep(t *testing.T) (*sweepRun, []schema.ComparisonRow) {
	t.Helper()
	s := mustParse(t, agreeScenario)
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := newSweepFile(p, []byte(agreeScenario))
	sw := &sweepRun{r: &ScenarioRun{Scenario: s}, plan: p, file: f, dir: dir}
	if err := sw.save(); err != nil { // as a run does before its first cell
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		rec := &f.Cells[c.Index-1]
		if c.Reuse != nil {
			continue
		}
		tps := agreeTPS[c.Topology+" "+c.Values["links"]+" "+c.Values["threads"]][c.Repeat-1]
		rd := fmt.Sprintf("c%03d-%s", c.Index, c.Topology)
		os.MkdirAll(filepath.Join(dir, rd), 0o755)
		m := map[string]any{"topology": map[string]any{"name": c.Topology, "kind": string(c.Deployment.Spec.Kind), "nodes": c.Deployment.Spec.Nodes},
			"workload": map[string]any{"name": "oltp_read_write"}, "extra": cellExtra(p, c)}
		sum := map[string]any{"tps": tps, "qps": 20 * tps, "threads": c.Options.Threads, "latency_ms": map[string]float64{"avg": 1000 / tps, "p95": 2000 / tps, "p99": 3000 / tps}}
		for name, v := range map[string]any{"manifest.json": m, "summary.json": sum} {
			b, _ := json.Marshal(v)
			if err := os.WriteFile(filepath.Join(dir, rd, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rec.Dir, rec.Status, rec.TPS = rd, schema.StatusDone, tps
		rec.LatencyMs = &schema.CellLatency{Avg: 1000 / tps, P95: 2000 / tps, P99: 3000 / tps}
	}
	rows, err := sw.finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.save(); err != nil {
		t.Fatal(err)
	}
	return sw, rows
}

var pctRE = regexp.MustCompile(`[+-]?\d+\.\d%`)

// pcts are the percentages in s, sorted.
func pcts(s string) []string {
	p := pctRE.FindAllString(s, -1)
	slices.Sort(p)
	return p
}

// section is s from the line starting with from to the next line starting with "## " (or the end).
func section(t *testing.T, s, from string) string {
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("no %q in:\n%s", from, s)
	}
	s = s[i+len(from):]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestOneAnswerEverywhere: the terminal table, comparison.md, sweep.json, sweep_points.json,
// sweep.csv, report.md and report.html of one sweep with repeats give the same
// percentages (vs the baseline topology and along each axis), each the mean of the
// repeats against the reference's mean, computed here by hand; and they say "within
// noise" where the intervals overlap. The single primary's links=0.6ms cells are not run:
// every output reuses its links=none cells for them.
func TestOneAnswerEverywhere(t *testing.T) {
	sw, rows := writeAgreeSweep(t)
	dir := sw.dir
	var term bytes.Buffer
	report.PrintComparison(&term, rows)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cmpMD, repMD, repHTML := read("comparison.md"), read("report.md"), read("report.html")

	// By hand: TPS vs base (single primary, same links and threads) and along the axes.
	m := func(k string) float64 { return mean(agreeTPS[k]) }
	base := func(links, th string) float64 { return m("swsingle none " + th) } // 0.6ms reuses none
	var want []string
	for _, topo := range []string{"swsingle", "swasync"} {
		for _, links := range []string{"none", "0.6ms"} {
			for _, th := range []string{"1", "4"} {
				k := topo + " " + links + " " + th
				if topo == "swsingle" {
					k = "swsingle none " + th
				}
				want = append(want, fmt.Sprintf("%.1f%%", 100*m(k)/base(links, th)))
				ref := strings.Replace(k, " 0.6ms ", " none ", 1)
				if links != "none" && topo != "swsingle" {
					want = append(want, fmt.Sprintf("%+.1f%%", 100*m(k)/m(ref)-100))
				}
				if th != "4" {
					want = append(want, fmt.Sprintf("%+.1f%%", 100*m(k)/m(strings.TrimSuffix(k, " 1")+" 4")-100))
				}
			}
		}
	}
	slices.Sort(want)
	// The terminal prints TPS and latency vs base; keep the TPS ones and the axes' by
	// taking the cells' percentages out of the stats each output wrote.
	termTab := term.String()
	mdTab := cmpMD
	repTab := section(t, repMD, "## Cells: repeats summarised")
	htmlTab := repHTML[strings.Index(repHTML, `<h2 id="cells">`):]
	htmlTab = html.UnescapeString(htmlTab[:strings.Index(htmlTab, "</table>")]) // html/template writes + as &#43;
	got := map[string][]string{"terminal": pcts(termTab), "comparison.md": pcts(mdTab), "report.md": pcts(repTab), "report.html": pcts(htmlTab)}
	for name, g := range got {
		for _, w := range want {
			if !slices.Contains(g, w) {
				t.Errorf("%s lacks %s (has %v)", name, w, g)
			}
		}
	}
	// Every output has the same percentages: TPS, latency and p95 vs base, TPS along the axes.
	for _, name := range []string{"comparison.md", "report.md", "report.html"} {
		if !slices.Equal(got["terminal"], got[name]) {
			t.Errorf("terminal %v\n%s %v", got["terminal"], name, got[name])
		}
	}
	// report.md's per-run rows carry their cell's percentage, not one of their own.
	for _, p := range pcts(section(t, repMD, "## Comparison")) {
		if strings.ContainsAny(p[:1], "+-") || p == "0.0%" { // 0.0%: the interval TPS CV column
			continue
		}
		if !slices.Contains(got["report.md"], p) {
			t.Errorf("report.md's run table has %s, which no cell has", p)
		}
	}

	// sweep.json's summaries and sweep_points.json / sweep.csv: the same numbers.
	var f schema.SweepFile
	if err := json.Unmarshal([]byte(read("sweep.json")), &f); err != nil {
		t.Fatalf("sweep.json: %v", err)
	}
	var jsonP []string
	for _, c := range f.Summary {
		jsonP = append(jsonP, fmt.Sprintf("%.1f%%", c.VsBase.Pct))
		for _, a := range c.Along {
			if a.TPS.Verdict != "reference" {
				jsonP = append(jsonP, fmt.Sprintf("%+.1f%%", a.TPS.Delta()))
			}
		}
	}
	slices.Sort(jsonP)
	for _, w := range want {
		if !slices.Contains(jsonP, w) {
			t.Errorf("sweep.json lacks %s (has %v)", w, jsonP)
		}
	}
	if len(f.Summary) != 8 {
		t.Errorf("sweep.json: %d cell summaries, want 8", len(f.Summary))
	}
	rd := csv.NewReader(strings.NewReader(read("sweep.csv")))
	recs, _ := rd.ReadAll()
	var csvP []string
	for _, r := range recs[1:] {
		if r[13] != "ref" {
			csvP = append(csvP, strings.TrimSuffix(r[13], " (within noise)"))
		}
	}
	for _, c := range f.Summary {
		for _, a := range c.Along {
			if a.TPS.Verdict != "reference" && !slices.Contains(csvP, fmt.Sprintf("%+.1f%%", a.TPS.Delta())) {
				t.Errorf("sweep.csv lacks %s %s %+.1f%% (has %v)", c.Topology, c.Group, a.TPS.Delta(), csvP)
			}
		}
	}

	// "within noise" where the intervals overlap, not where they do not.
	for name, s := range map[string]string{"terminal": termTab, "comparison.md": cmpMD, "report.md": repMD, "report.html": repHTML, "sweep.csv": read("sweep.csv")} {
		if !strings.Contains(s, "within noise") {
			t.Errorf("%s does not say within noise", name)
		}
	}
	// Each verdict is looked up by its cell, which must be there: a cell renamed (its group
	// string changed) fails here instead of skipping the check.
	cell := func(topo, group string) *stats.Cell {
		t.Helper()
		for _, c := range f.Summary {
			if c.Topology == topo && c.Group == group {
				return c
			}
		}
		t.Fatalf("sweep.json has no cell %s %q", topo, group)
		return nil
	}
	if c := cell("swasync", "links=none threads=1"); c.VsBase.Verdict != "within noise" {
		t.Errorf("async none/1 vs base: %+v, want within noise", c.VsBase)
	}
	if c := cell("swasync", "links=none threads=4"); c.VsBase.Verdict != "difference" {
		t.Errorf("async none/4 vs base: %+v, want a difference", c.VsBase)
	}
	if c := cell("swasync", "links=0.6ms threads=4"); c.AlongAxis("links").TPS.Verdict != "within noise" {
		t.Errorf("async 0.6ms/4 along links: %+v, want within noise", c.AlongAxis("links"))
	}
	for _, th := range []string{"1", "4"} {
		if c := cell("swsingle", "links=0.6ms threads="+th); c.ReusedFrom == "" {
			t.Errorf("single primary %s: not reused", c.Group)
		}
	}
	// The reused cells are said so, and there is no second single-primary run.
	for name, s := range map[string]string{"terminal": termTab, "comparison.md": cmpMD, "report.md": repMD} {
		if !strings.Contains(s, "not run") {
			t.Errorf("%s does not say the single primary's links cells were not run:\n%s", name, s)
		}
	}
	if runs, _ := filepath.Glob(filepath.Join(dir, "c*-swsingle")); len(runs) != 6 {
		t.Errorf("%d single-primary run directories, want 6 (2 cells x 3 repeats)", len(runs))
	}
	// report loads the same cells.
	res, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := res.Baseline("")
	if cells := res.Cells(b); len(cells) != 8 || cells[0].TPS.N != 3 || !cells[0].TPS.HasCI() {
		t.Errorf("report cells %d, first %+v", len(cells), cells[0].TPS)
	}
}
