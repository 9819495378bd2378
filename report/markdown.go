package report

import (
	"fmt"
	"strings"
)

// mdEscape keeps table cells in one cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// markdown renders the page as Markdown: the same tables as the HTML, without charts
// (they are in report.html): the header, the comparison, the cells, the sweep, the
// settings that differ, then each run.
func markdown(pg page) string {
	var b strings.Builder
	mdHeader(&b, pg)
	mdComparison(&b, pg)
	if pg.CellsMD != "" {
		b.WriteString("\n## Cells: repeats summarised\n\n" + pg.CellsMD)
	}
	if len(pg.Sweep) > 0 {
		mdSweep(&b, pg.Sweep)
	}
	if len(pg.Settings.Cols) > 0 {
		mdSettings(&b, pg.Settings)
	}
	for _, rv := range pg.Runs {
		mdRun(&b, rv)
	}
	return b.String()
}

// mdHeader writes the title, the alerts and the lines on what was compared.
func mdHeader(b *strings.Builder, pg page) {
	fmt.Fprintf(b, "# habench report: %s\n\n", pg.Title)
	for _, a := range pg.Alerts {
		fmt.Fprintf(b, "**WARNING: %s**\n\n", a)
	}
	fmt.Fprintf(b, "%s results in `%s`, rendered %s. Charts: report.html.\n\n", pg.Kind, pg.Dir, pg.Generated)
	if len(pg.Servers) > 0 {
		fmt.Fprintf(b, "- servers: %s\n", strings.Join(pg.Servers, "; "))
	}
	if len(pg.Habench) > 0 {
		fmt.Fprintf(b, "- habench: %s\n", strings.Join(pg.Habench, ", "))
	}
	if pg.Workload != "" {
		fmt.Fprintf(b, "- workload: %s\n", pg.Workload)
	}
	if pg.Compared {
		fmt.Fprintf(b, "- baseline: **%s** (%s); percentages are of the baseline's value (100%% = same)", pg.Baseline, pg.BaselineWhy)
		if len(pg.Sweep) > 0 {
			b.WriteString(", in a sweep of the baseline topology's cell with the same axis values")
		}
		b.WriteString("\n")
	}
}

// mdComparison writes the comparison table of the runs with its notes.
func mdComparison(b *strings.Builder, pg page) {
	b.WriteString("\n## Comparison\n\n")
	lost, lostSep := "", ""
	if pg.Probed {
		lost, lostSep = " lost acked commits |", "---|"
	}
	vs, vsSep := "", ""
	if pg.Compared {
		vs, vsSep = " TPS vs base | avg latency vs base | p95 vs base |", "---|---|---|"
	}
	b.WriteString("| topology | kind | flavor | version | TPS | QPS | avg ms | p95 ms | p99 ms |" + vs + " max lag s |" + lost + " interval TPS min / max | interval TPS CV | busiest host CPU mean / max |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|" + vsSep + "---|" + lostSep + "---|---|---|\n")
	for _, r := range pg.Rows {
		name := mdEscape(r.Run.Name)
		if r.IsBaseline && pg.Compared {
			name = "**" + name + "** (baseline)"
		}
		if r.Run.Error != "" {
			name += " (incomplete)"
		}
		busiest := busiestCell(r)
		if r.CPUBound {
			busiest = "**" + busiest + "**"
		}
		lag := LagText(r.MaxLagS, r.LagUnknown, "%.3f")
		if pg.Probed {
			lag += " | " + lostAcked(r.Probe)
		}
		pcts := ""
		if pg.Compared {
			pcts = fmt.Sprintf(" %s | %s | %s |", pctMark(r.TPSPct, r.Caveat), pctMark(r.AvgPct, r.Caveat), pctMark(r.P95Pct, r.Caveat))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f |%s %s | %.1f / %.1f | %.1f%% | %s |\n",
			name, r.Run.Kind(), r.Run.Flavor(), r.Run.Version(), r.TPS, r.QPS, r.AvgMs, r.P95Ms, r.P99Ms,
			pcts, lag, r.TPSMin, r.TPSMax, 100*r.TPSCV, mdEscape(busiest))
	}
	for _, m := range pg.Missing {
		fmt.Fprintf(b, "\n**not loaded:** %s\n", m)
	}
	for _, n := range []string{pg.Caveat, pg.FlavorNote} {
		if n != "" {
			b.WriteString("\n" + n + "\n")
		}
	}
	if pg.Probed {
		b.WriteString("\nlost acked commits = the probe writer's acknowledged commits missing on the writer after the run (summary.json probe), of those acknowledged.\n")
	}
	b.WriteString("\nmax lag = the largest heartbeat visibility lag any node showed (n/a: a single node, no replicas); interval TPS CV = standard deviation / mean of the per-interval TPS (jitter); busiest host CPU = the mean and largest CPU busy share of the run's busiest host while the workload was measured, CPU-bound when it was CPU-saturated.")
	if pg.CellsMD != "" && pg.Compared {
		b.WriteString(" The vs base percentages are each run's cell's (the mean of its repeats against the baseline's mean: see the cells table), the same on every repeat.")
	}
	b.WriteString("\n")
}

