package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/habench/habench/sampler"
)

// Chart is one rendered chart: an SVG document without the XML prolog, ready to be
// inlined in HTML, and a short description (alt text).
type Chart struct {
	Title string
	SVG   string
	// Series counts the lines or bars drawn.
	Series int
}

// Chart geometry.
const (
	chartWidth  = 9.5 * vg.Inch
	legendWidth = 1.7 * vg.Inch
	panelHeight = 1.75 * vg.Inch
)

// sans is Liberation Sans, metric-compatible with Arial/Helvetica, so a browser without
// Liberation fonts lays the text out the same with its fallback.
func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// newPlot is a plot with sans-serif text and a grid.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plotWithoutGrid(title, xlabel, ylabel)
	p.Add(plotter.NewGrid())
	return p
}

// plotWithoutGrid is newPlot without its grid.
func plotWithoutGrid(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(11)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(10)
		a.Tick.Label.Font = sans(9)
	}
	return p
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = sans(9)
	l.Padding = vg.Points(2.5) // between entries: 9 pt rows otherwise touch
	l.Top = true
	l.Left = true
	return l
}

// color i of the palette (plotutil's soft colors, then darker ones).
func seriesColor(i int) color.Color {
	dark := []color.Color{
		color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255},
		color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255},
		color.RGBA{R: 148, G: 103, B: 189, A: 255}, color.RGBA{R: 140, G: 86, B: 75, A: 255},
		color.RGBA{R: 227, G: 119, B: 194, A: 255}, color.RGBA{R: 127, G: 127, B: 127, A: 255},
		color.RGBA{R: 188, G: 189, B: 34, A: 255}, color.RGBA{R: 23, G: 190, B: 207, A: 255},
	}
	if i < len(dark) {
		return dark[i]
	}
	return plotutil.Color(i)
}

var xmlProlog = regexp.MustCompile(`(?s)^\s*<\?xml[^>]*\?>\s*(<!--.*?-->\s*)?`)

