package report

import (
	"fmt"
	"image/color"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/habench/habench/stats"
)

// barCells are cells of topologies x threads with the given TPS (p95 = 1000/TPS); a TPS
// of 0 is a cell without a completed run.
func barCells(topos []string, threads []string, tps func(t, th int) float64) ([]*stats.Cell, []stats.Axis) {
	var cells []*stats.Cell
	for i, t := range topos {
		for j, th := range threads {
			c := &stats.Cell{Topology: t, Axes: map[string]string{"threads": th}, Group: "threads=" + th, IsBase: i == 0}
			if v := tps(i, j); v > 0 {
				c.TPS, c.P95Ms = stats.Sample{N: 1, Mean: v, Min: v, Max: v}, stats.Sample{N: 1, Mean: 1000 / v}
			}
			cells = append(cells, c)
		}
	}
	return cells, []stats.Axis{{Name: "threads", Values: threads}}
}

func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

var svgRect = regexp.MustCompile(`<path d="M([0-9.]+),[0-9.]+L[^"]*Z" style="fill:(#[0-9A-F]{6})" />`)

// TestSweepBarsGroupedByTopology: a sweep of 5 topologies x 2 thread counts is drawn as 5
// groups (one per topology) of 2 bars, one colour per thread count in every group and
// in both charts, a legend naming the axis and each value; a missing cell has no bar.
func TestSweepBarsGroupedByTopology(t *testing.T) {
	topos := []string{"single", "async", "semi", "group", "galera"}
	cells, axes := barCells(topos, []string{"4", "16"}, func(i, j int) float64 {
		if i == 4 && j == 1 {
			return 0 // galera threads=16 did not complete
		}
		return float64(100*(i+1) + 10*j)
	})
	gb, ok := sweepBars(cells, axes)
	if !ok {
		t.Fatal("no grouped bars")
	}
	if want := []string{"single (baseline)", "async", "semi", "group", "galera"}; !slices.Equal(gb.Groups, want) {
		t.Errorf("groups %v, want %v", gb.Groups, want)
	}
	if !slices.Equal(gb.Values, []string{"4", "16"}) || gb.Header != "threads" || gb.Base != 0 {
		t.Errorf("values %v header %q base %d", gb.Values, gb.Header, gb.Base)
	}
	if gb.TPS[1][2] != 310 || !math.IsNaN(gb.TPS[1][4]) || gb.P95[0][0] != 10 {
		t.Errorf("TPS %v P95 %v", gb.TPS, gb.P95)
	}
	charts, err := SweepBarCharts(cells, axes)
	if err != nil || len(charts) != 2 {
		t.Fatalf("%d charts, %v", len(charts), err)
	}
	for _, ch := range charts {
		for _, w := range append(slices.Clone(gb.Groups), "threads:", ">4<", ">16<") {
			if !strings.Contains(ch.SVG, w) {
				t.Errorf("%s: no %q", ch.Title, w)
			}
		}
		// Bars (then the legend's swatch, last) by colour: value 0's colour for every
		// topology, value 1's for all but galera; in each group value 0's bar left of
		// value 1's, and value 1's left of the next group's value 0.
		xs := map[string][]float64{}
		for _, m := range svgRect.FindAllStringSubmatch(ch.SVG, -1) {
			x, _ := strconv.ParseFloat(m[1], 64)
			if m[2] != "#FFFFFF" { // the background
				xs[m[2]] = append(xs[m[2]], x)
			}
		}
		c0, c1 := hexColor(seriesColor(0)), hexColor(seriesColor(1))
		if len(xs[c0]) != 5+1 || len(xs[c1]) != 4+1 || len(xs) != 2 {
			t.Fatalf("%s: bars by colour %v, want 5 %s and 4 %s (+ legend)", ch.Title, xs, c0, c1)
		}
		b0, b1 := xs[c0][:5], xs[c1][:4]
		if !sort.Float64sAreSorted(b0) || !sort.Float64sAreSorted(b1) {
			t.Errorf("%s: bars not in topology order: %v %v", ch.Title, b0, b1)
		}
		for j := range 4 {
			if !(b0[j] < b1[j] && b1[j] < b0[j+1]) {
				t.Errorf("%s: group %d: threads=4 at %.1f, threads=16 at %.1f, next group at %.1f", ch.Title, j, b0[j], b1[j], b0[j+1])
			}
		}
	}
	if !strings.HasPrefix(charts[0].Title, "TPS per topology and threads") {
		t.Errorf("title %q", charts[0].Title)
	}
}

// TestSweepBarsOneAxis: a sweep of one topology has a group per value, in one colour; a
// scenario's cells (no axis but the topology) make no grouped bars.
func TestSweepBarsOneAxis(t *testing.T) {
	cells, axes := barCells([]string{"single"}, []string{"1", "2", "4"}, func(i, j int) float64 { return float64(100 * (j + 1)) })
	gb, ok := sweepBars(cells, axes)
	if !ok || !slices.Equal(gb.Groups, []string{"1", "2", "4"}) || !slices.Equal(gb.Values, []string{"single"}) || gb.Base != -1 {
		t.Fatalf("one topology: ok %v, groups %v, values %v, base %d", ok, gb.Groups, gb.Values, gb.Base)
	}
	if gb.TPS[0][2] != 300 {
		t.Errorf("TPS %v", gb.TPS)
	}
	charts, err := SweepBarCharts(cells, axes)
	if err != nil || len(charts) != 2 || !strings.HasPrefix(charts[0].Title, "TPS of single per threads") {
		t.Fatalf("charts %v, %v", charts, err)
	}
	cols := map[string]bool{}
	for _, m := range svgRect.FindAllStringSubmatch(charts[0].SVG, -1) {
		if m[2] != "#FFFFFF" {
			cols[m[2]] = true
		}
	}
	if len(cols) != 1 {
		t.Errorf("one topology: colours %v, want one", cols)
	}
	var plain []*stats.Cell
	for _, t := range []string{"a", "b"} {
		plain = append(plain, &stats.Cell{Topology: t, TPS: stats.Sample{N: 1, Mean: 1}})
	}
	if _, ok := sweepBars(plain, nil); ok {
		t.Error("cells without axes made grouped bars")
	}
}
