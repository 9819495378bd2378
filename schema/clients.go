package schema

// ClientHost is one entry of manifest.json "clients": a client host the run's workload
// was driven from (topology.Clients), with the habench that ran there and its clock
// offset to this machine, measured once at the start of the run (host.ClockOffset).
type ClientHost struct {
	Name string `json:"name"`
	// Habench is the habench that ran there: the path given (clients.bin, --client-bin),
	// or a note that a copy of this habench was made for the run and removed after it.
	Habench string `json:"habench"`
	// OffsetMs is the host's wall clock minus this machine's, in milliseconds, within ±
	// UncertaintyMs (half the shortest round trip); the client's start was moved by it.
	// Both absent when the clock could not be read (ClockError).
	OffsetMs      *float64 `json:"offset_ms,omitempty"`
	UncertaintyMs *float64 `json:"uncertainty_ms,omitempty"`
	ClockError    string   `json:"clock_error,omitempty"`
}

// ClientSummary is one entry of summary.json "clients": one client host's own share of a
// run driven from several (the run's own numbers are their exact merge).
type ClientSummary struct {
	Client  string `json:"client"`
	Threads int    `json:"threads"`
	// Transactions and TPS are its completed events and their rate over its own time.
	Transactions int64   `json:"transactions"`
	TPS          float64 `json:"tps"`
	// LatencyP95Ms and LatencyP99Ms are its own percentiles, in milliseconds.
	LatencyP95Ms float64 `json:"latency_p95_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	// CPUCores is the CPU its habench used, in cores (0 when unknown: a lost client), of
	// CPUs; CPUBound is true when it used at least 90% of them: the client, not the
	// servers, may have set the pace.
	CPUCores float64 `json:"cpu_cores"`
	CPUs     int     `json:"cpus"`
	CPUBound bool    `json:"cpu_bound,omitempty"`
	// Lost says when and why the client was lost mid-run ("" when it was not): its
	// numbers, and its part of the run's, are those it reported until then.
	Lost string `json:"lost,omitempty"`
}
