package stats

import (
	"maps"
	"slices"
	"strings"
)

// Obs is one run of a sweep cell: the numbers the comparison is made of.
type Obs struct {
	Topology string
	// Axes are the cell's values of the axes other than topology and repeat.
	Axes map[string]string
	// ID names the run (its directory); Cell.Runs lists them.
	ID string
	// TPS, AvgMs, P95Ms: transactions per second and latency (ms) over the measured run
	// (warm-up excluded).
	TPS, AvgMs, P95Ms float64
	// QPS (queries per second) and P99Ms are summarised too, not compared.
	QPS, P99Ms float64
	// Failed runs are counted (Cell.Failed) but left out of the figures.
	Failed bool
	// Repl are the run's replication figures (see Repl); summarised, not compared.
	Repl Repl
	// Search are the run's capacity search figures (see Search); summarised, not compared.
	Search Search
}

// Search are a capacity search's figures (nil when the cell did not search, or found no
// rate): the highest rate that met the objective (events per second) and the failover
// time at that rate (s).
type Search struct {
	Rate, FailoverS *float64
}

// Repl are a run's replication figures, each nil when the run has none: the largest mean
// lag of a node (LagAvgS, s), the largest lag (LagMaxS, s), the largest backlog
// (BacklogMax, transactions received and not applied), the largest share of the window a
// node was paused or throttled by flow control (FCPaused, 0..1).
type Repl struct {
	LagAvgS, LagMaxS, BacklogMax, FCPaused *float64
}

// Axis is a sweep axis other than topology and repeat, in the sweep's order.
type Axis struct {
	Name   string
	Values []string
	// Reference is the value the axis' changes are against ("": the first value).
	Reference string
	// Inert lists the topologies the axis has no effect on (links on a single node): their
	// cells for the other values are not run; Analyze adds them as copies of the one
	// that ran (Cell.ReusedFrom).
	Inert []string
}

// Ref is the axis' reference value.
func (a Axis) Ref() string {
	if a.Reference != "" || len(a.Values) == 0 {
		return a.Reference
	}
	return a.Values[0]
}

// Cell is one point of the grid with its repeats summarised and compared.
type Cell struct {
	Topology string            `json:"topology"`
	Axes     map[string]string `json:"axes,omitempty"`
	// Group is the axes as "name=value ..." in the sweep's order ("" without axes).
	Group string `json:"group"`
	// Runs are the IDs of the runs summarised (completed ones), Failed how many failed.
	Runs   []string `json:"runs"`
	Failed int      `json:"failed,omitempty"`
	TPS    Sample   `json:"tps"`
	AvgMs  Sample   `json:"latency_avg_ms"`
	P95Ms  Sample   `json:"latency_p95_ms"`
	P99Ms  Sample   `json:"latency_p99_ms"`
	QPS    Sample   `json:"qps"`
	// LagAvgS, LagMaxS, BacklogMax and FCPaused summarise the runs' Repl figures over the
	// repeats (a tuner's lag and flow control with their intervals, not one run's spike);
	// nil unless every completed run has the figure.
	LagAvgS    *Sample `json:"lag_avg_s,omitempty"`
	LagMaxS    *Sample `json:"lag_max_s,omitempty"`
	BacklogMax *Sample `json:"backlog_max_trx,omitempty"`
	FCPaused   *Sample `json:"fc_paused,omitempty"`
	// CapacityRate and FailoverS summarise the cells' capacity searches over the repeats
	// (Search); nil unless every completed run has the figure.
	CapacityRate *Sample `json:"capacity_rate,omitempty"`
	FailoverS    *Sample `json:"failover_s,omitempty"`
	// IsBase: the cell is the baseline topology's in its group.
	IsBase bool `json:"is_baseline,omitempty"`
	// VsBase, LatVsBase and P95VsBase are TPS, average and p95 latency against the baseline topology's
	// cell of the same group; nil when the group has none.
	VsBase    *Change `json:"tps_vs_baseline,omitempty"`
	LatVsBase *Change `json:"latency_vs_baseline,omitempty"`
	P95VsBase *Change `json:"latency_p95_vs_baseline,omitempty"`
	// Along are the changes from each axis' reference value, the other axes and the
	// topology the same; one per axis with more than one value, in the axes' order.
	Along []AxisChange `json:"along,omitempty"`
	// ReusedFrom is the group of the cell whose runs stand in for this one (an axis with
	// no effect on the topology), "" when the cell ran.
	ReusedFrom string `json:"reused_from,omitempty"`
}

