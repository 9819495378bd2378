//go:build bench

package netem

import (
	"context"
	"testing"
	"time"
)

// BenchmarkUserspaceAddedRTT measures, between two throwaway namespaces, the round trip
// the userspace link adds for one-way delays of 0.6 ms and 5 ms per direction (requested
// RTT 1.2 ms and 10 ms), as TCP handshake time minus the same pair's handshake time with
// no impairment. Reported metrics: requested-RTT-us, added-median-us, added-p99-us,
// err-median-us (added median minus requested). Run: go test -tags bench -bench . ./netem
func BenchmarkUserspaceAddedRTT(b *testing.B) {
	eps := testNet(b, 2)
	u, err := NewUserspace(eps, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { u.Close() })
	const samples = 200
	run := func(spec *Spec) LinkRTT {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := u.Update(spec); err != nil {
			b.Fatal(err)
		}
		res, err := MeasureRTT(ctx, eps[:2], spec, samples, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		return res[0]
	}
	base := run(nil)
	b.Logf("baseline n1->n2 RTT: median %v p99 %v", base.Median, base.P99)
	for _, oneWay := range []time.Duration{600 * time.Microsecond, 5 * time.Millisecond} {
		b.Run(oneWay.String(), func(b *testing.B) {
			spec, _ := NewSpec([]string{"n1", "n2"})
			spec.SetNode("n1", Impairment{Delay: oneWay})
			spec.SetNode("n2", Impairment{Delay: oneWay})
			var r LinkRTT
			for i := 0; i < b.N; i++ {
				r = run(spec)
			}
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			b.ReportMetric(us(r.Requested), "requested-RTT-us")
			b.ReportMetric(us(r.Median-base.Median), "added-median-us")
			b.ReportMetric(us(r.P99-base.Median), "added-p99-us")
			b.ReportMetric(us(r.Median-base.Median-r.Requested), "err-median-us")
			mean, maxLate, pk := u.Lateness()
			b.Logf("delivery lateness so far: mean %v max %v over %d packets", mean, maxLate, pk)
			b.Logf("one-way %v: requested RTT %v, achieved median %v p99 %v (baseline median %v)", oneWay, r.Requested, r.Median, r.P99, base.Median)
		})
	}
}

// BenchmarkUserspaceThroughput measures TCP bulk throughput n1->n2 through the userspace
// link with no impairment (the cost of moving every packet through this process).
// Reported metric: MB/s (10^6 bytes per second).
func BenchmarkUserspaceThroughput(b *testing.B) {
	eps := testNet(b, 2)
	u, err := NewUserspace(eps, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { u.Close() })
	const size = 32 << 20
	for i := 0; i < b.N; i++ {
		el, err := bulkTransfer(eps[0], eps[1], size, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(size)/el.Seconds()/1e6, "MB/s")
	}
}
