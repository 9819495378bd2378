package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/stats"
)

// finish writes comparison.json/.md, sweep.md and sweep_points.json from sweep.json's
// records (cells of earlier invocations included) and returns the comparison rows. The
// error names each of those files that could not be written, and report.html, .md, .csv
// when writing them failed (a report that cannot be rendered is only logged).
func (sw *sweepRun) finish() ([]schema.ComparisonRow, error) {
	rows := sw.rows()
	res := &Results{Dir: sw.dir}
	var errs []error
	if len(rows) > 0 {
		errs = append(errs, res.WriteJSON("comparison.json", rows), res.WriteFile(report.ComparisonMarkdownFile, report.ComparisonMarkdown(sw.file, rows)))
	}
	errs = append(errs, res.WriteFile(report.SweepMarkdownFile, report.SweepMarkdown(sw.file)))
	if pts := sw.points(); len(pts) > 0 {
		errs = append(errs, report.WriteSweepPoints(sw.dir, pts))
	}
	// report.html, report.md, report.csv (and sweep.csv with the curves) over all runs.
	_, err := report.Write(sw.dir, report.Options{})
	var we *report.WriteError
	switch {
	case errors.As(err, &we):
		errs = append(errs, err)
	case err != nil && sw.r.Log != nil:
		sw.r.Log.Warn("cannot render the scenario's report", "dir", sw.dir, "err", err)
	}
	return rows, errors.Join(errs...)
}

// cellSummary is the cell's summary.json, or one made of its record when the run did not
// get to write it.
func (sw *sweepRun) cellSummary(rec *schema.CellRecord) *schema.Summary {
	var s schema.Summary
	if b, err := os.ReadFile(filepath.Join(sw.dir, rec.Dir, "summary.json")); err == nil && json.Unmarshal(b, &s) == nil {
		return &s
	}
	s = schema.Summary{Workload: rec.Test, Threads: rec.Threads, TPS: rec.TPS, QPS: rec.QPS, Transactions: rec.Transactions, Error: rec.Error}
	if rec.LatencyMs != nil {
		s.LatencyMs = map[string]float64{"avg": rec.LatencyMs.Avg, "p95": rec.LatencyMs.P95, "p99": rec.LatencyMs.P99, "max": rec.LatencyMs.Max}
	}
	return &s
}

// statAxes are the plan's axes but topology and repeat, for stats.Analyze.
func statAxes(p *scenario.Plan) []stats.Axis {
	var out []stats.Axis
	for _, a := range p.Axes {
		if a.Kind == scenario.AxisTopology || a.Kind == scenario.AxisRepeat {
			continue
		}
		out = append(out, stats.Axis{Name: a.Name, Values: a.Labels(), Reference: a.Reference, Inert: p.Inert(a)})
	}
	return out
}

// rows are the comparison rows: every cell's runs (in grid order, each point's repeats
// together) and a row for each cell not run because it cannot differ (ReusedFrom). Every
// row carries its point's stats.Cell (Stats): the percentages are the point's, computed by
// stats.Analyze over the same summary.json numbers the report reads.
func (sw *sweepRun) rows() []schema.ComparisonRow {
	p := sw.plan
	axes := statAxes(p)
	var rows []schema.ComparisonRow
	var obs []stats.Obs
	for i := range sw.file.Cells {
		rec := &sw.file.Cells[i]
		if rec.Dir == "" || rec.Status == schema.StatusPending || rec.Status == schema.StatusReused {
			continue
		}
		_, ax := p.GroupOf(rec.Axes)
		row := schema.ComparisonRow{Topology: rec.Topology, Cell: rec.Index, Axes: ax, Kind: rec.Kind, Flavor: rec.Flavor, Version: rec.Version,
			Dir: filepath.Join(sw.dir, rec.Dir), Summary: sw.cellSummary(rec), MaxLagS: rec.MaxReplicaLagS, LagUnknown: rec.LagUnknown, DeploySecs: rec.DeployS,
			Group: stats.GroupOf(axes, rec.Axes), LinksControl: rec.LinksControl, LinkAddedMs: rec.LinkAddedMs}
		if rec.Status != schema.StatusDone {
			row.Error = rec.Error
			if row.Error == "" {
				row.Error = "did not finish (" + rec.Status + ")"
			}
		}
		var notes []string
		if rec.Repeat > 0 && len(p.AxisOf(scenario.AxisRepeat).Values) > 1 {
			notes = append(notes, fmt.Sprintf("repeat %d", rec.Repeat))
		}
		if l := rec.Axes["links"]; l != "" && l != "none" && rec.Links == "none" {
			notes = append(notes, "1 node, no links")
		}
		row.Note = strings.Join(notes, ", ")
		rows = append(rows, row)
		o := obsOf(row, rec.Axes)
		if cp := rec.Capacity; cp != nil && cp.Rate > 0 {
			r := float64(cp.Rate)
			o.Search.Rate = &r
			if cp.Failover != nil {
				o.Search.FailoverS = cp.Failover.FailoverS
			}
		}
		obs = append(obs, o)
	}
	if len(rows) == 0 {
		return nil
	}
	cells := stats.Analyze(obs, axes, p.Baseline())
	sw.file.Summary = cells
	var out []schema.ComparisonRow
	for _, c := range cells {
		if c.ReusedFrom == "" {
			for i := range rows {
				if rows[i].Topology == c.Topology && rows[i].Group == c.Group {
					setStats(&rows[i], c)
					out = append(out, rows[i])
				}
			}
			continue
		}
		r := schema.ComparisonRow{Topology: c.Topology, Axes: c.Axes, Group: c.Group, ReusedFrom: c.ReusedFrom,
			Note: "1 node, no links: the runs of " + c.ReusedFrom + ", not run again"}
		for i := range rows {
			if rows[i].Topology == c.Topology && rows[i].Group == c.ReusedFrom {
				r.Kind, r.Flavor, r.Version, r.MaxLagS, r.LagUnknown = rows[i].Kind, rows[i].Flavor, rows[i].Version, rows[i].MaxLagS, rows[i].LagUnknown
				r.Summary = rows[i].Summary
				break
			}
		}
		setStats(&r, c)
		out = append(out, r)
	}
	return out
}

