package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/habench/habench/stats"
	"github.com/habench/habench/workload"
)

// SummaryFile is the name of a run's summary in its results directory.
const SummaryFile = "summary.json"

// Summary is summary.json.
type Summary struct {
	Workload      string                            `json:"workload"`
	Threads       int                               `json:"threads"`
	TimeS         float64                           `json:"time_s"`
	TPS           float64                           `json:"tps"`
	QPS           float64                           `json:"qps"`
	Transactions  int64                             `json:"transactions"`
	Reads         int64                             `json:"reads"`
	Writes        int64                             `json:"writes"`
	Others        int64                             `json:"others"`
	IgnoredErrors int64                             `json:"ignored_errors"`
	Reconnects    int64                             `json:"reconnects"`
	LatencyMs     map[string]float64                `json:"latency_ms"`
	ErrorsByCode  map[string]int64                  `json:"errors_by_code,omitempty"`
	PerEndpoint   map[string]workload.EndpointStats `json:"per_endpoint,omitempty"`
	// ClientCPUCores is the CPU habench itself used during the workload, in cores; of a
	// run driven from client hosts, the busiest client's (the highest share of its CPUs).
	ClientCPUCores float64 `json:"client_cpu_cores,omitempty"`
	// Clients are the client hosts' own rows when the workload was driven from several
	// (nil when it ran in habench's own process); the fields above are their exact merge.
	Clients []ClientSummary `json:"clients,omitempty"`
	// Outages are the windows during which a node's workers could not commit (nil: none).
	Outages []OutageSummary `json:"outages,omitempty"`
	// UnknownOutcome counts the transactions given up by workers that followed the writer
	// or failed over to another node, hung or with their connection lost during their
	// COMMIT (they may or may not have committed: workload.Result.Unknown); Waits the
	// transactions that never completed, LongestWait the longest (their waits are lower
	// bounds in latency_ms max and percentiles); WriterMoves the workers' moves to a new
	// writer, or between writers when they failed over (workload.Result).
	UnknownOutcome int64                `json:"unknown_outcome,omitempty"`
	Waits          int                  `json:"waits,omitempty"`
	LongestWait    *WaitSummary         `json:"longest_wait,omitempty"`
	WriterMoves    []MoveSummary        `json:"writer_moves,omitempty"`
	Nodes          []NodeLag            `json:"nodes,omitempty"`
	SemiSync       *SemiSyncSummary     `json:"semisync,omitempty"`
	Group          []GroupMemberSummary `json:"group,omitempty"`
	Galera         []GaleraNodeSummary  `json:"galera,omitempty"`
	Hosts          []HostSummary        `json:"hosts,omitempty"`
	DataCheck      string               `json:"data_check,omitempty"`
	ReplicasCaught *bool                `json:"replicas_consistent,omitempty"`
	// Convergence is the check after the catch-up: per node converged, behind, diverged
	// (with the tables whose CHECKSUM TABLE differs) or down (nil when not checked).
	Convergence *Convergence `json:"convergence,omitempty"`
	// NodeStates are the nodes that were down or changed role during the run.
	NodeStates []NodeState `json:"node_states,omitempty"`
	// Faults are the run's faults with their recovery times (nil without faults).
	Faults []FaultSummary `json:"faults,omitempty"`
	// Proxy is what the cluster's proxy did during the run (nil without one).
	Proxy *ProxySummary `json:"proxy,omitempty"`
	// Probe is the probe writer's count of lost acknowledged commits (nil without it).
	Probe    *ProbeSummary `json:"probe,omitempty"`
	RandType string        `json:"rand_type"`
	PSMode   string        `json:"db_ps_mode"`
	Rate     *RateSummary  `json:"rate,omitempty"`
	Error    string        `json:"error,omitempty"`
	// SamplesWindow says which samples Nodes (lag, backlog), SemiSync, Group and Galera
	// (queues, flow control) cover: the measured window, warm-up excluded, as TPS and
	// latency ("" when nothing was measured: every sample).
	SamplesWindow string `json:"samples_window,omitempty"`
	// Sections are the summary sections of samplers that have no field above
	// (sampler.Section), by key, written after the fields above in key order; reading
	// summary.json puts every key not declared above here.
	Sections map[string]json.RawMessage `json:"-"`
	// Checks is the checker workload's verdict (nil without one; see ChecksSummary).
	Checks *ChecksSummary `json:"checks,omitempty"`
}

