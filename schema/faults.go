package schema

import "time"

// FaultSummary is one fault of the run as summary.json's "faults" measures it.
type FaultSummary struct {
	// AtS is the fault's time on samples.csv's clock; Action, Node and Error as in
	// FaultRecord.
	AtS    float64 `json:"at_s"`
	Action string  `json:"action"`
	Node   string  `json:"node"`
	Error  string  `json:"error,omitempty"`
	// Escalated as in FaultRecord: the clean stop took SIGKILL (a crash).
	Escalated string `json:"escalated,omitempty"`
	// RecoveryS is the time from the fault until the workload's commits were back to
	// normal: the end of the last disturbed report interval from the fault on (see
	// experiment's disturbed; resolution: the report interval), or the end of the workload outage
	// (OutageS on the fault's node, or on the writer when the workers follow it) that was
	// open at the fault or began within 10 s after it, whichever is later. 0 only when no
	// interval from the fault's on was disturbed and no outage followed (the workload did
	// not notice); nil when the workload had not recovered by the end of the run.
	RecoveryS *float64 `json:"recovery_s"`
	// Outage is the node (or "writer") of that outage; ErrorsByCode its failed attempts.
	// An outage belongs to one fault only: the first one it was open at or began within
	// 10 s of (a promote or heal that ended a kill's or partition's outage has none).
	Outage       string           `json:"outage,omitempty"`
	ErrorsByCode map[string]int64 `json:"errors_by_code,omitempty"`
	// AlsoOutages are the other nodes (or "writer") whose workers could not commit for
	// experiment.MinOutage or longer in a window that began within 10 s after the fault (a Galera
	// cluster stalls while it evicts a partitioned node), node order of their start; each
	// such window counts for the first fault only, and its failed attempts are not in
	// ErrorsByCode (the WARNINGs and summary.json outages have them).
	AlsoOutages []string `json:"also_outages,omitempty"`
	// Errors and Reconnects are the workload's failed attempts and reconnects in the
	// disturbed intervals (intervals.csv's errors and reconnects); MinTPS their lowest TPS.
	// An interval counts for the first fault whose disturbed intervals it is in.
	Errors     int64    `json:"errors,omitempty"`
	Reconnects int64    `json:"reconnects,omitempty"`
	MinTPS     *float64 `json:"min_tps,omitempty"`
	// CaughtUpS, for start, restart, heal and promote (and a kill or stop whose node came
	// back by itself): the time from the fault to the first sample, after the action
	// ended and before the node's next fault, in which the node was readable and its
	// known visibility lag was at or under 1 s (nil: not seen). PeakLagS: the largest lag
	// of any node from the fault to the end of the run; PeakLagUnknown the nodes whose lag
	// could not be measured for a while in that time ("n3 unknown for 9 s"), which PeakLagS
	// cannot see (experiment's faultPeakLag).
	CaughtUpS      *float64 `json:"caught_up_s,omitempty"`
	PeakLagS       *float64 `json:"peak_lag_s,omitempty"`
	PeakLagUnknown string   `json:"peak_lag_unknown,omitempty"`
	// NewWriter is the writer the cluster named after the fault (kinds with a single
	// writer, polled every 500 ms: a group's PRIMARY seeing a majority, a promoted
	// source); NewWriterS the seconds from the fault until it was named, ClientWriterS
	// until the workers first committed there (nil: they did not, e.g. writer fixed).
	NewWriter     string   `json:"new_writer,omitempty"`
	NewWriterS    *float64 `json:"new_writer_s,omitempty"`
	ClientWriterS *float64 `json:"client_writer_s,omitempty"`
	// ViewChangeS, for a fault that takes nodes away (kill, stop, restart, partition,
	// pause, rebuild) on a Galera cluster or a group: seconds from the fault to the first
	// sample (every second: an upper bound) in which every other node's view of the cluster
	// counted fewer members than before it (galera_cluster_size: a new Primary component
	// without the node; gr_members_total - gr_members_unreachable: the member UNREACHABLE
	// or gone from the view): the cluster's own view change. A drop counts only when it
	// began within 10 s and two samples of the fault's end (its time plus took_s) while no
	// node of the fault reported the others' membership (that node was in their
	// component: another node left). nil: not seen by then, before the end of the node's
	// next fault or the end of the run.
	ViewChangeS *float64 `json:"view_change_s,omitempty"`
	// ClientFailoverS, when the workers failed over between writers (a Galera cluster, a
	// multi-primary group: experiment's client failover): seconds from the fault until
	// every worker that left the fault's node had committed again on another; nil when one
	// had not by the end of the run, or none left it (FailoverWorkers 0: none was on it,
	// or none noticed). FailoverWorkers is how many left it.
	ClientFailoverS *float64 `json:"client_failover_s,omitempty"`
	FailoverWorkers int      `json:"failover_workers,omitempty"`
	// ClientDownS is the seconds from the fault to the first failed attempt of the
	// workload outage it owns (Outage; negative when that outage was open at the fault),
	// RecoveryS the end of it: the client's view of the failover. nil without an outage.
	ClientDownS *float64 `json:"client_down_s,omitempty"`
	// Proxy is the proxy's view of the fault, when the run had one (polled every
	// ProxyPollMs; nil without a proxy).
	Proxy *FaultProxy `json:"proxy,omitempty"`
	// Outcome, for an action that runs a transaction of its own (large-transaction): "ok",
	// or the server's refusal ("error 3100: ..."), the transaction's result and not a
	// failure of the action (Error stays ""); Rows the rows it changed.
	Outcome string `json:"outcome,omitempty"`
	Rows    int64  `json:"rows,omitempty"`
	// Bytes, for rebuild: the node's datadir after its state transfer, in bytes.
	Bytes int64 `json:"bytes,omitempty"`
	// Detail as in FaultRecord: the action's line of what happened.
	Detail string `json:"detail,omitempty"`
	// During, for a lasting action (a large transaction, a rebuild): the workload and the
	// cluster before it and while it ran.
	During *FaultDuring `json:"during,omitempty"`
}

