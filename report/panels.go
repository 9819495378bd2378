package report

import (
	"slices"
	"strings"

	"github.com/habench/habench/sampler"
)

// Class is what a sampled metric is, for charts and live metrics.
type Class string

const (
	// ClassLag: a visibility or apply lag in seconds (lag panel).
	ClassLag Class = "lag"
	// ClassQueue: transactions waiting on a node: the GTID backlog, certifier and applier
	// queues, Galera's receive queue (queue panel).
	ClassQueue Class = "queue"
	// ClassPaused: a fraction (0..1) of the tick the node spent paused or throttled by
	// flow control (paused-fraction panel).
	ClassPaused Class = "paused"
	// ClassThrottle: flow control measured otherwise than as a fraction: Group
	// Replication's average number of throttled sessions, or its inferred 0/1 throttle.
	ClassThrottle Class = "throttle"
	// ClassMembership: how many nodes a node sees in its group or component: Galera's
	// component size, Group Replication's members ONLINE and UNREACHABLE in each member's
	// view (membership panel; a partition shows as a step).
	ClassMembership Class = "membership"
	// ClassHostCPU: a host's CPU busy, iowait and steal share (0..1 of all its CPUs),
	// once per host (node "host:<name>").
	ClassHostCPU Class = "host_cpu"
	// ClassServerCPU: a node's own server process's CPU in cores.
	ClassServerCPU Class = "server_cpu"
	// ClassOther: anything else (kept in samples.csv and the generic live gauge only).
	ClassOther Class = ""
)

// Panel is one time-series panel of a run's chart, under the TPS and latency panels, on
// the same time axis. A sampled metric goes on the first panel that claims it (see
// Classify); a panel without data is left out.
type Panel struct {
	Class Class
	Title string
	// YLabel names the unit.
	YLabel string
	// Fraction panels have their Y axis fixed to 0..1.
	Fraction bool
	// MetricLabel, when set, names a metric in the legend of a panel with several
	// metrics (default: the metric's name).
	MetricLabel func(metric string) string
}

// Panels are the per-node panels in the order they are drawn.
var Panels = []Panel{
	{Class: ClassLag, Title: "visibility lag per node (heartbeat)", YLabel: "lag s"},
	{Class: ClassQueue, Title: "backlog and queues per node", YLabel: "transactions, writesets"},
	{Class: ClassPaused, Title: "flow control: fraction of each second paused", YLabel: "paused fraction", Fraction: true},
	{Class: ClassThrottle, Title: "flow control: sessions throttled (avg per second; inferred 0/1)", YLabel: "sessions"},
	{Class: ClassMembership, Title: "membership as each node sees it (Galera component size; group members ONLINE, UNREACHABLE)", YLabel: "nodes"},
	{Class: ClassHostCPU, Title: "host CPU: busy (solid), iowait and steal (dashed), share of all CPUs, once per host", YLabel: "CPU fraction", Fraction: true,
		MetricLabel: func(m string) string { return strings.TrimSuffix(strings.TrimPrefix(m, "host_cpu_"), "_fraction") }},
	{Class: ClassServerCPU, Title: "mysqld CPU per node (1 = one core)", YLabel: "cores"},
}

// Metric names by class, as the samplers write them (sampler.Metrics). Names not listed
// here are classified by the rules in Classify, so new samplers' metrics show up when
// they follow them.
var (
	// LagMetrics go on the lag panel. Only the heartbeat's visibility lag, which every
	// topology has; the server's own numbers (seconds_behind_source, applier_lag_s) stay
	// in samples.csv.
	LagMetrics = []string{"lag_s"}
	// QueueMetrics go on the queue panel.
	QueueMetrics = []string{"backlog_trx",
		// Group Replication (performance_schema.replication_group_member_stats)
		"gr_certifier_queue_trx", "gr_applier_queue_trx",
		// Galera (wsrep_local_recv_queue, wsrep_local_send_queue)
		"galera_recv_queue", "galera_send_queue"}
	// PausedMetrics go on the paused-fraction panel.
	PausedMetrics = []string{"galera_fc_paused_fraction"}
	// ThrottleMetrics go on the throttle panel: Group Replication's flow control, measured
	// by the flow-control stats component (MySQL 9.7+), or inferred from the queues and
	// thresholds without it.
	ThrottleMetrics = []string{"gr_fc_throttled_sessions_avg", "gr_fc_throttle_inferred"}
	// MembershipMetrics go on the membership panel: the nodes each node sees (a partition
	// or an expelled member shows as a step down, UNREACHABLE members as a step up).
	MembershipMetrics = []string{"galera_cluster_size", "gr_members_online", "gr_members_unreachable"}
	// HostCPUMetrics go on the host CPU panel (busy first: the solid line).
	HostCPUMetrics = []string{sampler.MetricHostCPUBusy, sampler.MetricHostCPUIOWait, sampler.MetricHostCPUSteal}
	// ServerCPUMetrics go on the mysqld CPU panel.
	ServerCPUMetrics = []string{sampler.MetricServerCPU}
)

// Classify says which panel a sampled metric belongs on. The rule, for samplers to
// follow: a name in LagMetrics, QueueMetrics, PausedMetrics, ThrottleMetrics,
// MembershipMetrics, HostCPUMetrics or ServerCPUMetrics is that class; otherwise a
// name ending in "_fraction" that mentions "paused", "throttle" or "flow_control" is
// ClassPaused (a value in 0..1 per tick); a name containing "queue" (transactions
// waiting) is ClassQueue; everything else is ClassOther. Error counters
// ("sampler_errors...") are never charted.
func Classify(metric string) Class {
	switch {
	case slices.Contains(LagMetrics, metric):
		return ClassLag
	case slices.Contains(QueueMetrics, metric):
		return ClassQueue
	case slices.Contains(PausedMetrics, metric):
		return ClassPaused
	case slices.Contains(ThrottleMetrics, metric):
		return ClassThrottle
	case slices.Contains(MembershipMetrics, metric):
		return ClassMembership
	case slices.Contains(HostCPUMetrics, metric):
		return ClassHostCPU
	case slices.Contains(ServerCPUMetrics, metric):
		return ClassServerCPU
	case strings.HasPrefix(metric, "sampler_errors"):
		return ClassOther
	case strings.HasSuffix(metric, "_fraction") &&
		(strings.Contains(metric, "paused") || strings.Contains(metric, "throttle") || strings.Contains(metric, "flow_control")):
		return ClassPaused
	case strings.Contains(metric, "queue"):
		return ClassQueue
	}
	return ClassOther
}
