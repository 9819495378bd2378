package report

import (
	"fmt"
	"github.com/habench/habench/internal/words"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
)

// RunMarkdown renders a run's report.md from its manifest.json and summary.json (r from
// LoadRunSummary, RunFromJSON or LoadRun; r.Summary nil renders an empty one): what ran,
// on which servers and settings, the results, per-node lag, and each sampler's section
// (sampler.Section). deployed says whether habench deployed the servers (the provider's
// Deployed), which the files do not say in report's terms.
func RunMarkdown(r *Run, deployed bool) string {
	m, s := &r.Manifest, r.Summary
	if s == nil {
		s = &schema.Summary{}
	}
	var b strings.Builder
	reportHeader(&b, r, s, deployed)
	if lr := r.Impairment(); lr != nil {
		linkImpairmentSection(&b, lr)
	}
	workloadLines(&b, m, s)
	throughputSection(&b, s)
	b.WriteString(hostReport(s.Hosts))
	b.WriteString(ClientsSection(r))
	if len(s.Nodes) > 0 {
		nodesSection(&b, m, s)
		convergenceText(&b, s)
	}
	if t := NodeStateTable(s.NodeStates); t != "" {
		b.WriteString("\n## Node states\n\n" + t)
		b.WriteString("\ndown = no sampler reached the node in those seconds (node_up 0 in samples.csv).\n")
	}
	if t := FaultTable(s.Faults); t != "" {
		b.WriteString("\n## Faults\n\n" + t)
		b.WriteString("\n" + FaultNote)
		if failoverColumns(s.Faults) {
			b.WriteString(" " + FailoverNote)
		}
		b.WriteString("\n")
	}
	if t := TimelineTable(s.Faults); t != "" && s.Proxy != nil {
		b.WriteString("\n### Failover timeline\n\n" + t + "\n" + TimelineNoteFor(s.Faults) + "\n")
	}
	b.WriteString(ProxySection(s.Proxy))
	if t := DuringTable(s.Faults); t != "" {
		b.WriteString("\n### While it ran\n\n" + t + "\n" + DuringNote + "\n")
	}
	if p := s.Probe; p != nil {
		fmt.Fprintf(&b, "\n## Probe writer\n\n%d acknowledged commits, %d failed, %d of unknown outcome; **%d acknowledged commits lost** on %s; %d rows present whose commit was not acknowledged.\n",
			p.Acknowledged, p.Failed, p.Unknown, p.LostAcknowledged, p.CheckedOn, p.UnacknowledgedPresent)
		b.WriteString(probeViaLine(p))
	}
	AnomaliesSection(&b, s.Checks)
	b.WriteString(sampler.Markdown(s, math.MinInt, sampler.SectionsAfterKnobs))
	if k := m.Knobs; k != nil {
		b.WriteString(knobsSection(k))
	}
	b.WriteString(sampler.Markdown(s, sampler.SectionsAfterKnobs, math.MaxInt))
	if len(m.Nodes) > 0 {
		settingsSection(&b, m)
	}
	b.WriteString("\nFiles: manifest.json, summary.json, intervals.csv (one row per report interval), samples.csv (elapsed_s,node,metric,value), latency.hlog (latency histograms per report interval, HdrHistogram interval log, microseconds), variables.json.\n")
	return b.String()
}