// StaleReads sums the read-your-writes checks and stale reads over the read endpoints of
// s.PerEndpoint (a run with read nodes: `--read-nodes`, workload.read_nodes); ok is false
// when no endpoint made a check.
func (s *Summary) StaleReads() (checks, stale int64, ok bool) {
	for _, e := range s.PerEndpoint {
		checks, stale = checks+e.ReadChecks, stale+e.StaleReads
	}
	return checks, stale, checks > 0
}

// summaryFields is Summary without its methods, for the default encoding.
type summaryFields Summary

// MarshalJSON writes the declared fields as encoding/json does, then Sections.
func (s Summary) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(summaryFields(s))
	if err != nil || len(s.Sections) == 0 {
		return b, err
	}
	out := bytes.TrimSuffix(b, []byte("}"))
	for _, k := range slices.Sorted(maps.Keys(s.Sections)) {
		key, _ := json.Marshal(k)
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, key...), ':'), s.Sections[k]...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads the declared fields, and every other key into Sections.
func (s *Summary) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*summaryFields)(s)); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k, v := range all {
		if !summaryKeys()[k] {
			if s.Sections == nil {
				s.Sections = map[string]json.RawMessage{}
			}
			s.Sections[k] = v
		}
	}
	return nil
}

// SetSection sets Sections[key] to v encoded (a sampler's own section). Error when key
// is a declared field's or v cannot be encoded.
func (s *Summary) SetSection(key string, v any) error {
	if summaryKeys()[key] {
		return fmt.Errorf("summary section %q: a declared field of summary.json", key)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("summary section %q: %w", key, err)
	}
	if s.Sections == nil {
		s.Sections = map[string]json.RawMessage{}
	}
	s.Sections[key] = b
	return nil
}

// Section decodes Sections[key] into v; false when there is none or it does not decode.
func (s *Summary) Section(key string, v any) bool {
	raw, ok := s.Sections[key]
	return ok && json.Unmarshal(raw, v) == nil
}

// summaryKeys are the JSON keys of Summary's declared fields.
var summaryKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[summaryFields]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
})

// NodeLag summarises one node's samples over the run. Lag fields are null when the node
// produced no lag sample (unreachable, sampler failing): never a misleading 0. LagMaxS,
// LagAvgS, Samples and LagUnknownS come from experiment's lagStats, the computation every lag column
// shares.
type NodeLag struct {
	Node string `json:"node"`
	// Role is the node's role at the start of the run; RoleEnd its role at the end (in
	// the cluster's record, after the run's faults), only when it differs ("source" for a
	// promoted replica).
	Role    string `json:"role"`
	RoleEnd string `json:"role_end,omitempty"`
	// DownAtEnd: no sampler reached the node at the end of the run (node_states).
	DownAtEnd bool     `json:"down_at_end,omitempty"`
	LagMaxS   *float64 `json:"lag_max_s"`
	LagAvgS   *float64 `json:"lag_avg_s"`
	// LagUnknownS is how long, in seconds, the node's lag could not be measured while the
	// heartbeat ran: it could not be read, or was outside the Primary component (Galera) or
	// not ONLINE in the group majority's view; 0 when it was measured all along. LagMaxS
	// cannot see those seconds: tables show it as "≥ max (unknown for N s)".
	LagUnknownS   float64  `json:"lag_unknown_s,omitempty"`
	BacklogMaxTrx *float64 `json:"backlog_max_trx"`
	// ApplierLagMaxS is the largest applier_lag_s of a MySQL replica, in seconds: how late
	// its last applied transaction became visible after its commit on the source, two
	// hosts' clocks corrected by their offsets (HostInfo); absent when not sampled.
	ApplierLagMaxS *float64 `json:"applier_lag_max_s,omitempty"`
	Samples        int      `json:"samples"`
	// SamplerErrors is the node's cumulative sampler error count at the end of the run.
	SamplerErrors float64 `json:"sampler_errors"`
	// GTIDPosition is the node's executed set after the run and catch-up.
	GTIDPosition string `json:"gtid_position,omitempty"`
}

