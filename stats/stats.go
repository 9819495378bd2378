// Package stats summarises a sweep's repeated runs and compares its cells: every
// percentage habench prints (vs the baseline topology, vs an axis' reference value) is
// Compare over Samples built by Of, so the terminal, comparison.md, sweep.json, the
// report and compare give the same answer from the same numbers.
//
// The rule for "difference": the 95% confidence interval of the difference of the two
// means (Welch: Student t with the Welch-Satterthwaite degrees of freedom, rounded down)
// excludes 0. Otherwise the two cells are "within noise". With fewer than 2 repeats on
// either side there is no interval and the verdict says so.
package stats

import (
	"fmt"
	"math"
)

// Verdicts of a Change.
const (
	Difference  = "difference"       // the CI of the difference of the means excludes 0
	WithinNoise = "within noise"     // it includes 0
	NoCI        = "no CI (1 repeat)" // a side has fewer than 2 repeats
	Reference   = "reference"        // the cell is its own reference
)

// Sample summarises n repeated measurements of one quantity (TPS, ms), in its unit.
type Sample struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	// SD is the sample standard deviation (n-1 in the denominator), 0 when N < 2.
	SD float64 `json:"sd"`
	// CILo and CIHi bound the 95% confidence interval of the mean (Student t over the
	// repeats); nil when N < 2.
	CILo *float64 `json:"ci95_lo,omitempty"`
	CIHi *float64 `json:"ci95_hi,omitempty"`
}

// Of summarises xs (N 0: every field 0).
func Of(xs []float64) Sample {
	s := Sample{N: len(xs)}
	if s.N == 0 {
		return s
	}
	s.Min, s.Max = xs[0], xs[0]
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(s.N)
	if s.N < 2 {
		return s
	}
	var ss float64
	for _, x := range xs {
		ss += (x - s.Mean) * (x - s.Mean)
	}
	s.SD = math.Sqrt(ss / float64(s.N-1))
	t, _ := T975(s.N - 1)
	h := t * s.SD / math.Sqrt(float64(s.N))
	lo, hi := s.Mean-h, s.Mean+h
	s.CILo, s.CIHi = &lo, &hi
	return s
}

// HasCI reports whether s has a confidence interval (N >= 2).
func (s Sample) HasCI() bool { return s.CILo != nil }

// String is "1234.5 (min-max 1200.0-1260.1, 95% CI 1210.2-1258.8, n=3)", or
// "1234.5 (n=1: no CI)".
func (s Sample) String() string {
	if !s.HasCI() {
		return fmt.Sprintf("%.1f (n=%d: no CI)", s.Mean, s.N)
	}
	return fmt.Sprintf("%.1f (min-max %.1f-%.1f, 95%% CI %.1f-%.1f, n=%d)", s.Mean, s.Min, s.Max, *s.CILo, *s.CIHi, s.N)
}

// t975 are Student t's 0.975 quantiles for 1..30 degrees of freedom (two-sided 95%).
var t975 = [...]float64{12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
	2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
	2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423}

// T975 is Student t's 0.975 quantile for df degrees of freedom: a table for 1..30, the
// Cornish-Fisher expansion beyond (within 1e-4 of the exact value). ok is false for df < 1.
func T975(df int) (float64, bool) {
	if df < 1 {
		return math.NaN(), false
	}
	if df <= len(t975) {
		return t975[df-1], true
	}
	z := 1.959963984540054
	n := float64(df)
	z3, z5, z7 := z*z*z, math.Pow(z, 5), math.Pow(z, 7)
	return z + (z3+z)/(4*n) + (5*z5+16*z3+3*z)/(96*n*n) + (3*z7+19*z5+17*z3-15*z)/(384*n*n*n), true
}

// Change is x against a reference ref: Pct = 100*x.Mean/ref.Mean (100 = the same);
// with repeats on both sides, the 95% CI of x.Mean-ref.Mean (Welch) in percent of
// ref.Mean, and the verdict (Difference, WithinNoise, NoCI; Reference for a cell
// compared with itself).
type Change struct {
	// OK is false when ref's mean is 0 or either side has no runs: no percentage.
	OK  bool    `json:"ok"`
	Pct float64 `json:"pct"`
	// DiffLoPct and DiffHiPct bound the 95% CI of the difference of the means, in percent
	// of the reference mean; nil without a CI.
	DiffLoPct *float64 `json:"diff_ci95_lo_pct,omitempty"`
	DiffHiPct *float64 `json:"diff_ci95_hi_pct,omitempty"`
	Verdict   string   `json:"verdict"`
}

// Compare is x against ref (see Change).
func Compare(x, ref Sample) Change {
	if x.N == 0 || ref.N == 0 || ref.Mean == 0 {
		return Change{}
	}
	c := Change{OK: true, Pct: 100 * x.Mean / ref.Mean, Verdict: NoCI}
	if x.N < 2 || ref.N < 2 {
		return c
	}
	vx, vr := x.SD*x.SD/float64(x.N), ref.SD*ref.SD/float64(ref.N)
	se := math.Sqrt(vx + vr)
	d := x.Mean - ref.Mean
	h := 0.0
	if se > 0 {
		df := (vx + vr) * (vx + vr) / (vx*vx/float64(x.N-1) + vr*vr/float64(ref.N-1))
		t, _ := T975(max(1, int(math.Floor(df))))
		h = t * se
	}
	lo, hi := 100*(d-h)/ref.Mean, 100*(d+h)/ref.Mean
	c.DiffLoPct, c.DiffHiPct = &lo, &hi
	c.Verdict = WithinNoise
	if lo > 0 || hi < 0 {
		c.Verdict = Difference
	}
	return c
}

// Delta is Pct - 100: the change in percent (+3.2 = 3.2% more).
func (c Change) Delta() float64 { return c.Pct - 100 }

// OfBase is "98.2%" (of the reference), "98.2% (within noise)", "n/a" without one.
func (c Change) OfBase() string {
	if !c.OK {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", c.Pct) + c.suffix()
}

// Signed is "+3.2%", "-1.0% (within noise)", "n/a" without one.
func (c Change) Signed() string {
	if !c.OK {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", c.Delta()) + c.suffix()
}

func (c Change) suffix() string {
	switch c.Verdict {
	case WithinNoise:
		return " (within noise)"
	case Reference:
		return " (reference)"
	}
	return ""
}
