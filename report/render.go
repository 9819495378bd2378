package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options configure rendering.
type Options struct {
	// Baseline names the run the percentages refer to (a topology name); "" picks the
	// default (see Results.Baseline).
	Baseline string
	// Now stamps the report (default time.Now).
	Now func() time.Time
}

// Rendered is a report in its three forms.
type Rendered struct {
	HTML, Markdown, CSV []byte
	// SweepCSV is sweep.csv (sweeps only).
	SweepCSV []byte
	// Charts are the charts inlined in HTML, in page order.
	Charts []Chart
	// Baseline is the chosen baseline run ("" without runs) and why it was chosen.
	Baseline, BaselineWhy string
}

// maxBars is the most runs drawn as comparison bars.
const maxBars = 16

// page is the HTML template's data.
type page struct {
	Title, Kind, Dir, Generated string
	Baseline, BaselineWhy       string
	Workload                    string
	Servers, Habench            []string
	Rows                        []Row
	Bars                        []Chart
	SweepCharts                 []Chart
	Sweep                       []SweepPoint
	Settings                    varTable
	Runs                        []runView
	Multi                       bool
	// Compared: the runs are of more than one topology, so one of them is the baseline
	// and the others are compared with it (the baseline line, its label, the vs base
	// columns); runs of one topology (repeats, a sweep of one) have no baseline.
	Compared bool
	Missing  []string
	// Alerts are shown first: the outages of every run (a node that could not commit).
	Alerts []string
	// Cells are the runs grouped into cells (repeats summarised), CellAxes the axes the
	// cells have changes along, CellsMD their Markdown table, CellsNote what they mean.
	Cells     []cellView
	CellAxes  []string
	CellsMD   string
	CellsNote string
	// Probed: a run had a probe writer (the lost acked commits column). Caveat explains
	// the ⚠ marks of the comparison, FlavorNote the runs on other servers than the
	// baseline's ("" when none).
	Probed             bool
	Caveat, FlavorNote string
}

// topologies is how many topologies res's runs are of (a run without one counts by its
// name).
func (res *Results) topologies() int {
	seen := map[string]bool{}
	for _, r := range res.Runs {
		k := r.Topology
		if k == "" {
			k = "run " + r.Name
		}
		seen[k] = true
	}
	return len(seen)
}

// Render renders res as HTML, Markdown and CSV. Error when the baseline is unknown
// (*BaselineError) or a chart cannot be drawn.
func Render(res *Results, o Options) (*Rendered, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	base, why, err := res.Baseline(o.Baseline)
	if err != nil {
		return nil, err
	}
	rows, caveatNote := res.rowsCaveat(base)
	pg := page{Caveat: caveatNote, FlavorNote: flavorNote(rows), Probed: slices.ContainsFunc(rows, func(r Row) bool { return r.Probe != nil }), Title: res.Name, Kind: res.Kind, Dir: res.Dir, Generated: now().UTC().Format("2006-01-02 15:04:05 UTC"),
		BaselineWhy: why, Rows: rows, Sweep: res.Sweep, Multi: len(res.Runs) > 1, Compared: res.topologies() > 1, Missing: res.Missing}
	if base != nil {
		pg.Baseline = base.Name
		if base.Group() != "" {
			pg.Baseline = base.Topology // each group has its own baseline run
		}
		pg.Workload = workloadLine(base)
	}
	pg.Servers, pg.Habench = versions(res.Runs)
	if len(res.Sweep) > 0 {
		pg.Sweep = slices.Clone(res.Sweep)
		for i, p := range pg.Sweep {
			pg.Sweep[i].Mark = p.VsRefPct != nil && p.VsRef != "ref" && (p.N < 2 || res.dirBound(p.Dir))
		}
	}
	cells := res.Cells(base)
	if len(res.Runs) > 1 {
		pg.Cells, pg.CellAxes = res.cellViews(cells)
		pg.CellsMD, pg.CellsNote = res.cellsMarkdown(cells), cellsNote(cells, pg.Compared)
		if n := res.cellsCaveat(cells); n != "" {
			pg.CellsNote += " " + n
		}
	}
	out := &Rendered{Baseline: pg.Baseline, BaselineWhy: why}
	if len(rows) > 1 {
		// A sweep's cells as bars grouped by topology, a colour per value of the other
		// axes; else bars for a readable number of runs (a larger sweep has its curves).
		if res.Kind == KindSweep {
			if pg.Bars, err = SweepBarCharts(cells, res.Axes); err != nil {
				return nil, err
			}
			out.Charts = append(out.Charts, pg.Bars...)
		}
		if pg.Bars == nil && len(rows) <= maxBars {
			if pg.Bars, err = ComparisonCharts(rows); err != nil {
				return nil, err
			}
			out.Charts = append(out.Charts, pg.Bars...)
		}
		pg.Settings = settingsAcross(res.Runs, true)
	}
	if len(res.Sweep) > 0 {
		if pg.SweepCharts, err = SweepCharts(res.Sweep); err != nil {
			return nil, err
		}
		out.Charts = append(out.Charts, pg.SweepCharts...)
	}
	for i, r := range res.Runs {
		if err := pg.addRun(out, r, rows[i], i); err != nil {
			return nil, err
		}
	}
	var hb bytes.Buffer
	if err := htmlTemplate.Execute(&hb, pg); err != nil {
		return nil, err
	}
	out.HTML = hb.Bytes()
	out.Markdown = []byte(markdown(pg))
	out.CSV = runsCSV(rows)
	if len(res.Sweep) > 0 {
		out.SweepCSV = sweepCSV(res.Sweep)
	}
	return out, nil
}

