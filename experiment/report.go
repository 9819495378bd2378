package experiment

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/habench/habench/report"
)

// Report renders report.md: what ran, on which servers and settings, the results, and
// per-node lag. Numbers come from the manifest and the summary only.
func Report(m *Manifest, s *Summary) string {
	var b strings.Builder
	reportHeader(&b, m, s)
	if lr, ok := m.Links["impairment"].(*LinkReport); ok {
		linkImpairmentSection(&b, lr)
	}
	workloadLines(&b, m, s)
	throughputSection(&b, s)
	b.WriteString(hostReport(s.Hosts))
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
		b.WriteString("\n" + FaultNote + "\n")
	}
	if t := DuringTable(s.Faults); t != "" {
		b.WriteString("\n### While it ran\n\n" + t + "\n" + DuringNote + "\n")
	}
	if p := s.Probe; p != nil {
		fmt.Fprintf(&b, "\n## Probe writer\n\n%d acknowledged commits, %d failed; **%d acknowledged commits lost** on %s; %d rows present whose commit failed.\n",
			p.Acknowledged, p.Failed, p.LostAcknowledged, p.CheckedOn, p.UnacknowledgedPresent)
	}
	b.WriteString(semiSyncReport(s.SemiSync))
	if len(s.Group) > 0 {
		b.WriteString(groupReport(s.Group))
	}
	if k := m.Knobs; k != nil {
		b.WriteString(knobsSection(k))
	}
	b.WriteString(galeraReport(s.Galera))
	if len(m.Nodes) > 0 {
		settingsSection(&b, m)
	}
	b.WriteString("\nFiles: manifest.json, summary.json, intervals.csv (one row per report interval), samples.csv (elapsed_s,node,metric,value), variables.json.\n")
	return b.String()
}

// reportHeader writes report.md's title, the run's warnings and the lines on what ran:
// habench, command, servers, links, hosts (with the clock warning) and page cache drops.
func reportHeader(b *strings.Builder, m *Manifest, s *Summary) {
	title := fmt.Sprint(m.Workload["name"])
	if m.Topology != nil {
		title = fmt.Sprintf("%s on %s (%s, %s, %s)", title, m.Topology.Name, m.Topology.Kind, Plural(m.Topology.Nodes, "node"), m.Topology.Flavor)
	}
	fmt.Fprintf(b, "# %s\n\n", title)
	for _, w := range m.Warnings {
		fmt.Fprintf(b, "**WARNING: %s**\n\n", w)
	}
	fmt.Fprintf(b, "- habench %s, started %s, finished %s\n", m.Habench["version"], m.Started.Format("2006-01-02 15:04:05 UTC"), m.Finished.Format("15:04:05 UTC"))
	fmt.Fprintf(b, "- command: `%s`\n", strings.Join(m.CommandLine, " "))
	if m.Binaries != nil {
		if m.Topology != nil && !deploys(*m.Topology) {
			fmt.Fprintf(b, "- servers: %s (existing cluster, not deployed by habench)\n", m.Binaries.VersionText)
		} else {
			fmt.Fprintf(b, "- servers: %s (%s installation)\n", m.Binaries.VersionText, m.Binaries.Installation.Kind)
		}
	}
	if d, ok := m.Links["description"]; ok {
		fmt.Fprintf(b, "- links: %v\n", d)
	}
	if hl := report.HostsLine(m.Hosts); hl != "" {
		fmt.Fprintf(b, "- hosts: %s (%s)\n", hl, report.HostsNote)
		var lags []*float64
		for _, n := range s.Nodes {
			lags = append(lags, n.ApplierLagMaxS)
		}
		if w := report.ClockWarning(m.Hosts, report.MaxOf(lags)); w != "" {
			fmt.Fprintf(b, "- **warning:** %s\n", w)
		}
	}
	if cd := report.CacheDropsLine(m.CacheDrops); cd != "" {
		fmt.Fprintf(b, "- page cache: %s\n", cd)
	}
}

// linkImpairmentSection writes the links impairment: how it was applied, the impairment
// per directed link and the measured round trips (ms) of each link.
func linkImpairmentSection(b *strings.Builder, lr *LinkReport) {
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
func workloadLines(b *strings.Builder, m *Manifest, s *Summary) {
	opts, _ := m.Workload["options"].(map[string]string)
	fmt.Fprintf(b, "- workload: %v, %d threads, %s tables x %s rows, time %ss, rand-type %s, db-ps-mode %s\n", m.Workload["name"], s.Threads, opts["tables"], opts["table-size"], opts["time"], s.RandType, s.PSMode)
	if note, ok := m.Workload["id_space"].(string); ok {
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
func throughputSection(b *strings.Builder, s *Summary) {
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
func nodesSection(b *strings.Builder, m *Manifest, s *Summary) {
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
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %d | %.0f |\n", n.Node, role, ver[n.Node], report.NodeLagText(n.LagMaxS, n.LagUnknownS, "%.3f"), fmtOpt(n.LagAvgS, "%.3f"), fmtOpt(n.BacklogMaxTrx, "%.0f"), n.Samples, n.SamplerErrors)
	}
	b.WriteString("\nrole: at the start of the run, and after the arrow at its end when a fault of the run changed it (a promote); (down): no sampler reached it at the end. lag = visibility lag of a heartbeat row the writer (the source, primary, or first Galera node) writes every 100 ms (0 = the node shows the newest one); backlog = transactions committed on the writer and not yet applied on the node (includes the heartbeat's 10 writes per second). n/a = not applicable (e.g. backlog on the writer) or no sample (node unreachable, sampler failing: see sampler errors). ≥ max (unknown for N s): for N s the node's lag could not be measured (unreadable, outside the Galera Primary component, not ONLINE for the group's majority), so it may have been larger.\n")
	if s.SamplesWindow != "" {
		b.WriteString("\nThese figures, and the semi-sync, group and Galera ones below, cover the samples " + s.SamplesWindow + " (the warm-up excluded, as TPS and latency).\n")
	}
}

// convergenceText writes whether the nodes converged after the run: the convergence
// check's verdict, or in older summaries replicas_consistent.
func convergenceText(b *strings.Builder, s *Summary) {
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
func settingsSection(b *strings.Builder, m *Manifest) {
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

// Plural renders "1 node", "3 nodes".
func Plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	if strings.HasSuffix(word, "y") && !strings.HasSuffix(word, "ay") && !strings.HasSuffix(word, "ey") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// WriteRunReport renders report.md of the run directory dir again from its
// manifest.json and summary.json (what `habench report DIR` does for a run, as it
// renders report.html and report.csv). Error when either cannot be read.
func WriteRunReport(dir string) error {
	m, s, err := ReadRun(dir)
	if err != nil {
		return err
	}
	return (&Results{Dir: dir}).WriteFile("report.md", Report(m, s))
}

// ReadRun reads a run directory's manifest.json and summary.json, the links impairment
// and workload options typed as the run had them.
func ReadRun(dir string) (*Manifest, *Summary, error) {
	var m Manifest
	var s Summary
	for name, v := range map[string]any{"manifest.json": &m, "summary.json": &s} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
	}
	if raw, ok := m.Links["impairment"]; ok {
		if b, err := json.Marshal(raw); err == nil {
			var lr LinkReport
			if json.Unmarshal(b, &lr) == nil {
				m.Links["impairment"] = &lr
			}
		}
	}
	if o, ok := m.Workload["options"].(map[string]any); ok {
		opts := map[string]string{}
		for k, v := range o {
			opts[k] = fmt.Sprint(v)
		}
		m.Workload["options"] = opts
	}
	return &m, &s, nil
}
