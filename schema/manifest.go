package schema

import "time"

// ManifestFile is the name of a run's manifest in its results directory.
const ManifestFile = "manifest.json"

// HostInfo is one machine the run's nodes ran on, as manifest.json "hosts" lists it: the
// name its machine-wide samples carry (samples.csv node "host:<name>") and its nodes. For
// a host other than this machine (a node reached over SSH: hosts provider, existing
// cluster with ssh:) also its clock offset, measured once at the start of the run
// (host.ClockOffset), and its server where known; a local sandbox's "local" shares this
// machine's clock and has neither.
type HostInfo struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
	// OffsetMs is the host's wall clock minus this machine's, in milliseconds; the true
	// offset lies within OffsetMs ± UncertaintyMs (half the shortest round trip). Both
	// are absent on this machine and when the clock could not be read (ClockError).
	OffsetMs      *float64 `json:"offset_ms,omitempty"`
	UncertaintyMs *float64 `json:"uncertainty_ms,omitempty"`
	// ClockError says why the clock was not measured: its nodes' applier_lag_s is then
	// not corrected.
	ClockError string `json:"clock_error,omitempty"`
	// Server is the server the nodes run there: the binary and its version the hosts
	// provider found on the host, else the version the nodes report (@@version).
	Server string `json:"server,omitempty"`
}

// ClockMeasured reports whether the host's clock was measured or tried (a host other
// than this machine).
func (h HostInfo) ClockMeasured() bool { return h.OffsetMs != nil || h.ClockError != "" }

// CacheDrop is one entry of manifest.json "drop_caches": the page cache of a host of the
// cluster dropped before the run (a scenario's cell: {drop_caches: true}): the host, its
// nodes, when (UTC) and how long sync and the drop took, in seconds.
type CacheDrop struct {
	Host  string    `json:"host"`
	Nodes []string  `json:"nodes"`
	At    time.Time `json:"at"`
	TookS float64   `json:"took_s"`
}
