package report

import (
	"fmt"
	"strings"
)

// ClientsNote explains the Clients table.
const ClientsNote = "The workload ran from these client hosts, each with its share of the threads and of any --rate; the run's numbers are their exact merge (histograms merged, counters summed; percentiles never averaged). CPU = the CPU its habench used, in cores, of the CPUs it has; CPU-bound = at least 90% of them: that client, not the servers, may have set the pace. Clock offset = the host's clock minus this machine's, measured at the start (each client's start was moved by it)."

// ClientsSection renders report.md's Clients section of run r driven from client hosts
// (summary.json clients, manifest.json clients for the clock offsets): a row per client
// (threads, transactions, TPS, p95 and p99 ms, CPU, clock offset, lost); "" for a run
// without clients.
func ClientsSection(r *Run) string {
	t := clientsTable(clientTable(r))
	if t == "" {
		return ""
	}
	return "\n## Clients\n\n" + t + "\n" + ClientsNote + "\n"
}

// clientStats is one client's row of a run's Clients table, as text.
type clientStats struct {
	Client, Threads, Transactions, TPS, P95, P99, CPU, Bound, Offset, Lost string
	// Flagged: the client was CPU-bound or lost (the row is marked).
	Flagged bool
}

// clientTable is a run's Clients table (summary.json clients, with the clock offsets of
// manifest.json clients), one row per client; nil for a run without clients.
func clientTable(r *Run) []clientStats {
	if r.Summary == nil {
		return nil
	}
	offset := map[string]string{}
	for _, h := range r.Manifest.Clients {
		switch {
		case h.OffsetMs != nil && h.UncertaintyMs != nil:
			offset[h.Name] = fmt.Sprintf("%+.3f ms ± %.3f", *h.OffsetMs, *h.UncertaintyMs)
		case h.ClockError != "":
			offset[h.Name] = "not measured: " + h.ClockError
		}
	}
	var out []clientStats
	for _, c := range r.Summary.Clients {
		row := clientStats{Client: c.Client, Threads: fmt.Sprint(c.Threads), Transactions: fmt.Sprint(c.Transactions), TPS: fmt.Sprintf("%.2f", c.TPS),
			P95: fmt.Sprintf("%.2f", c.LatencyP95Ms), P99: fmt.Sprintf("%.2f", c.LatencyP99Ms), CPU: fmt.Sprintf("%.2f of %d", c.CPUCores, c.CPUs),
			Bound: "no", Offset: orDash(offset[c.Client]), Lost: "no", Flagged: c.CPUBound || c.Lost != ""}
		if c.CPUs == 0 {
			row.CPU = "unknown"
		}
		if c.CPUBound {
			row.Bound = "yes"
		}
		if c.Lost != "" {
			row.Lost = c.Lost
		}
		out = append(out, row)
	}
	return out
}

// clientsTable is the Clients table's markdown ("" without rows).
func clientsTable(rows []clientStats) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| client | threads | transactions | TPS | p95 ms | p99 ms | CPU cores | CPU-bound | clock offset | lost mid-run |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range rows {
		bound, lost := c.Bound, mdEscape(c.Lost)
		if c.Bound == "yes" {
			bound = "**yes**"
		}
		if c.Lost != "no" {
			lost = "**" + lost + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(c.Client), c.Threads, c.Transactions, c.TPS,
			c.P95, c.P99, c.CPU, bound, mdEscape(c.Offset), lost)
	}
	return b.String()
}