// svgOf renders draw(canvas) into an inline SVG string.
func svgOf(w, h vg.Length, drawFn func(dc draw.Canvas)) (string, error) {
	c := vgsvg.New(w, h)
	drawFn(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := xmlProlog.ReplaceAllString(buf.String(), "")
	// Name fallbacks for viewers without Liberation fonts (same metrics as Arial).
	s = fontFamily.ReplaceAllString(s, "font-family:'$1',Arial,Helvetica,sans-serif;")
	return s, nil
}

var fontFamily = regexp.MustCompile(`font-family:([A-Za-z ]+);`)

// series is one line of a time-series panel.
type series struct {
	label string
	xys   plotter.XYs
	step  bool // a step line: each Y holds from the previous X to this one
	dash  bool
	color int
}

// splitGaps cuts a series where samples are missing (a gap over 2.5 times the median
// spacing: a node that could not be read), so that no line is drawn across a time nothing
// was measured (a lag line from 0 to 0 over a partition would read as no lag).
func splitGaps(xys plotter.XYs) []plotter.XYs {
	if len(xys) < 3 {
		return []plotter.XYs{xys}
	}
	gaps := make([]float64, 0, len(xys)-1)
	for i := 1; i < len(xys); i++ {
		gaps = append(gaps, xys[i].X-xys[i-1].X)
	}
	sort.Float64s(gaps)
	limit := 2.5 * gaps[len(gaps)/2]
	var out []plotter.XYs
	start := 0
	for i := 1; i < len(xys); i++ {
		if limit > 0 && xys[i].X-xys[i-1].X > limit {
			out = append(out, xys[start:i])
			start = i
		}
	}
	return append(out, xys[start:])
}

// panel is one panel of a stacked time-series chart.
type panel struct {
	title, ylabel string
	fraction      bool
	lines         []series
}

// mark is a vertical marker on every panel of a time-series chart (a fault), at X.
type mark struct {
	x     float64
	label string
}

// timeSeriesChart draws panels stacked on one shared X axis (0..xmax), a legend to the
// right of each panel, and marks as dashed vertical lines across every panel (labelled
// in the first panel's legend).
func timeSeriesChart(title, xlabel string, panels []panel, xmax float64, marks ...mark) (Chart, error) {
	var plots [][]*plot.Plot
	var legends []plot.Legend
	n := 0
	for i, pn := range panels {
		xl := ""
		if i == len(panels)-1 {
			xl = xlabel
		}
		t := pn.title
		if i == 0 && title != "" {
			t = title + ": " + pn.title
		}
		p := newPlot(t, xl, pn.ylabel)
		p.X.Min, p.X.Max = 0, xmax
		leg := newLegend()
		ymax := 0.0
		for _, s := range pn.lines {
			if len(s.xys) == 0 {
				continue
			}
			for si, seg := range splitGaps(s.xys) {
				l, err := plotter.NewLine(seg)
				if err != nil {
					return Chart{}, fmt.Errorf("%s: %s: %w", pn.title, s.label, err)
				}
				if s.step {
					l.StepStyle = plotter.PreStep
				}
				l.Color = seriesColor(s.color)
				l.Width = vg.Points(1.4)
				if s.dash {
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
				}
				p.Add(l)
				if si == 0 {
					leg.Add(s.label, l)
				}
			}
			n++
			for _, xy := range s.xys {
				if !math.IsNaN(xy.Y) && !math.IsInf(xy.Y, 0) {
					ymax = max(ymax, xy.Y)
				}
			}
		}
		p.Y.Min = 0
		switch {
		case pn.fraction:
			p.Y.Max = 1
		case ymax == 0:
			p.Y.Max = 1 // a flat zero line stays visible at the bottom
		default:
			p.Y.Max = ymax * 1.08
		}
		for _, m := range marks {
			l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: p.Y.Min}, {X: m.x, Y: p.Y.Max}})
			if err != nil {
				return Chart{}, err
			}
			l.Color = color.RGBA{R: 200, G: 30, B: 30, A: 255}
			l.Width = vg.Points(1)
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			p.Add(l)
			if i == 0 {
				leg.Add(m.label, l)
			}
		}
		plots = append(plots, []*plot.Plot{p})
		legends = append(legends, leg)
	}
	h := panelHeight * vg.Length(len(panels))
	svg, err := svgOf(chartWidth, h, func(dc draw.Canvas) {
		plotArea := draw.Crop(dc, 0, -legendWidth, 0, 0)
		canvases := plot.Align(plots, draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(2), PadBottom: vg.Points(2)}, plotArea)
		for i := range plots {
			plots[i][0].Draw(canvases[i][0])
			lc := canvases[i][0]
			lc.Rectangle.Min.X = plotArea.Max.X + vg.Points(6)
			lc.Rectangle.Max.X = dc.Max.X
			lc.Rectangle.Max.Y -= vg.Points(14)
			legends[i].Draw(lc)
		}
	})
	return Chart{Title: title, SVG: svg, Series: n}, err
}

// barChart draws one bar per label; the values are written above the bars.
func barChart(title, ylabel string, labels []string, values []float64, format string, highlight int) (Chart, error) {
	p := newPlot(title, "", ylabel)
	w := vg.Points(float64(min(60, 420/max(1, len(labels)))))
	for i, v := range values {
		vals := make(plotter.Values, len(values))
		vals[i] = v
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return Chart{}, err
		}
		b.Color = seriesColor(i)
		b.LineStyle.Width = 0
		if i == highlight {
			b.LineStyle.Width = vg.Points(1.5)
			b.LineStyle.Color = color.Black
		}
		p.Add(b)
	}
	ymax := 0.0
	var xys plotter.XYs
	var texts []string
	for i, v := range values {
		ymax = max(ymax, v)
		xys = append(xys, plotter.XY{X: float64(i), Y: v})
		texts = append(texts, fmt.Sprintf(format, v))
	}
	if len(xys) > 0 {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return Chart{}, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font = sans(9)
			lb.TextStyle[i].XAlign = text.XCenter
		}
		lb.Offset = vg.Point{Y: vg.Points(3)}
		p.Add(lb)
	}
	p.Y.Min = 0
	p.Y.Max = max(ymax*1.15, 1)
	p.NominalX(labels...)
	width := min(vg.Length(max(4.0, 1.1*float64(len(labels))+1.5))*vg.Inch, 9.5*vg.Inch)
	height := 3 * vg.Inch
	// Labels wider than their bar's slot (about 5.5 pt per character at this size) are
	// turned 30 degrees so they do not run into each other; the chart grows to hold them.
	longest := 0
	for _, l := range labels {
		longest = max(longest, len(l))
	}
	if slot := float64(width) / float64(max(1, len(labels))); float64(longest)*5.5 > slot {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = text.XRight
		p.X.Tick.Label.YAlign = text.YTop
		height += vg.Points(float64(longest) * 5.5 * 0.5)
	}
	svg, err := svgOf(width, height, func(dc draw.Canvas) { p.Draw(dc) })
	return Chart{Title: title, SVG: svg, Series: len(values)}, err
}

