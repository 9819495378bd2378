package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// sweepAxesFile is the part of a sweep directory's sweep.json the cells need: the axes
// in the sweep's order with their reference values and the topologies they cannot change.
type sweepAxesFile struct {
	Axes []struct {
		Name      string   `json:"name"`
		Kind      string   `json:"kind"`
		Values    []string `json:"values"`
		Reference string   `json:"reference"`
		Inert     []string `json:"inert_for"`
	} `json:"axes"`
}

// loadAxes reads the axes (but topology and repeat) from dir/sweep.json, else derives them
// from the runs' manifest extra "axes" (names sorted, values in the order they ran, the
// first value the reference). nil outside sweeps.
func (res *Results) loadAxes() error {
	path := filepath.Join(res.Dir, "sweep.json")
	if b, err := os.ReadFile(path); err == nil {
		var f sweepAxesFile
		if err := json.Unmarshal(b, &f); err != nil {
			return &LoadError{Path: path, Reason: err.Error()}
		}
		for _, a := range f.Axes {
			if a.Kind == "topology" || a.Kind == "repeat" {
				continue
			}
			res.Axes = append(res.Axes, stats.Axis{Name: a.Name, Values: a.Values, Reference: a.Reference, Inert: a.Inert})
		}
		return nil
	}
	res.Axes = res.derivedAxes()
	return nil
}