// SemiSyncSummary sums the source's semi-sync samples over the run.
type SemiSyncSummary struct {
	Node string `json:"node"`
	// YesTx and NoTx are commits acknowledged by a replica / committed without an ack
	// (after a timeout, asynchronously), summed from per-second deltas.
	YesTx float64 `json:"yes_tx"`
	NoTx  float64 `json:"no_tx"`
	// SecondsOff counts samples in which semi-sync was OFF (fallen back to async).
	SecondsOff int `json:"seconds_off"`
	// AvgWaitUs is the average time a commit waited for its acknowledgement, in
	// microseconds: per-second averages weighted by that second's acknowledged commits.
	AvgWaitUs float64 `json:"avg_wait_us"`
	// Degraded: the guarantee did not hold for the whole run, some commits were
	// acknowledged without a replica having them (NoTx > 0) or semi-sync was OFF in a
	// sample; Off lists when it was OFF (see sampler.SemiSync's Summarize), Warning says it in words.
	Degraded bool          `json:"degraded"`
	Off      []SemiSyncOff `json:"off,omitempty"`
	Warning  string        `json:"warning,omitempty"`
}

// SemiSyncOff is a period in which a node's semi-sync source status was OFF (fallen back
// to async), on samples.csv's clock: FromS is its first sample OFF, ToS its first sample
// ON again, or the last OFF sample plus the sample interval when it was still OFF at the
// end (Open). NoTx are the commits acknowledged without a replica in it: the no_tx deltas
// of its samples and of the first sample ON again (a delta covers the tick before it).
type SemiSyncOff struct {
	Node  string  `json:"node"`
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	Open  bool    `json:"open,omitempty"`
	NoTx  float64 `json:"no_tx"`
}

// OutageSummary is one workload.Outage in summary.json: a window during which a node's
// workers could not commit, on the run's clock (seconds since the start of measurement,
// the elapsed_s of intervals.csv; add manifest.json's intervals_offset_s for samples.csv's
// clock).
type OutageSummary struct {
	Node      string  `json:"node"`
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	DurationS float64 `json:"duration_s"`
	// Open: the node had not committed again when the run ended (EndS is the end).
	Open bool `json:"open"`
	// StartedAt is StartS on the wall clock (UTC, RFC 3339).
	StartedAt string `json:"started_at"`
	// FailedAttempts counts the failed statements and connects in the window, by MySQL
	// error code in ErrorsByCode.
	FailedAttempts int64            `json:"failed_attempts"`
	ErrorsByCode   map[string]int64 `json:"errors_by_code"`
	// Text is the WARNING line printed for it.
	Text string `json:"text"`
}

// WaitSummary is summary.json's longest_wait: the longest wait of a transaction that never
// completed (workload.Wait), a lower bound of its latency.
type WaitSummary struct {
	Node string `json:"node"`
	// StartS is its intended start on intervals.csv's clock; WaitedS how long it waited.
	StartS    float64 `json:"start_s"`
	WaitedS   float64 `json:"waited_s"`
	Abandoned bool    `json:"abandoned"`
}

// MoveSummary is one of summary.json's writer_moves (workload.WriterMove): AtS when the
// first worker moved, FirstCommitS the first commit there (nil: none), SettledS when every
// worker that left From in it had committed again (nil: one had not), on intervals.csv's
// clock.
type MoveSummary struct {
	From         string   `json:"from"`
	To           string   `json:"to"`
	AtS          float64  `json:"at_s"`
	FirstCommitS *float64 `json:"first_commit_s"`
	SettledS     *float64 `json:"settled_s,omitempty"`
	Workers      int      `json:"workers"`
	Abandoned    int      `json:"abandoned"`
}

// RateSummary is summary.json's "rate" section, present only for runs with --rate:
// the open-loop arrival process and the service times (latency_ms counts the time each
// event waited in the queue; service_ms does not).
type RateSummary struct {
	// Target is --rate (events/s); Arrivals the events scheduled in the measured part.
	Target   int   `json:"target"`
	Arrivals int64 `json:"arrivals"`
	// Backlog are arrivals still queued at the end, the oldest waiting BacklogAgeS
	// seconds; MaxBacklogAgeS is the longest queue wait of the run.
	Backlog        int64   `json:"backlog"`
	BacklogAgeS    float64 `json:"backlog_age_s"`
	MaxBacklogAgeS float64 `json:"max_backlog_age_s"`
	// WarmupDropped and WarmupUnmeasured are the warm-up's arrivals dropped at its
	// end (queued) and not measured (running at its end).
	WarmupDropped    int64 `json:"warmup_dropped"`
	WarmupUnmeasured int64 `json:"warmup_unmeasured"`
	// BehindS is the longest period the run was behind (arrivals waiting longer than
	// workload.RateBehind), BehindFromS when it began (seconds since the start of
	// measurement, intervals.csv's clock), MaxBacklog the most arrivals queued at once
	// while behind (see workload.RateResult.Behind).
	BehindS     float64 `json:"behind_s"`
	BehindFromS float64 `json:"behind_from_s"`
	MaxBacklog  int64   `json:"max_backlog"`
	// Met is false when the run ended more than workload.RateBehind behind, or was
	// behind for longer than that and the report interval; Warning says so in words.
	Met     bool   `json:"met"`
	Warning string `json:"warning,omitempty"`
	// ServiceMs are service times in ms: min, avg, max, sum, p50, p95, p99 and the
	// --percentile value as "pN".
	ServiceMs map[string]float64 `json:"service_ms"`
}

