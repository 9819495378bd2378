package workload

import (
	"math"
	"regexp"
	"testing"
)

func testGen(t *testing.T, dist string) *randGen {
	t.Helper()
	o := DefaultOptions()
	o.RandType = dist
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return newRandGen(&o, 42, 7)
}

func TestDistributionsStayInRange(t *testing.T) {
	for _, dist := range RandTypes() {
		g := testGen(t, dist)
		for _, r := range [][2]uint32{{1, 10000}, {1, 1}, {5, 7}, {1, 2}, {100, 1000000}} {
			a, b := r[0], r[1]
			seenA, seenB := false, false
			for i := 0; i < 200000; i++ {
				v := g.def(a, b)
				if v < a || v > b {
					t.Fatalf("%s(%d,%d) = %d out of range", dist, a, b, v)
				}
				seenA = seenA || v == a
				seenB = seenB || v == b
			}
			// Small ranges must be fully covered by every distribution.
			if b-a <= 2 && (!seenA || !seenB) && dist != RandSpecial {
				t.Errorf("%s(%d,%d) never produced an end point (a=%v b=%v)", dist, a, b, seenA, seenB)
			}
		}
	}
}

func TestUniformIsFlat(t *testing.T) {
	g := testGen(t, RandUniform)
	const n, buckets = 400000, 10
	var hist [buckets]int
	for i := 0; i < n; i++ {
		hist[(g.def(1, 10000)-1)/1000]++
	}
	for i, c := range hist {
		if math.Abs(float64(c)-n/buckets) > 0.03*n/buckets {
			t.Errorf("uniform bucket %d has %d of %d", i, c, n)
		}
	}
}

// With sysbench's defaults (rand-spec-pct=1, rand-spec-res=75) about 75% of
// the values fall into the central 1% of the range (plus the share of the
// gaussian part that lands there, about 1.2%).
func TestSpecialHotSpot(t *testing.T) {
	g := testGen(t, RandSpecial)
	const n = 400000
	a, b := uint32(1), uint32(10000)
	tt := float64(b - a)
	lo := float64(a) + tt/2 - tt*0.01/2
	hi := lo + tt*0.01 + 1
	in := 0
	for i := 0; i < n; i++ {
		v := float64(g.def(a, b))
		if v >= lo && v < hi {
			in++
		}
	}
	share := float64(in) / n
	if share < 0.75 || share > 0.785 {
		t.Errorf("special: %.3f of values in the central 1%% [%.0f,%.0f), want about 0.76", share, lo, hi)
	}
}

func TestGaussianCentred(t *testing.T) {
	g := testGen(t, RandGaussian)
	const n = 200000
	var sum, sq float64
	for i := 0; i < n; i++ {
		v := float64(g.def(1, 10000))
		sum += v
		sq += v * v
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	// Mean of 12 uniforms over 10000 values: mean 5000.5, sd 10000/12 = 833.
	if math.Abs(mean-5000) > 30 || math.Abs(sd-833) > 30 {
		t.Errorf("gaussian mean %.1f sd %.1f, want about 5000 and 833", mean, sd)
	}
}

func TestParetoAndZipfianSkew(t *testing.T) {
	for _, dist := range []string{RandPareto, RandZipfian} {
		g := testGen(t, dist)
		const n = 200000
		low := 0
		ones := 0
		for i := 0; i < n; i++ {
			v := g.def(1, 10000)
			if v <= 1000 {
				low++
			}
			if v == 1 {
				ones++
			}
		}
		// Both put most of the mass on the low ids; pareto h=0.2 gives
		// P(v <= 10% of range) = 0.1^(1/power) with power = log(.2)/log(.8) = 7.2: 0.73.
		if float64(low)/n < 0.5 {
			t.Errorf("%s: only %.2f of values in the lowest 10%%", dist, float64(low)/n)
		}
		if dist == RandZipfian && ones < n/100 {
			t.Errorf("zipfian: value 1 drawn %d times of %d, want the most frequent", ones, n)
		}
	}
}

func TestZipfianMatchesPMF(t *testing.T) {
	g := testGen(t, RandZipfian)
	const n, N = 300000, 100
	counts := make([]int, N+1)
	for i := 0; i < n; i++ {
		counts[g.def(1, N)]++
	}
	var z float64
	for k := 1; k <= N; k++ {
		z += math.Pow(float64(k), -0.8)
	}
	for _, k := range []int{1, 2, 5, 50} {
		want := math.Pow(float64(k), -0.8) / z
		got := float64(counts[k]) / n
		if math.Abs(got-want) > 0.1*want {
			t.Errorf("zipfian P(%d) = %.4f, want %.4f", k, got, want)
		}
	}
}

func TestStringTemplates(t *testing.T) {
	g := testGen(t, RandUniform)
	cRE := regexp.MustCompile(`^(\d{11}-){9}\d{11}$`)
	padRE := regexp.MustCompile(`^(\d{11}-){4}\d{11}$`)
	var digits [10]int
	var buf []byte
	for i := 0; i < 2000; i++ {
		buf = g.fillString(buf, cTemplate)
		if len(buf) != 119 || !cRE.Match(buf) {
			t.Fatalf("c = %q", buf)
		}
		for _, ch := range buf {
			if ch != '-' {
				digits[ch-'0']++
			}
		}
		buf = g.fillString(buf, padTemplate)
		if len(buf) != 59 || !padRE.Match(buf) {
			t.Fatalf("pad = %q", buf)
		}
	}
	total := 2000 * 110
	for d, c := range digits {
		if math.Abs(float64(c)-float64(total)/10) > 0.05*float64(total)/10 {
			t.Errorf("digit %d appears %d times of %d", d, c, total)
		}
	}
}

func TestUniqueSequenceHasNoRepeats(t *testing.T) {
	s := newUniqueSeq(12345, 67890)
	seen := map[uint32]bool{}
	for i := 0; i < 100000; i++ {
		v := s.next()
		if seen[v] {
			t.Fatalf("unique sequence repeated %d after %d values", v, i)
		}
		seen[v] = true
	}
}

func BenchmarkSpecial(b *testing.B) {
	o := DefaultOptions()
	o.RandType = RandSpecial
	g := newRandGen(&o, 1, 2)
	for b.Loop() {
		g.def(1, 10000)
	}
}