// derivedAxes are the axes of the runs' manifest extra "axes" but topology and repeat:
// names sorted, values in the order they ran, the first value the reference.
func (res *Results) derivedAxes() []stats.Axis {
	vals := map[string][]string{}
	for _, r := range res.Runs {
		for k, v := range r.axes() {
			if !slices.Contains(vals[k], v) {
				vals[k] = append(vals[k], v)
			}
		}
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []stats.Axis
	for _, n := range names {
		out = append(out, stats.Axis{Name: n, Values: vals[n]})
	}
	return out
}

// axes are the run's sweep axis values but topology and repeat (manifest extra "axes").
func (r *Run) axes() map[string]string {
	m, ok := r.Manifest.Extra["axes"].(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		if k != "topology" && k != "repeat" {
			out[k] = humanValue(v)
		}
	}
	return out
}

// Cells are the points of the comparison: the runs grouped by topology and sweep axis
// values (a cell and its repeats), summarised and compared by stats.Analyze against base's
// topology and along each axis; the same function and the same summary.json numbers as
// the sweep's own comparison.md and sweep.json. Outside sweeps every run is a cell.
func (res *Results) Cells(base *Run) []*stats.Cell {
	if res.Axes == nil {
		res.Axes = res.derivedAxes()
	}
	var obs []stats.Obs
	for _, r := range res.Runs {
		o := stats.Obs{Topology: r.cellTopology(), Axes: r.axes(), ID: r.id(), Failed: r.Error != "" || r.Summary == nil}
		if r.Summary != nil {
			o.TPS, o.AvgMs, o.P95Ms = r.Summary.TPS, r.Summary.LatencyMs["avg"], r.Summary.LatencyMs["p95"]
			o.QPS, o.P99Ms = r.Summary.QPS, r.Summary.LatencyMs["p99"]
		}
		obs = append(obs, o)
	}
	b := ""
	if base != nil {
		b = base.cellTopology()
	}
	return stats.Analyze(obs, res.Axes, b)
}

// id names the run among the cells' runs: its directory, else its name.
func (r *Run) id() string {
	if r.Dir != "" {
		return r.Dir
	}
	return r.Name
}

// cellTopology is the name runs are grouped by: the topology, else the run's name.
func (r *Run) cellTopology() string {
	if r.Topology != "" {
		return r.Topology
	}
	return r.Name
}

// cellOf is the cell r's numbers are in (or, for an incomplete run, would be).
func (res *Results) cellOf(cells []*stats.Cell, r *Run) *stats.Cell {
	for _, c := range cells {
		if c.ReusedFrom == "" && slices.Contains(c.Runs, r.id()) {
			return c
		}
	}
	g := stats.GroupOf(res.Axes, r.axes())
	for _, c := range cells {
		if c.ReusedFrom == "" && c.Topology == r.cellTopology() && c.Group == g {
			return c
		}
	}
	return nil
}

// cellView is a cell as the tables show it.
type cellView struct {
	C     *stats.Cell
	Name  string
	Along []string
	CI    string
	// Mark: the vs base ratios are marked ⚠ (see Caveat).
	Mark bool
}

// Base is the cell's change vs base of the metric ("tps", "lat", "p95"), marked.
func (v cellView) Base(metric string) string {
	c := map[string]*stats.Change{"tps": v.C.VsBase, "lat": v.C.LatVsBase, "p95": v.C.P95VsBase}[metric]
	t := changeText(c)
	if v.Mark && c != nil && c.OK && c.Verdict != stats.Reference {
		t += " " + Warn
	}
	return t
}

// controlNote is, for a cell whose runs went through the links at zero delay (manifest
// extra "links_control"), that and the round trip the link added to the plain bridge
// (schema.Median over the runs of schema.LinkCostMs: comparison.md's number); ""
// otherwise.
func controlNote(runs []*Run) string {
	note := ""
	var added []float64
	for _, r := range runs {
		if s, _ := r.Manifest.Extra["links_control"].(string); s != "" {
			note = s
			if c, ok := r.linkCost(); ok {
				added = append(added, c)
			}
		}
	}
	if note != "" && len(added) > 0 {
		note += ", its cost " + fmtLinkCost(schema.Median(added)) + " round trip"
	}
	return note
}

// linkCost is schema.LinkCostMs of the run's measured links; false without them.
func (r *Run) linkCost() (float64, bool) {
	li := r.Impairment()
	if li == nil {
		return 0, false
	}
	rtt := make([]schema.LinkRTT, len(li.RTT))
	for i, x := range li.RTT {
		rtt[i] = schema.LinkRTT{AddedMs: x.AddedMs, Samples: x.Samples, Partitioned: x.Partitioned, Lossy: x.Lossy}
	}
	return schema.LinkCostMs(rtt)
}

// fmtLinkCost renders a link cost in ms: "+0.032 ms".
func fmtLinkCost(ms float64) string { return fmt.Sprintf("%+.3f ms", ms) }

// cellsCaveat is the note on the cells table's marks ("" when none is).
func (res *Results) cellsCaveat(cells []*stats.Cell) string {
	_, _, n := res.cellViewsCaveat(cells)
	return n
}

// cellViews are the cells for the tables, and the axes with changes (column heads).
func (res *Results) cellViews(cells []*stats.Cell) ([]cellView, []string) {
	v, a, _ := res.cellViewsCaveat(cells)
	return v, a
}

// cellViewsCaveat is cellViews with the ratios of CPU-bound cells or without a CI
// marked ⚠, and the note on the marks.
func (res *Results) cellViewsCaveat(cells []*stats.Cell) ([]cellView, []string, string) {
	var cv Caveat
	var along []string
	for _, c := range cells {
		if len(c.Along) > 0 {
			for _, a := range c.Along {
				along = append(along, a.Axis)
			}
			break
		}
	}
	var out []cellView
	for _, c := range cells {
		v := cellView{C: c, Name: c.Topology, CI: fmt.Sprintf("n/a (%d run)", c.TPS.N)}
		bound := res.cellBound(c)
		v.Mark = cv.Applies(c.VsBase, bound || res.cellBound(baseCell(cells, c)))
		if c.Group != "" {
			v.Name += " " + c.Group
		}
		if c.ReusedFrom != "" {
			v.Name += " (not run: 1 node, no links; the runs of " + c.ReusedFrom + ")"
		}
		var runs []*Run
		for _, r := range res.Runs {
			if slices.Contains(c.Runs, r.id()) {
				runs = append(runs, r)
			}
		}
		if n := controlNote(runs); n != "" && c.ReusedFrom == "" {
			v.Name += " (" + n + ")"
		}
		if c.Failed > 0 {
			v.Name += fmt.Sprintf(" (%d incomplete runs left out)", c.Failed)
		}
		if c.TPS.HasCI() {
			v.CI = fmt.Sprintf("%.1f-%.1f", *c.TPS.CILo, *c.TPS.CIHi)
		}
		for _, a := range along {
			ac := c.AlongAxis(a)
			switch {
			case ac == nil || !ac.TPS.OK:
				v.Along = append(v.Along, "n/a")
			case ac.TPS.Verdict == stats.Reference:
				v.Along = append(v.Along, "ref")
			case cv.Applies(&ac.TPS, bound):
				v.Along = append(v.Along, ac.TPS.Signed()+" "+Warn)
			default:
				v.Along = append(v.Along, ac.TPS.Signed())
			}
		}
		out = append(out, v)
	}
	return out, along, cv.Note()
}

func changeText(c *stats.Change) string {
	if c == nil {
		return "n/a"
	}
	return c.OfBase()
}

// cellsNote explains the cells table (as experiment.StatsNote does for comparison.md);
// compared: the cells are of more than one topology (the vs base columns).
func cellsNote(cells []*stats.Cell, compared bool) string {
	maxN := 0
	for _, c := range cells {
		maxN = max(maxN, c.TPS.N)
	}
	s := "Each cell's TPS and latencies are the mean over its repeats (warm-up excluded); 95% CI: Student t over the repeats. "
	if compared {
		s += "vs base: the baseline topology's cell with the same axis values; "
	}
	s += "vs AXIS: the change from the axis' reference value (ref), the other axes the same. " +
		"\"within noise\": the 95% CI of the difference of the two means (Welch) includes 0."
	if maxN < 2 {
		s += " One repeat per cell: no confidence intervals, so no difference can be told from noise."
	}
	return s
}

// cellsMarkdown is the cells table in Markdown.
func (res *Results) cellsMarkdown(cells []*stats.Cell) string {
	var b strings.Builder
	vs, along, note := res.cellViewsCaveat(cells)
	compared := res.topologies() > 1 // else no baseline: no vs base columns
	head, sep := "", ""
	if compared {
		head, sep = " TPS vs base | avg latency vs base | p95 vs base |", "---|---|---|"
	}
	b.WriteString("| cell | runs | TPS | TPS min-max | TPS 95% CI | avg ms | p95 ms |" + head)
	for _, a := range along {
		b.WriteString(" TPS vs " + mdEscape(a) + " |")
	}
	b.WriteString("\n|---|---|---|---|---|---|---|" + sep + strings.Repeat("---|", len(along)) + "\n")
	for _, v := range vs {
		c := v.C
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.1f-%.1f | %s | %.2f | %.2f |", mdEscape(v.Name), c.TPS.N, c.TPS.Mean, c.TPS.Min, c.TPS.Max, v.CI,
			c.AvgMs.Mean, c.P95Ms.Mean)
		if compared {
			fmt.Fprintf(&b, " %s | %s | %s |", v.Base("tps"), v.Base("lat"), v.Base("p95"))
		}
		for _, a := range v.Along {
			b.WriteString(" " + a + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + cellsNote(cells, compared) + "\n")
	if note != "" {
		b.WriteString("\n" + note + "\n")
	}
	return b.String()
}