// reportHeader writes report.md's title, the run's warnings and the lines on what ran:
// habench, command, servers, links, hosts (with the clock warning) and page cache drops.
func reportHeader(b *strings.Builder, r *Run, s *schema.Summary, deployed bool) {
	m := &r.Manifest
	title := m.Workload.Name
	if m.Topology != nil {
		nodes, _ := r.topology["nodes"].(float64)
		title = fmt.Sprintf("%s on %s (%s, %s, %s)", title, topologyText(r, "name"), topologyText(r, "kind"), words.Plural(int(nodes), "node"), topologyText(r, "flavor"))
	}
	fmt.Fprintf(b, "# %s\n\n", title)
	for _, w := range m.Warnings {
		fmt.Fprintf(b, "**WARNING: %s**\n\n", w)
	}
	fmt.Fprintf(b, "- habench %s, started %s, finished %s\n", m.Habench["version"], m.Started.Format("2006-01-02 15:04:05 UTC"), m.Finished.Format("15:04:05 UTC"))
	fmt.Fprintf(b, "- command: `%s`\n", strings.Join(m.CommandLine, " "))
	if m.Binaries != nil {
		if m.Topology != nil && !deployed {
			fmt.Fprintf(b, "- servers: %s (existing cluster, not deployed by habench)\n", m.Binaries.VersionText)
		} else {
			fmt.Fprintf(b, "- servers: %s (%s installation)\n", m.Binaries.VersionText, m.Binaries.Installation.Kind)
		}
	}
	if _, ok := m.Links["description"]; ok {
		fmt.Fprintf(b, "- links: %s\n", r.LinkDescription())
	}
	if hl := HostsLine(m.Hosts); hl != "" {
		fmt.Fprintf(b, "- hosts: %s (%s)\n", hl, HostsNote)
		var lags []*float64
		for _, n := range s.Nodes {
			lags = append(lags, n.ApplierLagMaxS)
		}
		if w := ClockWarning(m.Hosts, MaxOf(lags)); w != "" {
			fmt.Fprintf(b, "- **warning:** %s\n", w)
		}
	}
	if cd := CacheDropsLine(m.CacheDrops); cd != "" {
		fmt.Fprintf(b, "- page cache: %s\n", cd)
	}
}

