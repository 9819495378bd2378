package report

import (
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// capacityChart is a capacity search's chart along axis: the sustained rate (events per
// second) and the failover time at that rate (s) side by side, a line per curve; points
// without the figure (no search, not measured, a failed cell) are left out.
func capacityChart(axis string, cs []curve) (Chart, error) {
	pos, labels, numeric := axisPositions(cs)
	rate := newPlot("sustained rate against "+axis, axis, "events/s")
	fo := newPlot("failover time at that rate against "+axis, axis, "s")
	leg := newLegend()
	n := 0
	for i, c := range cs {
		pts := append([]SweepPoint(nil), c.points...)
		sort.SliceStable(pts, func(x, y int) bool { return pos[pts[x].Value] < pos[pts[y].Value] })
		var a, b plotter.XYs
		for _, p := range pts {
			if p.Error != "" {
				continue
			}
			if p.Capacity != nil {
				a = append(a, plotter.XY{X: pos[p.Value], Y: *p.Capacity})
			}
			if p.FailoverS != nil {
				b = append(b, plotter.XY{X: pos[p.Value], Y: *p.FailoverS})
			}
		}
		if len(a) == 0 {
			continue
		}
		for j, xys := range []plotter.XYs{a, b} {
			if len(xys) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(xys)
			if err != nil {
				return Chart{}, err
			}
			l.Color, s.Color = seriesColor(i), seriesColor(i)
			l.Width = vg.Points(1.6)
			s.Shape = draw.CircleGlyph{}
			s.Radius = vg.Points(2.5)
			[]*plot.Plot{rate, fo}[j].Add(l, s)
			if j == 0 {
				leg.Add(c.label, l, s)
			}
		}
		n++
	}
	for _, pl := range []*plot.Plot{rate, fo} {
		pl.Y.Min = 0
		if !numeric {
			pl.NominalX(labels...)
		} else {
			pl.X.Tick.Marker = valueTicks{pos}
		}
	}
	svg, err := svgOf(chartWidth, 3.2*vg.Inch, func(dc draw.Canvas) {
		area := draw.Crop(dc, 0, -legendWidth, 0, 0)
		cv := plot.Align([][]*plot.Plot{{rate, fo}}, draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(18)}, area)
		rate.Draw(cv[0][0])
		fo.Draw(cv[0][1])
		lc := cv[0][1]
		lc.Rectangle.Min.X = area.Max.X + vg.Points(6)
		lc.Rectangle.Max.X = dc.Max.X
		lc.Rectangle.Max.Y -= vg.Points(14)
		leg.Draw(lc)
	})
	return Chart{Title: "capacity against " + axis, SVG: svg, Series: n}, err
}
