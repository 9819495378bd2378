package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/habench/habench/sampler"
)

// HostSummary is one entry of summary.json "hosts": a machine the nodes ran on and its CPU
// over the measured part of the run (fractions 0..1 of all its CPUs; nil: no sample).
type HostSummary struct {
	Host             string             `json:"host"`
	Nodes            []string           `json:"nodes"`
	CPUs             int                `json:"cpus"`
	Samples          int                `json:"samples"`
	CPUBusyMean      *float64           `json:"cpu_busy_mean"`
	CPUBusyMax       *float64           `json:"cpu_busy_max"`
	IOWaitMean       *float64           `json:"cpu_iowait_mean"`
	StealMean        *float64           `json:"cpu_steal_mean"`
	ProcsRunningMean *float64           `json:"procs_running_mean"`
	ProcsRunningMax  *float64           `json:"procs_running_max"`
	DiskReadMean     *float64           `json:"disk_read_bytes_ps_mean"`
	DiskWriteMean    *float64           `json:"disk_write_bytes_ps_mean"`
	SaturatedShare   float64            `json:"cpu_saturated_share"`
	CPUSaturated     bool               `json:"cpu_saturated"`
	ServerCPU        map[string]float64 `json:"mysqld_cpu_cores_mean"`
}

// BusiestHost is the run's host with the highest mean CPU busy fraction over the
// measured part (summary.json hosts), nil when there is none.
func (r *Run) BusiestHost() *HostSummary {
	if r.Summary == nil {
		return nil
	}
	var best *HostSummary
	for i := range r.Summary.Hosts {
		h := &r.Summary.Hosts[i]
		if h.CPUBusyMean != nil && (best == nil || *h.CPUBusyMean > *best.CPUBusyMean) {
			best = h
		}
	}
	return best
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