// FaultDuring compares the workload and the cluster while a lasting fault action ran
// (from its start for TookS seconds) with the 30 s before it.
type FaultDuring struct {
	// TookS is the action's duration in seconds (FaultRecord's took_s).
	TookS float64 `json:"took_s"`
	// TPSBefore and TPSDuring are the workload's transactions per second in the report
	// intervals that ended in the 30 s before the action, and in those that overlapped it
	// (at least the one it began in). P99BeforeMs is the median of the before intervals'
	// p99 latency, P99DuringMs the largest p99 of the intervals during it, in ms.
	// BeforeIntervals and DuringIntervals count them (0 before: no interval ended before).
	TPSBefore       float64 `json:"tps_before"`
	TPSDuring       float64 `json:"tps_during"`
	P99BeforeMs     float64 `json:"p99_before_ms"`
	P99DuringMs     float64 `json:"p99_during_ms"`
	BeforeIntervals int     `json:"before_intervals"`
	DuringIntervals int     `json:"during_intervals"`
	// FCPausedMax is the largest Galera flow-control paused fraction (galera_fc_paused_fraction,
	// 0..1) any node reported during the action; FCThrottleS the seconds Group
	// Replication's flow control held commits in that time (gr_fc_throttle_time_s, summed
	// over the nodes). nil: no such sample (the other kind, or no sampler).
	FCPausedMax *float64 `json:"fc_paused_max,omitempty"`
	FCThrottleS *float64 `json:"fc_throttle_s,omitempty"`
	// QueuePeak is the largest replication queue any node reported during the action
	// (backlog_trx, the group's certifier and applier queues, Galera's receive and send
	// queues, in transactions), QueuePeakOn "node metric" of it.
	QueuePeak   float64 `json:"queue_peak,omitempty"`
	QueuePeakOn string  `json:"queue_peak_on,omitempty"`
	// MembersBefore is the largest membership any node reported in the 30 s before
	// (galera_cluster_size, gr_members_online); MembersMin, of each second during the
	// action, the largest membership a node reported then, the smallest of those: the size
	// of the biggest component at its lowest (the node the action hit, out of the group,
	// does not count with its own view of 0 or 1). Lower than before means members were
	// expelled or left the Primary component. nil: not sampled.
	MembersBefore *float64 `json:"members_before,omitempty"`
	MembersMin    *float64 `json:"members_min,omitempty"`
}

// FaultRecord is one injected fault.
type FaultRecord struct {
	// At is when the fault was injected (UTC); Took how long the action took, in seconds.
	At   time.Time `json:"at"`
	Took float64   `json:"took_s"`
	// Action is a registered fault action (experiment.FaultActionNames: kill, stop, ...); Node the node it
	// hit (the writer alias resolved); PID the server's process before the fault.
	Action string `json:"action"`
	Node   string `json:"node"`
	PID    int    `json:"pid,omitempty"`
	// Error is why the action failed ("" when it did not).
	Error string `json:"error,omitempty"`
	// Escalated, for stop and restart, says that the clean shutdown was not one: the
	// server outlived SIGTERM's grace and was killed with SIGKILL, a crash
	// (cluster.StopEscalatedError's text; "" when it shut down cleanly). The node went
	// down (and a restart started it again): Error stays "".
	Escalated string `json:"escalated,omitempty"`
	// Outcome, for an action that runs a transaction of its own (large-transaction): "ok",
	// or the server's refusal ("error 3100: ..."): the transaction's result, not a failure
	// of the action (Error stays ""). Rows: the rows it changed.
	Outcome string `json:"outcome,omitempty"`
	Rows    int64  `json:"rows,omitempty"`
	// Bytes, for rebuild: the size of the node's datadir after its state transfer (what it
	// received), in bytes.
	Bytes int64 `json:"bytes,omitempty"`
	// Of names the action this record is a step of ("rolling-restart" for each node's
	// restart and the switchover before the writer's; "" for a fault of its own). A run
	// lists the steps, not the action that made them (experiment's faultsDuring).
	Of string `json:"of,omitempty"`
	// Detail is the action's one line of what happened ("" when it has nothing to add):
	// e.g. a rebuild's donor and the times of its steps, a promote's old source.
	Detail string `json:"detail,omitempty"`
}

// RunFault is a FaultRecord as a run saw it: AtS is the fault's time in seconds on
// samples.csv's clock.
type RunFault struct {
	AtS float64 `json:"at_s"`
	// Scheduled: the run's own fault schedule (a scenario's faults:) injected it, not
	// another command (`habench fault`).
	Scheduled bool `json:"scheduled,omitempty"`
	FaultRecord
}
