package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/habench/habench/schema"
)

// Heatmap geometry: at most heatColumns columns of time (consecutive report intervals
// merged when a run has more), heatRowsPerDecade rows of latency per factor of ten.
const (
	heatColumns       = 120
	heatRowsPerDecade = 10
	heatHeight        = 2.8 * vg.Inch
)

// heatCell is one filled rectangle of the heatmap: x in seconds, y in ms, class its colour.
type heatCell struct {
	x0, x1, y0, y1 float64
	class          int
}

// heatGrid is a run's latency heatmap before drawing: cells per column, in rows
// heatRowsPerDecade to a decade (row r holds latencies from 10^(r/heatRowsPerDecade) ms).
type heatGrid struct {
	cells      []heatCell
	classes    []float64 // lower bounds of the colour classes, transactions per second
	rowLo      int       // the lowest and highest rows holding a transaction
	rowHi      int
	xmin, xmax float64
}

// heatRow is the row of a latency of us microseconds.
func heatRow(us int64) int {
	return int(math.Floor(math.Log10(float64(max(us, 1))/1000) * heatRowsPerDecade))
}

// rowMs is the lower bound of row r in milliseconds.
func rowMs(r int) float64 { return math.Pow(10, float64(r)/heatRowsPerDecade) }

// rateClasses are the lower bounds of the colour classes, steps of 1, 2.5 and 5 times a
// power of ten, from the one holding lo up to the one holding hi (transactions per second).
func rateClasses(lo, hi float64) []float64 {
	var out []float64
	for v := math.Pow(10, math.Floor(math.Log10(lo))); v <= hi*(1+1e-9); v = nextClass(v) {
		if nextClass(v) > lo*(1+1e-9) {
			out = append(out, v)
		}
	}
	return out
}

// nextClass is the class bound after v in the 1, 2.5, 5 series.
func nextClass(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)+1e-9))
	switch m := v / e; {
	case m < 2:
		return 2.5 * e
	case m < 4:
		return 5 * e
	default:
		return 10 * e
	}
}

// classOf is the index of the class holding rate v.
func classOf(classes []float64, v float64) int {
	i := 0
	for i+1 < len(classes) && classes[i+1] <= v*(1+1e-9) {
		i++
	}
	return i
}

// buildHeatGrid merges the log's intervals into at most heatColumns columns (off moves
// them onto the chart's clock) and counts each column's transactions per latency row, as
// a rate per second of the column. ok is false when the log holds no transaction.
func buildHeatGrid(log *schema.LatencyLog, off float64) (heatGrid, bool) {
	ivs := log.Intervals
	per := (len(ivs) + heatColumns - 1) / heatColumns
	type column struct {
		x0, x1 float64
		rates  map[int]float64
	}
	var cols []column
	g := heatGrid{rowLo: math.MaxInt, rowHi: math.MinInt, xmin: math.Inf(1), xmax: math.Inf(-1)}
	lo, hi := math.Inf(1), 0.0
	for i := 0; i < len(ivs); i += per {
		group := ivs[i:min(i+per, len(ivs))]
		c := column{x0: off + group[0].From.Seconds(), rates: map[int]float64{}}
		last := group[len(group)-1]
		c.x1 = off + (last.From + last.Length).Seconds()
		g.xmin, g.xmax = min(g.xmin, c.x0), max(g.xmax, c.x1)
		secs := c.x1 - c.x0
		if secs <= 0 {
			continue // a tail of no length holds nothing to draw
		}
		h := group[0].Histogram
		if len(group) > 1 {
			h = h.Clone()
			for _, iv := range group[1:] {
				h.Merge(iv.Histogram)
			}
		}
		for _, b := range h.Distribution() {
			if b.Count > 0 {
				c.rates[heatRow(b.From)] += float64(b.Count) / secs
			}
		}
		for r, v := range c.rates {
			g.rowLo, g.rowHi = min(g.rowLo, r), max(g.rowHi, r)
			lo, hi = min(lo, v), max(hi, v)
		}
		cols = append(cols, c)
	}
	if hi == 0 {
		return g, false
	}
	g.classes = rateClasses(lo, hi)
	for _, c := range cols {
		// Rows of one class next to each other are one cell.
		for r := g.rowLo; r <= g.rowHi; r++ {
			v, ok := c.rates[r]
			if !ok {
				continue
			}
			cl, top := classOf(g.classes, v), r+1
			for ; top <= g.rowHi; top++ {
				w, ok := c.rates[top]
				if !ok || classOf(g.classes, w) != cl {
					break
				}
			}
			g.cells = append(g.cells, heatCell{x0: c.x0, x1: c.x1, y0: rowMs(r), y1: rowMs(top), class: cl})
			r = top - 1
		}
	}
	return g, true
}

