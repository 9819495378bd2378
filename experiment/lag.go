package experiment

import (
	"github.com/habench/habench/schema"
	"maps"
	"slices"
	"sort"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
)

// nodeLag is one node's heartbeat lag over a window of samples (lagStats).
type nodeLag struct {
	max      *float64 // largest lag_s (nil: none sampled)
	sum      float64  // of the lag_s samples
	n        int      // lag_s samples
	unknownS float64  // seconds in which the lag could not be measured
}

// lagTick is what one tick says of one node's lag.
type lagTick struct {
	present bool     // the node was in the tick (its sampler_errors counter)
	lag     *float64 // its lag_s
	outside bool     // outside the Primary component, not ready, or not ONLINE for the group's majority
}

// lagStats is the one computation of every node's lag over the samples at or after fromS
// (seconds on samples.csv's clock), used by the node table (summary.json's nodes), the
// comparison and sweep cells (through summary.json) and the Faults table's peak lag.
//
// A tick's lag of a node is unknown when the run has a heartbeat (some lag_s sample) and the
// node, sampled in the tick, has no lag_s (it could not be read: down, unreachable, a Galera
// node outside the Primary component refuses reads) or was outside the group: a Galera node
// with galera_primary 0 or galera_ready 0, a group member the majority does not see ONLINE
// (gr_majority_state other than 1). An unknown tick counts the time since the previous tick
// (the first one: the median tick spacing). The lag_s sampled while outside still counts in
// max and average: the number read then is real, yet it cannot show what was not written.
func lagStats(samples []sampler.Sample, fromS float64) map[string]*nodeLag {
	ticks, hb := lagTicks(samples)
	times := make([]float64, 0, len(ticks))
	for t := range ticks {
		times = append(times, t)
	}
	sort.Float64s(times)
	out := map[string]*nodeLag{}
	first := medianGap(times)
	for i, t := range times {
		if t < fromS {
			continue
		}
		dt := first
		if i > 0 {
			dt = t - times[i-1]
		}
		for node, lt := range ticks[t] {
			nl := out[node]
			if nl == nil {
				nl = &nodeLag{}
				out[node] = nl
			}
			if lt.lag != nil {
				nl.n++
				nl.sum += *lt.lag
				if nl.max == nil || *lt.lag > *nl.max {
					v := *lt.lag
					nl.max = &v
				}
			}
			if lt.unknown(hb) {
				nl.unknownS += dt
			}
		}
	}
	return out
}

// lagTicks is what each tick (by elapsed seconds) says of each node's lag, and whether any
// node had a lag_s sample (the run has a heartbeat).
func lagTicks(samples []sampler.Sample) (ticks map[float64]map[string]*lagTick, hb bool) {
	ticks = map[float64]map[string]*lagTick{}
	at := func(s sampler.Sample) *lagTick {
		t := s.Elapsed.Seconds()
		if ticks[t] == nil {
			ticks[t] = map[string]*lagTick{}
		}
		lt := ticks[t][s.Node]
		if lt == nil {
			lt = &lagTick{}
			ticks[t][s.Node] = lt
		}
		return lt
	}
	proxies := map[string]bool{}
	for _, s := range samples {
		switch s.Metric {
		case sampler.MetricRole:
			proxies[s.Node] = proxies[s.Node] || s.Value == sampler.RoleCodes[topology.RoleProxy]
		case sampler.MetricSamplerErrors:
			at(s).present = true
		case sampler.MetricLag:
			v := s.Value
			at(s).lag, hb = &v, true
		case sampler.MetricGaleraPrimary, sampler.MetricGaleraReady:
			at(s).outside = at(s).outside || s.Value == 0
		case sampler.MetricGRMajorityState:
			at(s).outside = at(s).outside || s.Value != 1
		}
	}
	for _, tick := range ticks { // a proxy has no lag: it holds no data
		for node := range proxies {
			if proxies[node] {
				delete(tick, node)
			}
		}
	}
	return ticks, hb
}

// unknown reports whether the tick's lag of the node is unknown (lagStats), hb saying
// whether the run has a heartbeat.
func (lt *lagTick) unknown(hb bool) bool {
	return hb && lt.present && (lt.lag == nil || lt.outside)
}

// medianGap is the median spacing of the sorted tick times (1 s with fewer than two ticks).
func medianGap(times []float64) float64 {
	if len(times) < 2 {
		return 1
	}
	gaps := make([]float64, 0, len(times)-1)
	for i := 1; i < len(times); i++ {
		gaps = append(gaps, times[i]-times[i-1])
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

// lagFigures are the nodes' lag figures for report.MaxLag, in the order of names.
func lagFigures(stats map[string]*nodeLag, names []string) []report.NodeLagFigure {
	var out []report.NodeLagFigure
	for _, n := range names {
		if st := stats[n]; st != nil {
			out = append(out, report.NodeLagFigure{Node: n, MaxS: st.max, UnknownS: st.unknownS})
		}
	}
	return out
}

// summaryLagFigures are summary.json's nodes as lag figures.
func summaryLagFigures(s *schema.Summary) []report.NodeLagFigure {
	var out []report.NodeLagFigure
	for _, n := range s.Nodes {
		out = append(out, report.NodeLagFigure{Node: n.Node, MaxS: n.LagMaxS, UnknownS: n.LagUnknownS})
	}
	return out
}

// faultPeakLag is the Faults table's peak lag: report.MaxLag over every node's lag from
// fromS (the fault) to the end of the samples, by lagStats like the nodes table.
func faultPeakLag(samples []sampler.Sample, fromS float64) (*float64, string) {
	st := lagStats(samples, fromS)
	return report.MaxLag(lagFigures(st, slices.Sorted(maps.Keys(st))))
}
