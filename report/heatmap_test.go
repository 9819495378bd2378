package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/workload"
)

// hlogOf writes intervals of 1 s, interval i holding counts[i] (latency us -> count), as a
// run writes latency.hlog, and reads it back.
func hlogOf(t *testing.T, counts []map[int64]int64) *schema.LatencyLog {
	t.Helper()
	var b bytes.Buffer
	if err := schema.WriteLatencyLogHeader(&b, time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	for i, c := range counts {
		h := workload.NewHistogram()
		for v, n := range c {
			h.RecordValues(v, n)
		}
		line, err := schema.AppendLatencyLogLine(nil, time.Duration(i)*time.Second, time.Second, h)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
	}
	log, err := schema.ReadLatencyLog(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// TestLatencyHeatmap: each cell holds a column's transactions per second at its latency
// (rows a tenth of a decade), coloured by its class; a stall (intervals where nothing
// completed) leaves its columns empty; a long run's intervals are merged into at most
// heatColumns columns without losing a transaction; the chart has its legend and the
// p99 line, cut where an interval has no p99.
func TestLatencyHeatmap(t *testing.T) {
	var counts []map[int64]int64
	for i := 0; i < 10; i++ {
		switch {
		case i < 5:
			counts = append(counts, map[int64]int64{2_000: 100, 20_000: 10})
		case i < 7:
			counts = append(counts, map[int64]int64{}) // a stall
		default:
			counts = append(counts, map[int64]int64{5_000: 200})
		}
	}
	const off = 3.5
	g, ok := buildHeatGrid(hlogOf(t, counts), off)
	if !ok {
		t.Fatal("no grid")
	}
	if want := []float64{10, 25, 50, 100}; len(g.classes) != len(want) || math.Abs(g.classes[0]-10) > 1e-9 || math.Abs(g.classes[3]-100) > 1e-9 {
		t.Fatalf("classes %v, want %v", g.classes, want)
	}
	if g.rowLo != heatRow(2_000) || g.rowHi != heatRow(20_000) || g.xmin != off || g.xmax != off+10 {
		t.Errorf("grid rows %d..%d x %v..%v, want rows %d..%d x %v..%v", g.rowLo, g.rowHi, g.xmin, g.xmax, heatRow(2_000), heatRow(20_000), off, off+10)
	}
	at := map[float64]map[float64]int{} // column start -> cell bottom (ms) -> class
	for _, c := range g.cells {
		if c.x1-c.x0 != 1 || c.y1 <= c.y0 {
			t.Errorf("cell %+v: want 1 s wide, rising", c)
		}
		if at[c.x0] == nil {
			at[c.x0] = map[float64]int{}
		}
		at[c.x0][c.y0] = c.class
	}
	for i := 0; i < 10; i++ {
		col := at[off+float64(i)]
		switch {
		case i < 5:
			if len(col) != 2 || col[rowMs(heatRow(2_000))] != 3 || col[rowMs(heatRow(20_000))] != 0 {
				t.Errorf("column %d: %v, want 100/s at 2 ms (class 3, >= 100) and 10/s at 20 ms (class 0)", i, col)
			}
		case i < 7:
			if len(col) != 0 {
				t.Errorf("column %d of the stall has cells: %v", i, col)
			}
		default:
			if len(col) != 1 || col[rowMs(heatRow(5_000))] != 3 {
				t.Errorf("column %d: %v, want 200/s at 5 ms (class 3)", i, col)
			}
		}
	}
	if r := heatRow(2_000); rowMs(r) > 2 || rowMs(r+1) <= 2 {
		t.Errorf("2 ms in row %d: %v..%v ms", r, rowMs(r), rowMs(r+1))
	}

	// 300 intervals of 1 s at 1 ms: 100 columns of 3 s, each 1000 trx per 3 s.
	long := make([]map[int64]int64, 300)
	for i := range long {
		long[i] = map[int64]int64{1_000: 1000}
	}
	g, _ = buildHeatGrid(hlogOf(t, long), 0)
	if len(g.cells) != 100 || g.cells[1].x0 != 3 || len(g.classes) != 1 || g.classes[0] != 1000 {
		t.Errorf("300 intervals: %d cells, second from %v, classes %v; want 100 columns of 3 s at 1000/s", len(g.cells), g.cells[1].x0, g.classes)
	}

	res, err := Load(quick)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[2]
	if _, ok, _ := LatencyHeatmap(r, 10); ok {
		t.Error("a heatmap without latency.hlog")
	}
	r.LatencyLog = hlogOf(t, counts)
	r.Intervals[1].LatP99Ms = 0
	c, ok, err := LatencyHeatmap(r, runXMax(r))
	if err != nil || !ok {
		t.Fatalf("heatmap: %v %v", ok, err)
	}
	for _, want := range []string{"latency heatmap", "≥ 100 trx/s", "10-25 trx/s", "p99 per interval", "latency ms"} {
		if !strings.Contains(c.SVG, want) {
			t.Errorf("heatmap SVG lacks %q", want)
		}
	}
	if segs := p99Segments(r.Intervals, 1); len(segs) != 2 || segs[0][0].X != 1 || segs[1][0].X != 1+r.Intervals[1].ElapsedS {
		t.Errorf("p99 segments %v: want two, cut at the interval without p99", segs)
	}
	rd, err := Render(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(rd.HTML), "latency heatmap (transactions per second by latency)"); n != 1 {
		t.Errorf("report.html has %d heatmaps, want the run with latency.hlog's", n)
	}
}
