package stats

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Against published two-sided 95% critical values of Student's t.
func TestT975KnownValues(t *testing.T) {
	for _, c := range []struct {
		df   int
		want float64
	}{{1, 12.706}, {2, 4.303}, {3, 3.182}, {4, 2.776}, {9, 2.262}, {29, 2.045}, {30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {1000, 1.962}} {
		got, ok := T975(c.df)
		if !ok || !near(got, c.want, 0.0011) {
			t.Errorf("T975(%d) = %v, %v; want %v", c.df, got, ok, c.want)
		}
	}
	if _, ok := T975(0); ok {
		t.Error("T975(0) ok")
	}
}

func TestOf(t *testing.T) {
	s := Of([]float64{10, 11, 12})
	if s.N != 3 || s.Mean != 11 || s.Min != 10 || s.Max != 12 || !near(s.SD, 1, 1e-12) {
		t.Fatalf("Of = %+v", s)
	}
	h := 4.3027 / math.Sqrt(3)
	if !s.HasCI() || !near(*s.CILo, 11-h, 1e-9) || !near(*s.CIHi, 11+h, 1e-9) {
		t.Errorf("CI %v-%v, want %v-%v", *s.CILo, *s.CIHi, 11-h, 11+h)
	}
	one := Of([]float64{5})
	if one.HasCI() || one.Mean != 5 || one.String() != "5.0 (n=1: no CI)" {
		t.Errorf("one repeat: %+v %q", one, one.String())
	}
}

func TestCompareWelch(t *testing.T) {
	// Means 11 and 21, sd 1 each, n 3: se sqrt(2/3), Welch df 4, t 2.7764.
	c := Compare(Of([]float64{10, 11, 12}), Of([]float64{20, 21, 22}))
	h := 2.7764 * math.Sqrt(2.0/3)
	if !c.OK || !near(c.Pct, 100*11.0/21, 1e-9) || c.Verdict != Difference ||
		!near(*c.DiffLoPct, 100*(-10-h)/21, 1e-6) || !near(*c.DiffHiPct, 100*(-10+h)/21, 1e-6) {
		t.Errorf("Compare = %+v (%v..%v)", c, *c.DiffLoPct, *c.DiffHiPct)
	}
	if c.OfBase() != "52.4%" || c.Signed() != "-47.6%" {
		t.Errorf("text %q %q", c.OfBase(), c.Signed())
	}
	// Means 12 and 13, sd 2: the interval (+-4.53) includes 0.
	n := Compare(Of([]float64{10, 12, 14}), Of([]float64{11, 13, 15}))
	if n.Verdict != WithinNoise || n.Signed() != "-7.7% (within noise)" {
		t.Errorf("within noise: %+v %q", n, n.Signed())
	}
	if o := Compare(Of([]float64{10}), Of([]float64{11, 13, 15})); o.Verdict != NoCI || o.DiffLoPct != nil || !near(o.Pct, 100*10.0/13, 1e-9) {
		t.Errorf("one repeat: %+v", o)
	}
	if z := Compare(Of([]float64{10}), Of([]float64{0})); z.OK || z.OfBase() != "n/a" {
		t.Errorf("zero reference: %+v", z)
	}
}

func TestAnalyzeBaseAxisAndInert(t *testing.T) {
	axes := []Axis{{Name: "links", Values: []string{"none", "0.6ms"}, Inert: []string{"single"}}, {Name: "threads", Values: []string{"1", "4"}, Reference: "4"}}
	var obs []Obs
	add := func(topo, links, threads string, tps ...float64) {
		for _, x := range tps {
			obs = append(obs, Obs{Topology: topo, Axes: map[string]string{"links": links, "threads": threads}, TPS: x, AvgMs: 1000 / x, ID: topo + links + threads})
		}
	}
	add("single", "none", "1", 100, 102, 98)
	add("single", "none", "4", 300, 310, 290)
	add("async", "none", "1", 90, 91, 89)
	add("async", "none", "4", 280, 320, 300)
	add("async", "0.6ms", "1", 50, 51, 49)
	add("async", "0.6ms", "4", 200, 210, 190)
	cells := Analyze(obs, axes, "single")
	if len(cells) != 8 {
		t.Fatalf("%d cells, want 8 (2 reused)", len(cells))
	}
	var got []string
	for _, c := range cells {
		got = append(got, c.Topology+" "+c.Group)
	}
	want := []string{"single links=none threads=1", "single links=none threads=4", "single links=0.6ms threads=1", "single links=0.6ms threads=4",
		"async links=none threads=1", "async links=none threads=4", "async links=0.6ms threads=1", "async links=0.6ms threads=4"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if r := cells[2]; r.ReusedFrom != "links=none threads=1" || !r.IsBase || r.TPS.Mean != 100 {
		t.Errorf("reused cell %+v", r)
	}
	a := cells[6] // async 0.6ms threads=1 against the reused single cell: 50 / 100
	if a.VsBase == nil || a.VsBase.Pct != 50 || a.VsBase.Verdict != Difference {
		t.Errorf("vs base %+v", a.VsBase)
	}
	if l := a.AlongAxis("links"); l == nil || l.Reference != "none" || !near(l.TPS.Pct, 100*50.0/90, 1e-9) || l.TPS.Verdict != Difference {
		t.Errorf("along links %+v", l)
	}
	if th := a.AlongAxis("threads"); th == nil || th.Reference != "4" || !near(th.TPS.Pct, 25, 1e-9) {
		t.Errorf("along threads %+v", th)
	}
	// async none threads=4 (300 +-20) against single none threads=4 (300 +-10): within noise.
	if v := cells[5].VsBase; v.Verdict != WithinNoise || v.Pct != 100 {
		t.Errorf("async threads=4 vs base %+v", v)
	}
	if l := cells[3].AlongAxis("links"); l.TPS.Verdict != Reference {
		t.Errorf("reused cell along links: %+v, want the reference (same runs)", l)
	}
	if r := cells[1].AlongAxis("threads"); r.TPS.Verdict != Reference || r.TPS.Pct != 100 {
		t.Errorf("the reference cell: %+v", r)
	}
}

// TestAnalyzeReplication: a point's replication and capacity search figures are summarised over its repeats
// like TPS (mean and 95% CI), only when every completed run has the figure; a failed run
// does not count.
func TestAnalyzeReplication(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	obs := []Obs{
		{Topology: "g", Axes: map[string]string{"knob.fc": "1000"}, ID: "a1", TPS: 100, Repl: Repl{LagAvgS: f(0.2), LagMaxS: f(1.0), FCPaused: f(0.10)}, Search: Search{Rate: f(300), FailoverS: f(6)}},
		{Topology: "g", Axes: map[string]string{"knob.fc": "1000"}, ID: "a2", TPS: 110, Repl: Repl{LagAvgS: f(0.4), LagMaxS: f(3.0), FCPaused: f(0.20), BacklogMax: f(7)}, Search: Search{Rate: f(320)}},
		{Topology: "g", Axes: map[string]string{"knob.fc": "1000"}, ID: "a3", Failed: true, Repl: Repl{LagAvgS: f(9)}},
		{Topology: "g", Axes: map[string]string{"knob.fc": "25000"}, ID: "b1", TPS: 120},
	}
	cells := Analyze(obs, []Axis{{Name: "knob.fc", Values: []string{"1000", "25000"}}}, "g")
	a, b := cells[0], cells[1]
	if a.LagAvgS == nil || a.LagAvgS.N != 2 || math.Abs(a.LagAvgS.Mean-0.3) > 1e-9 || !a.LagAvgS.HasCI() || a.LagMaxS.Mean != 2 || math.Abs(a.FCPaused.Mean-0.15) > 1e-9 {
		t.Errorf("point 1000: lag avg %+v lag max %+v fc %+v", a.LagAvgS, a.LagMaxS, a.FCPaused)
	}
	if a.CapacityRate == nil || a.CapacityRate.Mean != 310 || a.CapacityRate.N != 2 || a.FailoverS != nil {
		t.Errorf("point 1000: capacity %+v failover %+v (failover measured in one run of two: want none)", a.CapacityRate, a.FailoverS)
	}
	if a.BacklogMax != nil {
		t.Errorf("backlog %+v from one run of two: want none", a.BacklogMax)
	}
	if b.LagAvgS != nil || b.LagMaxS != nil || b.FCPaused != nil || b.BacklogMax != nil {
		t.Errorf("point 25000 without figures: %+v", b)
	}
}
