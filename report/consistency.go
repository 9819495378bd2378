package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/habench/habench/schema"
)

// Consistency cost and benefit (sweep.md): what a consistency setting (a knob axis over
// group_replication_consistency or wsrep_sync_wait) costs in TPS and p95 and buys in stale
// reads on the read nodes and anomalies the checker found, one line per cell.

// HasConsistency says a cell of f has read-node checks (workload.read_nodes) or a checker
// verdict: sweep.md gets the ConsistencyTable.
func HasConsistency(f *schema.SweepFile) bool {
	return slices.ContainsFunc(f.Cells, func(c schema.CellRecord) bool {
		return c.ReadChecks != nil || c.Anomalies != nil || c.CheckerError != ""
	})
}

// ConsistencyTable is sweep.md's "Consistency: cost and benefit" section: per cell (in
// f.Cells' order, every cell, run or not) its topology, the value of every other axis as
// read back (the requested value when nothing was read back), TPS, p95 in ms, stale reads
// on the read nodes ("12 of 340", and their share in %), and the checker's anomalies by
// type ("none", "3 lost-update", "not checked: ..."). Empty cells say "n/a" (no read nodes
// or no checker) or carry the cell's status when it did not run. "" when HasConsistency is
// false.
func ConsistencyTable(f *schema.SweepFile) string {
	if !HasConsistency(f) {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Consistency: cost and benefit\n\n")
	axes := cellTableHead(&b, f, "TPS", "p95 ms", "stale reads", "stale %", "anomalies")
	for _, c := range f.Cells {
		cellTableAxes(&b, &c, axes)
		b.WriteString(consistencyFigures(&c) + "\n")
	}
	b.WriteString("\nstale reads = read-your-writes checks on the read nodes (workload.read_nodes) that missed the worker's own commit while the writer had it, of the checks made; anomalies = what the checker workload's checks found in its history (summary.json checks). Axis values as the nodes reported them (for a session variable, what a new session started with).\n")
	return b.String()
}

// consistencyFigures is the figures' part of cell c's line.
func consistencyFigures(c *schema.CellRecord) string {
	if c.Dir == "" && c.ReadChecks == nil && c.Anomalies == nil {
		return fmt.Sprintf(" | | %s | | |", c.Status)
	}
	p95 := ""
	if c.LatencyMs != nil {
		p95 = fmt.Sprintf("%.2f", c.LatencyMs.P95)
	}
	stale, pct := "n/a", "n/a"
	if c.ReadChecks != nil && c.StaleReads != nil {
		stale = fmt.Sprintf("%d of %d", *c.StaleReads, *c.ReadChecks)
		pct = "0.00"
		if *c.ReadChecks > 0 {
			pct = fmt.Sprintf("%.2f", 100*float64(*c.StaleReads)/float64(*c.ReadChecks))
		}
	}
	return fmt.Sprintf(" %.2f | %s | %s | %s | %s |", c.TPS, p95, stale, pct, AnomaliesCell(c.Anomalies, c.AnomalyTypes, c.CheckerError))
}

// AnomaliesCell is a table cell for a checker's verdict: "none", "3 lost-update",
// "2 G-single, 1 G1c" (types in name order), "not checked: ERR", or "n/a" without a
// checker (n nil and no error). Pipes in the error are replaced so the table holds.
func AnomaliesCell(n *int, types map[string]int, errText string) string {
	switch {
	case errText != "":
		return "not checked: " + strings.ReplaceAll(errText, "|", "/")
	case n == nil:
		return "n/a"
	case *n == 0:
		return "none"
	case len(types) == 0:
		return fmt.Sprint(*n)
	}
	var parts []string
	for t, k := range types {
		parts = append(parts, fmt.Sprintf("%d %s", k, t))
	}
	sort.Slice(parts, func(i, j int) bool {
		return strings.SplitN(parts[i], " ", 2)[1] < strings.SplitN(parts[j], " ", 2)[1]
	})
	return strings.Join(parts, ", ")
}

// cellTableHead writes the head of a per-cell table of sweep.md (the consistency and the
// capacity tables): cell, topology, every other axis, then cols; it returns those axes.
func cellTableHead(b *strings.Builder, f *schema.SweepFile, cols ...string) []schema.SweepAxis {
	var axes []schema.SweepAxis
	for _, a := range f.Axes {
		if a.Kind != schema.AxisTopology {
			axes = append(axes, a)
		}
	}
	b.WriteString("| cell | topology |")
	sep := "|---|---|"
	for _, a := range axes {
		b.WriteString(" " + a.Name + " |")
		sep += "---|"
	}
	for _, c := range cols {
		b.WriteString(" " + c + " |")
		sep += "---|"
	}
	b.WriteString("\n" + sep + "\n")
	return axes
}

// cellTableAxes writes the start of cell c's line in such a table: its index, topology and
// the axes' values as read back (the requested value when nothing was read back).
func cellTableAxes(b *strings.Builder, c *schema.CellRecord, axes []schema.SweepAxis) {
	fmt.Fprintf(b, "| %d | %s |", c.Index, c.Topology)
	for _, a := range axes {
		v, ok := c.Values[a.Name]
		if !ok {
			v = c.Axes[a.Name]
		}
		b.WriteString(" " + strings.ReplaceAll(v, "|", "/") + " |")
	}
}
