package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
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

// HostsLine names only measured (remote) hosts, with offset ± uncertainty, or why the
// clock was not measured; ClockWarning fires only when an uncertainty exceeds the largest
// applier lag reported, and never without one.
func TestHostsLineAndClockWarning(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	local := []schema.HostInfo{{Name: "local", Nodes: []string{"n1", "n2"}}}
	if l := HostsLine(local); l != "" {
		t.Errorf("local sandbox: hosts line %q, want none", l)
	}
	hs := []schema.HostInfo{
		{Name: "ssh db1", Nodes: []string{"n1", "n3"}, OffsetMs: f(-1.25), UncertaintyMs: f(0.2), Server: "mariadbd 10.11.6"},
		{Name: "ssh db2", Nodes: []string{"n2"}, OffsetMs: f(0.5), UncertaintyMs: f(0.05)},
		{Name: "ssh db3", Nodes: []string{"n4"}, ClockError: "ssh db3: connection refused"},
	}
	want := "ssh db1 (n1, n3): clock -1.250 ± 0.200 ms, mariadbd 10.11.6; ssh db2 (n2): clock +0.500 ± 0.050 ms; ssh db3 (n4): clock not measured (ssh db3: connection refused)"
	if l := HostsLine(hs); l != want {
		t.Errorf("hosts line\n%q, want\n%q", l, want)
	}
	for _, c := range []struct {
		lag  *float64
		want string // "" none, else a substring
	}{
		{nil, ""},
		{f(0.001), ""}, // 1 ms: above both uncertainties
		{f(0.00001), "ssh db1 ± 0.200 ms, ssh db2 ± 0.050 ms"}, // 0.01 ms: both
		{f(0.0001 * 1.5), "ssh db1 ± 0.200 ms are less certain than the largest applier lag reported (0.150 ms)"},
	} {
		w := ClockWarning(hs, c.lag)
		if (c.want == "") != (w == "") || !strings.Contains(w, c.want) || strings.Contains(w, "\n") {
			t.Errorf("lag %v: warning %q, want %q", c.lag, w, c.want)
		}
	}
	if m := MaxOf([]*float64{nil, f(0.2), f(0.5), nil}); m == nil || *m != 0.5 {
		t.Errorf("MaxOf = %v", m)
	}
	if MaxOf([]*float64{nil}) != nil {
		t.Error("MaxOf of nothing is not nil")
	}
}

// A run on remote hosts: its report (Markdown and HTML) names the hosts with their nodes
// and clock offsets, warns once when an offset is less certain than the largest applier
// lag, and says where the page cache was dropped; manifest.json's hosts and drop_caches
// are not shown again as raw sections.
func TestHostClocksInRunReport(t *testing.T) {
	d := copyTree(t, quick)
	dir := filepath.Join(d, filepath.Base(runDir(t, "qasync")))
	var m map[string]any
	json.Unmarshal(mustRead(t, filepath.Join(dir, "manifest.json")), &m)
	m["hosts"] = []map[string]any{
		{"name": "ssh 198.18.25.2", "nodes": []string{"n1"}, "offset_ms": 0.012, "uncertainty_ms": 0.3, "server": "/usr/sbin/mariadbd: mariadbd Ver 10.11"},
		{"name": "ssh 198.18.25.3", "nodes": []string{"n2", "n3"}, "offset_ms": -0.004, "uncertainty_ms": 0.02},
	}
	m["drop_caches"] = []map[string]any{{"host": "ssh 198.18.25.2", "nodes": []string{"n1"}, "at": "2026-12-02T09:00:00Z", "took_s": 0.42}}
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644)
	var s map[string]any
	json.Unmarshal(mustRead(t, filepath.Join(dir, "summary.json")), &s)
	nodes, _ := s["nodes"].([]any)
	if len(nodes) < 2 {
		t.Fatalf("fixture summary has %d nodes", len(nodes))
	}
	nodes[1].(map[string]any)["applier_lag_max_s"] = 0.0001 // 0.1 ms: below db2's ± 0.3 ms
	b, _ = json.Marshal(s)
	os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644)

	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md, html := string(out.Markdown), string(out.HTML)
	for _, w := range []string{
		"- hosts: ssh 198.18.25.2 (n1): clock +0.012 ± 0.300 ms, /usr/sbin/mariadbd: mariadbd Ver 10.11; ssh 198.18.25.3 (n2, n3): clock -0.004 ± 0.020 ms",
		"- **warning:** the clock offsets of ssh 198.18.25.2 ± 0.300 ms are less certain than the largest applier lag reported (0.100 ms)",
		"- page cache: dropped before the run (sync; echo 3 > /proc/sys/vm/drop_caches) on ssh 198.18.25.2 (n1) in 0.4 s",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	if strings.Count(md, "less certain") != 1 || strings.Contains(md, "drop_caches (manifest.json)") {
		t.Errorf("report.md: clock warning %d times, or drop_caches shown raw", strings.Count(md, "less certain"))
	}
	for _, w := range []string{"<dt>hosts</dt><dd>ssh 198.18.25.2 (n1): clock &#43;0.012 ± 0.300 ms", "less certain than the largest applier lag reported", "<dt>page cache</dt>"} {
		if !strings.Contains(html, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
}

// TestCompareNamesHosts: `habench compare` names each side's hosts with their clock
// offsets when a run's manifest has them (runs on the user's hosts), "this machine" for
// the other side, in the text and the HTML; runs on this machine alone say nothing of it.
func TestCompareNamesHosts(t *testing.T) {
	a, err := Load(runDir(t, "qasync"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(runDir(t, "qsemi"))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if err := Compare(a, b).WriteText(&plain); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "hosts before") {
		t.Errorf("runs on this machine: a hosts line:\n%s", plain.String())
	}
	off, unc := 0.012, 0.150
	b.Runs[0].Manifest.Hosts = []schema.HostInfo{{Name: "ssh db1", Nodes: []string{"n1", "n3"}, OffsetMs: &off, UncertaintyMs: &unc, Server: "mariadbd 10.11.6"},
		{Name: "ssh db2", Nodes: []string{"n2"}, ClockError: "ssh db2: cannot connect"}}
	c := Compare(a, b)
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	page, err := c.HTML(time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := "hosts after: ssh db1 (n1, n3): clock +0.012 ± 0.150 ms, mariadbd 10.11.6; ssh db2 (n2): clock not measured (ssh db2: cannot connect)"
	if !strings.Contains(text.String(), "hosts before: this machine\n") || !strings.Contains(text.String(), want+"\n") {
		t.Errorf("compare text lacks the hosts lines (%q):\n%s", want, text.String())
	}
	if !strings.Contains(html.UnescapeString(string(page)), "hosts after: ssh db1 (n1, n3): clock +0.012 ± 0.150 ms") {
		t.Errorf("compare HTML lacks the hosts line")
	}
}
