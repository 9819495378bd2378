package experiment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/habench/habench/sampler"
)

// duringBefore is how far before a lasting action faultDuring looks for the norm, in seconds.
const duringBefore = 30.0

// faultDuring measures the workload and the cluster while lasting fault f ran (from AtS
// for Took seconds) against the duringBefore seconds before it: TPS and p99 from the
// report intervals, flow control, queues and membership from the samplers (see
// FaultDuring's fields).
func faultDuring(f RunFault, samples []sampler.Sample, ivs []FaultInterval) *FaultDuring {
	from, to := f.AtS, f.AtS+f.Took
	d := &FaultDuring{TookS: f.Took}
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
// taken between from and to (membership before: the duringBefore seconds before from).
func duringSamples(d *FaultDuring, samples []sampler.Sample, from, to float64) {
	for _, s := range samples {
		t := s.Elapsed.Seconds()
		if slices.Contains(sampler.MembershipMetrics, s.Metric) && s.Metric != sampler.MetricGRMembersUnreachable {
			if t < from && t >= from-duringBefore && (d.MembersBefore == nil || s.Value > *d.MembersBefore) {
				d.MembersBefore = ptr(s.Value)
			}
			if t >= from && t <= to+1 && (d.MembersMin == nil || s.Value < *d.MembersMin) {
				d.MembersMin = ptr(s.Value)
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
}

func ptr(v float64) *float64 { return &v }

// DuringTable renders the lasting faults' FaultDuring as a Markdown table ("" when none
// has one): outcome and duration, TPS and p99 before and during, flow control, queues
// and membership.
func DuringTable(fs []FaultSummary) string {
	var b strings.Builder
	for _, f := range fs {
		d := f.During
		if d == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| at (s) | fault | node | outcome | took s | TPS before → during | p99 ms before → during | flow control | peak queue | members before → min |\n|---|---|---|---|---|---|---|---|---|---|\n")
		}
		outcome := f.Outcome
		if f.Error != "" {
			outcome = "action failed: " + f.Error
		}
		if f.Rows > 0 {
			outcome += fmt.Sprintf(" (%d rows)", f.Rows)
		}
		if f.Bytes > 0 {
			outcome += fmt.Sprintf(" %.1f MB received", float64(f.Bytes)/1e6)
		}

		fc := "-"
		switch {
		case d.FCPausedMax != nil:
			fc = fmt.Sprintf("paused ≤ %.0f%%", *d.FCPausedMax*100)
		case d.FCThrottleS != nil:
			fc = fmt.Sprintf("throttled %.1f s", *d.FCThrottleS)
		}
		queue := "-"
		if d.QueuePeakOn != "" {
			queue = fmt.Sprintf("%.0f (%s)", d.QueuePeak, d.QueuePeakOn)
		}
		before, p99b := "n/a", "n/a"
		if d.BeforeIntervals > 0 {
			before, p99b = fmt.Sprintf("%.0f", d.TPSBefore), fmt.Sprintf("%.1f", d.P99BeforeMs)
		}
		fmt.Fprintf(&b, "| %.2f | %s | %s | %s | %.2f | %s → %.0f | %s → %.1f | %s | %s | %s → %s |\n", f.AtS, f.Action, f.Node, orDash(strings.TrimSpace(outcome)),
			d.TookS, before, d.TPSDuring, p99b, d.P99DuringMs, fc, queue, fmtOpt(d.MembersBefore, "%.0f"), fmtOpt(d.MembersMin, "%.0f"))
	}
	return b.String()
}

// DuringNote explains DuringTable's columns.
const DuringNote = "For the faults that last (a large transaction, a rebuild): outcome = the transaction's own result (ok, or the server's error: a refusal by the group's " +
	"group_replication_transaction_size_limit or Galera's wsrep_max_ws_size is the transaction's result, not a failure of the run); took = the action's duration; " +
	"TPS before = the workload's transactions per second in the report intervals that ended in the 30 s before it, during = in those that overlapped it; " +
	"p99 before = the median of the before intervals' p99, during = the largest p99 of the intervals during it; flow control = Galera's largest paused fraction or the seconds " +
	"the group's flow control held commits, while it ran; peak queue = the largest replication queue any node reported (transactions); members = the largest membership " +
	"any node saw before, and the smallest while it ran (lower: a member was expelled or left the Primary component). " +
	"The Faults table's recovered after and outage of look at the fault's start only: a stall at the end of a long action (a large transaction's commit) shows here and in the WARNINGs."
