package metrics

import (
	"sort"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
)

// latencyHistogram is a Prometheus histogram fed with whole HdrHistograms (microseconds)
// instead of single observations: every recorded event goes into the bucket of its
// value, so the buckets hold the same events the workload's own percentiles come from.
// client_golang's Histogram can only observe one value at a time, hence a collector that
// emits a constant histogram of its cumulative counts.
type latencyHistogram struct {
	desc    *prometheus.Desc
	bounds  []float64 // seconds, ascending
	boundUs []int64   // the same in microseconds

	mu     sync.Mutex
	counts []uint64 // per bucket (not cumulative); len(bounds)+1, the last is +Inf
	count  uint64
	sum    float64 // seconds
}

func newLatencyHistogram(desc *prometheus.Desc, bounds []float64) *latencyHistogram {
	b := append([]float64(nil), bounds...)
	sort.Float64s(b)
	h := &latencyHistogram{desc: desc, bounds: b, counts: make([]uint64, len(b)+1)}
	for _, s := range b {
		h.boundUs = append(h.boundUs, int64(s*1e6+0.5))
	}
	return h
}

// add adds every value recorded in hist (microseconds) and sumSeconds, the exact sum of
// those latencies. A value goes into the first bucket whose bound is at least the
// highest value HdrHistogram cannot tell apart from it, so a bucket's count never
// includes a value above its bound; values within HdrHistogram's precision (0.1%) of a
// bound may be counted one bucket higher.
func (h *latencyHistogram) add(hist *hdrhistogram.Histogram, sumSeconds float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, bar := range hist.Distribution() {
		if bar.Count == 0 {
			continue
		}
		i := sort.Search(len(h.boundUs), func(i int) bool { return h.boundUs[i] >= bar.To })
		h.counts[i] += uint64(bar.Count)
		h.count += uint64(bar.Count)
	}
	h.sum += sumSeconds
}

// Describe implements prometheus.Collector.
func (h *latencyHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h *latencyHistogram) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	buckets := make(map[float64]uint64, len(h.bounds))
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		buckets[b] = cum
	}
	count, sum := h.count, h.sum
	h.mu.Unlock()
	ch <- prometheus.MustNewConstHistogram(h.desc, count, sum, buckets)
}
