package clients

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/habench/habench/workload"
)

// engineResult builds the Result the engine would for events with latencies lats spread
// over threads workers (worker i gets events i, i+threads, ...): the latency histogram
// recorded as the engine records it (microseconds, at least 1 ns, at most an hour), the
// exact extremes and sum, the percentiles by workload.LatencyAt, the fairness over the
// workers (execution time = latency sum without --rate).
func engineResult(lats []time.Duration, threads int, pct float64, extra []float64) *workload.Result {
	r := &workload.Result{Workload: "oltp_read_write", Threads: threads, Percentile: pct,
		Transactions: int64(len(lats)), Histogram: workload.NewHistogram(), RandType: "uniform", PSMode: "auto"}
	var sum, mn, mx int64
	events := make([]float64, threads)
	exec := make([]float64, threads)
	for i, d := range lats {
		ns := max(int64(d), 1)
		sum += ns
		if mn == 0 || ns < mn {
			mn = ns
		}
		mx = max(mx, ns)
		_ = r.Histogram.RecordValue(min(ns/1000, int64(time.Hour/time.Microsecond)))
		events[i%threads]++
		exec[i%threads] += float64(ns) / 1e9
	}
	r.LatencyMin, r.LatencyMax, r.LatencySum = float64(mn)/1e6, float64(mx)/1e6, float64(sum)/1e6
	if len(lats) > 0 {
		r.LatencyAvg = r.LatencySum / float64(len(lats))
	}
	r.LatencyPct = workload.LatencyAt(r.Histogram, pct, r.LatencyMax)
	r.LatencyP50 = workload.LatencyAt(r.Histogram, 50, r.LatencyMax)
	r.LatencyP95 = workload.LatencyAt(r.Histogram, 95, r.LatencyMax)
	r.LatencyP99 = workload.LatencyAt(r.Histogram, 99, r.LatencyMax)
	for _, p := range extra {
		r.ExtraLatencyPct = append(r.ExtraLatencyPct, workload.LatencyAt(r.Histogram, p, r.LatencyMax))
	}
	r.EventsAvg, r.EventsStddev = meanStddev(events)
	r.ExecTimeAvg, r.ExecTimeStddev = meanStddev(exec)
	return r
}