// AxisChange is a cell against the cell of its axis' reference value.
type AxisChange struct {
	Axis      string `json:"axis"`
	Reference string `json:"reference"`
	// TPS and Lat (average latency); Verdict Reference for the reference cell itself, OK
	// false when the reference cell has no completed run.
	TPS Change `json:"tps"`
	Lat Change `json:"latency_avg"`
}

// AlongAxis returns the cell's change along axis, nil when there is none.
func (c *Cell) AlongAxis(axis string) *AxisChange {
	for i := range c.Along {
		if c.Along[i].Axis == axis {
			return &c.Along[i]
		}
	}
	return nil
}

// GroupOf is values as "name=value ..." in axes' order (axes values lacks are left out).
func GroupOf(axes []Axis, values map[string]string) string {
	var p []string
	for _, a := range axes {
		if v, ok := values[a.Name]; ok {
			p = append(p, a.Name+"="+v)
		}
	}
	return strings.Join(p, " ")
}

// Analyze groups obs into cells (same topology and axis values), adds the cells of inert
// axes as copies of the one that ran, and computes each cell's summaries, its change
// against the base topology's cell of its group and along each axis. Cells are in the
// order of their first run (topologies in the order they first appear, then the axes'
// value order); a reused cell right after the cells of its topology that ran before it.
func Analyze(obs []Obs, axes []Axis, base string) []*Cell {
	var cells []*Cell
	byKey := map[string]*Cell{}
	data := map[*Cell]*cellVals{}
	var topos []string
	for _, o := range obs {
		g := GroupOf(axes, o.Axes)
		c := byKey[cellKey(o.Topology, g)]
		if c == nil {
			c = &Cell{Topology: o.Topology, Axes: pick(axes, o.Axes), Group: g}
			byKey[cellKey(o.Topology, g)] = c
			data[c] = &cellVals{}
			cells = append(cells, c)
			if !slices.Contains(topos, o.Topology) {
				topos = append(topos, o.Topology)
			}
		}
		if o.Failed {
			c.Failed++
			continue
		}
		c.Runs = append(c.Runs, o.ID)
		data[c].add(o)
	}
	for _, c := range cells {
		data[c].summarise(c)
	}
	cells = addInert(axes, cells, byKey)
	// Order: topology first seen, then the axes' value order.
	pos := func(c *Cell) []int {
		p := []int{slices.Index(topos, c.Topology)}
		for _, a := range axes {
			p = append(p, slices.Index(a.Values, c.Axes[a.Name]))
		}
		return p
	}
	slices.SortStableFunc(cells, func(x, y *Cell) int { return slices.Compare(pos(x), pos(y)) })
	for _, c := range cells {
		if b := byKey[cellKey(base, c.Group)]; b != nil {
			c.IsBase = b == c
			vs, lat, p95 := Compare(c.TPS, b.TPS), Compare(c.AvgMs, b.AvgMs), Compare(c.P95Ms, b.P95Ms)
			if c.IsBase || sameRuns(b, c) {
				vs.Verdict, lat.Verdict, p95.Verdict = Reference, Reference, Reference
			}
			c.VsBase, c.LatVsBase, c.P95VsBase = &vs, &lat, &p95
		}
		for _, a := range axes {
			if len(a.Values) < 2 {
				continue
			}
			m := map[string]string{}
			for k, x := range c.Axes {
				m[k] = x
			}
			m[a.Name] = a.Ref()
			ac := AxisChange{Axis: a.Name, Reference: a.Ref()}
			if r := byKey[cellKey(c.Topology, GroupOf(axes, m))]; r != nil {
				ac.TPS, ac.Lat = Compare(c.TPS, r.TPS), Compare(c.AvgMs, r.AvgMs)
				if r == c || sameRuns(r, c) {
					ac.TPS.Verdict, ac.Lat.Verdict = Reference, Reference
				}
			}
			c.Along = append(c.Along, ac)
		}
	}
	return cells
}

