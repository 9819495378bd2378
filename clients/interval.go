package clients

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/habench/habench/workload"
)

// ClientInterval is one client's interval report number N (1, 2, ...: the order in which
// its engine reported them, one per report interval of its measured part).
type ClientInterval struct {
	Client string
	N      int
	workload.Interval
}

// MergeInterval merges the clients' reports of one interval into one, exactly. base is the
// run's clock (the earliest client's start, see Merge): the merged Started, and each
// report's Elapsed is moved onto it. percentile is the run's Options.Percentile (an
// Interval does not carry it).
//
// Summed: Threads, the counts (Transactions, Reads, Writes, Others, Errors, Reconnects,
// Unknown, InFlight), QueueLength, Concurrency, PerEndpoint and ErrorsByCode (by key), and
// the rates (TPS, QPS, ...: each client's per second of its own interval, added: the load
// of every client). Histogram and Recorded are merged (one histogram when every report's
// Recorded is its Histogram); the percentiles are recomputed from the merged Histogram
// clamped to the largest LatencyMax, as the engine does; LatencyAvg is the average of
// every event (each client's weighted by its Transactions). Elapsed (on base's clock),
// Length, LatencyMax and LongestInFlight are the largest. Rate: Arrivals summed,
// BacklogAge and ServiceMax the largest, ServiceAvg weighted by Transactions (the events
// whose service time the engine recorded); ServicePct, ServiceP95 and ServiceP99 are the
// largest of the clients' — an upper bound of the merged percentile, not the exact value:
// a workload.RateInterval carries no service-time histogram to merge.
func MergeInterval(parts []ClientInterval, base time.Time, percentile float64) workload.Interval {
	out := workload.Interval{Started: base}
	same := true
	var latSum float64
	for _, p := range parts {
		iv := &p.Interval
		out.Elapsed = max(out.Elapsed, iv.Elapsed+iv.Started.Sub(base))
		out.Length = max(out.Length, iv.Length)
		out.Threads += iv.Threads
		out.TPS += iv.TPS
		out.QPS += iv.QPS
		out.ReadsPerSec += iv.ReadsPerSec
		out.WritesPerSec += iv.WritesPerSec
		out.OthersPerSec += iv.OthersPerSec
		out.ErrPerSec += iv.ErrPerSec
		out.ReconnPerSec += iv.ReconnPerSec
		out.Transactions += iv.Transactions
		out.Reads += iv.Reads
		out.Writes += iv.Writes
		out.Others += iv.Others
		out.Errors += iv.Errors
		out.Reconnects += iv.Reconnects
		out.Unknown += iv.Unknown
		out.QueueLength += iv.QueueLength
		out.Concurrency += iv.Concurrency
		out.InFlight += iv.InFlight
		out.LongestInFlight = max(out.LongestInFlight, iv.LongestInFlight)
		out.LatencyMax = max(out.LatencyMax, iv.LatencyMax)
		latSum += iv.LatencyAvg * float64(iv.Transactions)
		out.PerEndpoint = addEndpoints(out.PerEndpoint, iv.PerEndpoint)
		out.ErrorsByCode = addCodes(out.ErrorsByCode, iv.ErrorsByCode)
		out.Histogram = addHist(out.Histogram, iv.Histogram)
		out.Recorded = addHist(out.Recorded, iv.Recorded)
		same = same && iv.Recorded == iv.Histogram
	}
	if same {
		out.Recorded = out.Histogram
	}
	if out.Transactions > 0 {
		out.LatencyAvg = latSum / float64(out.Transactions)
	}
	if h := out.Histogram; h != nil {
		out.LatencyPct = workload.LatencyAt(h, percentile, out.LatencyMax)
		out.LatencyP50 = workload.LatencyAt(h, 50, out.LatencyMax)
		out.LatencyP95 = workload.LatencyAt(h, 95, out.LatencyMax)
		out.LatencyP99 = workload.LatencyAt(h, 99, out.LatencyMax)
	}
	out.Rate = mergeRateIntervals(parts)
	return out
}

// addHist merges src into dst, allocating dst on the first histogram (nil src: nothing).
// The engine's histograms share workload.NewHistogram's geometry: none is dropped.
func addHist(dst, src *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if src == nil {
		return dst
	}
	if dst == nil {
		dst = workload.NewHistogram()
	}
	dst.Merge(src)
	return dst
}

// mergeRateIntervals merges the reports' --rate parts (see MergeInterval); nil when none
// has one.
func mergeRateIntervals(parts []ClientInterval) *workload.RateInterval {
	var out *workload.RateInterval
	var sum float64 // ms of service time
	var n int64
	for _, p := range parts {
		r := p.Rate
		if r == nil {
			continue
		}
		if out == nil {
			out = &workload.RateInterval{}
		}
		out.Arrivals += r.Arrivals
		out.BacklogAge = max(out.BacklogAge, r.BacklogAge)
		sum += r.ServiceAvg * float64(p.Transactions)
		n += p.Transactions
		out.ServiceMax = max(out.ServiceMax, r.ServiceMax)
		out.ServicePct = max(out.ServicePct, r.ServicePct)
		out.ServiceP95 = max(out.ServiceP95, r.ServiceP95)
		out.ServiceP99 = max(out.ServiceP99, r.ServiceP99)
	}
	if out != nil && n > 0 {
		out.ServiceAvg = sum / float64(n)
	}
	return out
}