// meanStddev is the population mean and standard deviation of xs.
func meanStddev(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

// randomLatency draws from a heavy-tailed mix: mostly log-normal around 2 ms, some
// around 200 ms, rarely beyond an hour (the histogram's clamp) or below a microsecond.
func randomLatency(g *rand.Rand) time.Duration {
	switch x := g.Float64(); {
	case x < 0.001:
		return time.Hour + time.Duration(g.Int64N(int64(time.Hour)))
	case x < 0.003:
		return time.Duration(g.Int64N(2000))
	case x < 0.05:
		return time.Duration(math.Exp(g.NormFloat64()*0.8 + math.Log(200e6)))
	default:
		return time.Duration(math.Exp(g.NormFloat64()*0.6 + math.Log(2e6)))
	}
}

// TestMergeUnion: latencies split at random across 2-4 clients, each client's Result as
// the engine builds it; the merged Result's count, extremes, sum and every percentile equal
// those of one run holding the union, exactly, and its threads fairness that of the union's
// threads (to rounding).
func TestMergeUnion(t *testing.T) {
	extra := []float64{99.9, 25}
	for seed := range uint64(200) {
		g := rand.New(rand.NewPCG(seed, 34))
		k := 2 + g.IntN(3)
		lats := make([][]time.Duration, k)
		var all []time.Duration
		threads := make([]int, k)
		for c := range k {
			threads[c] = 1 + g.IntN(8)
			for range g.IntN(3000) {
				d := randomLatency(g)
				lats[c] = append(lats[c], d)
				all = append(all, d)
			}
		}
		var parts []Part
		for c := range k {
			parts = append(parts, Part{Client: string(rune('a' + c)), Result: engineResult(lats[c], threads[c], 95, extra)})
		}
		m, err := Merge(parts, extra)
		if err != nil {
			t.Fatal(err)
		}
		got := m.Result
		want := engineResult(all, 1, 95, extra)
		if got.Transactions != int64(len(all)) || got.Histogram.TotalCount() != int64(len(all)) {
			t.Fatalf("seed %d: %d transactions, histogram %d, want %d", seed, got.Transactions, got.Histogram.TotalCount(), len(all))
		}
		if !got.Histogram.Equals(want.Histogram) {
			t.Fatalf("seed %d: merged histogram differs from the union's", seed)
		}
		for _, f := range []struct {
			name      string
			got, want float64
		}{
			{"LatencyPct", got.LatencyPct, want.LatencyPct}, {"LatencyP50", got.LatencyP50, want.LatencyP50},
			{"LatencyP95", got.LatencyP95, want.LatencyP95}, {"LatencyP99", got.LatencyP99, want.LatencyP99},
			{"LatencyMax", got.LatencyMax, want.LatencyMax}, {"LatencyMin", got.LatencyMin, want.LatencyMin},
			{"ExtraLatencyPct[0]", got.ExtraLatencyPct[0], want.ExtraLatencyPct[0]},
			{"ExtraLatencyPct[1]", got.ExtraLatencyPct[1], want.ExtraLatencyPct[1]},
		} {
			if f.got != f.want {
				t.Fatalf("seed %d, %d clients: %s = %v, the union's %v", seed, k, f.name, f.got, f.want)
			}
		}
		if !near(got.LatencySum, want.LatencySum) || !near(got.LatencyAvg, want.LatencyAvg) {
			t.Fatalf("seed %d: sum %v avg %v, the union's %v %v", seed, got.LatencySum, got.LatencyAvg, want.LatencySum, want.LatencyAvg)
		}
		checkFairness(t, seed, got, lats, threads)
	}
}

// checkFairness compares got's threads fairness with the one computed directly over every
// client's workers.
func checkFairness(t *testing.T, seed uint64, got *workload.Result, lats [][]time.Duration, threads []int) {
	t.Helper()
	var events, exec []float64
	for c, ls := range lats {
		ev, ex := make([]float64, threads[c]), make([]float64, threads[c])
		for i, d := range ls {
			ev[i%threads[c]]++
			ex[i%threads[c]] += float64(max(int64(d), 1)) / 1e9
		}
		events, exec = append(events, ev...), append(exec, ex...)
	}
	em, es := meanStddev(events)
	xm, xs := meanStddev(exec)
	if got.Threads != len(events) || !near(got.EventsAvg, em) || !near(got.EventsStddev, es) || !near(got.ExecTimeAvg, xm) || !near(got.ExecTimeStddev, xs) {
		t.Fatalf("seed %d: fairness threads %d events %v±%v exec %v±%v, over all workers %d %v±%v %v±%v",
			seed, got.Threads, got.EventsAvg, got.EventsStddev, got.ExecTimeAvg, got.ExecTimeStddev, len(events), em, es, xm, xs)
	}
}

// near: a and b equal to 1e-9 relative (float rounding).
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) || math.Abs(a-b) < 1e-12
}