// mdSweep writes the sweep table, one row per point.
func mdSweep(b *strings.Builder, pts []SweepPoint) {
	b.WriteString("\n## Sweep\n\n| topology | axis | value (read back) | other axes | runs | TPS (mean) | TPS 95% CI | p95 ms | TPS vs reference | error |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range pts {
		v := p.Value
		if p.ReusedFrom != "" {
			v += " (not run: the runs of " + p.ReusedFrom + ")"
		}
		ref := p.VsRef
		if p.Mark {
			ref += " " + Warn
		}
		if p.Reference != "" {
			ref += " (vs " + p.Reference + ")"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %.2f | %s | %.2f | %s | %s |\n", mdEscape(p.Topology), mdEscape(p.Axis), mdEscape(v),
			mdEscape(fixedString(p.Fixed)), p.N, p.TPS, ciRange(p), p.P95Ms, mdEscape(ref), mdEscape(p.Error))
	}
}

// mdSettings writes the settings that differ between runs and those equal in all.
func mdSettings(b *strings.Builder, t varTable) {
	b.WriteString("\n## Settings that differ between runs\n\nRead back from each run's first node (the writer) before the run.")
	if t.Same > 0 {
		fmt.Fprintf(b, " %d other variables are equal in every run (below the table).", t.Same)
	}
	b.WriteString("\n\n")
	if len(t.Rows) == 0 {
		b.WriteString("None: every run had the same settings.\n")
	} else {
		writeVarTable(b, t)
		if len(t.Keys) > 0 {
			var ks []string
			for _, k := range t.Keys {
				ks = append(ks, "**"+k.Short+"** "+mdEscape(k.Full))
			}
			b.WriteString("\nColumns: " + strings.Join(ks, "; ") + ".\n")
		}
	}
	if len(t.Common) > 0 {
		var kv []string
		for _, f := range t.Common {
			kv = append(kv, "`"+f.K+"="+f.V+"`")
		}
		b.WriteString("\nEqual in every run: " + strings.Join(kv, ", ") + ".\n")
	}
}

