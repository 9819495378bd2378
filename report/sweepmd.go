package report

import (
	"fmt"
	"github.com/habench/habench/internal/words"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/schema"
)

// SweepMarkdownFile is the name of a scenario run's cell list in its directory.
const SweepMarkdownFile = "sweep.md"

// SweepMarkdown is sweep.md, rendered from sweep.json (f) alone: the scenario's counts and
// cell policy, then one line per cell (in f.Cells' order) with its requested value of
// every axis (columns in sweep.json's axes order, the plan's expansion order), what was
// read back, its status (and error), TPS, QPS, average, p95 and p99 latency in ms and the
// largest replica lag in seconds (empty for a cell that never ran), then, when a cell has
// read-node checks or a checker verdict, the consistency table (ConsistencyTable), with
// capacity searches the capacity table (CapacityTable), with replication figures the
// replication table per point (ReplicationTable), then the cells' warnings. It never fails: missing values print empty.
func SweepMarkdown(f *schema.SweepFile) string {
	var b strings.Builder
	counts := map[string]int{}
	for _, c := range f.Cells {
		counts[c.Status]++
	}
	fmt.Fprintf(&b, "# %s: sweep\n\n", f.Scenario)
	fmt.Fprintf(&b, "Scale %s, workload %s, %s: %d done, %d failed, %d not run. Cell policy: prepare %s, restart %s, drop caches %s, warmup %v (excluded).\n\n",
		f.Scale, f.Workload, words.Plural(len(f.Cells), "cell"), counts[schema.StatusDone], counts[schema.StatusFailed], counts[schema.StatusPending]+counts[schema.StatusRunning],
		f.Policy.Prepare, yesNo(f.Policy.Restart), yesNo(f.Policy.DropCaches), warmupText(f.Policy.Warmup))
	b.WriteString("| cell |")
	sep := "|---|"
	for _, a := range f.Axes {
		b.WriteString(" " + a.Name + " |")
		sep += "---|"
	}
	b.WriteString(" read back | status | TPS | QPS | avg ms | p95 ms | p99 ms | max replica lag s |\n")
	b.WriteString(sep + "---|---|---|---|---|---|---|---|\n")
	for _, c := range f.Cells {
		b.WriteString(sweepCellLine(f.Axes, &c))
	}
	b.WriteString(ConsistencyTable(f))
	b.WriteString(ReplicationTable(f))
	b.WriteString(SweepTimelineTable(f))
	b.WriteString(CapacityTable(f))
	b.WriteString(cellWarnings(f.Cells))
	return b.String()
}

// sweepCellLine is sweep.md's line of cell c.
func sweepCellLine(axes []schema.SweepAxis, c *schema.CellRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %d |", c.Index)
	for _, a := range axes {
		fmt.Fprintf(&b, " %s |", c.Axes[a.Name])
	}
	var rb []string
	for _, a := range axes {
		if v, ok := c.Values[a.Name]; ok {
			rb = append(rb, a.Name+"="+v)
		}
	}
	status := c.Status
	if c.Error != "" {
		status += ": " + strings.ReplaceAll(c.Error, "|", "/")
	}
	lat := schema.CellLatency{}
	if c.LatencyMs != nil {
		lat = *c.LatencyMs
	}
	if c.Dir == "" {
		fmt.Fprintf(&b, " %s | %s | | | | | | |\n", strings.Join(rb, " "), status)
		return b.String()
	}
	fmt.Fprintf(&b, " %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", strings.Join(rb, " "), status, c.TPS, c.QPS, lat.Avg, lat.P95, lat.P99, LagText(c.MaxReplicaLagS, c.LagUnknown, "%.3f"))
	return b.String()
}

// cellWarnings is sweep.md's warnings section: every cell's warnings (a fault's stop
// escalated to SIGKILL, a restart that did not go as asked, ...), one line per distinct
// warning with the cells it happened in; "" when there are none.
func cellWarnings(cells []schema.CellRecord) string {
	var order []string
	in := map[string][]string{}
	for _, c := range cells {
		for _, w := range c.Warnings {
			if _, seen := in[w]; !seen {
				order = append(order, w)
			}
			cell := strconv.Itoa(c.Index)
			if l := in[w]; len(l) == 0 || l[len(l)-1] != cell {
				in[w] = append(l, cell)
			}
		}
	}
	if len(order) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Warnings\n\n")
	for _, w := range order {
		word := "cell"
		if len(in[w]) > 1 {
			word = "cells"
		}
		fmt.Fprintf(&b, "- %s %s %s: %s\n", Warn, word, strings.Join(in[w], ", "), w)
	}
	return b.String()
}

// warmupText is the cell policy's warmup rounded to the second ("0s" without one).
func warmupText(d *schema.Duration) string {
	if d == nil {
		return "0s"
	}
	return time.Duration(*d).Round(time.Second).String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