// ProbeSummary is what the probe writer found: how many of the commits the servers
// acknowledged are missing on the writer after the run (lost acknowledged commits), and
// how many rows whose commit returned an error are there anyway.
type ProbeSummary struct {
	// Interval is the pause between two probe commits (seconds).
	IntervalS float64 `json:"interval_s"`
	// Acknowledged are the commits the server acknowledged; Failed those the server
	// answered with an error; Unknown those without an answer (the connection died or
	// the 2 s bound passed after the INSERT was sent: they may or may not have taken
	// effect).
	Acknowledged int64 `json:"acknowledged"`
	Failed       int64 `json:"failed"`
	Unknown      int64 `json:"unknown"`
	// Via is "proxy" when the probe committed through the proxy's write endpoint as the
	// workload did ("" when it resolved the writer itself and committed there).
	Via string `json:"via,omitempty"`
	// Writers are the nodes the probe wrote to, in order (it follows the writer); through
	// the proxy the nodes that acknowledged its commits, in order (each commit reads
	// @@server_id in its transaction: the node that committed it).
	Writers []string `json:"writers"`
	// CheckedOn is the writer whose rows were compared after the run.
	CheckedOn string `json:"checked_on"`
	// LostAcknowledged counts acknowledged commits missing on CheckedOn; Lost lists up to
	// 20 of their sequence numbers.
	LostAcknowledged int64   `json:"lost_acknowledged_commits"`
	Lost             []int64 `json:"lost,omitempty"`
	// UnacknowledgedPresent counts rows on CheckedOn whose commit was not acknowledged
	// (failed or of unknown outcome).
	UnacknowledgedPresent int64 `json:"unacknowledged_present"`
	// StaleCommits, through the proxy (Via "proxy"), counts the acknowledged commits of a
	// node that the cluster's own view no longer counted as the writer when the commit was
	// sent (and did not count again before its acknowledgment): a split brain the client
	// saw succeed. The view is, on a kind with a single writer, the writer habench polls
	// every 0.5 s (a promoted source, a group's PRIMARY: a commit on the old one after the
	// new one was named), on Galera or a multi-primary group the other nodes' membership
	// sampled every second (a commit on a node of a fault while every other node's view
	// was a majority without it: outside the Primary component). Both are conservative
	// (a commit near a change whose time is uncertain is not counted). 0 is a check that
	// found none; nil: not checked (the probe committed directly, or found none while the
	// view around a fault was not seen: the writer watch never named a writer, or a
	// fault's StaleCommits is nil; a NOTE says why). Stale lists up to 20 of their
	// sequence numbers.
	StaleCommits *int64  `json:"stale_commits,omitempty"`
	Stale        []int64 `json:"stale,omitempty"`
	// Error is why the check could not be made ("" when it was).
	Error string `json:"error,omitempty"`
	// History is the probe's history file in the results directory (ProbeHistoryFile;
	// "" when none was written).
	History string `json:"history,omitempty"`
}

// NodeState is one node's state over the run, from the samples (samples.csv's clock).
type NodeState struct {
	Node string `json:"node"`
	// Down are the windows in which no sampler reached the node (node_up 0), [start, end]
	// seconds; End is the last sample's time when it was still down then.
	Down []Window `json:"down,omitempty"`
	// Changes are the role changes in the cluster's record (role: "4.0s replica -> source"
	// after a promote, at the first sample that saw it), a group member's role as the
	// group's majority reports it (gr_majority_state and gr_majority_role: "15.0s PRIMARY
	// -> UNREACHABLE (own view PRIMARY)", "32.0s SECONDARY -> PRIMARY"; experiment's groupRole) and a
	// Galera node's Primary component membership (galera_primary).
	Changes []string `json:"changes,omitempty"`
}

// Window is a time window on samples.csv's clock, in seconds.
type Window struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Open   bool    `json:"open,omitempty"`
}

