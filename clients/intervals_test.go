package clients

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/workload"
)

// engineInterval builds the Interval the engine would report for events with latencies
// lats in an interval of length 1 s ending at elapsed of a run started at started.
func engineInterval(started time.Time, elapsed time.Duration, lats []time.Duration, pct float64) workload.Interval {
	r := engineResult(lats, 1, pct, nil)
	iv := workload.Interval{Started: started, Elapsed: elapsed, Length: time.Second, Threads: 2,
		Transactions: r.Transactions, TPS: float64(r.Transactions), Histogram: r.Histogram,
		LatencyMax: r.LatencyMax, LatencyAvg: r.LatencyAvg, LatencyPct: r.LatencyPct,
		LatencyP50: r.LatencyP50, LatencyP95: r.LatencyP95, LatencyP99: r.LatencyP99,
		PerEndpoint: map[string]workload.EndpointStats{"n1": {Transactions: r.Transactions}}}
	iv.Recorded = iv.Histogram
	return iv
}

// TestMergeIntervalUnion: the clients' reports of one interval merged have the union's
// percentiles and max exactly, the clients' counts added, Elapsed on the earliest client's
// clock, and one histogram for Histogram and Recorded unless a client's differ.
func TestMergeIntervalUnion(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for seed := range uint64(100) {
		g := rand.New(rand.NewPCG(seed, 3434))
		k := 2 + g.IntN(3)
		var parts []ClientInterval
		var all []time.Duration
		var maxElapsed time.Duration
		for c := range k {
			var lats []time.Duration
			for range g.IntN(500) {
				lats = append(lats, randomLatency(g))
			}
			all = append(all, lats...)
			start := t0.Add(time.Duration(g.IntN(300)) * time.Millisecond)
			elapsed := 5*time.Second + time.Duration(g.IntN(10))*time.Millisecond
			maxElapsed = max(maxElapsed, elapsed+start.Sub(t0))
			parts = append(parts, ClientInterval{Client: string(rune('a' + c)), N: 5, Interval: engineInterval(start, elapsed, lats, 90)})
		}
		got := MergeInterval(parts, t0, 90)
		want := engineInterval(t0, 0, all, 90)
		if got.Transactions != int64(len(all)) || got.Threads != 2*k || got.PerEndpoint["n1"].Transactions != int64(len(all)) || got.TPS != float64(len(all)) {
			t.Fatalf("seed %d: %d transactions, %d threads, per endpoint %v, tps %v; want %d, %d", seed, got.Transactions, got.Threads, got.PerEndpoint, got.TPS, len(all), 2*k)
		}
		if got.LatencyPct != want.LatencyPct || got.LatencyP50 != want.LatencyP50 || got.LatencyP95 != want.LatencyP95 ||
			got.LatencyP99 != want.LatencyP99 || got.LatencyMax != want.LatencyMax || !near(got.LatencyAvg, want.LatencyAvg) {
			t.Fatalf("seed %d: latencies %v/%v/%v/%v max %v avg %v, the union's %v/%v/%v/%v %v %v", seed,
				got.LatencyPct, got.LatencyP50, got.LatencyP95, got.LatencyP99, got.LatencyMax, got.LatencyAvg,
				want.LatencyPct, want.LatencyP50, want.LatencyP95, want.LatencyP99, want.LatencyMax, want.LatencyAvg)
		}
		if got.Elapsed != maxElapsed || !got.Started.Equal(t0) || got.Recorded != got.Histogram {
			t.Fatalf("seed %d: elapsed %v started %v (want %v, %v), recorded is histogram: %v", seed, got.Elapsed, got.Started, maxElapsed, t0, got.Recorded == got.Histogram)
		}
	}
	// A client with transactions in flight: its Histogram has their waits, Recorded not.
	a := engineInterval(t0, time.Second, []time.Duration{time.Millisecond}, 95)
	b := engineInterval(t0, time.Second, []time.Duration{2 * time.Millisecond}, 95)
	b.Histogram = b.Recorded.Clone()
	_ = b.Histogram.RecordValue(3e6)
	b.InFlight, b.LongestInFlight, b.LatencyMax = 1, 3*time.Second, 3000
	got := MergeInterval([]ClientInterval{{"a", 1, a}, {"b", 1, b}}, t0, 95)
	if got.Recorded == got.Histogram || got.Recorded.TotalCount() != 2 || got.Histogram.TotalCount() != 3 ||
		got.InFlight != 1 || got.LongestInFlight != 3*time.Second || got.LatencyMax != 3000 || got.LatencyAvg != 1.5 {
		t.Errorf("in flight: recorded %d histogram %d, in flight %d longest %v max %v avg %v", got.Recorded.TotalCount(),
			got.Histogram.TotalCount(), got.InFlight, got.LongestInFlight, got.LatencyMax, got.LatencyAvg)
	}
}

