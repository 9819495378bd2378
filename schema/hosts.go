package schema

// HostSummary is one host's CPU and I/O over the measured part of the run (the ticks
// after measurement started and up to its end, intervals_offset_s to intervals_offset_s +
// time_s on the samples' clock). Fractions are 0..1 of all the host's CPUs; nil: no sample.
type HostSummary struct {
	Host  string   `json:"host"`
	Nodes []string `json:"nodes"`
	// CPUs is the host's CPU count (host_cpus).
	CPUs int `json:"cpus,omitempty"`
	// Samples is the number of busy-fraction samples in the measured part.
	Samples     int      `json:"samples"`
	CPUBusyMean *float64 `json:"cpu_busy_mean"`
	CPUBusyMax  *float64 `json:"cpu_busy_max"`
	IOWaitMean  *float64 `json:"cpu_iowait_mean"`
	StealMean   *float64 `json:"cpu_steal_mean"`
	// ProcsRunningMean and ProcsRunningMax are procs_running (runnable threads, the reader included).
	ProcsRunningMean *float64 `json:"procs_running_mean"`
	ProcsRunningMax  *float64 `json:"procs_running_max"`
	// DiskRead/WriteMean and NetRx/TxMean are bytes per second (net: the host's own
	// interfaces, for nodes without a namespace of their own).
	DiskReadMean  *float64 `json:"disk_read_bytes_ps_mean"`
	DiskWriteMean *float64 `json:"disk_write_bytes_ps_mean"`
	NetRxMean     *float64 `json:"net_rx_bytes_ps_mean,omitempty"`
	NetTxMean     *float64 `json:"net_tx_bytes_ps_mean,omitempty"`
	// SaturatedShare is the share of Samples with busy >= sampler.CPUSaturatedBusy;
	// CPUSaturated is sampler.CPUSaturated's verdict.
	SaturatedShare float64 `json:"cpu_saturated_share"`
	CPUSaturated   bool    `json:"cpu_saturated"`
	// ServerCPU is each node's own server process's mean CPU in cores (sandboxes).
	ServerCPU map[string]float64 `json:"mysqld_cpu_cores_mean,omitempty"`
}

// BusiestHost is the host of s (a nil s too) with the highest mean CPU busy fraction over the measured
// part, nil when no host has busy samples.
func (s *Summary) BusiestHost() *HostSummary {
	if s == nil {
		return nil
	}
	var best *HostSummary
	for i := range s.Hosts {
		h := &s.Hosts[i]
		if h.CPUBusyMean != nil && (best == nil || *h.CPUBusyMean > *best.CPUBusyMean) {
			best = h
		}
	}
	return best
}
