package report

import (
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
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
			l, s, err := seriesLine(xys, i)
			if err != nil {
				return Chart{}, err
			}
			[]*plot.Plot{rate, fo}[j].Add(l, s)
			if j == 0 {
				leg.Add(c.label, l, s)
			}
		}
		n++
	}
	return sidePanels("capacity against "+axis, rate, fo, leg, pos, labels, numeric, n)
}
