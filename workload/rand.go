package workload

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// The c and pad templates of sysbench's oltp_common.lua: groups of 11 random
// digits joined by '-' (10 groups = 119 characters, 5 groups = 59 characters).
const (
	cTemplate   = "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########"
	padTemplate = "###########-###########-###########-###########-###########"
)

// randGen is one goroutine's generator of sysbench's distributions. It is not
// safe for concurrent use: each worker owns one.
type randGen struct {
	r    *rand.Rand
	dist string

	iter     int
	iterMult float64
	pctMult  float64
	pct2Mult float64
	resMult  float64

	paretoPower float64

	zipfExp, zipfS, zipfHX1 float64
}

// newRandGen returns a generator for o's --rand-* options seeded with (s1, s2).
func newRandGen(o *Options, s1, s2 uint64) *randGen {
	g := &randGen{r: rand.New(rand.NewPCG(s1, s2)), dist: o.RandType}
	g.iter = max(o.RandSpecIter, 1)
	g.iterMult = 1.0 / float64(g.iter)
	g.pctMult = float64(o.RandSpecPct) / 100.0
	g.pct2Mult = float64(o.RandSpecPct) / 200.0
	g.resMult = 100.0 / (100.0 - float64(o.RandSpecRes))
	g.paretoPower = math.Log(o.RandParetoH) / math.Log(1.0-o.RandParetoH)
	e := o.RandZipfianExp
	g.zipfExp = e
	g.zipfS = 2 - hIntegralInverse(hIntegral(2.5, e)-h(2, e), e)
	g.zipfHX1 = hIntegral(1.5, e) - 1
	return g
}

// def returns a value in [a, b] with the configured distribution
// (sysbench.rand.default).
func (g *randGen) def(a, b uint32) uint32 {
	switch g.dist {
	case RandSpecial:
		return g.special(a, b)
	case RandGaussian:
		return g.gaussian(a, b)
	case RandPareto:
		return g.pareto(a, b)
	case RandZipfian:
		return g.zipfian(a, b)
	default:
		return g.uniform(a, b)
	}
}

// uniform returns a uniformly distributed value in [a, b] (sb_rand_uniform).
func (g *randGen) uniform(a, b uint32) uint32 {
	return a + uint32(g.r.Float64()*float64(b-a+1))
}

// gaussian is sb_rand_gaussian: the mean of RandSpecIter uniforms over [a, b].
func (g *randGen) gaussian(a, b uint32) uint32 {
	t := float64(b - a + 1)
	sum := 0.0
	for i := 0; i < g.iter; i++ {
		sum += g.r.Float64() * t
	}
	return a + uint32(sum*g.iterMult)
}

// special is sb_rand_special: RandSpecRes percent of the values fall
// uniformly into the central RandSpecPct percent of [a, b], the rest are
// gaussian over the whole range.
func (g *randGen) special(a, b uint32) uint32 {
	t := float64(b - a)
	rangeSize := t * g.resMult
	rnd := g.r.Float64()
	res := rnd * rangeSize
	if res < t {
		sum := 0.0
		for i := 0; i < g.iter; i++ {
			sum += g.r.Float64()
		}
		return a + uint32(sum*t*g.iterMult)
	}
	d := t * g.pctMult
	res = rnd * (d + 1)
	res += t/2 - t*g.pct2Mult
	return a + uint32(res)
}

// pareto is sb_rand_pareto.
func (g *randGen) pareto(a, b uint32) uint32 {
	return a + uint32(float64(b-a+1)*math.Pow(g.r.Float64(), g.paretoPower))
}

// zipfian is sb_rand_zipfian (rejection-inversion sampling, Apache Commons RNG).
func (g *randGen) zipfian(a, b uint32) uint32 {
	return a + g.zipfianInt(b-a+1) - 1
}

func (g *randGen) zipfianInt(n uint32) uint32 {
	e := g.zipfExp
	hN := hIntegral(float64(n)+0.5, e)
	for {
		u := hN + g.r.Float64()*(g.zipfHX1-hN)
		x := hIntegralInverse(u, e)
		kf := x + 0.5
		var k uint32
		switch {
		case kf < 1:
			k = 1
		case kf > float64(n):
			k = n
		default:
			k = uint32(kf)
		}
		if float64(k)-x <= g.zipfS || u >= hIntegral(float64(k)+0.5, e)-h(float64(k), e) {
			return k
		}
	}
}

func hIntegral(x, e float64) float64 {
	logX := math.Log(x)
	return helper2((1-e)*logX) * logX
}

func h(x, e float64) float64 { return math.Exp(-e * math.Log(x)) }

func hIntegralInverse(x, e float64) float64 {
	t := x * (1 - e)
	if t < -1 {
		t = -1
	}
	return math.Exp(helper1(t) * x)
}

func helper1(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(0.33333333333333333-0.25*x))
}

func helper2(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x*0.33333333333333333*(1+0.25*x))
}

// fillString writes tmpl into buf with every '#' replaced by a uniform random
// digit (sb_rand_str) and returns buf[:len(tmpl)].
func (g *randGen) fillString(buf []byte, tmpl string) []byte {
	buf = append(buf[:0], tmpl...)
	var bits uint64
	var n int
	for i := range buf {
		if buf[i] != '#' {
			continue
		}
		// Draw digits 19 at a time from one 64-bit value (10^19 < 2^64);
		// the bias of the final partial range is below 1e-19 per digit.
		if n == 0 {
			bits = g.r.Uint64N(10_000_000_000_000_000_000)
			n = 19
		}
		buf[i] = byte('0' + bits%10)
		bits /= 10
		n--
	}
	return buf
}

// unique returns a sequence of distinct uint32 values in a random order
// (sb_rand_unique, after preshing's RandomSequence). It is safe for concurrent use.
type uniqueSeq struct {
	index  atomic.Uint32
	offset uint32
}

func newUniqueSeq(a, b uint32) *uniqueSeq {
	s := &uniqueSeq{offset: permute(permute(b) + 0x46790905)}
	s.index.Store(permute(permute(a) + 0x682f0161))
	return s
}

func (s *uniqueSeq) next() uint32 {
	i := s.index.Add(1) - 1
	return permute((permute(i) + s.offset) ^ 0x5bf03635)
}

func permute(x uint32) uint32 {
	const prime = uint32(4294967291)
	if x >= prime {
		return x
	}
	residue := uint32(uint64(x) * uint64(x) % uint64(prime))
	if x <= prime/2 {
		return residue
	}
	return prime - residue
}
