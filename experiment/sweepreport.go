package experiment

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/report"
)

// finish writes comparison.json/.md, sweep.md and sweep_points.json from sweep.json's
// records (cells of earlier invocations included) and returns the comparison rows.
func (sw *sweepRun) finish() []Row {
	rows := sw.rows()
	res := &Results{Dir: sw.dir}
	if len(rows) > 0 {
		res.WriteJSON("comparison.json", rows)
		res.WriteFile("comparison.md", sw.comparisonMarkdown(rows))
	}
	res.WriteFile("sweep.md", sw.sweepMarkdown())
	if pts := sw.points(); len(pts) > 0 {
		report.WriteSweepPoints(sw.dir, pts)
	}
	// report.html, report.md, report.csv (and sweep.csv with the curves) over all runs.
	if _, err := report.Write(sw.dir, report.Options{}); err != nil && sw.r.Log != nil {
		sw.r.Log.Warn("cannot render the scenario's report", "dir", sw.dir, "err", err)
	}
	return rows
}

// groupOf is the cell's values of the axes compared across (all but topology and repeat).
func (p *Plan) groupOf(values map[string]string) (string, map[string]string) {
	var parts []string
	m := map[string]string{}
	for _, a := range p.Axes {
		if a.Kind == AxisTopology || a.Kind == AxisRepeat {
			continue
		}
		parts = append(parts, a.Name+"="+values[a.Name])
		m[a.Name] = values[a.Name]
	}
	if len(m) == 0 {
		m = nil
	}
	return strings.Join(parts, " "), m
}

// cellSummary is the cell's summary.json, or one made of its record when the run did not
// get to write it.
func (sw *sweepRun) cellSummary(rec *CellRecord) *Summary {
	var s Summary
	if b, err := os.ReadFile(filepath.Join(sw.dir, rec.Dir, "summary.json")); err == nil && json.Unmarshal(b, &s) == nil {
		return &s
	}
	s = Summary{Workload: rec.Test, Threads: rec.Threads, TPS: rec.TPS, QPS: rec.QPS, Transactions: rec.Transactions, Error: rec.Error}
	if rec.LatencyMs != nil {
		s.LatencyMs = map[string]float64{"avg": rec.LatencyMs.Avg, "p95": rec.LatencyMs.P95, "p99": rec.LatencyMs.P99, "max": rec.LatencyMs.Max}
	}
	return &s
}

// rows are the comparison rows: every cell that ran (in cell order), grouped by the
// non-topology axes, with percentages against the baseline topology's mean in the group.
func (sw *sweepRun) rows() []Row {
	p := sw.plan
	var rows []Row
	for i := range sw.file.Cells {
		rec := &sw.file.Cells[i]
		if rec.Dir == "" || rec.Status == StatusPending {
			continue
		}
		g, axes := p.groupOf(rec.Axes)
		row := Row{Topology: rec.Topology, Cell: rec.Index, Axes: axes, Kind: rec.Kind, Flavor: rec.Flavor, Version: rec.Version,
			Dir: filepath.Join(sw.dir, rec.Dir), Summary: sw.cellSummary(rec), MaxLagS: rec.MaxReplicaLagS, DeploySecs: rec.DeployS, group: g}
		if rec.Status != StatusDone {
			row.Error = rec.Error
			if row.Error == "" {
				row.Error = "did not finish (" + rec.Status + ")"
			}
		}
		var notes []string
		if rec.Repeat > 0 && len(p.axis(AxisRepeat).Values) > 1 {
			notes = append(notes, fmt.Sprintf("repeat %d", rec.Repeat))
		}
		if l := rec.Axes["links"]; l != "" && l != "none" && rec.Links == "none" {
			notes = append(notes, "1 node, no links")
		}
		row.Note = strings.Join(notes, ", ")
		rows = append(rows, row)
	}
	out := rows
	if len(out) == 0 {
		return nil
	}
	base := p.baseline()
	type acc struct {
		tps, lat float64
		n        int
	}
	bases := map[string]*acc{}
	for _, r := range out {
		if r.Topology == base && r.Summary != nil {
			a := bases[r.group]
			if a == nil {
				a = &acc{}
				bases[r.group] = a
			}
			a.tps += r.Summary.TPS
			a.lat += r.Summary.LatencyMs["avg"]
			a.n++
		}
	}
	for i := range out {
		a := bases[out[i].group]
		if a == nil || out[i].Summary == nil {
			continue
		}
		if t := a.tps / float64(a.n); t > 0 {
			out[i].TPSvsBase = 100 * out[i].Summary.TPS / t
		}
		if l := a.lat / float64(a.n); l > 0 {
			out[i].LatVsBase = 100 * out[i].Summary.LatencyMs["avg"] / l
		}
	}
	return out
}