// obsOf is a row's run as stats.Analyze sees it: summary.json's TPS, latency and
// replication figures.
func obsOf(r schema.ComparisonRow, axes map[string]string) stats.Obs {
	o := stats.Obs{Topology: r.Topology, Axes: axes, ID: r.Dir, Failed: r.Error != "" || r.Summary == nil}
	if r.Summary != nil {
		o.TPS, o.AvgMs, o.P95Ms = r.Summary.TPS, r.Summary.LatencyMs["avg"], r.Summary.LatencyMs["p95"]
		o.QPS, o.P99Ms = r.Summary.QPS, r.Summary.LatencyMs["p99"]
		o.Repl = r.Summary.Replication()
	}
	return o
}

// setStats attaches the row's point and its percentages against the baseline.
func setStats(r *schema.ComparisonRow, c *stats.Cell) {
	r.Stats = c
	if c.VsBase != nil && c.VsBase.OK {
		r.TPSvsBase = c.VsBase.Pct
	}
	if c.LatVsBase != nil && c.LatVsBase.OK {
		r.LatVsBase = c.LatVsBase.Pct
	}
}

// points are the sweep curves' points (report.SweepPoint, in sweep_points.json): for
// every point of the grid (a cell and its repeats, sw.file.Summary, set by rows) and
// every axis with more than one value (but topology and repeat), the value in effect
// (read back for option and knob axes), TPS mean, range and 95% CI, mean p95, the change
// from the axis' reference value, the other varying axes as Fixed.
func (sw *sweepRun) points() []report.SweepPoint {
	p := sw.plan
	var varying []*scenario.Axis
	for _, a := range p.Axes {
		if a.Kind != scenario.AxisTopology && a.Kind != scenario.AxisRepeat && len(a.Values) > 1 {
			varying = append(varying, a)
		}
	}
	recs := map[string]*schema.CellRecord{}
	for i := range sw.file.Cells {
		rec := &sw.file.Cells[i]
		if rec.Dir != "" {
			recs[filepath.Join(sw.dir, rec.Dir)] = rec
		}
	}
	var pts []report.SweepPoint
	for _, c := range sw.file.Summary {
		var rec *schema.CellRecord
		for _, id := range c.Runs {
			if rec = recs[id]; rec != nil {
				break
			}
		}
		if rec == nil {
			// Every run of the cell failed: its record says why.
			for i := range sw.file.Cells {
				r := &sw.file.Cells[i]
				if r.Topology == c.Topology && r.Dir != "" && stats.GroupOf(statAxes(p), r.Axes) == c.Group {
					rec = r
					break
				}
			}
		}
		if rec == nil {
			continue
		}
		for _, a := range varying {
			pt := report.SweepPoint{Topology: c.Topology, Axis: pointAxis(a), TPS: c.TPS.Mean, P95Ms: c.P95Ms.Mean, Dir: rec.Dir,
				N: c.TPS.N, TPSMin: c.TPS.Min, TPSMax: c.TPS.Max, TPSCILo: c.TPS.CILo, TPSCIHi: c.TPS.CIHi, ReusedFrom: c.ReusedFrom}
			if c.CapacityRate != nil {
				pt.Capacity = &c.CapacityRate.Mean
			}
			if c.FailoverS != nil {
				pt.FailoverS = &c.FailoverS.Mean
			}
			if c.TPS.N == 0 {
				pt.Error = rec.Error
				if pt.Error == "" {
					pt.Error = "no completed run"
				}
			}
			switch a.Kind {
			case scenario.AxisOption, scenario.AxisKnob:
				pt.Value = rec.Values[a.Name]
			case scenario.AxisThreads:
				pt.Value = strconv.Itoa(rec.Threads)
			case scenario.AxisTest:
				pt.Value = rec.Test
			}
			if pt.Value == "" || a.Kind == scenario.AxisLinks || c.ReusedFrom != "" {
				pt.Value = c.Axes[a.Name] // requested (a single node runs without links)
			}
			if ac := c.AlongAxis(a.Name); ac != nil {
				pt.Reference = ac.Reference
				switch {
				case ac.TPS.Verdict == stats.Reference:
					pt.VsRef = "ref"
				case ac.TPS.OK:
					pt.VsRef = ac.TPS.Signed()
					pct := ac.TPS.Pct
					pt.VsRefPct = &pct
				}
				if ac.TPS.Verdict == stats.Reference {
					pct := 100.0
					pt.VsRefPct = &pct
				}
			}
			for _, o := range varying {
				if o != a {
					if pt.Fixed == nil {
						pt.Fixed = map[string]string{}
					}
					pt.Fixed[o.Name] = c.Axes[o.Name]
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
func pointAxis(a *scenario.Axis) string {
	if a.Kind == scenario.AxisOption || a.Kind == scenario.AxisKnob {
		if v := a.Variables(); len(v) == 1 {
			return v[0]
		}
		return a.Name[strings.Index(a.Name, ".")+1:]
	}
	return a.Name
}
