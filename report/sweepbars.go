package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/habench/habench/stats"
)

// maxGroupedBars is the most sweep cells drawn as grouped bars, maxBarValues the most
// values of the other axes (one colour each) in a group.
const (
	maxGroupedBars = 60
	maxBarValues   = 10
)

// groupedBars are a sweep's cells as bars: on X a group per topology (in the order they
// ran), in each group a bar per value of the other axes (their cell group), one colour
// per value, the same colour in every group and in both charts. A sweep of one topology
// has a group per value instead, in one colour.
type groupedBars struct {
	// Groups label the X groups; Values the bars of a group (the legend), Header names
	// what the values are (the axes).
	Groups, Values []string
	Header         string
	// TPS and P95 are [value][group]: the cell's mean over its completed runs, NaN
	// where there is no such cell or it has no completed run.
	TPS, P95 [][]float64
	// Color is the palette index of each value.
	Color []int
	// Base is the baseline topology's group (-1: none, or a sweep of one topology).
	Base int
}

// sweepBars arranges cells as groupedBars; ok false when they do not make grouped bars
// (no axis but the topology, too many cells or values).
func sweepBars(cells []*stats.Cell, axes []stats.Axis) (groupedBars, bool) {
	var gb groupedBars
	var topos, vals []string
	var names []string
	for _, a := range axes {
		names = append(names, a.Name)
	}
	value := func(c *stats.Cell) string {
		if len(names) == 1 {
			if v, ok := c.Axes[names[0]]; ok {
				return v
			}
		}
		return c.Group
	}
	for _, c := range cells {
		if !slices.Contains(topos, c.Topology) {
			topos = append(topos, c.Topology)
		}
		if v := value(c); !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	if len(vals) < 2 && len(topos) < 2 || len(cells) > maxGroupedBars || len(vals) > maxBarValues ||
		len(vals) == 1 && vals[0] == "" {
		return gb, false
	}
	gb.Header = strings.Join(names, ", ")
	base := ""
	for _, c := range cells {
		if c.IsBase {
			base = c.Topology
		}
	}
	nan := func() [][]float64 {
		m := make([][]float64, len(vals))
		for i := range m {
			m[i] = make([]float64, len(topos))
			for j := range m[i] {
				m[i][j] = math.NaN()
			}
		}
		return m
	}
	gb.TPS, gb.P95 = nan(), nan()
	for _, c := range cells {
		if c.TPS.N == 0 {
			continue
		}
		i, j := slices.Index(vals, value(c)), slices.Index(topos, c.Topology)
		gb.TPS[i][j], gb.P95[i][j] = c.TPS.Mean, c.P95Ms.Mean
	}
	gb.Groups, gb.Values, gb.Base = topos, vals, slices.Index(topos, base)
	for i := range vals {
		gb.Color = append(gb.Color, i)
	}
	if len(topos) == 1 {
		// One topology: a group per value, one colour, the topology in the legend.
		t := func(m [][]float64) [][]float64 {
			row := make([]float64, len(vals))
			for i := range vals {
				row[i] = m[i][0]
			}
			return [][]float64{row}
		}
		gb.TPS, gb.P95 = t(gb.TPS), t(gb.P95)
		gb.Groups, gb.Values, gb.Header, gb.Color, gb.Base = vals, topos, "topology", []int{0}, -1
	}
	for i, g := range gb.Groups {
		if i == gb.Base {
			gb.Groups[i] = g + " (baseline)"
		}
	}
	return gb, true
}

// groupedBarChart draws vals ([value][group], see groupedBars) as grouped bars, the
// numbers above them when they fit, and the legend (Header, then a colour per value) to
// the right.
func groupedBarChart(title, ylabel string, gb groupedBars, vals [][]float64, format string) (Chart, error) {
	p := plotWithoutGrid(title, "", ylabel)
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil // the groups are categories
	p.Add(grid)
	nv, ng := len(gb.Values), len(gb.Groups)
	plotW := vg.Length(min(max(4.0, 0.32*float64(nv*ng)+0.35*float64(ng)+1.2), 9.5-1.7)) * vg.Inch
	// Each group has a slot of the data area (the plot but its Y axis, about 0.6 in),
	// its bars 75% of it.
	slot := float64(plotW-0.6*vg.Inch) / float64(max(1, ng))
	w := vg.Length(min(40, 0.75*slot/float64(nv)))
	leg := newLegend()
	leg.Left, leg.Top = true, true
	if gb.Header != "" {
		leg.Add(gb.Header + ":")
	}
	ymax, longest := 0.0, 0
	bar := func(i, j int, y float64) (*plotter.BarChart, error) {
		b, err := plotter.NewBarChart(plotter.Values{y}, w)
		if err != nil {
			return nil, err
		}
		b.Color = seriesColor(gb.Color[i])
		b.LineStyle.Width = 0
		b.XMin = float64(j)
		b.Offset = vg.Length(float64(i)-float64(nv-1)/2) * w
		return b, nil
	}
	for i, v := range gb.Values {
		// A bar chart per bar: a cell without a completed run has none.
		for j, y := range vals[i] {
			if math.IsNaN(y) {
				continue
			}
			b, err := bar(i, j, y)
			if err != nil {
				return Chart{}, err
			}
			p.Add(b)
			ymax = max(ymax, y)
			longest = max(longest, len(fmt.Sprintf(format, y)))
		}
		swatch, err := bar(i, 0, 0)
		if err != nil {
			return Chart{}, err
		}
		leg.Add(v, swatch)
	}
	// The numbers above the bars, where a bar is wide enough for them (about 4.5 pt per
	// character at 8 pt).
	if longest > 0 && float64(w) >= 4.5*float64(longest) {
		lb, err := barLabels(gb, vals, w, format)
		if err != nil {
			return Chart{}, err
		}
		p.Add(lb...)
	}
	p.Y.Min = 0
	p.Y.Max = max(ymax*1.15, 1)
	p.NominalX(gb.Groups...)
	p.X.Min, p.X.Max, p.X.Padding = -0.5, float64(ng)-0.5, 0
	height := 3 * vg.Inch
	longestGroup := 0
	for _, g := range gb.Groups {
		longestGroup = max(longestGroup, len(g))
	}
	if float64(longestGroup)*5.5 > slot {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = text.XRight
		p.X.Tick.Label.YAlign = text.YTop
		height += vg.Points(float64(longestGroup) * 5.5 * 0.5)
	}
	width := plotW + legendWidth
	svg, err := svgOf(width, height, func(dc draw.Canvas) {
		area := draw.Crop(dc, 0, -legendWidth, 0, 0)
		p.Draw(area)
		lc := dc
		lc.Rectangle.Min.X = area.Max.X + vg.Points(6)
		lc.Rectangle.Max.Y -= vg.Points(14)
		leg.Draw(lc)
	})
	return Chart{Title: title, SVG: svg, Series: nv}, err
}

// barLabels are the numbers above groupedBarChart's bars: one Labels per value, moved
// by the bar's offset in its group.
func barLabels(gb groupedBars, vals [][]float64, w vg.Length, format string) ([]plot.Plotter, error) {
	var out []plot.Plotter
	nv := len(gb.Values)
	for i := range gb.Values {
		var xys plotter.XYs
		var texts []string
		for j, y := range vals[i] {
			if !math.IsNaN(y) {
				xys = append(xys, plotter.XY{X: float64(j), Y: y})
				texts = append(texts, fmt.Sprintf(format, y))
			}
		}
		if len(xys) == 0 {
			continue
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return nil, err
		}
		for k := range lb.TextStyle {
			lb.TextStyle[k].Font = sans(8)
			lb.TextStyle[k].XAlign = text.XCenter
		}
		lb.Offset = vg.Point{X: vg.Length(float64(i)-float64(nv-1)/2) * w, Y: vg.Points(3)}
		out = append(out, lb)
	}
	return out, nil
}

// SweepBarCharts are a sweep's cells as grouped bars of TPS and p95 latency (see
// groupedBars); nil when the cells do not make grouped bars.
func SweepBarCharts(cells []*stats.Cell, axes []stats.Axis) ([]Chart, error) {
	gb, ok := sweepBars(cells, axes)
	if !ok {
		return nil, nil
	}
	what := " per topology and " + gb.Header
	if gb.Header == "topology" { // one topology, a group per value
		what = " of " + gb.Values[0] + " per " + strings.Join(axisNames(axes), ", ")
	}
	a, err := groupedBarChart("TPS"+what+" (mean of repeats)", "TPS", gb, gb.TPS, "%.0f")
	if err != nil {
		return nil, err
	}
	b, err := groupedBarChart("p95 latency"+what+" (mean of repeats)", "p95 ms", gb, gb.P95, "%.1f")
	if err != nil {
		return nil, err
	}
	return []Chart{a, b}, nil
}

func axisNames(axes []stats.Axis) []string {
	var out []string
	for _, a := range axes {
		out = append(out, a.Name)
	}
	return out
}