// axisNamed returns the axis called name, or nil.
func (p *Plan) axisNamed(name string) *Axis {
	for _, a := range p.Axes {
		if a.Name == name {
			return a
		}
	}
	return nil
}

func (p *Plan) axis(k AxisKind) *Axis {
	for _, a := range p.Axes {
		if a.Kind == k {
			return a
		}
	}
	return &Axis{}
}

// comparisonMarkdown is comparison.md: per group of the non-topology axes, the topologies
// against the baseline (S1's table).
func (sw *sweepRun) comparisonMarkdown(rows []Row) string {
	p := sw.plan
	s := p.Scenario
	base := p.baseline()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", s.Name)
	if d := strings.TrimSpace(s.Description); d != "" {
		b.WriteString(d + "\n\n")
	}
	fmt.Fprintf(&b, "Baseline: %s. Workload: %s. Scale: %s.", base, s.Workload.Test, p.Scale)
	if !s.Links.IsZero() {
		fmt.Fprintf(&b, " Links between nodes (one-way, as `habench netem apply %s`; requested and achieved round trips in each run's manifest.json).", s.Links.String())
	}
	if p.axis(AxisLinks).Name != "" {
		b.WriteString(" Links are one-way delays between every pair of nodes (round trip twice that); requested and achieved round trips are in each run's manifest.json.")
	}
	b.WriteString("\n")
	var groups []string
	byGroup := map[string][]Row{}
	for _, r := range rows {
		if _, ok := byGroup[r.group]; !ok {
			groups = append(groups, r.group)
		}
		byGroup[r.group] = append(byGroup[r.group], r)
	}
	for _, g := range groups {
		b.WriteString("\n")
		if g != "" {
			fmt.Fprintf(&b, "## %s\n\n", g)
		}
		hasBase := false
		for _, r := range byGroup[g] {
			hasBase = hasBase || r.Topology == base
		}
		if !hasBase {
			fmt.Fprintf(&b, "(the baseline %s has no run here: no percentages)\n\n", base)
		}
		b.WriteString(ComparisonTable(byGroup[g]))
	}
	ran := map[string]bool{}
	for _, r := range rows {
		ran[r.Topology] = true
		if r.Error != "" {
			fmt.Fprintf(&b, "\n**%s (cell %d) did not complete:** %s (its numbers cover only the part that ran).\n", r.Topology, r.Cell, r.Error)
		}
	}
	for _, v := range p.Axes[0].Values {
		if !ran[v.Label] {
			fmt.Fprintf(&b, "\n**%s was not run** (the scenario stopped before it, or its deployment failed: sweep.json says).\n", v.Label)
		}
	}
	return b.String()
}

