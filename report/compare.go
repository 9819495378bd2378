package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/habench/habench/stats"
	"gonum.org/v1/plot/plotter"
)

// Comparison is a before/after comparison of two results directories: runs paired by
// name (a single run against a single run is always paired).
type Comparison struct {
	Before, After *Results
	Pairs         []Pair
	// OnlyBefore and OnlyAfter name runs without a partner.
	OnlyBefore, OnlyAfter []string
}

// Pair is one run before and after, and its metrics.
type Pair struct {
	Name          string
	Before, After *Run
	Metrics       []Delta
	// Differences are the settings the two runs differ in (topology, links, knobs,
	// workload, servers: see differences); Notes what limits the comparison (both
	// CPU-bound, one run a side).
	Differences []string
	Notes       []string
	// Hosts are each side's hosts with their clock offsets (HostsLine; "" for a run on
	// this machine), so that runs on the user's hosts say where and with which clocks.
	HostsBefore, HostsAfter string
}

// Delta is one metric before and after. Values are nil when the run lacks them (no
// summary, no lag samples); Change is (after-before)/before in percent: 0 when they are
// equal, nil when either is missing or before is 0 and after is not.
type Delta struct {
	Metric string
	Unit   string
	// HigherIsBetter: TPS and QPS; latencies and lag are better lower.
	HigherIsBetter bool
	Before, After  *float64
	Change         *float64
	// Diff is after-before, set instead of Change when before is near zero (under 1% of
	// the larger value, or a lag under nearZeroLagS): a percentage of almost nothing
	// says nothing ("+54199.7%"), the difference does ("+0.497 s").
	Diff *float64
}

// nearZeroLagS is the lag under which a before value is near zero: the heartbeat's
// resolution is 0.1 s, a hundredth of a second is none.
const nearZeroLagS = 0.01

// Verdict is "better", "worse" or "same" (|change| < 1%, or a difference under 0.01 of
// the unit), "" without a change.
func (d Delta) Verdict() string {
	var c float64
	switch {
	case d.Diff != nil:
		c = *d.Diff
		if c > -0.01 && c < 0.01 {
			return "same"
		}
	case d.Change != nil:
		c = *d.Change
		if c > -1 && c < 1 {
			return "same"
		}
	default:
		return ""
	}
	if (c > 0) == d.HigherIsBetter {
		return "better"
	}
	return "worse"
}

// ChangeText is the change as shown: "+3.2%", or the difference "+0.497 s" when the
// before value is near zero, "n/a" without either.
func (d Delta) ChangeText() string {
	if d.Diff != nil {
		return fmt.Sprintf("%+.3f %s", *d.Diff, d.Unit)
	}
	return fmtChange(d.Change)
}

func runMetrics(r *Run) map[string]*float64 {
	out := map[string]*float64{}
	if r.Summary != nil {
		v := func(x float64) *float64 { return &x }
		out["TPS"], out["QPS"] = v(r.Summary.TPS), v(r.Summary.QPS)
		for _, k := range []string{"avg", "p95", "p99", "max"} {
			if x, ok := r.Summary.LatencyMs[k]; ok {
				out["latency "+k] = v(x)
			}
		}
	}
	if m, ok := r.MaxLagS(); ok {
		out["max lag"] = &m
	}
	return out
}

// compareMetrics lists the compared metrics in order.
var compareMetrics = []struct {
	name, unit string
	higher     bool
}{
	{"TPS", "1/s", true}, {"QPS", "1/s", true},
	{"latency avg", "ms", false}, {"latency p95", "ms", false}, {"latency p99", "ms", false}, {"latency max", "ms", false},
	{"max lag", "s", false},
}

