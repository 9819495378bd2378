package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/sampler"
)

// A scenario whose async run had a CPU-saturated host and whose single run did not: the
// comparison says which was CPU-bound (Markdown, HTML, CSV), each run gets a Hosts table,
// host CPU and mysqld CPU get panels, and host:local is not taken for a node.
func TestHostsInReport(t *testing.T) {
	d := copyTree(t, quick)
	inject := func(run string, busy float64, saturated bool) {
		dir := runDir(t, run)
		dir = filepath.Join(d, filepath.Base(dir))
		var m map[string]any
		json.Unmarshal(mustRead(t, filepath.Join(dir, "summary.json")), &m)
		m["hosts"] = []map[string]any{{"host": "local", "nodes": []string{"n1", "n2", "n3"}, "cpus": 2, "samples": 20,
			"cpu_busy_mean": busy, "cpu_busy_max": 1.0, "cpu_iowait_mean": 0.01, "cpu_steal_mean": 0.0,
			"cpu_saturated": saturated, "cpu_saturated_share": map[bool]float64{true: 0.95, false: 0.1}[saturated],
			"mysqld_cpu_cores_mean": map[string]float64{"n1": 0.8, "n2": 0.3}}}
		b, _ := json.Marshal(m)
		os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644)
		f, _ := os.OpenFile(filepath.Join(dir, "samples.csv"), os.O_APPEND|os.O_WRONLY, 0)
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(f, "%d.000,host:local,%s,%.3f\n%d.000,n1,%s,0.8\n", i, sampler.MetricHostCPUBusy, busy, i, sampler.MetricServerCPU)
			if run == "qasync" {
				fmt.Fprintf(f, "%d.000,host:local,%s,0.01\n", i, sampler.MetricHostCPUIOWait)
			}
		}
		f.Close()
	}
	inject("qasync", 0.97, true)
	inject("qsingle", 0.35, false)
	res, err := Load(d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := string(out.Markdown)
	for _, w := range []string{"| busiest host CPU mean / max |", "| **local 97% / 100% CPU-bound** |", "| local 35% / 100% |",
		"| local | n1, n2, n3 | 2 | 97% | 100% | 1% | 0% |", "**yes (95% of seconds)**", "n1 0.80, n2 0.30", "CPU-saturated = busy >= 90% in at least 50%"} {
		if !strings.Contains(md, w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	if strings.Contains(md, "| host:local |") {
		t.Error("host:local listed as a node")
	}
	html := string(out.HTML)
	for _, w := range []string{"busiest host CPU mean / max", `<td class="l warn">local 97% / 100% CPU-bound</td>`, "<h3>Hosts</h3>", Panels[5].Title, Panels[6].Title} {
		if !strings.Contains(html, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	recs, err := csv.NewReader(bytes.NewReader(out.CSV)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	for _, rec := range recs[1:] {
		name := rec[col["name"]]
		want := map[string]string{"qasync": "0.970 true", "qsingle": "0.350 false", "qsemi": " false"}[name]
		if got := rec[col["host_cpu_busy_mean"]] + " " + rec[col["cpu_bound"]]; got != want {
			t.Errorf("report.csv %s: host_cpu_busy_mean, cpu_bound = %q, want %q", name, got, want)
		}
	}
	// The async run's chart: a host CPU panel with the host's lines once (busy solid,
	// iowait dashed) and a mysqld panel with n1's line.
	var async *Run
	for _, r := range res.Runs {
		if r.Topology == "qasync" {
			async = r
		}
	}
	panels, _ := runPanels(async)
	found := 0
	for _, p := range panels {
		switch p.title {
		case Panels[5].Title:
			found++
			if len(p.lines) != 2 || p.lines[0].label != "host:local busy" || p.lines[1].label != "host:local iowait" || !p.lines[1].dash || !p.fraction {
				t.Errorf("host CPU panel lines %+v", p.lines)
			}
		case Panels[6].Title:
			found++
			if len(p.lines) != 1 || p.lines[0].label != "n1" {
				t.Errorf("mysqld CPU panel lines %+v", p.lines)
			}
		}
	}
	if found != 2 {
		t.Errorf("%d of the 2 CPU panels", found)
	}
}