// sweepMarkdown is sweep.md: every cell with its axis values, what was read back, status
// and headline numbers.
func (sw *sweepRun) sweepMarkdown() string {
	p := sw.plan
	f := sw.file
	var b strings.Builder
	counts := map[string]int{}
	for _, c := range f.Cells {
		counts[c.Status]++
	}
	fmt.Fprintf(&b, "# %s: sweep\n\n", f.Scenario)
	fmt.Fprintf(&b, "Scale %s, workload %s, %s: %d done, %d failed, %d not run. Cell policy: prepare %s, restart %s, drop caches %s, warmup %v (excluded).\n\n",
		f.Scale, f.Workload, Plural(len(f.Cells), "cell"), counts[StatusDone], counts[StatusFailed], counts[StatusPending]+counts[StatusRunning],
		f.Policy.Prepare, yesNo(f.Policy.Restart), yesNo(f.Policy.DropCaches), durOf(f.Policy.Warmup))
	b.WriteString("| cell |")
	sep := "|---|"
	for _, a := range p.Axes {
		b.WriteString(" " + a.Name + " |")
		sep += "---|"
	}
	b.WriteString(" read back | status | TPS | QPS | avg ms | p95 ms | p99 ms | max replica lag s |\n")
	b.WriteString(sep + "---|---|---|---|---|---|---|---|\n")
	for _, c := range f.Cells {
		fmt.Fprintf(&b, "| %d |", c.Index)
		for _, a := range p.Axes {
			fmt.Fprintf(&b, " %s |", c.Axes[a.Name])
		}
		var rb []string
		for _, a := range p.Axes {
			if v, ok := c.Values[a.Name]; ok {
				rb = append(rb, a.Name+"="+v)
			}
		}
		status := c.Status
		if c.Error != "" {
			status += ": " + strings.ReplaceAll(c.Error, "|", "/")
		}
		lat := CellLatency{}
		if c.LatencyMs != nil {
			lat = *c.LatencyMs
		}
		if c.Dir == "" {
			fmt.Fprintf(&b, " %s | %s | | | | | | |\n", strings.Join(rb, " "), status)
			continue
		}
		fmt.Fprintf(&b, " %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", strings.Join(rb, " "), status, c.TPS, c.QPS, lat.Avg, lat.P95, lat.P99, fmtOpt(c.MaxReplicaLagS, "%.3f"))
	}
	return b.String()
}

func durOf(d *Duration) string {
	if d == nil {
		return "0s"
	}
	return FormatDuration(time.Duration(*d))
}

// points are the sweep curves' points (report.SweepPoint, in sweep_points.json): for every cell that ran and
// every axis with more than one value (but topology and repeat), the value in effect
// (read back for option and knob axes), TPS and p95, the other varying axes as Fixed.
func (sw *sweepRun) points() []report.SweepPoint {
	p := sw.plan
	var varying []*Axis
	for _, a := range p.Axes {
		if a.Kind != AxisTopology && len(a.Values) > 1 {
			varying = append(varying, a)
		}
	}
	var pts []report.SweepPoint
	for _, rec := range sw.file.Cells {
		if rec.Dir == "" || (rec.Status != StatusDone && rec.Status != StatusFailed) {
			continue
		}
		for _, a := range varying {
			if a.Kind == AxisRepeat {
				continue
			}
			pt := report.SweepPoint{Topology: rec.Topology, Axis: pointAxis(a), TPS: rec.TPS, Dir: rec.Dir}
			if rec.LatencyMs != nil {
				pt.P95Ms = rec.LatencyMs.P95
			}
			if rec.Status != StatusDone {
				pt.Error = rec.Error
			}
			switch a.Kind {
			case AxisOption, AxisKnob:
				pt.Value = rec.Values[a.Name]
			case AxisThreads:
				pt.Value = strconv.Itoa(rec.Threads)
			case AxisLinks:
				pt.Value = rec.Axes[a.Name] // requested: a single node runs without links
			case AxisTest:
				pt.Value = rec.Test
			}
			if pt.Value == "" {
				pt.Value = rec.Axes[a.Name]
			}
			for _, o := range varying {
				if o != a {
					if pt.Fixed == nil {
						pt.Fixed = map[string]string{}
					}
					pt.Fixed[o.Name] = rec.Axes[o.Name]
				}
			}
			pts = append(pts, pt)
		}
	}
	return pts
}

// pointAxis names an axis on a chart: the variable of a one-variable option or knob axis
// ("wsrep_slave_threads"), the label of a several-variable one ("durability"), else the
// axis name ("threads", "links", "test").
func pointAxis(a *Axis) string {
	if a.Kind == AxisOption || a.Kind == AxisKnob {
		if v := a.Variables(); len(v) == 1 {
			return v[0]
		}
		return a.Name[strings.Index(a.Name, ".")+1:]
	}
	return a.Name
}
