package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// The failover timeline: each fault that took something away, as every layer saw it, in
// seconds from the fault: the cluster (its view without the node, a new writer named),
// the proxy (the old writer marked down, its sessions gone, the next server it sent
// connections to) and the client (the workload's first failed attempt and its first
// commit again). A run's report.md has it per fault when its run had a proxy; sweep.md
// per cell and fault, direct and through the proxy side by side.

// timelineHead is the timeline's columns after the fault's own.
var timelineHead = []string{"view changed", "writer named", "proxy: writer down", "proxy: its sessions gone", "proxy: next server", "client: first failure", "client: committing again", "client down s"}

// TimelineNote explains the timeline's columns.
const TimelineNote = "All in seconds from the fault. view changed = every other node's view counted fewer members (sampled every second); writer named = the cluster named another writer (polled every 0.5 s); " +
	"proxy: writer down = the proxy marked the server its write endpoint used at the fault DOWN, with its sessions then; its sessions gone = none left on it; next server = the next server the write endpoint sent connections to (the proxy's state read every 100 ms); " +
	"client: first failure = the workload's first failed attempt of the outage the fault caused, committing again = its end (the fault's recovery), client down = the difference; - = not seen, or not that kind of fault or run."

// StaleHead is the timeline's column of the probe writer's stale commits, there when a
// fault has their count (the probe went through the proxy).
const StaleHead = "stale commits"

// StaleNote explains StaleHead.
const StaleNote = "stale commits = the probe writer's commits through the proxy that a node acknowledged while the cluster no longer counted it as the writer (a promoted source or elected PRIMARY elsewhere, or outside the Galera Primary component), from the fault to the next: 0 is checked, ⚠ a split brain the application saw succeed."

// TimelineNoteFor is TimelineNote, with StaleNote when a fault of fs has that count.
func TimelineNoteFor(fs []schema.FaultSummary) string {
	if hasStale(fs) {
		return TimelineNote + " " + StaleNote
	}
	return TimelineNote
}

// hasStale says whether a fault of fs has a stale commit count.
func hasStale(fs []schema.FaultSummary) bool {
	return slices.ContainsFunc(fs, func(f schema.FaultSummary) bool { return f.Proxy != nil && f.Proxy.StaleCommits != nil })
}

// staleCell is fault f's StaleHead cell: "0", "⚠ 3 (n1)", "-" when not counted.
func staleCell(f schema.FaultSummary) string {
	p := f.Proxy
	switch {
	case p == nil || p.StaleCommits == nil:
		return "-"
	case *p.StaleCommits == 0:
		return "0"
	}
	return fmt.Sprintf("⚠ %d (%s)", *p.StaleCommits, strings.Join(p.StaleOn, ", "))
}

// timelineColumns are the timeline's columns after the fault's own for fs: timelineHead,
// and StaleHead when a fault has that count.
func timelineColumns(fs []schema.FaultSummary) []string {
	if hasStale(fs) {
		return append(slices.Clone(timelineHead), StaleHead)
	}
	return timelineHead
}

// HasTimeline says whether faults have a layer to show: a proxy's view or a client outage.
func HasTimeline(fs []schema.FaultSummary) bool {
	return slices.ContainsFunc(fs, func(f schema.FaultSummary) bool { return f.Proxy != nil || f.ClientDownS != nil })
}

// timelineCells are fault f's timeline columns (timelineHead), each "| x |" joined.
func timelineCells(f schema.FaultSummary) string {
	writer := "-"
	if f.NewWriterS != nil {
		writer = fmt.Sprintf("%.1f (%s)", *f.NewWriterS, f.NewWriter)
	}
	down, gone, next := "-", "-", "-"
	if p := f.Proxy; p != nil {
		if p.DownS != nil {
			down = fmt.Sprintf("%.2f (%s, %d sessions)", *p.DownS, p.Server, p.SessionsAtDown)
		}
		gone = fmtOpt(p.LeftS, "%.2f")
		if p.NewServerS != nil {
			next = fmt.Sprintf("%.2f (%s)", *p.NewServerS, p.NewServer)
		}
	}
	first, back, lost := fmtOpt(f.ClientDownS, "%.2f"), "still out at the end", "-"
	if f.RecoveryS != nil {
		back = fmt.Sprintf("%.2f", *f.RecoveryS)
		if f.ClientDownS != nil {
			lost = fmt.Sprintf("%.2f", *f.RecoveryS-max(0, *f.ClientDownS))
		}
	}
	if f.ClientDownS == nil && f.RecoveryS != nil && *f.RecoveryS == 0 {
		back = "-"
	}
	return fmt.Sprintf(" %s | %s | %s | %s | %s | %s | %s | %s |", fmtOpt(f.ViewChangeS, "%.1f"), writer, down, gone, next, first, back, lost)
}