// addRun adds run r (row, the i-th run of the page) to pg: its view with its chart and
// latency heatmap (both also in out.Charts) and its outages as alerts. Errors name the
// run: a chart that cannot be drawn.
func (pg *page) addRun(out *Rendered, r *Run, row Row, i int) error {
	c, ok, err := RunChart(r)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	var cp *Chart
	if ok {
		cp = &c
		out.Charts = append(out.Charts, c)
	}
	rv := newRunView(r, row, cp, i, pg.Compared)
	hm, ok, err := LatencyHeatmap(r, runXMax(r))
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	if ok {
		rv.Heatmap = &hm
		out.Charts = append(out.Charts, hm)
	}
	pg.Runs = append(pg.Runs, rv)
	if r.Summary == nil {
		return nil
	}
	for _, o := range r.Summary.Outages {
		a := o.Text
		if a == "" {
			a = fmt.Sprintf("%s could not commit from %.2f s to %.2f s of the run (%.2f s)", o.Node, o.StartS, o.EndS, o.DurationS)
		}
		if pg.Multi {
			a = r.Name + ": " + a
		}
		pg.Alerts = append(pg.Alerts, "outage: "+a)
	}
	return nil
}

// WriteError is a report or results file of this package that could not be written (a
// full disk, a read-only directory): Path names it.
type WriteError struct {
	Path string
	Err  error
}

func (e *WriteError) Error() string { return fmt.Sprintf("writing %s: %v", e.Path, e.Err) }

func (e *WriteError) Unwrap() error { return e.Err }