// sweepChart draws TPS and p95 against one axis's values, one line per curve.
func sweepChart(axis string, cs []curve) (Chart, error) {
	pos, labels, numeric := axisPositions(cs)
	tps := newPlot("TPS against "+axis, axis, "TPS")
	p95 := newPlot("p95 latency against "+axis, axis, "p95 ms")
	leg := newLegend()
	n := 0
	for i, c := range cs {
		var a, b plotter.XYs
		var texts []string // the change from the axis' reference, on the TPS points
		pts := append([]SweepPoint(nil), c.points...)
		sort.SliceStable(pts, func(x, y int) bool { return pos[pts[x].Value] < pos[pts[y].Value] })
		for _, p := range pts {
			if p.Error != "" {
				continue
			}
			a = append(a, plotter.XY{X: pos[p.Value], Y: p.TPS})
			b = append(b, plotter.XY{X: pos[p.Value], Y: p.P95Ms})
			texts = append(texts, strings.Replace(p.VsRef, " (within noise)", " (noise)", 1))
		}
		if len(a) == 0 {
			continue
		}
		for j, pl := range []*plot.Plot{tps, p95} {
			xys := a
			if j == 1 {
				xys = b
			}
			l, s, err := seriesLine(xys, i)
			if err != nil {
				return Chart{}, err
			}
			pl.Add(l, s)
			if j == 0 {
				leg.Add(c.label, l, s)
				if slices.ContainsFunc(texts, func(t string) bool { return t != "" }) {
					lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
					if err != nil {
						return Chart{}, err
					}
					for k := range lb.TextStyle {
						lb.TextStyle[k].Font = sans(7)
						lb.TextStyle[k].Color = seriesColor(i)
					}
					lb.Offset = vg.Point{X: vg.Points(3), Y: vg.Points(3)}
					pl.Add(lb)
				}
			}
		}
		n++
	}
	return sidePanels("sweep of "+axis, tps, p95, leg, pos, labels, numeric, n)
}

// seriesLine is line i of a sweep chart through xys: its colour, 1.6 pt, round points.
func seriesLine(xys plotter.XYs, i int) (*plotter.Line, *plotter.Scatter, error) {
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, err
	}
	l.Color, s.Color = seriesColor(i), seriesColor(i)
	l.Width = vg.Points(1.6)
	s.Shape = draw.CircleGlyph{}
	s.Radius = vg.Points(2.5)
	return l, s, nil
}

// sidePanels is a sweep chart's layout: left and right side by side, from 0 up, their X
// axes on the swept values (pos and labels as axisPositions gives them), the legend on
// the right; series is the lines drawn.
func sidePanels(title string, left, right *plot.Plot, leg plot.Legend, pos map[string]float64, labels []string, numeric bool, series int) (Chart, error) {
	for _, pl := range []*plot.Plot{left, right} {
		pl.Y.Min = 0
		if !numeric {
			pl.NominalX(labels...)
		} else {
			pl.X.Tick.Marker = valueTicks{pos}
		}
	}
	svg, err := svgOf(chartWidth, 3.2*vg.Inch, func(dc draw.Canvas) {
		area := draw.Crop(dc, 0, -legendWidth, 0, 0)
		cv := plot.Align([][]*plot.Plot{{left, right}}, draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(18)}, area)
		left.Draw(cv[0][0])
		right.Draw(cv[0][1])
		lc := cv[0][1]
		lc.Rectangle.Min.X = area.Max.X + vg.Points(6)
		lc.Rectangle.Max.X = dc.Max.X
		lc.Rectangle.Max.Y -= vg.Points(14)
		leg.Draw(lc)
	})
	return Chart{Title: title, SVG: svg, Series: series}, err
}