// mdRun writes one run's section: its facts, warnings and link impairment, its node
// and host tables, knobs and requested options, its other sections and its files.
func mdRun(b *strings.Builder, rv runView) {
	fmt.Fprintf(b, "\n## %s\n\n", rv.Heading)
	for _, f := range rv.Facts {
		fmt.Fprintf(b, "- %s: %s\n", f.K, mdEscape(f.V))
	}
	for _, w := range rv.Warnings {
		fmt.Fprintf(b, "- **warning:** %s\n", w)
	}
	if li := rv.Impairment; li != nil && len(li.RTT) > 0 {
		b.WriteString("\n| link | base RTT ms | requested +ms | achieved median ms | achieved p99 ms | added ms |\n|---|---|---|---|---|---|\n")
		for _, r := range li.RTT {
			if r.Partitioned {
				fmt.Fprintf(b, "| %s | %.3f | partition | %d probes failed | | |\n", r.Link, r.BaseMs, r.FailedProbes)
				continue
			}
			fmt.Fprintf(b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n", r.Link, r.BaseMs, r.RequestedMs, r.AchievedMs, r.AchievedP99, r.AddedMs)
		}
	}
	mdRunNodes(b, rv)
	if t := clientsTable(rv.Clients); t != "" {
		b.WriteString("\n" + t + "\n" + ClientsNote + "\n")
	}
	mdRunKnobs(b, rv)
	mdRunSections(b, rv.Sections)
	fmt.Fprintf(b, "\nFiles: `%s` (settings read back from every node in its report.md and manifest.json).\n", rv.Run.Dir)
}

// mdRunNodes writes a run's node table and host table.
func mdRunNodes(b *strings.Builder, rv runView) {
	if len(rv.Nodes) > 0 {
		b.WriteString("\n| node | role | version | lag max s | lag avg s | backlog max trx | queues | flow control paused | lag samples | sampler errors |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, n := range rv.Nodes {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", n.Node, n.Role, n.Version, n.LagMax, n.LagAvg, n.BacklogMax,
				mdEscape(n.Queues), mdEscape(n.Paused), n.Samples, n.SamplerErrors)
		}
		b.WriteString("\n" + rv.NodeWindow + "\n")
	}
	if len(rv.Hosts) > 0 {
		b.WriteString("\n| host | nodes | CPUs | CPU busy mean | busy max | iowait | steal | run queue mean / max | disk read / write MB/s | mysqld CPU cores (mean) | CPU-saturated |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, h := range rv.Hosts {
			sat := h.Saturated
			if h.Bound {
				sat = "**" + sat + "**"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(h.Host), h.Nodes, h.CPUs, h.BusyMean, h.BusyMax,
				h.IOWait, h.Steal, h.RunQueue, h.Disk, h.ServerCPU, sat)
		}
		b.WriteString("\n" + hostsNote + "\n")
	}
}

// mdRunKnobs writes a run's knobs table and the server options its topology requested.
func mdRunKnobs(b *strings.Builder, rv runView) {
	if k := rv.Knobs; k != nil && len(k.Nodes) > 0 {
		b.WriteString("\n| node | knob | variable | method | requested | before | in effect | after the run |\n|---|---|---|---|---|---|---|---|\n")
		for _, n := range k.Nodes {
			after := "not restored"
			if n.Restored != nil {
				after = *n.Restored
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", n.Node, mdEscape(n.Knob), mdEscape(n.Variable), n.Method,
				mdEscape(n.Requested), mdEscape(n.Before), mdEscape(n.Effective), mdEscape(after))
		}
	}
	if len(rv.Requested) > 0 {
		b.WriteString("\nServer options requested by the topology: ")
		var kv []string
		for _, f := range rv.Requested {
			kv = append(kv, "`"+f.K+"="+f.V+"`")
		}
		b.WriteString(strings.Join(kv, ", ") + "\n")
	}
}

// mdRunSections writes a run's other sections: a table, or their JSON.
func mdRunSections(b *strings.Builder, secs []section) {
	for _, sec := range secs {
		fmt.Fprintf(b, "\n%s:\n\n", sec.Title)
		if len(sec.Cols) == 0 {
			fmt.Fprintf(b, "```json\n%s\n```\n", sec.JSON)
			continue
		}
		b.WriteString("| " + strings.Join(sec.Cols, " | ") + " |\n|" + strings.Repeat("---|", len(sec.Cols)) + "\n")
		for _, row := range sec.Rows {
			for i := range row {
				row[i] = mdEscape(row[i])
			}
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
		if sec.Note != "" {
			b.WriteString("\n" + sec.Note + "\n")
		}
	}
}

func writeVarTable(b *strings.Builder, t varTable) {
	b.WriteString("| variable |")
	for _, c := range t.Cols {
		b.WriteString(" " + mdEscape(c) + " |")
	}
	b.WriteString("\n|---|")
	for range t.Cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		fmt.Fprintf(b, "| %s |", r.Name)
		for _, v := range r.Values {
			b.WriteString(" " + mdEscape(v) + " |")
		}
		b.WriteString("\n")
	}
}