// merged is what a test keeps of a merged Interval.
type merged struct {
	N                             int
	Transactions                  int64
	Clients, Missing, Lost, Ended string
}

func summarize(ivs []Interval) []merged {
	var out []merged
	for _, iv := range ivs {
		out = append(out, merged{iv.N, iv.Transactions, strings.Join(iv.Clients, ","), strings.Join(iv.Missing, ","), strings.Join(iv.Lost, ","), strings.Join(iv.Ended, ",")})
	}
	return out
}

// TestIntervalMerger: an interval is merged when every running client has reported it,
// or after the wait with the late client missing (its late report then dropped and
// counted); a lost client's intervals are kept and the following ones marked (Lost); a
// client that ended is not waited for, and the intervals after its end name it (Ended).
func TestIntervalMerger(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	m, err := NewIntervalMerger([]string{"c1", "c2", "c3"}, 95, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	add := func(c string, n int, trx int) []merged {
		t.Helper()
		lats := make([]time.Duration, trx)
		for i := range lats {
			lats[i] = time.Millisecond
		}
		out, err := m.Add(ClientInterval{Client: c, N: n, Interval: engineInterval(t0, time.Duration(n)*time.Second, lats, 95)}, now)
		if err != nil {
			t.Fatal(err)
		}
		return summarize(out)
	}
	step := func(what string, got, want []merged) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
	}
	step("c1 1", add("c1", 1, 1), nil)
	step("c2 1", add("c2", 1, 2), nil)
	step("c3 1", add("c3", 1, 4), []merged{{1, 7, "c1,c2,c3", "", "", ""}})
	step("c1 2", add("c1", 2, 1), nil)
	step("c2 2", add("c2", 2, 2), nil)
	now = t0.Add(1999 * time.Millisecond)
	step("tick before the wait", summarize(m.Tick(now)), nil)
	now = t0.Add(2 * time.Second)
	step("tick at the wait", summarize(m.Tick(now)), []merged{{2, 3, "c1,c2", "c3", "", ""}})
	step("c3 2, late", add("c3", 2, 4), nil)
	if m.Late()["c3"] != 1 {
		t.Errorf("late %v, want c3's one report", m.Late())
	}
	step("c1 3", add("c1", 3, 1), nil)
	step("c3 3", add("c3", 3, 4), nil)
	step("c2 lost", summarize(m.Lost("c2", now)), []merged{{3, 5, "c1,c3", "", "c2", ""}})
	step("c1 ends", summarize(m.Ended("c1", now)), nil)
	step("c3 4", add("c3", 4, 4), []merged{{4, 4, "c3", "", "c2", "c1"}})
	now = now.Add(time.Hour)
	m2, _ := NewIntervalMerger([]string{"a", "b"}, 95, time.Hour)
	if _, err := m2.Add(ClientInterval{Client: "a", N: 1, Interval: engineInterval(t0, time.Second, nil, 95)}, now); err != nil {
		t.Fatal(err)
	}
	step("flush", summarize(m2.Flush()), []merged{{1, 0, "a", "b", "", ""}})

	for _, c := range []struct {
		ci   ClientInterval
		want string
	}{
		{ClientInterval{Client: "x", N: 5}, `unknown client "x"`},
		{ClientInterval{Client: "c3", N: 4}, "client c3: interval 4 after interval 4"},
		{ClientInterval{Client: "c2", N: 9}, "client c2: interval 9 after its end"},
	} {
		if _, err := m.Add(c.ci, now); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add %s %d: %v, want %q", c.ci.Client, c.ci.N, err, c.want)
		}
	}
	if _, err := NewIntervalMerger([]string{"a", "a"}, 95, time.Second); err == nil {
		t.Error("a client twice accepted")
	}
}