// heatColor is class i of n on a yellow-green-blue-purple ramp (viridis' hues, reversed:
// the rarest latencies light, the most frequent dark), every one saturated enough to
// tell from the white background.
func heatColor(i, n int) color.Color {
	ramp := []color.RGBA{{253, 231, 37, 255}, {94, 201, 98, 255}, {33, 145, 140, 255}, {59, 82, 139, 255}, {68, 1, 84, 255}}
	if n <= 1 {
		return ramp[len(ramp)-1]
	}
	f := float64(i) / float64(n-1) * float64(len(ramp)-1)
	k := min(int(f), len(ramp)-2)
	t := f - float64(k)
	mix := func(a, b uint8) uint8 { return uint8(math.Round(float64(a) + t*(float64(b)-float64(a)))) }
	a, b := ramp[k], ramp[k+1]
	return color.RGBA{R: mix(a.R, b.R), G: mix(a.G, b.G), B: mix(a.B, b.B), A: 255}
}

// heatPlotter draws the cells.
type heatPlotter struct{ g *heatGrid }

func (h heatPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	// Each cell reaches half a point into its right and upper neighbours' (drawn after
	// it), so that no hairline of background shows between them.
	const seam = vg.Length(0.5)
	for _, cell := range h.g.cells {
		x0, x1, y0, y1 := trX(cell.x0), trX(cell.x1)+seam, trY(cell.y0), trY(cell.y1)+seam
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(heatColor(cell.class, len(h.g.classes)), c.ClipPolygonXY(pts))
	}
}

// swatch is a legend entry's filled square.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.c, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// latencyTicks label 1, 2 and 5 times the powers of ten (ms) within the axis.
type latencyTicks struct{}

func (latencyTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return out
}

// rateLabel is the legend text of class i: "1-2.5 trx/s" or "≥ 50 trx/s" for the last.
func rateLabel(classes []float64, i int) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if i == len(classes)-1 {
		return "≥ " + f(classes[i]) + " trx/s"
	}
	return f(classes[i]) + "-" + f(classes[i+1]) + " trx/s"
}

// p99Segments are intervals.csv's p99 as step lines on the chart's clock (off moves
// them there), cut where an interval has none (no transaction, none in flight): each
// segment starts where its first interval began.
func p99Segments(ivs []schema.Interval, off float64) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	prev := 0.0 // the end of the previous interval (elapsed_s)
	for _, iv := range ivs {
		if iv.LatP99Ms <= 0 {
			if len(cur) > 0 {
				segs = append(segs, cur)
			}
			cur, prev = nil, iv.ElapsedS
			continue
		}
		if len(cur) == 0 {
			cur = append(cur, plotter.XY{X: off + prev, Y: iv.LatP99Ms})
		}
		cur = append(cur, plotter.XY{X: off + iv.ElapsedS, Y: iv.LatP99Ms})
		prev = iv.ElapsedS
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// LatencyHeatmap is a run's latency heatmap from its latency.hlog: time (the run chart's
// clock, 0..xmax s) by latency (ms, log scale), each cell coloured by the transactions per
// second that completed in its column of time at its latency; the p99 per report
// interval of intervals.csv (which counts the waits of transactions in flight) drawn over
// it and the faults marked as on the run chart. ok is false without a latency log or
// when it holds no transaction.
func LatencyHeatmap(r *Run, xmax float64) (Chart, bool, error) {
	if r.LatencyLog == nil || len(r.LatencyLog.Intervals) == 0 {
		return Chart{}, false, nil
	}
	off := r.Manifest.IntervalsOffsetS
	g, ok := buildHeatGrid(r.LatencyLog, off)
	if !ok {
		return Chart{}, false, nil
	}
	p := plotWithoutGrid(r.Name+": latency heatmap (transactions per second by latency)", "time s (from the start of sampling)", "latency ms")
	p.X.Min, p.X.Max = 0, max(xmax, g.xmax)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, latencyTicks{}
	ylo, yhi := rowMs(g.rowLo), rowMs(g.rowHi+1)
	p.Add(heatPlotter{&g})
	leg := newLegend()
	for i := len(g.classes) - 1; i >= 0; i-- {
		leg.Add(rateLabel(g.classes, i), swatch{heatColor(i, len(g.classes))})
	}
	for i, seg := range p99Segments(r.Intervals, off) {
		for _, xy := range seg {
			yhi = max(yhi, xy.Y*1.1)
		}
		l, err := plotter.NewLine(seg)
		if err != nil {
			return Chart{}, false, fmt.Errorf("%s: heatmap p99: %w", r.Name, err)
		}
		l.StepStyle = plotter.PreStep
		l.Width = vg.Points(1)
		p.Add(l)
		if i == 0 {
			leg.Add("p99 per interval", l)
		}
	}
	p.Y.Min, p.Y.Max = ylo, yhi
	for _, m := range faultMarks(r) {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: ylo}, {X: m.x, Y: yhi}})
		if err != nil {
			return Chart{}, false, err
		}
		l.Color = color.RGBA{R: 200, G: 30, B: 30, A: 255}
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(l)
		leg.Add(m.label, l)
	}
	svg, err := svgOf(chartWidth, heatHeight, func(dc draw.Canvas) {
		area := draw.Crop(dc, 0, -legendWidth, 0, 0)
		p.Draw(area)
		lc := dc
		lc.Rectangle.Min.X = area.Max.X + vg.Points(6)
		lc.Rectangle.Max.Y -= vg.Points(14)
		leg.Draw(lc)
	})
	return Chart{Title: r.Name + ": latency heatmap", SVG: svg, Series: len(g.cells)}, true, err
}
