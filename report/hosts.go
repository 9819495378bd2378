package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
)

// BusiestHost is the run's host with the highest mean CPU busy fraction over the
// measured part (summary.json hosts), nil when there is none.
func (r *Run) BusiestHost() *schema.HostSummary {
	return r.Summary.BusiestHost()
}

// busiestCell is the comparison's "busiest host CPU" cell: "local 97% / 100% CPU-bound",
// "n/a" without host samples.
func busiestCell(r Row) string {
	h := r.Run.BusiestHost()
	if h == nil {
		return "n/a"
	}
	s := fmt.Sprintf("%s %s / %s", h.Host, pct01(h.CPUBusyMean), pct01(h.CPUBusyMax))
	if h.CPUSaturated {
		s += " CPU-bound"
	}
	return s
}

// pct01 renders a 0..1 fraction as a whole percentage ("n/a" for nil).
func pct01(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", *p*100)
}

// hostStats is one host's line in a run's Hosts table.
type hostStats struct {
	Host, Nodes, CPUs, BusyMean, BusyMax, IOWait, Steal, RunQueue, Disk, ServerCPU, Saturated string
	Bound                                                                                     bool
}

// hostTable is the run's hosts (summary.json), one line each.
func hostTable(r *Run) []hostStats {
	if r.Summary == nil {
		return nil
	}
	var out []hostStats
	for _, h := range r.Summary.Hosts {
		var srv []string
		for _, n := range slices.Sorted(maps.Keys(h.ServerCPU)) {
			srv = append(srv, fmt.Sprintf("%s %.2f", n, h.ServerCPU[n]))
		}
		hs := hostStats{Host: h.Host, Nodes: strings.Join(h.Nodes, ", "), CPUs: fmt.Sprint(h.CPUs),
			BusyMean: pct01(h.CPUBusyMean), BusyMax: pct01(h.CPUBusyMax), IOWait: pct01(h.IOWaitMean), Steal: pct01(h.StealMean),
			RunQueue: fmtOpt(h.ProcsRunningMean, "%.1f") + " / " + fmtOpt(h.ProcsRunningMax, "%.0f"),
			Disk:     mb(h.DiskReadMean) + " / " + mb(h.DiskWriteMean), ServerCPU: strings.Join(srv, ", "), Saturated: "no", Bound: h.CPUSaturated}
		if h.CPUSaturated {
			hs.Saturated = fmt.Sprintf("yes (%.0f%% of seconds)", h.SaturatedShare*100)
		}
		out = append(out, hs)
	}
	return out
}

func mb(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", *p/1e6)
}

// hostsNote explains the Hosts table and the CPU-saturation rule.
var hostsNote = fmt.Sprintf("Over the measured part of the run. busy = share of all the host's CPU time neither idle nor waiting for I/O (/proc/stat; steal counts as busy); CPU-saturated = busy >= %.0f%% in at least %.0f%% of the measured seconds. Nodes on one host share its numbers (counted once).",
	sampler.CPUSaturatedBusy*100, sampler.CPUSaturatedShare*100)

// HostsLine names the run's remote hosts with their nodes, clock offsets and servers,
// "; "-separated: "ssh db1 (n1, n3): clock +0.012 ± 0.150 ms, mariadbd 10.11.6; ssh db2
// (n2): clock not measured (...)". "" when no host was measured (a local sandbox, a run
// without a cluster, a manifest of an older habench).
func HostsLine(hs []schema.HostInfo) string {
	var parts []string
	for _, h := range hs {
		if !h.ClockMeasured() {
			continue
		}
		p := fmt.Sprintf("%s (%s): ", h.Name, strings.Join(h.Nodes, ", "))
		if h.OffsetMs != nil {
			p += fmt.Sprintf("clock %+.3f ± %.3f ms", *h.OffsetMs, deref(h.UncertaintyMs))
		} else {
			p += "clock not measured (" + h.ClockError + ")"
		}
		if h.Server != "" {
			p += ", " + h.Server
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// HostsNote explains HostsLine's offsets.
const HostsNote = "clock = the host's clock minus this machine's, measured at the start of the run over SSH (the round trip with the shortest time of 8; ± half that round trip); applier_lag_s, which compares a replica's clock with its source's, is corrected by it."

// ClockWarning is one line when a host's clock offset is less certain than the largest
// applier lag reported (applierLagMaxS, seconds: the largest applier_lag_s of the run's
// nodes, summary.json nodes[].applier_lag_max_s): that lag then says only that it is below
// the clocks' uncertainty. "" when no uncertainty is larger, or no applier lag was
// reported (nil: MariaDB, Galera, a single node).
func ClockWarning(hs []schema.HostInfo, applierLagMaxS *float64) string {
	if applierLagMaxS == nil {
		return ""
	}
	lagMs := *applierLagMaxS * 1000
	var over []string
	for _, h := range hs {
		if h.UncertaintyMs != nil && *h.UncertaintyMs > lagMs {
			over = append(over, fmt.Sprintf("%s ± %.3f ms", h.Name, *h.UncertaintyMs))
		}
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("the clock offsets of %s are less certain than the largest applier lag reported (%.3f ms): applier_lag_s says only that the lag was below that uncertainty",
		strings.Join(over, ", "), lagMs)
}

// ApplierLagMax is the largest applier_lag_max_s of the run's nodes (summary.json), nil
// when none has one (or the run has no summary).
func (r *Run) ApplierLagMax() *float64 {
	if r.Summary == nil {
		return nil
	}
	var lags []*float64
	for _, n := range r.Summary.Nodes {
		lags = append(lags, n.ApplierLagMaxS)
	}
	return MaxOf(lags)
}

// MaxOf is the largest of the non-nil values, nil when there is none.
func MaxOf(vs []*float64) *float64 {
	var best *float64
	for _, l := range vs {
		if l != nil && (best == nil || *l > *best) {
			v := *l
			best = &v
		}
	}
	return best
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// CacheDropsLine says where the page cache was dropped before the run: "dropped before
// the run (sync; echo 3 > /proc/sys/vm/drop_caches) on local (n1, n2) in 0.4 s". "" when
// it was not.
func CacheDropsLine(ds []schema.CacheDrop) string {
	if len(ds) == 0 {
		return ""
	}
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s (%s) in %.1f s", d.Host, strings.Join(d.Nodes, ", "), d.TookS))
	}
	return "dropped before the run (sync; echo 3 > /proc/sys/vm/drop_caches) on " + strings.Join(parts, ", ")
}
