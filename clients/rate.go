package clients

import (
	"time"

	"github.com/habench/habench/workload"
)

// mergeRate merges the clients' --rate results (nil without --rate; checkParts made sure
// every client ran with it or none), on the run's clock base. Summed: Target (the run's
// rate is the clients' rates added), Arrivals, Backlog, WarmupDropped, WarmupUnmeasured,
// ServiceSum; ServiceHistogram merged, the service percentiles recomputed from it,
// ServiceAvg = ServiceSum over its count; BacklogAge, MaxBacklogAge and ServiceMax are the
// largest, ServiceMin the smallest. Met only when every client met its target. Behind,
// BehindAt and MaxBacklog are those of the client that was behind longest (BehindAt on
// the run's clock): each client keeps only its longest period, so the union of the
// clients' periods is not known.
func mergeRate(parts []Part, base time.Time) (*workload.RateResult, error) {
	if parts[0].Result.Rate == nil {
		return nil, nil
	}
	out := &workload.RateResult{Met: true, ServiceHistogram: workload.NewHistogram()}
	for _, p := range parts {
		r := p.Result.Rate
		out.Target += r.Target
		out.Arrivals += r.Arrivals
		out.Backlog += r.Backlog
		out.BacklogAge = max(out.BacklogAge, r.BacklogAge)
		out.MaxBacklogAge = max(out.MaxBacklogAge, r.MaxBacklogAge)
		out.WarmupDropped += r.WarmupDropped
		out.WarmupUnmeasured += r.WarmupUnmeasured
		if r.Behind > out.Behind {
			out.Behind, out.MaxBacklog = r.Behind, r.MaxBacklog
			out.BehindAt = r.BehindAt + p.Result.StartedAt.Sub(base)
		}
		out.Met = out.Met && r.Met
		out.ServiceSum += r.ServiceSum
		if r.ServiceMin > 0 && (out.ServiceMin == 0 || r.ServiceMin < out.ServiceMin) {
			out.ServiceMin = r.ServiceMin
		}
		out.ServiceMax = max(out.ServiceMax, r.ServiceMax)
		if err := mergeHist(out.ServiceHistogram, r.ServiceHistogram, p.Client, "Rate.ServiceHistogram"); err != nil {
			return nil, err
		}
	}
	h, mx := out.ServiceHistogram, out.ServiceMax
	if n := h.TotalCount(); n > 0 {
		out.ServiceAvg = out.ServiceSum / float64(n)
	}
	out.ServicePct = workload.LatencyAt(h, parts[0].Result.Percentile, mx)
	out.ServiceP50 = workload.LatencyAt(h, 50, mx)
	out.ServiceP95 = workload.LatencyAt(h, 95, mx)
	out.ServiceP99 = workload.LatencyAt(h, 99, mx)
	return out, nil
}
