package report

import (
	"fmt"
	"strings"

	"github.com/habench/habench/schema"
)

// ClientsNote explains the Clients table.
const ClientsNote = "The workload ran from these client hosts, each with its share of the threads and of any --rate; the run's numbers are their exact merge (histograms merged, counters summed; percentiles never averaged). CPU = the CPU its habench used, in cores, of the CPUs it has; CPU-bound = at least 90% of them: that client, not the servers, may have set the pace. Clock offset = the host's clock minus this machine's, measured at the start (each client's start was moved by it)."

// ClientsSection renders report.md's Clients section of a run driven from client hosts
// (summary.json clients, manifest.json clients for the clock offsets): a row per client
// (threads, transactions, TPS, p95 and p99 ms, CPU, lost); "" for a run without clients.
func ClientsSection(s *schema.Summary, m *schema.Manifest) string {
	if s == nil || len(s.Clients) == 0 {
		return ""
	}
	return "\n## Clients\n\n" + clientsTable(s.Clients, m.Clients) + "\n" + ClientsNote + "\n"
}

// clientsTable is the Clients table's markdown: one row per client of rows, with its
// clock offset from hosts.
func clientsTable(rows []schema.ClientSummary, hosts []schema.ClientHost) string {
	offset := map[string]string{}
	for _, h := range hosts {
		switch {
		case h.OffsetMs != nil && h.UncertaintyMs != nil:
			offset[h.Name] = fmt.Sprintf("%+.3f ms ± %.3f", *h.OffsetMs, *h.UncertaintyMs)
		case h.ClockError != "":
			offset[h.Name] = "not measured: " + mdEscape(h.ClockError)
		}
	}
	var b strings.Builder
	b.WriteString("| client | threads | transactions | TPS | p95 ms | p99 ms | CPU cores | CPU-bound | clock offset | lost mid-run |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range rows {
		cpu, bound := fmt.Sprintf("%.2f of %d", c.CPUCores, c.CPUs), "no"
		if c.CPUs == 0 {
			cpu = "unknown"
		}
		if c.CPUBound {
			bound = "**yes**"
		}
		lost := "no"
		if c.Lost != "" {
			lost = "**" + mdEscape(c.Lost) + "**"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %.2f | %.2f | %s | %s | %s | %s |\n", mdEscape(c.Client), c.Threads, c.Transactions, c.TPS,
			c.LatencyP95Ms, c.LatencyP99Ms, cpu, bound, orDash(offset[c.Client]), lost)
	}
	return b.String()
}
