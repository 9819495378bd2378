package schema

import "slices"

// The link's own cost: the round trip a run's links added to the plain bridge, as a
// same-path control (links none through the userspace link at zero delay) measures it. One
// computation for every place that shows it (sweep.json's link_added_rtt_ms, hence
// comparison.json and comparison.md; report.md's cells): LinkCostMs per run, Median over a
// cell's runs, over the pairs of manifest.json links.impairment.rtt[] (LinkRTT).

// LinkCostMs is the run's link cost in ms: the median (Median) over its pairs that were
// measured (samples), neither cut nor lossy, of the round trip added; false when there is
// none.
func LinkCostMs(rtt []LinkRTT) (float64, bool) {
	var added []float64
	for _, r := range rtt {
		if !r.Partitioned && !r.Lossy && r.Samples > 0 {
			added = append(added, r.AddedMs)
		}
	}
	if len(added) == 0 {
		return 0, false
	}
	return Median(added), true
}

// Median is the median of xs (the mean of the two middle values for an even count); 0 for
// none. xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return m
}
