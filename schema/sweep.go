package schema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/habench/habench/stats"
)

// SweepName is the name of a scenario run's record in its results directory.
const SweepName = "sweep.json"

// Cell statuses in sweep.json (CellRecord.Status).
const (
	StatusPending = "pending" // not run yet
	StatusRunning = "running" // started; stays so only when habench was killed during it
	StatusDone    = "done"
	StatusFailed  = "failed" // error or interrupted: Error says which
	StatusReused  = "reused" // not run: it cannot differ from cell ReusedFrom, whose runs stand for it
)

// SweepFormat is the layout version of sweep.json.
const SweepFormat = 1

// SweepFile is sweep.json, the record of a scenario run: what the grid is and, per cell,
// what was requested, what the servers reported, where the results are and the headline
// numbers. It is rewritten after every cell, so an interrupted sweep can be resumed.
type SweepFile struct {
	Format      int    `json:"format"`
	Scenario    string `json:"scenario"`
	Description string `json:"description,omitempty"`
	// ScenarioFile is the copy of the scenario file in this directory; ScenarioSHA256 its
	// hash, which --resume checks.
	ScenarioFile   string `json:"scenario_file"`
	ScenarioSHA256 string `json:"scenario_sha256"`
	Scale          string `json:"scale"`
	Workload       string `json:"workload"`
	// Baseline is the topology the others are compared with; "" when the scenario has
	// one topology, which has nothing to be compared with.
	Baseline string `json:"baseline"`
	// Links are the scenario's standing links between the nodes of each multi-node
	// topology, one-way, in `habench netem apply` form ("" without; added in format 1,
	// absent from older files until they are resumed).
	Links string `json:"links,omitempty"`
	// WorkloadOptions are the scaled sysbench options every cell starts from (threads and
	// test may be axes).
	WorkloadOptions map[string]string `json:"workload_options"`
	Policy          CellPolicy        `json:"cell_policy"`
	Axes            []SweepAxis       `json:"axes"`
	Invocations     []Invocation      `json:"invocations"`
	Cells           []CellRecord      `json:"cells"`
	// Summary is, per point of the grid (a cell and its repeats), TPS and latency as
	// mean, min-max and 95% CI over the repeats, against the baseline topology and along
	// each axis (stats.Cell); written when the sweep ends, from the cells that ran.
	Summary []*stats.Cell `json:"cell_summaries,omitempty"`
}

// SweepAxis is one axis in sweep.json, in expansion order.
type SweepAxis struct {
	Name   string   `json:"name"`
	Kind   AxisKind `json:"kind"`
	Values []string `json:"values"`
	// Variables are the server variables each value of an option or knob axis sets.
	Variables []string `json:"variables,omitempty"`
	// Reference is the value the axis' changes are against (the first unless the
	// scenario names one); Inert the topologies the axis cannot change (links on a single
	// node), whose cells for the other values are not run.
	Reference string   `json:"reference,omitempty"`
	Inert     []string `json:"inert_for,omitempty"`
}

// Invocation is one `habench run` (or --resume) that worked on the directory.
type Invocation struct {
	Started     time.Time  `json:"started"`
	Finished    *time.Time `json:"finished,omitempty"`
	CommandLine []string   `json:"command_line,omitempty"`
	Resume      bool       `json:"resume"`
	CellsRun    []int      `json:"cells_run"`
	Error       string     `json:"error,omitempty"`
}