// Write loads dir, renders it and writes report.html and report.csv into it, plus
// report.md for a scenario or sweep (a run directory's report.md is the run's own and
// is left alone) and sweep.csv for a sweep. It returns the paths written; a file that
// cannot be written is a *WriteError naming it (after the files written before it).
func Write(dir string, o Options) ([]string, error) {
	res, err := Load(dir)
	if err != nil {
		return nil, err
	}
	r, err := Render(res, o)
	if err != nil {
		return nil, err
	}
	files := []struct {
		name string
		b    []byte
	}{{"report.html", r.HTML}, {"report.csv", r.CSV}}
	if res.Kind != KindRun {
		files = append(files, struct {
			name string
			b    []byte
		}{"report.md", r.Markdown})
	}
	if r.SweepCSV != nil {
		files = append(files, struct {
			name string
			b    []byte
		}{"sweep.csv", r.SweepCSV})
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.b, 0o640); err != nil {
			return paths, &WriteError{Path: p, Err: err}
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// CSVColumns is the header of report.csv: one row per run. Latencies in ms, rates per
// second, percentages of the baseline (empty when there is none), lag in seconds
// (empty without lag samples); tps_interval_* describe the per-interval TPS (jitter);
// host_cpu_busy_* are the busiest host's CPU busy fraction 0..1 over the measured part
// (empty without host samples) and cpu_bound whether that host was CPU-saturated;
// lag_unknown names the nodes whose lag could not be measured for a while ("n3 unknown for
// 9 s": max_lag_s cannot see those seconds; empty when every lag was measured).
var CSVColumns = []string{"name", "topology", "cell", "kind", "flavor", "version", "workload", "threads",
	"tps", "qps", "lat_avg_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms",
	"tps_vs_baseline_pct", "lat_avg_vs_baseline_pct", "lat_p95_vs_baseline_pct", "max_lag_s",
	"tps_interval_min", "tps_interval_max", "tps_interval_cv", "transactions", "ignored_errors",
	"baseline", "error", "dir", "host_cpu_busy_mean", "host_cpu_busy_max", "cpu_bound", "lag_unknown"}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func optNum(p *float64) string {
	if p == nil {
		return ""
	}
	return num(*p)
}

func runsCSV(rows []Row) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(CSVColumns)
	for _, r := range rows {
		threads := ""
		if r.Run.Summary != nil {
			threads = strconv.Itoa(r.Run.Summary.Threads)
		}
		w.Write([]string{r.Run.Name, r.Run.Topology, r.Run.Cell, r.Run.Kind(), r.Run.Flavor(), r.Run.Version(),
			r.Run.Manifest.Workload.Name, threads,
			num(r.TPS), num(r.QPS), num(r.AvgMs), num(r.P95Ms), num(r.P99Ms), num(r.MaxMs),
			optNum(r.TPSPct), optNum(r.AvgPct), optNum(r.P95Pct), optNum(r.MaxLagS),
			num(r.TPSMin), num(r.TPSMax), num(r.TPSCV), strconv.FormatInt(r.Transactions, 10), strconv.FormatInt(r.IgnoredErrors, 10),
			strconv.FormatBool(r.IsBaseline), r.Run.Error, r.Run.Dir,
			optNum(r.HostBusyMean), optNum(r.HostBusyMax), strconv.FormatBool(r.CPUBound), r.LagUnknown})
	}
	w.Flush()
	return b.Bytes()
}

// SweepCSVColumns is the header of sweep.csv: one row per sweep point.
// tps is the mean over the point's runs (n), tps_ci95_lo/hi the 95% CI of the mean (empty
// with one run), vs_reference_pct the percentage of the axis reference's mean.
var SweepCSVColumns = []string{"topology", "axis", "value", "fixed", "n", "tps", "tps_min", "tps_max", "tps_ci95_lo", "tps_ci95_hi",
	"p95_ms", "reference", "vs_reference_pct", "vs_reference", "reused_from", "error", "dir"}

func fixedString(f map[string]string) string { return kvList(f, " ") }

// ciRange is a sweep point's TPS 95% CI, "n/a" without one.
func ciRange(p SweepPoint) string {
	if p.TPSCILo == nil || p.TPSCIHi == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*p.TPSCILo, 'f', 1, 64) + "-" + strconv.FormatFloat(*p.TPSCIHi, 'f', 1, 64)
}

func sweepCSV(pts []SweepPoint) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(SweepCSVColumns)
	for _, p := range pts {
		w.Write([]string{p.Topology, p.Axis, p.Value, fixedString(p.Fixed), strconv.Itoa(p.N), num(p.TPS), num(p.TPSMin), num(p.TPSMax),
			optNum(p.TPSCILo), optNum(p.TPSCIHi), num(p.P95Ms), p.Reference, optNum(p.VsRefPct), p.VsRef, p.ReusedFrom, p.Error, p.Dir})
	}
	w.Flush()
	return b.Bytes()
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"f1":          func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"f2":          func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
	"pct":         fmtPct,
	"pctm":        pctMark,
	"lost":        lostAcked,
	"opt":         func(p *float64) string { return fmtOpt(p, "%.3f") },
	"lag":         func(r Row) string { return LagText(r.MaxLagS, r.LagUnknown, "%.3f") },
	"busiest":     busiestCell,
	"hostsNote":   func() string { return hostsNote },
	"clientsNote": func() string { return ClientsNote },
	"svg":         func(s string) template.HTML { return template.HTML(s) }, // generated by vgsvg, text escaped there
	"cv":          func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" },
	"fixed":       fixedString,
	"anchor":      anchor,
	"change":      changeText,
	"ci":          ciRange,
	"wrap":        wrapHTML,
}).Parse(htmlSource))

