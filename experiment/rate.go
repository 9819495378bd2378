package experiment

import (
	"github.com/habench/habench/schema"
	"strconv"

	"github.com/habench/habench/workload"
)

// rateSummary is r's "rate" section, nil without --rate.
func rateSummary(r *workload.Result) *schema.RateSummary {
	rr := r.Rate
	if rr == nil {
		return nil
	}
	s := &schema.RateSummary{Target: rr.Target, Arrivals: rr.Arrivals, Backlog: rr.Backlog,
		BacklogAgeS: rr.BacklogAge.Seconds(), MaxBacklogAgeS: rr.MaxBacklogAge.Seconds(),
		WarmupDropped: rr.WarmupDropped, WarmupUnmeasured: rr.WarmupUnmeasured,
		BehindS: rr.Behind.Seconds(), BehindFromS: rr.BehindAt.Seconds(), MaxBacklog: rr.MaxBacklog,
		Met: rr.Met, Warning: rr.Warning(r.TPS()),
		ServiceMs: map[string]float64{"min": rr.ServiceMin, "avg": rr.ServiceAvg, "max": rr.ServiceMax,
			"sum": rr.ServiceSum, "p50": rr.ServiceP50, "p95": rr.ServiceP95, "p99": rr.ServiceP99}}
	if r.Percentile > 0 {
		s.ServiceMs[pctKey(r.Percentile)] = rr.ServicePct
	}
	return s
}

// addPercentiles adds --percentile's values to latency_ms as "pN" (p95, p99.9), next to
// the fixed p50/p95/p99.
func addPercentiles(m map[string]float64, o workload.Options, r *workload.Result) {
	if o.Percentile > 0 {
		m[pctKey(o.Percentile)] = r.LatencyPct
	}
	for i, p := range o.ExtraPercentiles {
		if i < len(r.ExtraLatencyPct) {
			m[pctKey(p)] = r.ExtraLatencyPct[i]
		}
	}
}

func pctKey(p float64) string { return "p" + strconv.FormatFloat(p, 'f', -1, 64) }