// TestMergeEvents: outages, waits and writer moves are moved onto the earliest client's
// clock, labelled, in order; waits renumbered across clients and cut to the longest 100;
// the clients' rows and the CPU verdict name the saturated client.
func TestMergeEvents(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	a := engineResult([]time.Duration{time.Millisecond}, 4, 95, nil)
	b := engineResult([]time.Duration{2 * time.Millisecond, 3 * time.Millisecond}, 2, 95, nil)
	a.StartedAt, b.StartedAt = t0.Add(200*time.Millisecond), t0
	a.TotalTime, b.TotalTime = 10*time.Second, 10*time.Second
	a.Outages = []workload.Outage{{Endpoint: "n1", Start: 3 * time.Second, End: 5 * time.Second}}
	b.Outages = []workload.Outage{{Endpoint: "n1", Start: 3100 * time.Millisecond, End: 4 * time.Second}}
	for i := range 80 {
		a.Waits = append(a.Waits, workload.Wait{Endpoint: "n1", Worker: i % 4, At: time.Second, Waited: time.Duration(i+1) * time.Millisecond})
		b.Waits = append(b.Waits, workload.Wait{Endpoint: "n2", Worker: i % 2, At: time.Second, Waited: time.Duration(i+1)*time.Millisecond + 500*time.Microsecond})
	}
	a.WaitCount, b.WaitCount = 90, 85
	a.WriterMoves = []workload.WriterMove{{From: "n1", To: "n2", At: t0.Add(4 * time.Second), Workers: 4}}
	b.WriterMoves = []workload.WriterMove{{From: "n1", To: "n2", At: t0.Add(3 * time.Second), Workers: 2}}
	a.ClientCPUCores, a.ClientCPUs = 3.8, 4
	b.ClientCPUCores, b.ClientCPUs = 0.5, 8
	m, err := Merge([]Part{{"c1", a}, {"c2", b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Result
	if !r.StartedAt.Equal(t0) || r.TotalTime != 10200*time.Millisecond {
		t.Errorf("started %v total %v, want %v and 10.2 s", r.StartedAt, r.TotalTime, t0)
	}
	// c1 started 0.2 s after c2: its outage at 3 s of its clock is at 3.2 s of the run's.
	if len(m.Outages) != 2 || m.Outages[0].Client != "c2" || m.Outages[0].Start != 3100*time.Millisecond ||
		m.Outages[1].Client != "c1" || m.Outages[1].Start != 3200*time.Millisecond || m.Outages[1].End != 5200*time.Millisecond {
		t.Errorf("outages %+v, want c2's at 3.1 s then c1's 3.2-5.2 s", m.Outages)
	}
	if len(r.Outages) != 2 || !reflect.DeepEqual(r.Outages[0], m.Outages[0].Outage) {
		t.Errorf("Result.Outages %+v are not the labelled ones", r.Outages)
	}
	if len(m.Waits) != workload.MaxWaits || r.WaitCount != 175 || len(r.Waits) != workload.MaxWaits {
		t.Fatalf("%d waits (Result %d), count %d; want %d, 175", len(m.Waits), len(r.Waits), r.WaitCount, workload.MaxWaits)
	}
	if w := m.Waits[0]; w.Client != "c2" || w.Waited != 80500*time.Microsecond || w.Worker != 4+79%2 || w.At != time.Second {
		t.Errorf("longest wait %+v, want c2's 80.5 ms, worker 5 (c1 has 4), at 1 s", w)
	}
	if w := m.Waits[1]; w.Client != "c1" || w.At != 1200*time.Millisecond || w.Worker != 79%4 {
		t.Errorf("second wait %+v, want c1's at 1.2 s worker 3", w)
	}
	if len(m.WriterMoves) != 2 || m.WriterMoves[0].Client != "c2" || m.WriterMoves[1].Workers != 4 {
		t.Errorf("writer moves %+v, want c2's then c1's", m.WriterMoves)
	}
	if len(m.Clients) != 2 || m.Clients[0].Client != "c1" || !m.Clients[0].Bound || m.Clients[1].Bound ||
		m.Clients[1].Transactions != 2 || m.Clients[1].Threads != 2 || m.Clients[1].LatencyP99 != b.LatencyP99 {
		t.Errorf("client rows %+v", m.Clients)
	}
	if !r.ClientBound() || r.ClientCPUCores != 3.8 {
		t.Errorf("merged client CPU %.2f of %d: want c1's (bound)", r.ClientCPUCores, r.ClientCPUs)
	}
	if w := m.ClientBoundWarning(); !strings.Contains(w, "client c1 (3.80 of 4 CPUs)") || strings.Contains(w, "c2") {
		t.Errorf("verdict %q, want c1 named, not c2", w)
	}
}

// TestMergeRate: --rate results merged: targets, arrivals, backlogs added, the service
// histogram merged, met only when all met.
func TestMergeRate(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	mk := func(start time.Time, target int, met bool, behind time.Duration, svc ...time.Duration) *workload.Result {
		r := engineResult(svc, 2, 95, nil)
		r.StartedAt = start
		rr := &workload.RateResult{Target: target, Arrivals: int64(target * 10), Backlog: 3, BacklogAge: behind / 2,
			MaxBacklogAge: behind, Met: met, Behind: behind, BehindAt: 2 * time.Second, MaxBacklog: int64(target),
			WarmupDropped: 1, WarmupUnmeasured: 2, ServiceMin: r.LatencyMin, ServiceMax: r.LatencyMax, ServiceSum: r.LatencySum,
			ServiceHistogram: r.Histogram}
		r.Rate = rr
		return r
	}
	a := mk(t0, 100, true, 0, time.Millisecond, 4*time.Millisecond)
	b := mk(t0.Add(time.Second), 50, false, 3*time.Second, 2*time.Millisecond, 9*time.Millisecond, 7*time.Millisecond)
	m, err := Merge([]Part{{"a", a}, {"b", b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr := m.Result.Rate
	if rr.Target != 150 || rr.Arrivals != 1500 || rr.Backlog != 6 || rr.WarmupDropped != 2 || rr.WarmupUnmeasured != 4 || rr.Met {
		t.Errorf("rate %+v: want target 150, arrivals 1500, backlog 6, dropped 2, unmeasured 4, not met", rr)
	}
	if rr.Behind != 3*time.Second || rr.BehindAt != 3*time.Second || rr.MaxBacklog != 50 || rr.MaxBacklogAge != 3*time.Second {
		t.Errorf("behind %v at %v max backlog %d age %v: want b's, 3 s at 3 s (its 2 s + 1 s later start), 50, 3 s", rr.Behind, rr.BehindAt, rr.MaxBacklog, rr.MaxBacklogAge)
	}
	if rr.ServiceHistogram.TotalCount() != 5 || rr.ServiceMin != 1 || rr.ServiceMax != 9 || rr.ServiceSum != 23 || rr.ServiceAvg != 23.0/5 ||
		rr.ServiceP50 != workload.LatencyAt(rr.ServiceHistogram, 50, 9) || rr.ServiceP99 != 9 {
		t.Errorf("service %+v", rr)
	}
	c := engineResult(nil, 1, 95, nil)
	if _, err := Merge([]Part{{"a", a}, {"c", c}}, nil); err == nil || !strings.Contains(err.Error(), "client c ran with --rate false") {
		t.Errorf("a client without --rate: %v", err)
	}
}

// TestMergeRefuses: one short error naming the client and the field.
func TestMergeRefuses(t *testing.T) {
	r := func(f func(*workload.Result)) *workload.Result {
		x := engineResult([]time.Duration{time.Millisecond}, 1, 95, nil)
		f(x)
		return x
	}
	same := func(*workload.Result) {}
	for _, c := range []struct {
		parts []Part
		want  string
	}{
		{nil, "no client's result"},
		{[]Part{{"", r(same)}}, "client 1 has no name"},
		{[]Part{{"a", r(same)}, {"a", r(same)}}, "client a twice"},
		{[]Part{{"a", nil}}, "client a: no result"},
		{[]Part{{"a", r(same)}, {"b", r(func(x *workload.Result) { x.Workload = "oltp_read_only" })}}, `client b: Workload "oltp_read_only", client a's is "oltp_read_write"`},
		{[]Part{{"a", r(same)}, {"b", r(func(x *workload.Result) { x.Percentile = 99 })}}, `client b: Percentile "99"`},
		{[]Part{{"a", r(same)}, {"b", r(func(x *workload.Result) { x.PSMode = "disable" })}}, `client b: PSMode "disable"`},
		{[]Part{{"a", r(same)}, {"b", r(func(x *workload.Result) { x.ExtraLatencyPct = []float64{1} })}}, "client b: 1 extra percentiles, the run has 0"},
		{[]Part{{"a", r(same)}, {"b", r(func(x *workload.Result) {
			x.Histogram = hdrhistogram.New(1, 1e12, 3)
			_ = x.Histogram.RecordValue(1e11)
		})}}, "client b: Histogram: 1 values outside the histogram's range"},
	} {
		_, err := Merge(c.parts, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Merge: %v, want %q", err, c.want)
		}
	}
	// A client that fell back to client-side statements: its PSMode, its note named.
	b := r(func(x *workload.Result) { x.PSMode, x.PSFallback = "disable", "prepared statements would not fit" })
	m, err := Merge([]Part{{"a", r(same)}, {"b", b}}, nil)
	if err != nil || m.Result.PSMode != "disable" || m.Result.PSFallback != "b: prepared statements would not fit" {
		t.Errorf("fallback: %v %+v", err, m)
	}
}