// wrapHTML is s escaped, with a line break opportunity after each comma, underscore,
// slash and equals sign, where a long setting's value (sql_mode, wsrep_provider_options)
// wraps in a narrow column before it is broken anywhere.
func wrapHTML(s string) template.HTML {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(template.HTMLEscapeString(string(r)))
		if r == ',' || r == '_' || r == '/' || r == '=' || r == ';' {
			b.WriteString("<wbr>")
		}
	}
	return template.HTML(b.String())
}

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>habench report: {{.Title}}</title>
<style>
body { font-family: 'Liberation Sans', Arial, Helvetica, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
tr.base td { font-weight: bold; } tr.differ td { background: #fff6d6; }
.chart { margin: .8em 0; } .chart svg { max-width: 100%; height: auto; display: block; }
.warn { color: #a40000; } dl.facts { display: grid; grid-template-columns: max-content auto; gap: .15em 1em; font-size: .9em; }
dl.facts dt { font-weight: bold; } dl.facts dd { margin: 0; word-break: break-word; }
pre { background: #f6f6f6; padding: .5em; overflow-x: auto; font-size: .85em; }
.note { color: #555; font-size: .85em; }
.bars { display: flex; flex-wrap: wrap; gap: 1em; }
table.vars td, table.vars th { overflow-wrap: anywhere; vertical-align: top; } table.vars td:first-child { overflow-wrap: normal; }
table.vars.keyed { table-layout: fixed; width: 100%; } table.vars.keyed th:first-child { width: 17em; }
table.vars .sub { font-weight: normal; color: #555; font-size: .9em; }
p.common { font-size: .85em; line-height: 1.6; } p.common code { white-space: nowrap; }
</style>
</head>
<body>
<h1>habench report: {{.Title}}</h1>
{{- range .Alerts}}
<p class="warn"><b>WARNING:</b> {{.}}</p>
{{- end}}
<p class="note">{{.Kind}} results in <code>{{.Dir}}</code>, rendered {{.Generated}}.
{{- if .Servers}} Servers: {{range $i, $s := .Servers}}{{if $i}}; {{end}}{{$s}}{{end}}.{{end}}
{{- if .Habench}} habench {{range $i, $s := .Habench}}{{if $i}}, {{end}}{{$s}}{{end}}.{{end}}</p>
{{- if .Workload}}<p>Workload: {{.Workload}}.</p>{{end}}
{{- if .Compared}}
<p>Baseline: <b>{{.Baseline}}</b> ({{.BaselineWhy}}); percentages are of the baseline's value (100% = same){{if .Sweep}}, in a sweep of the baseline topology's cell with the same axis values{{end}}.</p>
{{- end}}

<h2 id="comparison">{{if .Multi}}Comparison{{else}}Throughput and latency{{end}}</h2>
<table>
<tr><th class="l">topology</th><th class="l">kind</th><th class="l">flavor</th><th class="l">version</th><th>TPS</th><th>QPS</th><th>avg ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th>{{if .Compared}}<th>TPS vs base</th><th>avg latency vs base</th><th>p95 vs base</th>{{end}}<th>max lag s</th>{{if .Probed}}<th>lost acked commits</th>{{end}}<th>interval TPS min / max</th><th>interval TPS CV</th><th>ignored errors</th><th class="l">busiest host CPU mean / max</th></tr>
{{- range .Rows}}
<tr{{if and $.Compared .IsBaseline}} class="base"{{end}}><td class="l"><a href="#{{anchor .Run.Name}}">{{.Run.Name}}</a>{{if .Run.Error}} <span class="warn">(incomplete)</span>{{end}}</td><td class="l">{{.Run.Kind}}</td><td class="l">{{.Run.Flavor}}</td><td class="l">{{.Run.Version}}</td>
<td>{{f2 .TPS}}</td><td>{{f2 .QPS}}</td><td>{{f2 .AvgMs}}</td><td>{{f2 .P95Ms}}</td><td>{{f2 .P99Ms}}</td><td>{{f2 .MaxMs}}</td>{{if $.Compared}}<td>{{pctm .TPSPct .Caveat}}</td><td>{{pctm .AvgPct .Caveat}}</td><td>{{pctm .P95Pct .Caveat}}</td>{{end}}<td>{{lag .}}</td>{{if $.Probed}}<td>{{lost .Probe}}</td>{{end}}<td>{{f1 .TPSMin}} / {{f1 .TPSMax}}</td><td>{{cv .TPSCV}}</td><td>{{.IgnoredErrors}}</td><td class="l{{if .CPUBound}} warn{{end}}">{{busiest .}}</td></tr>
{{- end}}
</table>
{{- range .Missing}}<p class="warn"><b>not loaded:</b> {{.}}</p>{{end}}
{{- if .Caveat}}<p class="note warn">{{.Caveat}}</p>{{end}}
{{- if .FlavorNote}}<p class="note warn">{{.FlavorNote}}</p>{{end}}
{{- if .Probed}}<p class="note">lost acked commits = the probe writer's acknowledged commits missing on the writer after the run (summary.json probe), of those acknowledged.</p>{{end}}
{{- if .Cells}}
<h2 id="cells">Cells: repeats summarised</h2>
<table>
<tr><th class="l">cell</th><th>runs</th><th>TPS</th><th>TPS min-max</th><th>TPS 95% CI</th><th>avg ms</th><th>p95 ms</th>{{if .Compared}}<th>TPS vs base</th><th>avg latency vs base</th><th>p95 vs base</th>{{end}}{{range .CellAxes}}<th>TPS vs {{.}}</th>{{end}}</tr>
{{- range .Cells}}
<tr{{if and $.Compared .C.IsBase}} class="base"{{end}}><td class="l">{{.Name}}</td><td>{{.C.TPS.N}}</td><td>{{f2 .C.TPS.Mean}}</td><td>{{f1 .C.TPS.Min}}-{{f1 .C.TPS.Max}}</td><td>{{.CI}}</td><td>{{f2 .C.AvgMs.Mean}}</td><td>{{f2 .C.P95Ms.Mean}}</td>{{if $.Compared}}<td>{{.Base "tps"}}</td><td>{{.Base "lat"}}</td><td>{{.Base "p95"}}</td>{{end}}{{range .Along}}<td>{{.}}</td>{{end}}</tr>
{{- end}}
</table>
<p class="note">{{.CellsNote}}</p>
{{- end}}
<p class="note">Latencies over the whole run (HdrHistogram); max lag = the largest heartbeat visibility lag any node showed; interval TPS CV = standard deviation / mean of the per-interval TPS (jitter); busiest host CPU = the mean and largest CPU busy share of the run's busiest host while the workload was measured, CPU-bound when it was CPU-saturated (see the run's Hosts table).{{if and .Cells .Compared}} The vs base percentages are each run's cell's (the mean of its repeats against the baseline's mean: see the cells table), the same on every repeat.{{end}}</p>
<div class="bars">
{{- range .Bars}}
<div class="chart" title="{{.Title}}">{{svg .SVG}}</div>
{{- end}}
</div>

{{- if .Sweep}}
<h2 id="sweep">Sweep</h2>
{{- range .SweepCharts}}
<div class="chart" title="{{.Title}}">{{svg .SVG}}</div>
{{- end}}
<table>
<tr><th class="l">topology</th><th class="l">axis</th><th class="l">value (read back)</th><th class="l">other axes</th><th>runs</th><th>TPS (mean)</th><th>TPS 95% CI</th><th>p95 ms</th><th class="l">TPS vs reference</th><th class="l">error</th></tr>
{{- range .Sweep}}
<tr><td class="l">{{.Topology}}</td><td class="l">{{.Axis}}</td><td class="l">{{.Value}}{{if .ReusedFrom}} (not run: the runs of {{.ReusedFrom}}){{end}}</td><td class="l">{{fixed .Fixed}}</td><td>{{.N}}</td><td>{{f2 .TPS}}</td><td>{{ci .}}</td><td>{{f2 .P95Ms}}</td><td class="l">{{.VsRef}}{{if .Mark}} ⚠{{end}}{{if .Reference}} (vs {{.Reference}}){{end}}</td><td class="l">{{.Error}}</td></tr>
{{- end}}
</table>
{{- end}}

{{- if .Settings.Cols}}
<h2 id="settings">Settings that differ between runs</h2>
<p class="note">Read back from each run's first node (the writer) before the run.{{if .Settings.Same}} {{.Settings.Same}} other variables are equal in every run (below the table).{{end}}</p>
{{- if .Settings.Rows}}
<table class="vars{{if .Settings.Keys}} keyed{{end}}">
<tr><th class="l">variable</th>{{if .Settings.Keys}}{{range .Settings.Keys}}<th class="l" title="{{.Full}}">{{.Short}}{{if ne .Short .Topology}}<br><span class="sub">{{.Topology}}</span>{{end}}</th>{{end}}{{else}}{{range .Settings.Cols}}<th class="l">{{.}}</th>{{end}}{{end}}</tr>
{{- range .Settings.Rows}}
<tr><td class="l">{{.Name}}</td>{{range .Values}}<td class="l">{{wrap .}}</td>{{end}}</tr>
{{- end}}
</table>
{{- with .Settings.Keys}}
<p class="note">Columns: {{range $i, $k := .}}{{if $i}}; {{end}}<b>{{$k.Short}}</b> {{$k.Full}}{{end}}.</p>
{{- end}}
{{- else}}<p>None: every run had the same settings.</p>{{end}}
{{- with .Settings.Common}}
<details><summary>Settings equal in every run ({{len .}})</summary>
<p class="common">{{range $i, $f := .}}{{if $i}}, {{end}}<code>{{$f.K}}={{$f.V}}</code>{{end}}</p>
</details>
{{- end}}
{{- end}}

{{- range .Runs}}
<h2 id="{{anchor .Run.Name}}">{{.Heading}}</h2>
<dl class="facts">
{{- range .Facts}}<dt>{{.K}}</dt><dd>{{.V}}</dd>{{end}}
</dl>
{{- range .Warnings}}<p class="warn"><b>warning:</b> {{.}}</p>{{end}}
{{- with .Impairment}}
<table>
<tr><th class="l">link</th><th>base RTT ms</th><th>requested +ms</th><th>achieved median ms</th><th>achieved p99 ms</th><th>added ms</th></tr>
{{- range .RTT}}
<tr><td class="l">{{.Link}}</td>{{if .Partitioned}}<td>{{.BaseMs}}</td><td class="l" colspan="4">partition: {{.FailedProbes}} probes failed</td>{{else}}<td>{{f2 .BaseMs}}</td><td>{{f2 .RequestedMs}}</td><td>{{f2 .AchievedMs}}</td><td>{{f2 .AchievedP99}}</td><td>{{f2 .AddedMs}}</td>{{end}}</tr>
{{- end}}
</table>
{{- end}}
{{- with .Chart}}
<div class="chart" title="{{.Title}}">{{svg .SVG}}</div>
<p class="note">TPS and latency per report interval (intervals.csv, moved onto the samples' clock by intervals_offset_s); per-node lines from samples.csv, once per second, including the catch-up after the workload stopped.</p>
{{- end}}
{{- with .Heatmap}}
<div class="chart" title="{{.Title}}">{{svg .SVG}}</div>
<p class="note">Latency heatmap from latency.hlog (HdrHistogram interval log, microseconds): each column is a report interval (or several merged, up to 120 columns), each row a tenth of a decade of latency; the colour is how many transactions per second of the column completed at that latency. A column without cells had no transaction complete; the p99 line (intervals.csv's) counts the waits of transactions in flight at an interval's end, the cells do not.</p>
{{- end}}
<h3>Nodes</h3>
<table>
<tr><th class="l">node</th><th class="l">role</th><th class="l">version</th><th class="l">address</th><th>lag max s</th><th>lag avg s</th><th>backlog max trx</th><th class="l">queues</th><th class="l">flow control paused</th><th>lag samples</th><th>sampler errors</th></tr>
{{- range .Nodes}}
<tr><td class="l">{{.Node}}</td><td class="l">{{.Role}}</td><td class="l">{{.Version}}</td><td class="l">{{.Address}}</td><td>{{.LagMax}}</td><td>{{.LagAvg}}</td><td>{{.BacklogMax}}</td><td class="l">{{.Queues}}</td><td class="l">{{.Paused}}</td><td>{{.Samples}}</td><td>{{.SamplerErrors}}</td></tr>
{{- end}}
</table>
<p class="note">{{.NodeWindow}} n/a: not applicable (backlog on the writer) or no sample (node unreachable, sampler failing: see sampler errors).</p>
{{- if .Hosts}}
<h3>Hosts</h3>
<table>
<tr><th class="l">host</th><th class="l">nodes</th><th>CPUs</th><th>CPU busy mean</th><th>busy max</th><th>iowait</th><th>steal</th><th>run queue mean / max</th><th>disk read / write MB/s</th><th class="l">mysqld CPU cores (mean)</th><th class="l">CPU-saturated</th></tr>
{{- range .Hosts}}
<tr{{if .Bound}} class="differ"{{end}}><td class="l">{{.Host}}</td><td class="l">{{.Nodes}}</td><td>{{.CPUs}}</td><td>{{.BusyMean}}</td><td>{{.BusyMax}}</td><td>{{.IOWait}}</td><td>{{.Steal}}</td><td>{{.RunQueue}}</td><td>{{.Disk}}</td><td class="l">{{.ServerCPU}}</td><td class="l">{{.Saturated}}</td></tr>
{{- end}}
</table>
<p class="note">{{hostsNote}}</p>
{{- end}}
{{- if .Clients}}
<h3>Clients</h3>
<table>
<tr><th class="l">client</th><th>threads</th><th>transactions</th><th>TPS</th><th>p95 ms</th><th>p99 ms</th><th>CPU cores</th><th class="l">CPU-bound</th><th class="l">clock offset</th><th class="l">lost mid-run</th></tr>
{{- range .Clients}}
<tr{{if .Flagged}} class="differ"{{end}}><td class="l">{{.Client}}</td><td>{{.Threads}}</td><td>{{.Transactions}}</td><td>{{.TPS}}</td><td>{{.P95}}</td><td>{{.P99}}</td><td>{{.CPU}}</td><td class="l">{{.Bound}}</td><td class="l">{{.Offset}}</td><td class="l">{{.Lost}}</td></tr>
{{- end}}
</table>
<p class="note">{{clientsNote}}</p>
{{- end}}
{{- with .Knobs}}
<h3>Knobs (set for the run, read back{{if .Keep}}, kept afterwards{{end}})</h3>
<table>
<tr><th class="l">node</th><th class="l">knob</th><th class="l">variable</th><th class="l">method</th><th class="l">requested</th><th class="l">before</th><th class="l">in effect</th><th class="l">after the run</th><th class="l">note</th></tr>
{{- range .Nodes}}
<tr{{if not .Matches}} class="differ"{{end}}><td class="l">{{.Node}}</td><td class="l">{{.Knob}}</td><td class="l">{{.Variable}}</td><td class="l">{{.Method}}</td><td class="l">{{.Requested}}</td><td class="l">{{.Before}}</td><td class="l">{{.Effective}}</td><td class="l">{{with .Restored}}{{.}}{{else}}not restored{{end}}</td><td class="l">{{.Note}}</td></tr>
{{- end}}
</table>
{{- range .Notes}}<p class="note">{{.}}</p>{{end}}
{{- end}}
{{- if .Requested}}
<h3>Server options requested by the topology</h3>
<table>{{range .Requested}}<tr><td class="l">{{.K}}</td><td class="l">{{.V}}</td></tr>{{end}}</table>
{{- end}}
{{- if .Vars.Rows}}
<details><summary>Settings in effect, read back from each server ({{len .Vars.Rows}} variables; rows that differ between nodes highlighted)</summary>
<table>
<tr><th class="l">variable</th>{{range .Vars.Cols}}<th class="l">{{.}}</th>{{end}}</tr>
{{- range .Vars.Rows}}
<tr{{if .Differ}} class="differ"{{end}}><td class="l">{{.Name}}</td>{{range .Values}}<td class="l">{{.}}</td>{{end}}</tr>
{{- end}}
</table>
</details>
{{- end}}
{{- range .Sections}}
<h3>{{.Title}}</h3>
{{- if .Cols}}
<table>
<tr>{{range .Cols}}<th class="l">{{.}}</th>{{end}}</tr>
{{- range .Rows}}
<tr>{{range .}}<td class="l">{{.}}</td>{{end}}</tr>
{{- end}}
</table>
{{- if .Note}}<p class="note">{{.Note}}</p>{{end}}
{{- else}}<details><summary>as recorded</summary><pre>{{.JSON}}</pre></details>{{end}}
{{- end}}
<p class="note">Files: <code>{{.Run.Dir}}</code>: manifest.json, summary.json, intervals.csv, samples.csv, latency.hlog, variables.json, report.md.</p>
{{- end}}
</body>
</html>
`

// anchor is an HTML id for a run's section.
func anchor(name string) string {
	return "run-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name)
}
