package experiment

import (
	"github.com/habench/habench/schema"
	"math"
	"slices"

	"github.com/habench/habench/sampler"
)

// duringBefore is how far before a lasting action faultDuring looks for the norm, in seconds.
const duringBefore = 30.0

// faultDuring measures the workload and the cluster while lasting fault f ran (from AtS
// for Took seconds) against the duringBefore seconds before it: TPS and p99 from the
// report intervals, flow control, queues and membership from the samplers (see
// FaultDuring's fields).
func faultDuring(f schema.RunFault, samples []sampler.Sample, ivs []FaultInterval) *schema.FaultDuring {
	from, to := f.AtS, f.AtS+f.Took
	d := &schema.FaultDuring{TookS: f.Took}
	var p99s []float64
	var txB, lenB, txD, lenD float64
	for _, iv := range ivs {
		switch {
		case iv.EndS <= from && iv.EndS > from-duringBefore:
			d.BeforeIntervals++
			txB, lenB = txB+float64(iv.Transactions), lenB+iv.LengthS
			p99s = append(p99s, iv.P99Ms)
		case iv.EndS > from && iv.EndS-iv.LengthS < to:
			d.DuringIntervals++
			txD, lenD = txD+float64(iv.Transactions), lenD+iv.LengthS
			d.P99DuringMs = max(d.P99DuringMs, iv.P99Ms)
		}
	}
	if lenB > 0 {
		d.TPSBefore = txB / lenB
		slices.Sort(p99s)
		d.P99BeforeMs = p99s[len(p99s)/2]
	}
	if lenD > 0 {
		d.TPSDuring = txD / lenD
	}
	duringSamples(d, samples, from, to)
	return d
}

// duringSamples fills d's flow-control, queue and membership numbers from the samples
// taken between from and to (membership before: the duringBefore seconds before from;
// during: per second the largest any node saw, then the smallest of those).
func duringSamples(d *schema.FaultDuring, samples []sampler.Sample, from, to float64) {
	largest := map[float64]float64{} // second during the action -> largest membership seen
	for _, s := range samples {
		t := s.Elapsed.Seconds()
		if slices.Contains(sampler.MembershipMetrics, s.Metric) && s.Metric != sampler.MetricGRMembersUnreachable {
			if t < from && t >= from-duringBefore && (d.MembersBefore == nil || s.Value > *d.MembersBefore) {
				d.MembersBefore = ptr(s.Value)
			}
			if sec := math.Round(t); t >= from && t <= to+1 {
				largest[sec] = max(largest[sec], s.Value)
			}
		}
		if t < from || t > to+1 { // the samplers tick every second: the one after the end counts
			continue
		}
		switch {
		case s.Metric == sampler.MetricGaleraFCPaused:
			if d.FCPausedMax == nil || s.Value > *d.FCPausedMax {
				d.FCPausedMax = ptr(s.Value)
			}
		case s.Metric == sampler.MetricGRFCThrottleTime:
			if d.FCThrottleS == nil {
				d.FCThrottleS = ptr(0)
			}
			*d.FCThrottleS += s.Value
		case slices.Contains(sampler.QueueMetrics, s.Metric) && s.Value > d.QueuePeak:
			d.QueuePeak, d.QueuePeakOn = s.Value, s.Node+" "+s.Metric
		}
	}
	for _, v := range largest {
		if d.MembersMin == nil || v < *d.MembersMin {
			d.MembersMin = ptr(v)
		}
	}
}

func ptr(v float64) *float64 { return &v }