// GroupMemberSummary sums one Group Replication member's group samples over the run (see
// sampler.Group for the metrics). Throttle fields are nil where the member lacks the
// flow-control stats component; InferredThrottleTicks is nil where it has it.
type GroupMemberSummary struct {
	Node string `json:"node"`
	// LastState and LastRole are the member's MEMBER_STATE / MEMBER_ROLE codes at the last
	// sample as the group's majority reports them (gr_majority_state and _role; its own
	// view's when no majority was ever sampled): state 1 = ONLINE, 3 = UNREACHABLE, 5 =
	// not in the majority's view; role 1 = PRIMARY, 2 = SECONDARY. Changes counts changes of
	// either in the member's own view during the run.
	LastState float64 `json:"last_state"`
	LastRole  float64 `json:"last_role"`
	Changes   float64 `json:"state_role_changes"`
	// CertifierQueueMax and ApplierQueueMax are the largest queues sampled (transactions).
	CertifierQueueMax float64 `json:"certifier_queue_max_trx"`
	ApplierQueueMax   float64 `json:"applier_queue_max_trx"`
	// Conflicts, LocalRollbacks, Checked and RemoteApplied are transactions during the run.
	Conflicts      float64 `json:"conflicts_trx"`
	LocalRollbacks float64 `json:"local_rollbacks_trx"`
	Checked        float64 `json:"checked_trx"`
	RemoteApplied  float64 `json:"remote_applied_trx"`
	// ThrottledTrx and ThrottleTimeS are flow control's holds on this member's commits
	// (Gr_flow_control_throttle_count / _time_sum deltas, MySQL 9.7+).
	ThrottledTrx  *float64 `json:"throttled_trx,omitempty"`
	ThrottleTimeS *float64 `json:"throttle_time_s,omitempty"`
	// InferredThrottleTicks counts samples in which the member's queues exceeded the
	// flow-control thresholds (inferred, not measured).
	InferredThrottleTicks *float64 `json:"inferred_throttle_ticks,omitempty"`
}

// GaleraNodeSummary sums one Galera node's samples over the run.
type GaleraNodeSummary struct {
	Node string `json:"node"`
	// PausedAvg and PausedMax are the mean and largest per-second flow-control paused
	// fraction (0..1) of the node's samples.
	PausedAvg float64 `json:"fc_paused_avg"`
	PausedMax float64 `json:"fc_paused_max"`
	// FCSent and FCRecv are flow-control pause requests sent and received.
	FCSent float64 `json:"fc_sent"`
	FCRecv float64 `json:"fc_recv"`
	// CertFailures and BFAborts are local transactions that failed certification or were
	// aborted by an applied write set.
	CertFailures float64 `json:"cert_failures"`
	BFAborts     float64 `json:"bf_aborts"`
	// RecvQueueMax is the largest receive queue (write sets); LastCommittedGapMax the largest
	// gap to the most advanced node (seqnos).
	RecvQueueMax        float64 `json:"recv_queue_max"`
	LastCommittedGapMax float64 `json:"last_committed_gap_max"`
	// Samples is the number of paused-fraction samples.
	Samples int `json:"samples"`
}

// Replication is s's replication figures as sweeps summarise them over repeats
// (stats.Repl), each nil when s has none: the largest mean lag of a node and its largest
// lag (nodes' lag_avg_s, lag_max_s), the largest backlog (nodes' backlog_max_trx; a
// Galera node's recv_queue_max), and
// the largest share of the measured window a node was paused by flow control (Galera
// fc_paused_avg) or throttled by it (a group's throttle_time_s over time_s).
func (s *Summary) Replication() stats.Repl {
	var r stats.Repl
	most := func(p **float64, v float64) {
		if *p == nil || v > **p {
			*p = &v
		}
	}
	for _, n := range s.Nodes {
		if n.LagAvgS != nil {
			most(&r.LagAvgS, *n.LagAvgS)
		}
		if n.LagMaxS != nil {
			most(&r.LagMaxS, *n.LagMaxS)
		}
		if n.BacklogMaxTrx != nil {
			most(&r.BacklogMax, *n.BacklogMaxTrx)
		}
	}
	for _, g := range s.Galera {
		most(&r.FCPaused, g.PausedAvg)
		if g.Samples > 0 {
			most(&r.BacklogMax, g.RecvQueueMax) // writesets received, not applied yet
		}
	}
	for _, g := range s.Group {
		if g.ThrottleTimeS != nil && s.TimeS > 0 {
			most(&r.FCPaused, *g.ThrottleTimeS/s.TimeS)
		}
	}
	return r
}