// TimelineTable is a run's failover timeline: a row per fault ("" without a layer to show).
func TimelineTable(fs []schema.FaultSummary) string {
	if !HasTimeline(fs) {
		return ""
	}
	var b strings.Builder
	head, stale := timelineColumns(fs), hasStale(fs)
	b.WriteString("| at s | fault | node | " + strings.Join(head, " | ") + " |\n|---|---|---|" + strings.Repeat("---|", len(head)) + "\n")
	for _, f := range fs {
		fmt.Fprintf(&b, "| %.2f | %s | %s |%s", f.AtS, f.Action, f.Node, timelineCells(f))
		if stale {
			fmt.Fprintf(&b, " %s |", staleCell(f))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// SweepTimelineTable is sweep.md's "Failover timeline per point": per cell (with its axis
// values) and fault, the timeline; "" when no cell has one.
func SweepTimelineTable(f *schema.SweepFile) string {
	if !slices.ContainsFunc(f.Cells, func(c schema.CellRecord) bool { return HasTimeline(c.Faults) }) {
		return ""
	}
	var all []schema.FaultSummary
	for _, c := range f.Cells {
		all = append(all, c.Faults...)
	}
	stale := hasStale(all)
	var b strings.Builder
	b.WriteString("\n## Failover timeline per point\n\n")
	axes := cellTableHead(&b, f, append([]string{"fault"}, timelineColumns(all)...)...)
	for _, c := range f.Cells {
		for _, fs := range c.Faults {
			cellTableAxes(&b, &c, axes)
			fmt.Fprintf(&b, " %s %s at %.1f s |%s", fs.Action, fs.Node, fs.AtS, timelineCells(fs))
			if stale {
				fmt.Fprintf(&b, " %s |", staleCell(fs))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n" + TimelineNoteFor(all) + "\n")
	b.WriteString(timelinePoints(f))
	return b.String()
}

// timelinePoints is the timeline's per-point summary when a point has repeats: for each
// fault (by its place in the run), the mean [95% CI] over the point's runs of the proxy's
// writer down, its next server and the client's time down ("" when no point has two runs).
func timelinePoints(f *schema.SweepFile) string {
	byDir := map[string]*schema.CellRecord{}
	for i := range f.Cells {
		byDir[filepath.Base(f.Cells[i].Dir)] = &f.Cells[i] // a run's ID is its directory, relative or not
	}
	var rows []string
	for _, p := range f.Summary {
		if len(p.Runs) < 2 {
			continue
		}
		for k := 0; ; k++ {
			var down, next, client []float64
			name := ""
			for _, id := range p.Runs {
				c := byDir[filepath.Base(id)]
				if c == nil || k >= len(c.Faults) {
					continue
				}
				fs := c.Faults[k]
				name = fs.Action + " " + fs.Node
				if fp := fs.Proxy; fp != nil && fp.DownS != nil {
					down = append(down, *fp.DownS)
				}
				if fp := fs.Proxy; fp != nil && fp.NewServerS != nil {
					next = append(next, *fp.NewServerS)
				}
				if fs.ClientDownS != nil && fs.RecoveryS != nil {
					client = append(client, *fs.RecoveryS-max(0, *fs.ClientDownS))
				}
			}
			if name == "" {
				break
			}
			if len(down)+len(next)+len(client) == 0 {
				continue
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | fault %d (%s in the first run) | %s | %s | %s |", p.Topology, orDash(p.Group), k+1, name,
				runsText(down), runsText(next), runsText(client)))
		}
	}
	if len(rows) == 0 {
		return ""
	}
	return "\nPer point, the mean over its runs [95% CI] (n: runs that saw it):\n\n| topology | point | fault | proxy: writer down s | proxy: next server s | client down s |\n|---|---|---|---|---|---|\n" +
		strings.Join(rows, "\n") + "\n"
}

// runsText is xs as sampleText with the number of runs ("7.03 [6.41-7.65] (n 3)"), "-"
// when empty.
func runsText(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	s := stats.Of(xs)
	if !s.HasCI() {
		return sampleText(&s, 1, 2)
	}
	return fmt.Sprintf("%s (n %d)", sampleText(&s, 1, 2), len(xs))
}

// ProxySection is report.md's "Proxy" section ("" without one): its health checks, the
// write endpoint's servers in turn, how long it had none, its reads and its CPU.
func ProxySection(p *schema.ProxySummary) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Proxy\n\n%s, health checks every %g ms (down after %d failed, up after %d passed). ", p.Type, p.CheckIntervalMs, p.Fall, p.Rise)
	if p.Error != "" {
		fmt.Fprintf(&b, "**Its state could not be read** (%d tries): %s\n", p.Polls, p.Error)
		return b.String()
	}
	servers := strings.Join(p.WriteServers, " → ")
	if servers == "" {
		servers = "none"
	}
	fmt.Fprintf(&b, "Write endpoint's servers in turn: %s; without one for %.1f s. State read %d times every %d ms (%d failed), %d changes in %s.",
		servers, p.NoWriterS, p.Polls, schema.ProxyPollMs, p.PollErrors, p.Events, schema.ProxyEventsFile)
	if p.CPUCores != nil {
		fmt.Fprintf(&b, " Proxy CPU: %.3f cores on average.", *p.CPUCores)
	}
	b.WriteString("\n")
	return b.String()
}