// CellLatency is a cell's latency in milliseconds.
type CellLatency struct {
	Avg float64 `json:"avg"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// CellRecord is one cell in sweep.json.
type CellRecord struct {
	Index int `json:"index"`
	// Axes are the requested values by axis name, as in the scenario file.
	Axes     map[string]string `json:"axes"`
	Topology string            `json:"topology"`
	Kind     string            `json:"kind"`
	Flavor   string            `json:"flavor"`
	// Version is the server version that ran (from the deployed binaries).
	Version string `json:"version,omitempty"`
	Test    string `json:"test"`
	Threads int    `json:"threads"`
	// Links is "none" or the impairment in `habench netem apply` form.
	Links  string `json:"links"`
	Repeat int    `json:"repeat,omitempty"`
	// Requested are the option and knob axes' variables and requested values.
	Requested map[string]string `json:"requested,omitempty"`
	// ReadBack is what every node reported for those variables before the run:
	// variable -> node -> value.
	ReadBack map[string]map[string]string `json:"read_back,omitempty"`
	// Values are the option and knob axes' values as read back (the swept value of the
	// cell): the nodes' common value, "var=value,..." for several variables, or
	// "n1=..,n2=.." when the nodes differ.
	Values map[string]string `json:"values,omitempty"`
	Status string            `json:"status"`
	// LinksControl is set on a links=none cell run through the userspace link at zero
	// delay (the same path as the delayed cells); LinkAddedMs is the round trip the cell's
	// link added to the plain bridge, median over the node pairs, in ms (for the control:
	// the link's own cost).
	LinksControl string   `json:"links_control,omitempty"`
	LinkAddedMs  *float64 `json:"link_added_rtt_ms,omitempty"`
	// ReusedFrom is, with status reused, the index of the cell whose runs stand for this one.
	ReusedFrom int    `json:"reused_from,omitempty"`
	Error      string `json:"error,omitempty"`
	// ErrorLog is, for a cell that failed on one node (a restart that did not come back,
	// a node not ready in time), the file with the last lines of that node's server error
	// log, kept before the deployment was destroyed, relative to the sweep directory
	// ("c003-g1-n3-error.log").
	ErrorLog string   `json:"error_log,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Anomalies is how many anomalies the checker workload found (nil without one);
	// CheckerValid its verdict, CheckerOK how many of its operations committed and
	// CheckerError why it could not run or be checked (summary.json checks: valid, ok,
	// error).
	Anomalies *int `json:"anomalies,omitempty"`
	// AnomalyTypes counts them by type, as summary.json checks.anomaly_types
	// ("lost-update": 3); nil when none were found.
	AnomalyTypes map[string]int `json:"anomaly_types,omitempty"`
	// ReadChecks and StaleReads are the read-your-writes checks on the read nodes
	// (workload.read_nodes) and the stale reads among them, summed over the read nodes
	// (Summary.StaleReads); nil without read nodes.
	ReadChecks   *int64 `json:"read_checks,omitempty"`
	StaleReads   *int64 `json:"stale_reads,omitempty"`
	CheckerValid *bool  `json:"checker_valid,omitempty"`
	CheckerOK    *int   `json:"checker_ok,omitempty"`
	CheckerError string `json:"checker_error,omitempty"`
	// Dir is the cell's run directory, relative to the sweep directory.
	Dir          string     `json:"dir,omitempty"`
	PreviousDirs []string   `json:"previous_dirs,omitempty"`
	Started      *time.Time `json:"started,omitempty"`
	Finished     *time.Time `json:"finished,omitempty"`
	// WallS is the cell's wall time (restart, prepare, knobs, run, catch-up) in seconds;
	// DeployS the deploy time of its deployment.
	WallS   float64 `json:"wall_s,omitempty"`
	DeployS float64 `json:"deploy_s,omitempty"`
	// Capacity is the cell's capacity search (a scenario with objective:); the headline
	// numbers below are then the run at Capacity.Rate's (or, none met, the last run's).
	Capacity *Capacity `json:"capacity,omitempty"`
	// Headline numbers from the run's summary.json.
	TPS            float64      `json:"tps"`
	QPS            float64      `json:"qps"`
	LatencyMs      *CellLatency `json:"latency_ms,omitempty"`
	Transactions   int64        `json:"transactions"`
	IgnoredErrors  int64        `json:"ignored_errors"`
	MaxReplicaLagS *float64     `json:"max_replica_lag_s,omitempty"`
	// LagUnknown names the nodes whose lag could not be measured for a while and for how
	// long ("n3 unknown for 9 s"); MaxReplicaLagS cannot see those seconds.
	LagUnknown string `json:"lag_unknown,omitempty"`
	// Via is "proxy" when the workers connected through the topology's proxy ("" direct).
	Via string `json:"via,omitempty"`
	// Faults are the run's faults as its summary.json measured them (nil without faults):
	// each layer's time of a failover, side by side across cells in sweep.md.
	Faults []FaultSummary `json:"faults,omitempty"`
}

// AxisKind says what a sweep axis varies and therefore what a cell must do to change it.
type AxisKind string

// Axis kinds, in the order a sweep expands them (outermost first): changing a topology
// or a deploy-time option needs a new deployment, a runtime knob a SET GLOBAL, the rest
// only the next run's settings.
const (
	AxisTopology AxisKind = "topology" // which topology of the scenario
	AxisOption   AxisKind = "option"   // server option written to the option file: a redeploy per value
	AxisKnob     AxisKind = "knob"     // runtime variable: SET GLOBAL on every node, read back
	AxisLinks    AxisKind = "links"    // one-way impairment between the nodes (netem.Request)
	AxisVia      AxisKind = "via"      // how the workers reach the servers: direct, or through the topology's proxy
	AxisTest     AxisKind = "test"     // sysbench test name (oltp_read_write, oltp_read_only, ...)
	AxisThreads  AxisKind = "threads"  // worker threads
	AxisRepeat   AxisKind = "repeat"   // repetition number 1..repeats
)

// CellPolicy is sweep.json's cell_policy: what happened before each cell's run (the
// scenario's `cell:` section as the run applied it).
type CellPolicy struct {
	// Prepare is "reuse" (prepare once per deployment) or "reprepare" (before every cell).
	Prepare PreparePolicy `json:"prepare"`
	// Restart: every server was stopped and started before each cell.
	Restart bool `json:"restart"`
	// DropCaches: the OS page cache was dropped before each cell.
	DropCaches bool `json:"drop_caches"`
	// Warmup is how long the workload ran before each measured run (excluded).
	Warmup *Duration `json:"warmup,omitempty"`
	// Order is the run order of a deployment's cells: "interleaved" (the repeats taken in
	// turn: A B A B) or "blocked" (A A B B); absent in a sweep.json written before it
	// existed (blocked).
	Order string `json:"order,omitempty"`
}

// PreparePolicy says whether the sbtest data was loaded once per deployment ("reuse")
// or again before every cell ("reprepare").
type PreparePolicy string

// ReadSweep reads dir/sweep.json. Errors: os.ReadFile's when it cannot be read (a
// missing file is fs.ErrNotExist), or the path and the JSON error when it is malformed.
func ReadSweep(dir string) (*SweepFile, error) {
	path := filepath.Join(dir, SweepName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f SweepFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}
