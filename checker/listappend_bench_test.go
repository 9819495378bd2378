package checker

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/habench/habench/history"
)

// listAppend100k is a list-append history of 100,000 committed transactions of 1 to 4
// appends and reads over 16 active keys, each key retired after 64 appends (as Elle's
// generators do), run one after another by 16 processes, so it is clean.
func listAppend100k() []history.Op { return listAppendHistory(0) }

// listAppendHistory is listAppend100k whose reads miss up to lag of the newest
// elements (stale reads, as from a lagging snapshot): a graph with large cycles.
func listAppendHistory(lag int) []history.Op {
	rng := rand.New(rand.NewPCG(3, 4))
	const active, perKey = 16, 64
	gen := make([]int64, active)
	lists := map[int64][]int64{}
	var next int64
	ops := make([]history.Op, 100_000)
	for i := range ops {
		mops := make([]history.Mop, 1+rng.IntN(4))
		for j := range mops {
			slot := rng.IntN(active)
			k := int64(slot) + active*gen[slot]
			if rng.IntN(2) == 0 {
				next++
				lists[k] = append(lists[k], next)
				mops[j] = history.Append(k, next)
				if len(lists[k]) == perKey {
					gen[slot]++
				}
			} else {
				l := lists[k]
				mops[j] = history.RL(k, append([]int64{}, l[:max(0, len(l)-rng.IntN(lag+1))]...)...)
			}
		}
		ops[i] = history.Op{Process: i % 16, Session: i % 16, Node: "n1", Start: int64(i) * 1000,
			End: int64(i)*1000 + 900, Outcome: history.OK, Value: mops}
	}
	return history.Sorted(ops)
}

// BenchmarkCheckListAppend100k: the list-append checks over 100,000 operations (issue
// 20's budget: under 10 s and 500 MB); reports the heap in use after the check
// (peak-heap-MB, the history included).
func BenchmarkCheckListAppend100k(b *testing.B) {
	ops := listAppend100k()
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		if v := CheckListAppend(ops); !v.Valid {
			b.Fatalf("anomalies in a clean history: %+v", v.Anomalies[0])
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	b.ReportMetric(float64(peak)/1e6, "heap-MB")
}

// BenchmarkCheckListAppend100kStale: the same over 100,000 transactions whose reads
// miss up to 2 of the newest elements: thousands of anomalies, large cycles.
func BenchmarkCheckListAppend100kStale(b *testing.B) {
	ops := listAppendHistory(2)
	b.ReportAllocs()
	for b.Loop() {
		v := CheckListAppend(ops)
		if v.Valid {
			b.Fatal("no anomaly in a history of stale reads")
		}
		cycles := 0
		for _, a := range v.Anomalies {
			if a.Type == "G-single" || a.Type == "G2-item" || a.Type == "G1c" || a.Type == "G0" {
				cycles++
			}
		}
		b.ReportMetric(float64(len(v.Anomalies)), "anomalies")
		b.ReportMetric(float64(cycles), "cycles")
	}
}

// BenchmarkCheckListAppendRealtime100k: the strict-serializability checks (realtime edges)
// over listAppend100k, a serial history: valid, with a realtime edge between each op and
// the next.
func BenchmarkCheckListAppendRealtime100k(b *testing.B) {
	ops := listAppend100k()
	b.ReportAllocs()
	for b.Loop() {
		if v := CheckListAppendRealtime(ops); !v.Valid {
			b.Fatalf("anomalies in a clean serial history: %+v", v.Anomalies[0])
		}
	}
}

// BenchmarkCheckListAppendRealtime100kStale: the same over listAppendHistory(2): stale
// reads are anomalies against the realtime order too.
func BenchmarkCheckListAppendRealtime100kStale(b *testing.B) {
	ops := listAppendHistory(2)
	b.ReportAllocs()
	for b.Loop() {
		v := CheckListAppendRealtime(ops)
		rt := 0
		for _, a := range v.Anomalies {
			if len(a.Type) > 9 && a.Type[len(a.Type)-9:] == "-realtime" {
				rt++
			}
		}
		b.ReportMetric(float64(rt), "realtime-anomalies")
	}
}