// Compare pairs before's and after's runs by name (or the one run of each) and computes
// the change of TPS, QPS, latency avg/p95/p99/max and the maximum lag.
func Compare(before, after *Results) *Comparison {
	c := &Comparison{Before: before, After: after}
	pair := func(a, b *Run) {
		p := Pair{Name: a.Name, Before: a, After: b}
		if a.Name != b.Name {
			p.Name = a.Name + " / " + b.Name
		}
		ma, mb := runMetrics(a), runMetrics(b)
		for _, m := range compareMetrics {
			d := Delta{Metric: m.name, Unit: m.unit, HigherIsBetter: m.higher, Before: ma[m.name], After: mb[m.name]}
			switch {
			case d.Before == nil || d.After == nil:
			case *d.Before == *d.After:
				d.Change = new(float64)
			case nearZero(*d.Before, *d.After, m.unit):
				diff := *d.After - *d.Before
				d.Diff = &diff
			default:
				// The same function as every other percentage (stats.Compare), one run a side.
				if ch := stats.Compare(stats.Of([]float64{*d.After}), stats.Of([]float64{*d.Before})); ch.OK {
					delta := ch.Delta()
					d.Change = &delta
				}
			}
			p.Metrics = append(p.Metrics, d)
		}
		p.Differences = differences(a, b)
		p.Notes = compareNotes(a, b)
		p.HostsBefore, p.HostsAfter = HostsLine(a.Manifest.Hosts), HostsLine(b.Manifest.Hosts)
		c.Pairs = append(c.Pairs, p)
	}
	if len(before.Runs) == 1 && len(after.Runs) == 1 {
		pair(before.Runs[0], after.Runs[0])
		return c
	}
	byName := map[string]*Run{}
	for _, r := range after.Runs {
		byName[r.Name] = r
	}
	used := map[string]bool{}
	for _, a := range before.Runs {
		if b, ok := byName[a.Name]; ok {
			pair(a, b)
			used[a.Name] = true
		} else {
			c.OnlyBefore = append(c.OnlyBefore, a.Name)
		}
	}
	for _, b := range after.Runs {
		if !used[b.Name] {
			c.OnlyAfter = append(c.OnlyAfter, b.Name)
		}
	}
	return c
}

// nearZero says before is too close to zero for a percentage of it: under 1% of the
// larger of the two, or (seconds of lag) under nearZeroLagS.
func nearZero(before, after float64, unit string) bool {
	b, a := math.Abs(before), math.Abs(after)
	return b < 0.01*max(a, b) || (unit == "s" && b < nearZeroLagS)
}

