package clients

import (
	"github.com/habench/habench/workload"
)

// fromIntervals is the Result of a client lost mid-run, rebuilt from the interval reports
// it sent: its counts summed, its Histogram the union of their Recorded histograms, its
// LatencySum their averages weighted by their transactions, LatencyMax the largest, the
// percentiles from the Histogram,
// TotalTime to its last report's end, Threads fairness as if every thread did the
// average. Unknown (left 0): LatencyMin, ExecTime*, EventsStddev, the events after its
// last report, its CPU. With --rate: Target its share, Arrivals summed, Met false.
func (c *coordinator) fromIntervals(cl *clientRun) *workload.Result {
	o := cl.options
	r := &workload.Result{Workload: c.cfg.Workload, Threads: o.Threads, Percentile: o.Percentile,
		RandType: o.RandType, PSMode: o.PSMode, Histogram: workload.NewHistogram(),
		ExtraLatencyPct: make([]float64, len(o.ExtraPercentiles))}
	if o.Rate > 0 {
		r.Rate = &workload.RateResult{Target: o.Rate, ServiceHistogram: workload.NewHistogram()}
	}
	for i, iv := range cl.intervals {
		if i == 0 {
			r.StartedAt = iv.Started
		}
		r.TotalTime = iv.Elapsed
		r.Transactions += iv.Transactions
		r.Reads += iv.Reads
		r.Writes += iv.Writes
		r.Others += iv.Others
		r.IgnoredErrors += iv.Errors
		r.Reconnects += iv.Reconnects
		r.Unknown += iv.Unknown
		r.LatencySum += iv.LatencyAvg * float64(iv.Transactions)
		r.LatencyMax = max(r.LatencyMax, iv.LatencyMax)
		if iv.Recorded != nil {
			r.Histogram.Merge(iv.Recorded)
		}
		r.PerEndpoint = addEndpoints(r.PerEndpoint, iv.PerEndpoint)
		r.ErrorsByCode = addCodes(r.ErrorsByCode, iv.ErrorsByCode)
		if r.Rate != nil && iv.Rate != nil {
			r.Rate.Arrivals += iv.Rate.Arrivals
		}
	}
	r.Queries = r.Reads + r.Writes + r.Others
	h, mx := r.Histogram, r.LatencyMax
	r.LatencyPct = workload.LatencyAt(h, r.Percentile, mx)
	r.LatencyP50 = workload.LatencyAt(h, 50, mx)
	r.LatencyP95 = workload.LatencyAt(h, 95, mx)
	r.LatencyP99 = workload.LatencyAt(h, 99, mx)
	if r.Transactions > 0 {
		r.LatencyAvg = r.LatencySum / float64(r.Transactions)
	}
	if r.Threads > 0 {
		r.EventsAvg = float64(r.Transactions) / float64(r.Threads)
	}
	return r
}

// sameAs sets the fields Merge wants equal on every client (Workload, Percentile,
// RandType, ReadNodes, PSMode) of a rebuilt Result to those of ref, a client's own
// Result (nil: none, nothing to do).
func sameAs(r, ref *workload.Result) {
	if ref == nil {
		return
	}
	r.Workload, r.Percentile, r.RandType, r.PSMode = ref.Workload, ref.Percentile, ref.RandType, ref.PSMode
	r.ReadNodes = append([]string(nil), ref.ReadNodes...)
}