// linkImpairmentSection writes the links impairment: how it was applied, the impairment
// per directed link and the measured round trips (ms) of each link.
func linkImpairmentSection(b *strings.Builder, lr *schema.LinkImpairment) {
	by := ""
	if lr.AppliedBy == "netem apply" {
		by = fmt.Sprintf(", applied before the run by `habench netem apply %s`", lr.Request)
	}
	if lr.LinkThread != "" {
		by += ", link thread " + lr.LinkThread
	}
	fmt.Fprintf(b, "- link impairment (%s backend%s, one-way per directed link): ", lr.Backend, by)
	var ls []string
	for l, imp := range lr.Links {
		ls = append(ls, l+" "+imp)
	}
	sort.Strings(ls)
	b.WriteString(strings.Join(ls, ", ") + "\n")
	b.WriteString("\n| link | base RTT ms | requested +ms | achieved median ms | achieved p99 ms | added ms |\n|---|---|---|---|---|---|\n")
	for _, r := range lr.RTT {
		if r.Partitioned {
			fmt.Fprintf(b, "| %s | %.3f | partition | %d of %d probes failed | | |\n", r.Link, r.BaseMs, r.FailedProbes, r.FailedProbes+r.Samples)
			continue
		}
		fmt.Fprintf(b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n", r.Link, r.BaseMs, r.RequestedMs, r.AchievedMs, r.AchievedP99, r.AddedMs)
	}
	for _, w := range lr.Warnings {
		fmt.Fprintf(b, "\n**warning:** %s\n", w)
	}
	if lr.Note != "" {
		fmt.Fprintf(b, "\n%s.\n", lr.Note)
	}
	b.WriteString("\n")
}

// workloadLines writes the workload line, the id space note, the data check warning and
// the run's error.
func workloadLines(b *strings.Builder, m *schema.Manifest, s *schema.Summary) {
	opts := m.Workload.Options
	fmt.Fprintf(b, "- workload: %s, %d threads, %s tables x %s rows, time %ss, rand-type %s, db-ps-mode %s\n", m.Workload.Name, s.Threads, opts["tables"], opts["table-size"], opts["time"], s.RandType, s.PSMode)
	if note := m.Workload.IDSpace; note != "" {
		fmt.Fprintf(b, "- note: %s\n", note)
	}
	if s.DataCheck != "" {
		fmt.Fprintf(b, "- **warning:** %s\n", s.DataCheck)
	}
	if s.Error != "" {
		fmt.Fprintf(b, "- **run ended with an error:** %s\n", s.Error)
	}
}

// throughputSection writes the throughput and latency table (latencies in ms), the
// statement mix per transaction and the ignored errors by code.
func throughputSection(b *strings.Builder, s *schema.Summary) {
	b.WriteString("\n## Throughput and latency\n\n")
	b.WriteString("| TPS | QPS | reads | writes | other | lat avg ms | p50 ms | p95 ms | p99 ms | max ms | ignored errors | reconnects |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	l := s.LatencyMs
	fmt.Fprintf(b, "| %.2f | %.2f | %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %d | %d |\n",
		s.TPS, s.QPS, s.Reads, s.Writes, s.Others, l["avg"], l["p50"], l["p95"], l["p99"], l["max"], s.IgnoredErrors, s.Reconnects)
	b.WriteString(lowerBoundsNote(s))
	if s.Transactions > 0 {
		fmt.Fprintf(b, "\nPer transaction: %.2f reads / %.2f writes / %.2f other.\n",
			float64(s.Reads)/float64(s.Transactions), float64(s.Writes)/float64(s.Transactions), float64(s.Others)/float64(s.Transactions))
	}
	if len(s.ErrorsByCode) > 0 {
		b.WriteString("\nIgnored errors by code: ")
		var ks []string
		for k, v := range s.ErrorsByCode {
			ks = append(ks, fmt.Sprintf("%s: %d", k, v))
		}
		sort.Strings(ks)
		b.WriteString(strings.Join(ks, ", ") + "\n")
	}
}

// nodesSection writes the per-node table of visibility lag (s) and backlog (transactions)
// with its legend and the samples window it covers.
func nodesSection(b *strings.Builder, m *schema.Manifest, s *schema.Summary) {
	b.WriteString("\n## Nodes: visibility lag and backlog\n\n")
	b.WriteString("| node | role | version | lag max s | lag avg s | backlog max trx | lag samples | sampler errors |\n|---|---|---|---|---|---|---|---|\n")
	ver := map[string]string{}
	for _, n := range m.Nodes {
		ver[n.Name] = n.Version
	}
	for _, n := range s.Nodes {
		role := n.Role
		if n.RoleEnd != "" {
			role += " → " + n.RoleEnd
		}
		if n.DownAtEnd {
			role += " (down)"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %d | %.0f |\n", n.Node, role, ver[n.Node], NodeLagText(n.LagMaxS, n.LagUnknownS, "%.3f"), fmtOpt(n.LagAvgS, "%.3f"), fmtOpt(n.BacklogMaxTrx, "%.0f"), n.Samples, n.SamplerErrors)
	}
	b.WriteString("\nrole: at the start of the run, and after the arrow at its end when a fault of the run changed it (a promote); (down): no sampler reached it at the end. lag = visibility lag of a heartbeat row the writer (the source, primary, or first Galera node) writes every 100 ms (0 = the node shows the newest one); backlog = transactions committed on the writer and not yet applied on the node (includes the heartbeat's 10 writes per second). n/a = not applicable (e.g. backlog on the writer) or no sample (node unreachable, sampler failing: see sampler errors). ≥ max (unknown for N s): for N s the node's lag could not be measured (unreadable, outside the Galera Primary component, not ONLINE for the group's majority), so it may have been larger.\n")
	if s.SamplesWindow != "" {
		b.WriteString("\nThese figures, and the semi-sync, group and Galera ones below, cover the samples " + s.SamplesWindow + " (the warm-up excluded, as TPS and latency).\n")
	}
}

// convergenceText writes whether the nodes converged after the run: the convergence
// check's verdict, or in older summaries replicas_consistent.
func convergenceText(b *strings.Builder, s *schema.Summary) {
	if cv := s.Convergence; cv != nil {
		if cv.OK() {
			fmt.Fprintf(b, "\nAfter the run every node's executed GTID set equals the writer's (gtid_binlog_pos on Galera), and CHECKSUM TABLE of the %d benchmark tables agrees on every node.\n", cv.CheckedTables)
		} else {
			fmt.Fprintf(b, "\n**After the run (writer %s) not every node converged:**\n\n| node | state | position | tables that differ | reason |\n|---|---|---|---|---|\n", cv.Writer)
			for _, n := range cv.Nodes {
				fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", n.Node, n.State, n.Position, strings.Join(n.Tables, ", "), n.Reason)
			}
		}
	} else if s.ReplicasCaught != nil {
		if *s.ReplicasCaught {
			b.WriteString("\nAfter the run every node's executed GTID set equals the writer's (gtid_binlog_pos on Galera).\n")
		} else {
			b.WriteString("\n**After the run some nodes' GTID sets still differ from the writer's.**\n")
		}
	}
}

// settingsSection writes the server variables read back from each node, one row per
// variable (version_comment, server_uuid and hostname left out).
func settingsSection(b *strings.Builder, m *schema.Manifest) {
	b.WriteString("\n## Settings in effect (read back from each server)\n\n")
	names := map[string]bool{}
	for _, n := range m.Nodes {
		for k := range n.Variables {
			names[k] = true
		}
	}
	var keys []string
	for k := range names {
		if k != "version_comment" && k != "server_uuid" && k != "hostname" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	b.WriteString("| variable |")
	for _, n := range m.Nodes {
		b.WriteString(" " + n.Name + " |")
	}
	b.WriteString("\n|---|")
	for range m.Nodes {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, k := range keys {
		fmt.Fprintf(b, "| %s |", k)
		for _, n := range m.Nodes {
			fmt.Fprintf(b, " %s |", n.Variables[k])
		}
		b.WriteString("\n")
	}
}

// FaultTable renders the faults as a Markdown table ("" when none).
func FaultTable(fs []schema.FaultSummary) string {
	if len(fs) == 0 {
		return ""
	}
	var b strings.Builder
	fo := failoverColumns(fs)
	b.WriteString("| at (s since samples start) | fault | node | recovered after s | outage of | failed attempts | reconnects | min TPS | caught up after s | peak lag s | new writer after s | workers there after s |")
	if fo {
		b.WriteString(" cluster view changed after s | workers elsewhere after s |")
	}
	b.WriteString("\n|---|---|---|---|---|---|---|---|---|---|---|---|")
	if fo {
		b.WriteString("---|---|")
	}
	b.WriteString("\n")
	for _, f := range fs {
		rec := "still out at the end"
		if f.RecoveryS != nil {
			rec = fmt.Sprintf("%.2f", *f.RecoveryS)
		}
		action := f.Action
		if f.Error != "" {
			action += " (failed)"
		}
		if f.Escalated != "" {
			action += " ⚠ escalated to SIGKILL (a crash)"
		}
		var codes []string
		for _, c := range slices.Sorted(maps.Keys(f.ErrorsByCode)) {
			codes = append(codes, fmt.Sprintf("%s x%d", c, f.ErrorsByCode[c]))
		}
		failed := strings.Join(codes, ", ")
		if failed == "" && f.Errors > 0 {
			failed = fmt.Sprint(f.Errors)
		}
		reconn := "-"
		if f.Reconnects > 0 {
			reconn = fmt.Sprint(f.Reconnects)
		}
		newWriter, client := "-", "-"
		if f.NewWriterS != nil {
			newWriter = fmt.Sprintf("%.1f (%s)", *f.NewWriterS, f.NewWriter)
			client = fmtOpt(f.ClientWriterS, "%.1f")
		}
		fmt.Fprintf(&b, "| %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", f.AtS, action, f.Node, rec, outageCell(f), orDash(failed), reconn,
			fmtOpt(f.MinTPS, "%.0f"), fmtOpt(f.CaughtUpS, "%.1f"), LagText(f.PeakLagS, f.PeakLagUnknown, "%.2f"), newWriter, client)
		if fo {
			fmt.Fprintf(&b, " %s | %s |", viewChangeCell(f), clientFailoverCell(f))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// failoverColumns says whether the Faults table has the cluster view change and client
// failover columns: when a fault has either (a Galera cluster, a group).
func failoverColumns(fs []schema.FaultSummary) bool {
	for _, f := range fs {
		if f.ViewChangeS != nil || f.ClientFailoverS != nil || f.FailoverWorkers > 0 {
			return true
		}
	}
	return false
}

// viewChangeCell is the Faults table's "cluster view changed after s": "5.0", "n/a" for a
// fault that took nodes away without a change seen, "-" for the others.
func viewChangeCell(f schema.FaultSummary) string {
	if f.ViewChangeS != nil {
		return fmt.Sprintf("%.1f", *f.ViewChangeS)
	}
	if f.FailoverWorkers > 0 {
		return "n/a"
	}
	return "-"
}

// clientFailoverCell is the Faults table's "workers elsewhere after s": "5.21 (2
// workers)", "never (2 workers)" when one of them had not committed elsewhere by the end,
// "-" when no worker left the node.
func clientFailoverCell(f schema.FaultSummary) string {
	switch {
	case f.FailoverWorkers == 0:
		return "-"
	case f.ClientFailoverS == nil:
		return fmt.Sprintf("never (%s)", words.Plural(f.FailoverWorkers, "worker"))
	}
	return fmt.Sprintf("%.2f (%s)", *f.ClientFailoverS, words.Plural(f.FailoverWorkers, "worker"))
}

// FaultNote explains FaultTable's columns: "at" is a time on samples.csv's clock, the
// other seconds are durations from the fault.
const FaultNote = "at = when the fault was injected, in seconds since samples.csv's clock started (not since the start of measurement); " +
	"recovered after = seconds from the fault until the workload's commits were back to normal: the end of the last report interval, from the fault's on, " +
	"with TPS under half the median before the first fault or more failed attempts or reconnects than any interval before it, or the end of the outage the fault caused, whichever is later " +
	"(0: the workload did not notice; resolution: the report interval); " +
	"outage of = the node (or writer) whose workers could not commit for 1 s or more (also: other nodes whose workers could not commit for 1 s or more from within 10 s of the fault, e.g. a Galera cluster stalled while it evicted a node; their failed attempts are in the WARNINGs); failed attempts and reconnects = the workload's in the disturbed intervals (by MySQL error code when an outage recorded them), min TPS their lowest; " +
	"an outage and a disturbed interval count for the first fault they follow only (a promote or heal that ended them shows none of their failed attempts); " +
	"caught up after = seconds from the fault (start, restart, heal, promote, pause, resume, or a kill whose node came back) until the node, readable again, showed a heartbeat lag at or under 1 s (n/a: not seen before the node's next fault or the end); " +
	"peak lag = the largest lag of any node from the fault to the end of the run, in seconds (≥ peak (n3 unknown for N s): that node's lag could not be measured for N s, as in the nodes table); " +
	"new writer after = seconds from the fault until the cluster named another writer (polled every 0.5 s), workers there after = until the workload first committed on it (n/a: never)."

// FailoverNote explains FaultTable's failover columns, when it has them.
const FailoverNote = "cluster view changed after = seconds from the fault (one that takes a node away: kill, stop, restart, partition, pause, rebuild) until every other node's view of the cluster counted fewer members than before it " +
	"(Galera: a Primary component without the node; a group: the node UNREACHABLE or gone), sampled every second (n/a: not seen before the node's next fault or the end); " +
	"workers elsewhere after = seconds from the fault until every worker that left the node (client failover) had committed on another node, with how many left it (never: one had not by the end; -: none left it)."

// outageCell is the Faults table's "outage of": the fault's outage, and the other nodes it
// stalled ("n3 (also n1, n2)"); "-" without one.
func outageCell(f schema.FaultSummary) string {
	if len(f.AlsoOutages) == 0 {
		return orDash(f.Outage)
	}
	return fmt.Sprintf("%s (also %s)", f.Outage, strings.Join(f.AlsoOutages, ", "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// NodeStateTable renders the nodes that were down or changed role ("" when none).
func NodeStateTable(ns []schema.NodeState) string {
	if len(ns) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| node | down (samples clock) | role and membership changes |\n|---|---|---|\n")
	for _, n := range ns {
		var ws []string
		for _, w := range n.Down {
			s := fmt.Sprintf("%.1f-%.1f s", w.StartS, w.EndS)
			if w.Open {
				s = fmt.Sprintf("from %.1f s to the end", w.StartS)
			}
			ws = append(ws, s)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", n.Node, orDash(strings.Join(ws, ", ")), orDash(strings.Join(n.Changes, "; ")))
	}
	return b.String()
}

// hostReport renders the summary's host table for report.md ("" without hosts).
func hostReport(hs []schema.HostSummary) string {
	if len(hs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Hosts: CPU, disk and network over the measured part\n\n")
	b.WriteString("| host | nodes | CPUs | CPU busy mean | busy max | iowait | steal | run queue mean / max | disk read / write MB/s | mysqld CPU cores (mean) | CPU-saturated |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, h := range hs {
		var srv []string
		for _, n := range slices.Sorted(maps.Keys(h.ServerCPU)) {
			srv = append(srv, fmt.Sprintf("%s %.2f", n, h.ServerCPU[n]))
		}
		sat := "no"
		if h.CPUSaturated {
			sat = fmt.Sprintf("**yes** (%.0f%% of seconds)", h.SaturatedShare*100)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s |\n", h.Host, strings.Join(h.Nodes, ", "), h.CPUs,
			pct(h.CPUBusyMean), pct(h.CPUBusyMax), pct(h.IOWaitMean), pct(h.StealMean),
			fmtOpt(h.ProcsRunningMean, "%.1f"), fmtOpt(h.ProcsRunningMax, "%.0f"), mbps(h.DiskReadMean), mbps(h.DiskWriteMean), strings.Join(srv, ", "), sat)
	}
	fmt.Fprintf(&b, "\nbusy = share of all the host's CPU time neither idle nor waiting for I/O (/proc/stat; steal counts as busy). CPU-saturated = busy >= %.0f%% in at least %.0f%% of the measured seconds: the workload, the servers and anything else on the host wanted more CPU than there was. Sandbox nodes share this machine: its numbers are counted once, not per node.\n",
		sampler.CPUSaturatedBusy*100, sampler.CPUSaturatedShare*100)
	return b.String()
}

// PctText formats a share (0..1) as a whole percentage, "42%"; "n/a" when p is nil.
func PctText(p *float64) string { return pct(p) }

func pct(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", *p*100)
}

// mbps formats bytes per second as megabytes per second with one decimal, "n/a" when p is nil.
func mbps(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", *p/1e6)
}

// lowerBoundsNote is report.md's line under the latency table when its max and
// percentiles include lower bounds (transactions that never completed); "" otherwise.
func lowerBoundsNote(s *schema.Summary) string {
	if s.Waits == 0 || s.LongestWait == nil {
		return ""
	}
	w := s.LongestWait
	how := "still in flight at the end"
	if w.Abandoned {
		how = "given up by its worker, outcome unknown: it hung on a node its worker left, following the writer or failing over, or the connection was lost during its COMMIT"
	}
	return fmt.Sprintf("\n**Latency max and percentiles include lower bounds:** %d transactions never completed (%d abandoned, outcome unknown); the longest waited at least %.2f s on %s from %.2f s of the run (%s).\n",
		s.Waits, s.UnknownOutcome, w.WaitedS, w.Node, w.StartS, how)
}

// knobsSection renders the run's knobs for report.md: per node the value before, the
// value the server took, and the value read back after restoring.
func knobsSection(k *schema.Knobs) string {
	var b strings.Builder
	b.WriteString("\n## Knobs (set for the run, read back from each server)\n\n")
	fmt.Fprintf(&b, "Requested: `%s`. ", strings.Join(k.Requested, " "))
	switch {
	case k.Keep:
		b.WriteString("Kept after the run.\n\n")
	case k.Restored == nil:
		b.WriteString("**Not restored.**\n\n")
	case *k.Restored:
		b.WriteString("Restored after the run (every value read back equal to its value before).\n\n")
	default:
		b.WriteString("**Restoring failed: see `habench knob restore`.**\n\n")
	}
	b.WriteString("| node | knob | variable | how | before | effective | restored | note |\n|---|---|---|---|---|---|---|---|\n")
	for _, v := range k.Nodes {
		r := ""
		if v.Restored != nil {
			r = *v.Restored
		}
		eff := v.Effective
		if !v.Matches {
			eff = "**" + eff + "**"
		}
		fmt.Fprintf(&b, "| %s | %s=%s | %s | %s | %s | %s | %s | %s |\n", v.Node, v.Knob, v.Requested, v.Variable, v.Method, v.Before, eff, r, v.Note)
	}
	for _, n := range k.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	return b.String()
}

// topologyText is r's manifest topology's key as text ("" when absent).
func topologyText(r *Run, key string) string {
	if v, ok := r.topology[key]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// probeViaLine is the Probe writer section's line on a probe through the proxy: the nodes
// that acknowledged its commits ("no commit acknowledged" when none did) and its stale
// commits ("" for a probe on the writer).
func probeViaLine(p *schema.ProbeSummary) string {
	if p.Via == "" {
		return ""
	}
	stale := "stale commits not counted"
	switch {
	case p.StaleCommits != nil && *p.StaleCommits == 0:
		stale = "0 stale commits (none acknowledged by a node the cluster no longer counted as the writer)"
	case p.StaleCommits != nil:
		stale = fmt.Sprintf("⚠ **%d stale commits**: acknowledged by a node the cluster no longer counted as the writer (a split brain the application saw succeed)", *p.StaleCommits)
	}
	by := "no commit acknowledged"
	if len(p.Writers) > 0 {
		by = "commits acknowledged by " + strings.Join(p.Writers, " then ")
	}
	return fmt.Sprintf("\nThrough the proxy's write endpoint, as the workload: %s; %s.\n", by, stale)
}
