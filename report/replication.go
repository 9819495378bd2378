package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// Replication per point (sweep.md): what a tuner reads beside TPS, per point of the grid
// (a cell and its repeats), each figure as the mean over the repeats with its 95%
// confidence interval, so that no single run's spike decides it.

// HasReplication says a point of f has a replication figure (stats.Cell LagAvgS ...).
func HasReplication(f *schema.SweepFile) bool {
	return slices.ContainsFunc(f.Summary, func(c *stats.Cell) bool {
		return c.LagAvgS != nil || c.LagMaxS != nil || c.BacklogMax != nil || c.FCPaused != nil
	})
}

// ReplicationTable is sweep.md's "Replication and flow control per point" section: per
// point of f.Summary (its topology and axis values, in that order), the runs, TPS, the
// largest mean lag of a node, the largest lag (s), the largest backlog (transactions) and
// the largest share of the window a node was paused or throttled by flow control (%),
// each "mean [95% CI lo-hi]" over the repeats ("mean (1 run)" with one); empty for a
// figure the point's runs do not all have. "" when HasReplication is false.
func ReplicationTable(f *schema.SweepFile) string {
	if !HasReplication(f) {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Replication and flow control per point\n\n")
	b.WriteString("Per point, the mean over its repeats [95% CI]: lag avg is the largest of the nodes' mean lag, lag max the largest lag, backlog the largest backlog of a node (transactions received and not applied), fc paused the largest share of the measured window a node was paused (Galera) or throttled (group) by flow control.\n\n")
	b.WriteString("| topology | point | runs | TPS | lag avg s | lag max s | backlog trx | fc paused % |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range f.Summary {
		point := c.Group
		if c.ReusedFrom != "" {
			point += " (runs of " + c.ReusedFrom + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", c.Topology, point, len(c.Runs), sampleText(&c.TPS, 1, 1),
			sampleText(c.LagAvgS, 1, 3), sampleText(c.LagMaxS, 1, 3), sampleText(c.BacklogMax, 1, 0), sampleText(c.FCPaused, 100, 2))
	}
	return b.String()
}

// sampleText is s scaled by k as "mean [lo-hi]" with prec decimals, "mean (1 run)" without
// an interval, "" for nil or no run.
func sampleText(s *stats.Sample, k float64, prec int) string {
	if s == nil || s.N == 0 {
		return ""
	}
	if !s.HasCI() {
		return fmt.Sprintf("%.*f (%d run)", prec, s.Mean*k, s.N)
	}
	return fmt.Sprintf("%.*f [%.*f-%.*f]", prec, s.Mean*k, prec, *s.CILo*k, prec, *s.CIHi*k)
}