// sameRuns: a reused cell and its source (or two copies of one) are the same runs.
func sameRuns(a, b *Cell) bool {
	return len(a.Runs) > 0 && slices.Equal(a.Runs, b.Runs)
}

func pick(axes []Axis, v map[string]string) map[string]string {
	m := map[string]string{}
	for _, a := range axes {
		if x, ok := v[a.Name]; ok {
			m[a.Name] = x
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// appendSet appends *v to xs when v is set.
func appendSet(xs []float64, v *float64) []float64 {
	if v == nil {
		return xs
	}
	return append(xs, *v)
}

// cellKey is a cell's key in Analyze's index: its topology and group.
func cellKey(topo, group string) string { return topo + "\x00" + group }

// cellVals are the completed runs' figures of a cell, in run order.
type cellVals struct {
	tps, avg, p95, p99, qps          []float64
	lagAvg, lagMax, backlog, fcPause []float64
	rate, failover                   []float64
}

// add appends o's figures (those it has).
func (d *cellVals) add(o Obs) {
	d.tps, d.avg, d.p95 = append(d.tps, o.TPS), append(d.avg, o.AvgMs), append(d.p95, o.P95Ms)
	d.p99, d.qps = append(d.p99, o.P99Ms), append(d.qps, o.QPS)
	d.lagAvg, d.lagMax = appendSet(d.lagAvg, o.Repl.LagAvgS), appendSet(d.lagMax, o.Repl.LagMaxS)
	d.backlog, d.fcPause = appendSet(d.backlog, o.Repl.BacklogMax), appendSet(d.fcPause, o.Repl.FCPaused)
	d.rate, d.failover = appendSet(d.rate, o.Search.Rate), appendSet(d.failover, o.Search.FailoverS)
}

// summarise sets c's samples; a figure not every completed run has stays nil.
func (d *cellVals) summarise(c *Cell) {
	c.TPS, c.AvgMs, c.P95Ms, c.P99Ms, c.QPS = Of(d.tps), Of(d.avg), Of(d.p95), Of(d.p99), Of(d.qps)
	all := func(xs []float64) *Sample {
		if len(xs) == 0 || len(xs) != len(c.Runs) {
			return nil
		}
		s := Of(xs)
		return &s
	}
	c.LagAvgS, c.LagMaxS, c.BacklogMax, c.FCPaused = all(d.lagAvg), all(d.lagMax), all(d.backlog), all(d.fcPause)
	c.CapacityRate, c.FailoverS = all(d.rate), all(d.failover)
}

// addInert adds the cells of inert axes (not run: the one that ran stands for every other
// value of the axis on its topology) as copies of that cell with ReusedFrom set, to cells
// and byKey, and returns cells.
func addInert(axes []Axis, cells []*Cell, byKey map[string]*Cell) []*Cell {
	for _, a := range axes {
		for _, t := range a.Inert {
			for _, c := range slices.Clone(cells) {
				if c.Topology != t {
					continue
				}
				for _, v := range a.Values {
					m := maps.Clone(c.Axes)
					if m == nil {
						m = map[string]string{}
					}
					m[a.Name] = v
					g := GroupOf(axes, m)
					if byKey[cellKey(t, g)] != nil {
						continue
					}
					n := *c // the figures are the cell's that ran
					n.Axes, n.Group, n.ReusedFrom = m, g, c.Group
					if c.ReusedFrom != "" {
						n.ReusedFrom = c.ReusedFrom
					}
					byKey[cellKey(t, g)] = &n
					cells = append(cells, &n)
				}
			}
		}
	}
	return cells
}