// valueTicks puts a major tick at each swept value (when there are few), else defers to
// the default ticker.
type valueTicks struct{ pos map[string]float64 }

func (v valueTicks) Ticks(lo, hi float64) []plot.Tick {
	if len(v.pos) > 12 {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	var vals []float64
	for _, x := range v.pos {
		vals = append(vals, x)
	}
	sort.Float64s(vals)
	var out []plot.Tick
	for _, x := range vals {
		out = append(out, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 6, 64)})
	}
	return out
}

// RunChart is a run's time series: TPS and latency per report interval, then a panel per
// class of per-node metric (Panels) that has samples, on one time axis: samples.csv's
// clock, intervals moved onto it by the manifest's intervals_offset_s. ok is false when
// the run has neither intervals nor samples.
func RunChart(r *Run) (Chart, bool, error) {
	panels, _ := runPanels(r)
	if len(panels) == 0 {
		return Chart{}, false, nil
	}
	c, err := timeSeriesChart(r.Name, "time s (from the start of sampling)", panels, runXMax(r), faultMarks(r)...)
	return c, true, err
}

// faultMarks are r's faults as marks on its charts.
func faultMarks(r *Run) []mark {
	var marks []mark
	for _, f := range r.Manifest.Faults {
		label := fmt.Sprintf("fault: %s %s at %.1f s", f.Action, f.Node, f.AtS)
		if f.Escalated != "" {
			label += " ⚠ escalated to SIGKILL (a crash)"
		}
		marks = append(marks, mark{x: f.AtS, label: label})
	}
	return marks
}

// runXMax is the end of r's charts' time axis (s, samples.csv's clock, whole): the last
// interval, sample, latency log line or fault, at least 1.
func runXMax(r *Run) float64 {
	xmax := 0.0
	for _, iv := range r.Intervals {
		xmax = max(xmax, r.Manifest.IntervalsOffsetS+iv.ElapsedS)
	}
	for _, s := range r.Samples {
		xmax = max(xmax, s.ElapsedS)
	}
	for _, f := range r.Manifest.Faults {
		xmax = max(xmax, f.AtS)
	}
	if r.LatencyLog != nil {
		for _, iv := range r.LatencyLog.Intervals {
			xmax = max(xmax, r.Manifest.IntervalsOffsetS+(iv.From+iv.Length).Seconds())
		}
	}
	return math.Ceil(max(xmax, 1))
}

