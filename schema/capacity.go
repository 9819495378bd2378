package schema

// Capacity is a cell's capacity search (sweep.json cells[].capacity; a scenario's
// objective: section): the highest open-loop rate at which every objective held over the
// measured window, the lowest rate probed that missed one, and every probe.
type Capacity struct {
	// Objective is the objective as one line ("p99 ≤ 50ms, errors ≤ 0%, rate kept up").
	Objective string `json:"objective"`
	// Rate is the highest rate probed that met every objective, events per second (0:
	// none did); Missed the lowest rate probed that missed one (0: none did).
	Rate   int `json:"rate"`
	Missed int `json:"missed,omitempty"`
	// BoundBy are the objectives the probe at Missed missed ("p99", "lag", "fc_paused",
	// "errors", "rate"): what bound the cell.
	BoundBy []string `json:"bound_by,omitempty"`
	// Converged: Missed is within Precision above Rate (or the next whole rate).
	Converged bool `json:"converged"`
	// Precision is the requested relative gap (0.05); Gap the one reached (Missed/Rate-1,
	// absent without both).
	Precision float64  `json:"precision"`
	Gap       *float64 `json:"gap,omitempty"`
	// CalibrationTPS is the closed-loop calibration run's TPS (absent with start:).
	CalibrationTPS float64 `json:"calibration_tps,omitempty"`
	// Note says why the search stopped unconverged ("" when converged).
	Note   string          `json:"note,omitempty"`
	Probes []CapacityProbe `json:"probes"`
	// Failover is the run at Rate with the writer killed (objective failover: true; nil
	// without it, or when no rate met the objective).
	Failover *CapacityFailover `json:"failover,omitempty"`
}

// CapacityFailover is the failover run after a capacity search: the writer killed at the
// rate found, after a full window at it (summary.json faults[0] of its run).
type CapacityFailover struct {
	Rate int    `json:"rate"`
	Node string `json:"node"`
	// FailoverS is the failover's cost as the workload saw it: seconds from the kill until
	// the workers committed on the new writer (ClientWriterS, single-writer kinds), or
	// until every worker that was on the node committed on another (ClientFailoverS,
	// Galera), else until the commits were back to normal (RecoveryS); nil: not by the
	// end of the run.
	FailoverS *float64 `json:"failover_s"`
	// The fault's own measures (FaultSummary): the writer named and when, the workers'
	// first commit there, the client failover, the recovery, the largest lag after it.
	NewWriter       string   `json:"new_writer,omitempty"`
	NewWriterS      *float64 `json:"new_writer_s,omitempty"`
	ClientWriterS   *float64 `json:"client_writer_s,omitempty"`
	ClientFailoverS *float64 `json:"client_failover_s,omitempty"`
	RecoveryS       *float64 `json:"recovery_s,omitempty"`
	PeakLagS        *float64 `json:"peak_lag_s,omitempty"`
	// RestartS is when the killed node was started again, seconds after the kill (three
	// quarters into the run's tail); Note says why FailoverS is nil when the failover was
	// not over by then.
	RestartS float64 `json:"restart_s"`
	Note     string  `json:"note,omitempty"`
	// Dir is the run's directory, relative to the sweep directory.
	Dir string `json:"dir,omitempty"`
}

// CapacityProbe is one run of a capacity search: the calibration run (Rate 0, closed
// loop), or an open-loop run at Rate.
type CapacityProbe struct {
	// Rate is the rate asked (--rate), events per second; 0 for the calibration run.
	Rate int `json:"rate"`
	// TPS is the rate achieved over the measured window.
	TPS float64 `json:"tps"`
	// LatencyMs are the objective's percentiles, queueing included (ms).
	LatencyMs map[string]float64 `json:"latency_ms,omitempty"`
	// LagMaxS is the largest replica lag (s); FCPaused the largest fraction of the window
	// a node was paused or throttled by flow control; ErrorsPerTrx the ignored errors per
	// transaction. Each only when the objective bounds it.
	LagMaxS  *float64 `json:"lag_max_s,omitempty"`
	FCPaused *float64 `json:"fc_paused,omitempty"`
	// BacklogMaxTrx is the largest backlog of any node (transactions received and not
	// applied yet, summary.json nodes[].backlog_max_trx), when measured.
	BacklogMaxTrx *float64 `json:"backlog_max_trx,omitempty"`
	ErrorsPerTrx  float64  `json:"errors_per_trx"`
	// Met says every objective held; Missed names those that did not and Why says by how
	// much ("p99 63.2ms > 50ms"). The calibration run is not judged.
	Met    bool     `json:"met"`
	Missed []string `json:"missed,omitempty"`
	Why    []string `json:"why,omitempty"`
	// Dir is the probe's run directory, relative to the sweep directory.
	Dir string `json:"dir,omitempty"`
}
