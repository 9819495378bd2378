package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// Capacity searches (sweep.md): per cell of a scenario with an objective, the highest
// rate that met it, the rate above that missed it and what bound it, then every probe.

// HasCapacity says a cell of f ran a capacity search.
func HasCapacity(f *schema.SweepFile) bool {
	return slices.ContainsFunc(f.Cells, func(c schema.CellRecord) bool { return c.Capacity != nil })
}

// CapacityTable is sweep.md's "Capacity" section: its objective, then per cell (in
// f.Cells' order) its topology, the other axes' values as read back (requested when
// nothing was), the sustainable rate (events/s), the lowest rate missed, the objectives
// that bound it, the objective's measures at the sustainable rate (latency percentiles
// in ms, largest replica lag in s, flow-control paused %, largest backlog), the failover
// run's time (objective failover: true), the runs and the search's note; then "Capacity probes": each cell's runs in order. "" when HasCapacity is false.
func CapacityTable(f *schema.SweepFile) string {
	if !HasCapacity(f) {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Capacity\n\n")
	for _, c := range f.Cells {
		if c.Capacity != nil {
			fmt.Fprintf(&b, "The highest open-loop rate (--rate) at which every objective held over the measured window: %s.\n\n", c.Capacity.Objective)
			break
		}
	}
	axes := cellTableHead(&b, f, "sustained /s", "missed /s", "bound by", "at the sustained rate", "failover s", "runs", "note")
	for _, c := range f.Cells {
		cellTableAxes(&b, &c, axes)
		b.WriteString(capacityFigures(&c) + "\n")
	}
	b.WriteString(capacityPoints(f))
	b.WriteString("\n### Capacity probes\n\n")
	for _, c := range f.Cells {
		if c.Capacity == nil || len(c.Capacity.Probes) == 0 {
			continue
		}
		var ps []string
		for _, p := range c.Capacity.Probes {
			ps = append(ps, probeText(p))
		}
		fmt.Fprintf(&b, "- cell %d: %s\n", c.Index, strings.Join(ps, "; "))
	}
	return b.String()
}

// capacityFigures are a cell's columns from "sustained /s" on.
func capacityFigures(c *schema.CellRecord) string {
	cp := c.Capacity
	if cp == nil {
		return fmt.Sprintf(" | | | | | | %s |", strings.ReplaceAll(strings.TrimSuffix(c.Status+": "+c.Error, ": "), "|", "/"))
	}
	sustained, missed := "none", ""
	if cp.Rate > 0 {
		sustained = strconv.Itoa(cp.Rate)
	}
	if cp.Missed > 0 {
		missed = strconv.Itoa(cp.Missed)
	}
	var at string
	for _, p := range cp.Probes {
		if p.Rate == cp.Rate && p.Rate > 0 {
			at = CapacityMeasures(p)
		}
	}
	note := cp.Note
	if c.Error != "" {
		note = strings.TrimSpace(c.Status + ": " + c.Error + " " + note)
	}
	return fmt.Sprintf(" %s | %s | %s | %s | %s | %d | %s |", sustained, missed, strings.Join(cp.BoundBy, ", "), at, failoverText(cp.Failover), len(cp.Probes), strings.ReplaceAll(note, "|", "/"))
}

// failoverText is the failover run's cell: "4.52 (n1 killed; n2 named after 3.1 s)",
// "not seen (n1 killed)", "" without one.
func failoverText(f *schema.CapacityFailover) string {
	if f == nil {
		return ""
	}
	s := "not seen"
	if f.Note != "" {
		s = f.Note
	}
	if f.FailoverS != nil {
		s = strconv.FormatFloat(*f.FailoverS, 'f', 2, 64)
	}
	detail := f.Node + " killed"
	if f.NewWriter != "" && f.NewWriterS != nil {
		detail += fmt.Sprintf("; %s named after %.1f s", f.NewWriter, *f.NewWriterS)
	}
	return s + " (" + detail + ")"
}

// CapacityMeasures is a probe's objective measures: "p99 12.3 ms, lag 0.20 s, fc_paused
// 1.2%, backlog 3 trx" (those it has).
func CapacityMeasures(p schema.CapacityProbe) string {
	var ms []string
	keys := make([]string, 0, len(p.LatencyMs))
	for k := range p.LatencyMs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ms = append(ms, fmt.Sprintf("%s %.1f ms", k, p.LatencyMs[k]))
	}
	if p.LagMaxS != nil {
		ms = append(ms, fmt.Sprintf("lag %.2f s", *p.LagMaxS))
	}
	if p.FCPaused != nil {
		ms = append(ms, fmt.Sprintf("fc_paused %.1f%%", *p.FCPaused*100))
	}
	if p.BacklogMaxTrx != nil {
		ms = append(ms, fmt.Sprintf("backlog %.0f trx", *p.BacklogMaxTrx))
	}
	return strings.Join(ms, ", ")
}

// probeText is one probe in the probes list: "calibration 812.3 tps", "650/s met (p99
// 3.1 ms)", "812/s missed: p99 63.2ms > 50ms".
func probeText(p schema.CapacityProbe) string {
	switch {
	case p.Rate == 0:
		return fmt.Sprintf("calibration %.1f tps", p.TPS)
	case p.Met:
		return fmt.Sprintf("%d/s met (%.1f tps, %s)", p.Rate, p.TPS, CapacityMeasures(p))
	}
	return fmt.Sprintf("%d/s missed (%.1f tps): %s", p.Rate, p.TPS, strings.ReplaceAll(strings.Join(p.Why, "; "), "|", "/"))
}

// capacityPoints is the Capacity section's per-point summary when a point has more than
// one run: the sustained rate and the failover time as "mean [95% CI]" over its repeats;
// "" otherwise.
func capacityPoints(f *schema.SweepFile) string {
	if !slices.ContainsFunc(f.Summary, func(c *stats.Cell) bool { return c.CapacityRate != nil && c.CapacityRate.N > 1 }) {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nPer point, over its repeats (mean [95% CI]):\n\n| topology | point | runs | sustained /s | failover s |\n|---|---|---|---|---|\n")
	for _, c := range f.Summary {
		if c.CapacityRate == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", c.Topology, c.Group, len(c.Runs), sampleText(c.CapacityRate, 1, 1), sampleText(c.FailoverS, 1, 2))
	}
	return b.String()
}