// runPanels builds RunChart's panels and the largest time on them.
func runPanels(r *Run) ([]panel, float64) {
	off := r.Manifest.IntervalsOffsetS
	xmax := 0.0
	var tps, p95, p99 plotter.XYs
	if len(r.Intervals) > 0 {
		// Each row is the end of its interval; the first interval starts at the offset.
		first := r.Intervals[0]
		tps = append(tps, plotter.XY{X: off, Y: first.TPS})
		p95 = append(p95, plotter.XY{X: off, Y: first.LatP95Ms})
		p99 = append(p99, plotter.XY{X: off, Y: first.LatP99Ms})
		for _, iv := range r.Intervals {
			x := off + iv.ElapsedS
			tps = append(tps, plotter.XY{X: x, Y: iv.TPS})
			p95 = append(p95, plotter.XY{X: x, Y: iv.LatP95Ms})
			p99 = append(p99, plotter.XY{X: x, Y: iv.LatP99Ms})
			xmax = max(xmax, x)
		}
	}
	nodes := r.NodeNames()
	nodeIdx := map[string]int{}
	for i, n := range nodes {
		nodeIdx[n] = i
	}
	// class -> node -> metric -> points
	by := map[sampler.Class]map[string]map[string]plotter.XYs{}
	for _, s := range r.Samples {
		xmax = max(xmax, s.ElapsedS)
		c := sampler.Classify(s.Metric)
		if c == sampler.ClassOther || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			continue // a non-finite value has no place on a chart (plotter refuses it)
		}
		if by[c] == nil {
			by[c] = map[string]map[string]plotter.XYs{}
		}
		if by[c][s.Node] == nil {
			by[c][s.Node] = map[string]plotter.XYs{}
		}
		by[c][s.Node][s.Metric] = append(by[c][s.Node][s.Metric], plotter.XY{X: s.ElapsedS, Y: s.Value})
	}
	var panels []panel
	if len(tps) > 0 {
		panels = append(panels,
			panel{title: "TPS per report interval", ylabel: "TPS", lines: []series{{label: "TPS", xys: tps, step: true}}},
			panel{title: "latency per report interval", ylabel: "ms", lines: []series{
				{label: "p95", xys: p95, step: true, color: 1}, {label: "p99", xys: p99, step: true, color: 3, dash: true}}})
	}
	for _, pn := range Panels {
		m := by[pn.Class]
		if len(m) == 0 {
			continue
		}
		metrics := map[string]bool{}
		for _, ms := range m {
			for k := range ms {
				metrics[k] = true
			}
		}
		var names []string
		for k := range metrics {
			names = append(names, k)
		}
		sort.Strings(names)
		p := panel{title: pn.Title, ylabel: pn.YLabel, fraction: pn.Fraction}
		for _, node := range nodes {
			for mi, metric := range names {
				xys := m[node][metric]
				if len(xys) == 0 {
					continue
				}
				label := node
				if len(names) > 1 {
					name := metric
					if pn.MetricLabel != nil {
						name = pn.MetricLabel(metric)
					}
					label = node + " " + name
				}
				if u := lagUnknownS(r, node); pn.Class == sampler.ClassLag && u > 0 {
					label += " (" + UnknownFor(u) + ")"
				}
				p.lines = append(p.lines, series{label: label, xys: xys, color: nodeIdx[node], dash: mi > 0})
			}
		}
		panels = append(panels, p)
	}
	return panels, xmax
}

// ComparisonCharts are the bars of TPS and p95 latency per run, the baseline outlined.
func ComparisonCharts(rows []Row) ([]Chart, error) {
	var labels []string
	var tps, p95 []float64
	hl := -1
	for i, r := range rows {
		labels = append(labels, r.Run.Name)
		tps = append(tps, r.TPS)
		p95 = append(p95, r.P95Ms)
		if r.IsBaseline && hl < 0 {
			hl = i // the first baseline run (a sweep has one per cell of the baseline topology)
		}
	}
	a, err := barChart("TPS per topology (baseline outlined)", "TPS", labels, tps, "%.0f", hl)
	if err != nil {
		return nil, err
	}
	b, err := barChart("p95 latency per topology", "p95 ms", labels, p95, "%.1f", hl)
	if err != nil {
		return nil, err
	}
	return []Chart{a, b}, nil
}

// SweepCharts are one chart per swept axis (TPS and p95 side by side), and for a
// capacity search one more per axis (the sustained rate and the failover time).
func SweepCharts(pts []SweepPoint) ([]Chart, error) {
	axes, lines := sweepAxes(pts)
	var out []Chart
	for _, a := range axes {
		c, err := sweepChart(a, lines[a])
		if err != nil {
			return nil, fmt.Errorf("sweep %s: %w", a, err)
		}
		if c.Series > 0 {
			out = append(out, c)
		}
		if !slices.ContainsFunc(pts, func(p SweepPoint) bool { return p.Axis == a && p.Capacity != nil }) {
			continue
		}
		c, err = capacityChart(a, lines[a])
		if err != nil {
			return nil, fmt.Errorf("capacity against %s: %w", a, err)
		}
		if c.Series > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}