// differences lists what the two runs were set up with differently: "topology.nodes: 3
// -> 2", "links: none -> all=1ms", "knobs: ... -> ...", workload options, server
// versions. Empty when they were set up alike.
func differences(a, b *Run) []string {
	var out []string
	diff := func(what, x, y string) {
		if x != y {
			if x == "" {
				x = "none"
			}
			if y == "" {
				y = "none"
			}
			out = append(out, fmt.Sprintf("%s: %s -> %s", what, x, y))
		}
	}
	ta, tb := a.topology, b.topology
	keys := map[string]bool{}
	for k := range ta {
		keys[k] = true
	}
	for k := range tb {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if k == "name" {
			continue
		}
		x, y := "", ""
		if v, ok := ta[k]; ok {
			x = humanValue(v)
		}
		if v, ok := tb[k]; ok {
			y = humanValue(v)
		}
		diff("topology."+k, x, y)
	}
	diff("links", linksText(a), linksText(b))
	diff("knobs", knobsText(a), knobsText(b))
	diff("workload", a.Manifest.Workload.Name, b.Manifest.Workload.Name)
	wk := map[string]bool{}
	for k := range a.Manifest.Workload.Options {
		wk[k] = true
	}
	for k := range b.Manifest.Workload.Options {
		wk[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(wk)) {
		diff("workload "+k, a.Manifest.Workload.Options[k], b.Manifest.Workload.Options[k])
	}
	diff("server", flavorName(a.Flavor(), a.Version()), flavorName(b.Flavor(), b.Version()))
	return out
}

// linksText is the run's links as requested ("netem apply" syntax), else its per-link
// impairments, "" without any.
func linksText(r *Run) string {
	li := r.Impairment()
	if li == nil {
		return ""
	}
	if li.Request != "" {
		return li.Request
	}
	return kvList(li.Links, ", ")
}

// knobsText is the run's requested knobs, "" without any.
func knobsText(r *Run) string {
	if r.Manifest.Knobs == nil {
		return ""
	}
	return strings.Join(r.Manifest.Knobs.Requested, ", ")
}

// compareNotes say what limits the comparison of a and b: both CPU-bound (the change
// measures the host as much as the topology), one run a side (no confidence interval).
func compareNotes(a, b *Run) []string {
	bound := func(r *Run) bool { h := r.BusiestHost(); return h != nil && h.CPUSaturated }
	var out []string
	switch {
	case bound(a) && bound(b):
		out = append(out, "both runs were CPU-bound (busiest host CPU-saturated): the changes measure the host as much as what differs")
	case bound(a) || bound(b):
		out = append(out, "one run was CPU-bound (busiest host CPU-saturated), the other not: part of the change may be the host's")
	}
	for _, side := range []struct {
		name string
		r    *Run
	}{{"before", a}, {"after", b}} {
		if _, u := side.r.MaxLag(); u != "" {
			out = append(out, fmt.Sprintf("max lag %s is a lower bound: %s (its lag could not be measured then)", side.name, u))
		}
	}
	out = append(out, "one run on each side: no confidence interval, so a change of a few percent may be noise (repeat the runs: a sweep with repeats: 3)")
	return out
}

func fmtVal(p *float64, unit string) string {
	if p == nil {
		return "n/a"
	}
	switch unit {
	case "s":
		return strconv.FormatFloat(*p, 'f', 3, 64)
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}

func fmtChange(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", *p)
}

// WriteText prints the comparison as an aligned table.
func (c *Comparison) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "before: %s\nafter:  %s\n\n", c.Before.Dir, c.After.Dir)
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tmetric\tbefore\tafter\tchange\t")
	for _, p := range c.Pairs {
		for i, d := range p.Metrics {
			name := ""
			if i == 0 {
				name = p.Name
			}
			fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s %s\t\n", name, d.Metric, d.Unit, fmtVal(d.Before, d.Unit), fmtVal(d.After, d.Unit), d.ChangeText(), d.Verdict())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range c.Pairs {
		prefix := ""
		if len(c.Pairs) > 1 {
			prefix = p.Name + ": "
		}
		if len(p.Differences) == 0 {
			fmt.Fprintf(w, "\n%sdifferences: none in topology, links, knobs, workload or servers\n", prefix)
		} else {
			fmt.Fprintf(w, "\n%sdifferences (before -> after):\n", prefix)
			for _, d := range p.Differences {
				fmt.Fprintf(w, "  - %s\n", d)
			}
		}
		if p.HostsBefore != "" || p.HostsAfter != "" {
			fmt.Fprintf(w, "%shosts before: %s\n%shosts after: %s\n", prefix, cmp.Or(p.HostsBefore, "this machine"), prefix, cmp.Or(p.HostsAfter, "this machine"))
		}
		for _, n := range p.Notes {
			fmt.Fprintf(w, "%snote: %s\n", prefix, n)
		}
	}
	fmt.Fprintln(w, "change: after against before in percent; where before is near zero (under 1% of the larger, or a lag under 0.01 s), the difference after - before instead.")
	for _, n := range c.OnlyBefore {
		fmt.Fprintf(w, "only before: %s\n", n)
	}
	for _, n := range c.OnlyAfter {
		fmt.Fprintf(w, "only after: %s\n", n)
	}
	return nil
}

// HTML renders the comparison as a self-contained page: the table, and per pair the
// TPS and p95 per report interval of both runs on one time axis (seconds since the
// start of measurement).
func (c *Comparison) HTML(now time.Time) ([]byte, error) {
	type pairView struct {
		Pair
		Chart *Chart
	}
	var pvs []pairView
	for _, p := range c.Pairs {
		pv := pairView{Pair: p}
		var panels []panel
		xmax := 1.0
		tpsP := panel{title: "TPS per report interval", ylabel: "TPS"}
		latP := panel{title: "p95 latency per report interval", ylabel: "ms"}
		for i, r := range []*Run{p.Before, p.After} {
			label := []string{"before", "after"}[i]
			var tps, lat plotter.XYs
			if len(r.Intervals) > 0 {
				tps = append(tps, plotter.XY{X: 0, Y: r.Intervals[0].TPS})
				lat = append(lat, plotter.XY{X: 0, Y: r.Intervals[0].LatP95Ms})
			}
			for _, iv := range r.Intervals {
				tps = append(tps, plotter.XY{X: iv.ElapsedS, Y: iv.TPS})
				lat = append(lat, plotter.XY{X: iv.ElapsedS, Y: iv.LatP95Ms})
				xmax = max(xmax, iv.ElapsedS)
			}
			tpsP.lines = append(tpsP.lines, series{label: label, xys: tps, step: true, color: i, dash: i == 0})
			latP.lines = append(latP.lines, series{label: label, xys: lat, step: true, color: i, dash: i == 0})
		}
		panels = append(panels, tpsP, latP)
		ch, err := timeSeriesChart(p.Name, "time s (from the start of measurement)", panels, xmax)
		if err != nil {
			return nil, err
		}
		pv.Chart = &ch
		pvs = append(pvs, pv)
	}
	var b bytes.Buffer
	err := compareTemplate.Execute(&b, map[string]any{"C": c, "Pairs": pvs, "Generated": now.UTC().Format("2006-01-02 15:04:05 UTC")})
	return b.Bytes(), err
}

var compareTemplate = template.Must(template.New("compare").Funcs(template.FuncMap{
	"val":    fmtVal,
	"change": fmtChange,
	"svg":    func(s string) template.HTML { return template.HTML(s) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>habench compare</title>
<style>
body { font-family: 'Liberation Sans', Arial, Helvetica, sans-serif; margin: 1.5em auto; max-width: 1000px; color: #222; padding: 0 1em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: right; } th { background: #f3f3f3; } .l { text-align: left; }
.better { color: #066a06; } .worse { color: #a40000; } .chart svg { max-width: 100%; height: auto; display: block; }
.note { color: #555; font-size: .85em; }
</style>
</head>
<body>
<h1>habench compare</h1>
<p class="note">before: <code>{{.C.Before.Dir}}</code>, after: <code>{{.C.After.Dir}}</code>; rendered {{.Generated}}.</p>
<table>
<tr><th class="l">run</th><th class="l">metric</th><th>before</th><th>after</th><th>change</th><th class="l"></th></tr>
{{- range .Pairs}}{{$p := .}}
{{- range $i, $d := .Metrics}}
<tr><td class="l">{{if not $i}}{{$p.Name}}{{end}}</td><td class="l">{{$d.Metric}} ({{$d.Unit}})</td><td>{{val $d.Before $d.Unit}}</td><td>{{val $d.After $d.Unit}}</td><td>{{$d.ChangeText}}</td><td class="l {{$d.Verdict}}">{{$d.Verdict}}</td></tr>
{{- end}}
{{- end}}
</table>
{{- range .Pairs}}
{{- if .Differences}}<p><b>{{.Name}}</b>, differences (before &rarr; after):</p><ul>{{range .Differences}}<li>{{.}}</li>{{end}}</ul>{{else}}<p><b>{{.Name}}</b>: no differences in topology, links, knobs, workload or servers.</p>{{end}}
{{- if or .HostsBefore .HostsAfter}}<p><b>{{.Name}}</b> hosts before: {{or .HostsBefore "this machine"}}<br>hosts after: {{or .HostsAfter "this machine"}}</p>{{end}}
{{- range .Notes}}<p class="note">note: {{.}}</p>{{end}}
{{- end}}
<p class="note">change: after against before in percent; where before is near zero (under 1% of the larger, or a lag under 0.01 s), the difference after - before instead.</p>
{{- range .C.OnlyBefore}}<p>only before: {{.}}</p>{{end}}
{{- range .C.OnlyAfter}}<p>only after: {{.}}</p>{{end}}
{{- range .Pairs}}
<h2>{{.Name}}</h2>
{{- with .Chart}}<div class="chart" title="{{.Title}}">{{svg .SVG}}</div>{{end}}
<p class="note">Before dashed, after solid; time from the start of measurement.</p>
{{- end}}
</body>
</html>
`))
