package experiment

import (
	"fmt"
	"strings"
	"time"

	"github.com/habench/habench/sampler"
)

// semiSyncOff returns the periods in which a node's semisync_on samples were 0, in time
// order; every is the sample interval.
func semiSyncOff(samples []sampler.Sample, every time.Duration) []SemiSyncOff {
	var out []SemiSyncOff
	open := map[string]int{} // node -> index in out of its period still OFF
	last := map[string]float64{}
	for _, sm := range samples {
		if sm.Metric != sampler.MetricSemiSyncOn {
			continue
		}
		t := sm.Elapsed.Seconds()
		i, off := open[sm.Node]
		switch {
		case sm.Value == 0 && !off:
			open[sm.Node] = len(out)
			out = append(out, SemiSyncOff{Node: sm.Node, FromS: t})
		case sm.Value != 0 && off:
			out[i].ToS = t
			delete(open, sm.Node)
		}
		last[sm.Node] = t
	}
	for node, i := range open {
		out[i].ToS, out[i].Open = last[node]+every.Seconds(), true
	}
	for _, sm := range samples {
		if sm.Metric != sampler.MetricSemiSyncNoTx {
			continue
		}
		t := sm.Elapsed.Seconds()
		for i, p := range out {
			// A delta covers the tick before it: the first sample ON again has the
			// last commits of the period.
			if p.Node == sm.Node && t >= p.FromS && (t < p.ToS || t == p.ToS && !p.Open) {
				out[i].NoTx += sm.Value
			}
		}
	}
	return out
}

// degradedSemiSync sets ss's Degraded, Off and Warning from the samples (nothing when
// ss is nil).
func degradedSemiSync(ss *SemiSyncSummary, samples []sampler.Sample, every time.Duration) {
	if ss == nil {
		return
	}
	ss.Off = semiSyncOff(samples, every)
	ss.Degraded = ss.NoTx > 0 || len(ss.Off) > 0
	ss.Warning = semiSyncWarning(ss)
}

// semiSyncWarning is the run's WARNING for a degraded semi-sync guarantee ("" when it
// held): how long and when semi-sync was OFF, and how many commits of all were
// acknowledged to clients without any replica having them.
func semiSyncWarning(ss *SemiSyncSummary) string {
	if ss == nil || !ss.Degraded {
		return ""
	}
	all := ss.YesTx + ss.NoTx
	share := 0.0
	if all > 0 {
		share = 100 * ss.NoTx / all
	}
	acked := fmt.Sprintf("%.0f of %.0f commits (%.1f%%) were acknowledged to clients without any replica having them (no_tx; the counts include habench's heartbeat writes)",
		ss.NoTx, all, share)
	if len(ss.Off) == 0 {
		return fmt.Sprintf("semi-sync on %s did not hold: %s, though no sample saw it OFF", ss.Node, acked)
	}
	var spans []string
	total := 0.0
	for _, p := range ss.Off {
		end := fmt.Sprintf("%.1f s", p.ToS)
		if p.Open {
			end = "the end, still OFF"
		}
		spans = append(spans, fmt.Sprintf("%s from %.1f s to %s (%.0f commits without a replica)", p.Node, p.FromS, end, p.NoTx))
		total += p.ToS - p.FromS
	}
	return fmt.Sprintf("semi-sync fell back to async: OFF for %.1f s in all, %s (samples.csv's clock); %s",
		total, strings.Join(spans, ", "), acked)
}

// degradedWarnings are the run's warnings for guarantees that did not hold, as its
// summary has them (semi-sync fallen back to async, --rate not met): sweep.md lists them
// with the cells they happened in.
func degradedWarnings(s *Summary) []string {
	var out []string
	if s.SemiSync != nil && s.SemiSync.Warning != "" {
		out = append(out, s.SemiSync.Warning)
	}
	if s.Rate != nil && s.Rate.Warning != "" {
		out = append(out, s.Rate.Warning)
	}
	return out
}

// semiSyncReport is report.md's semi-sync section ("" without semi-sync samples): the
// source's counts and, when it fell back to async, its OFF periods.
func semiSyncReport(ss *SemiSyncSummary) string {
	if ss == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Semi-sync on %s\n\n", ss.Node)
	b.WriteString("| acknowledged commits (yes_tx) | unacknowledged (no_tx) | seconds OFF (async fallback) | avg ack wait us |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %.0f | %.0f | %d | %.0f |\n", ss.YesTx, ss.NoTx, ss.SecondsOff, ss.AvgWaitUs)
	if len(ss.Off) > 0 {
		b.WriteString("\n**Semi-sync was OFF (fallen back to async):**\n\n| node | OFF from s | to s | commits acknowledged without a replica (no_tx) |\n|---|---|---|---|\n")
		for _, p := range ss.Off {
			to := fmt.Sprintf("%.1f", p.ToS)
			if p.Open {
				to += " (still OFF at the end)"
			}
			fmt.Fprintf(&b, "| %s | %.1f | %s | %.0f |\n", p.Node, p.FromS, to, p.NoTx)
		}
		b.WriteString("\nfrom = the first sample OFF, to = the first sample ON again (samples.csv's clock).\n")
	}
	b.WriteString("\nyes_tx also counts habench's heartbeat writes (10 per second).\n")
	return b.String()
}
