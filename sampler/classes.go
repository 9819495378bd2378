package sampler

import (
	"slices"
	"strings"
)

// Class is what a sampled metric is, for the report's charts (report.Panels), the live
// node lines and the Prometheus metrics.
type Class string

const (
	// ClassLag: a visibility or apply lag in seconds (report's lag panel).
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

// Metric names by class, as the samplers write them (Metrics). Names not listed
// here are classified by the rules in Classify, so new samplers' metrics show up when
// they follow them.
var (
	// LagMetrics go on the lag panel. Only the heartbeat's visibility lag, which every
	// topology has; the server's own numbers (seconds_behind_source, applier_lag_s) stay
	// in samples.csv.
	LagMetrics = []string{MetricLag}
	// QueueMetrics go on the queue panel.
	QueueMetrics = []string{MetricBacklog,
		// Group Replication (performance_schema.replication_group_member_stats)
		MetricGRCertifierQueue, MetricGRApplierQueue,
		// Galera (wsrep_local_recv_queue, wsrep_local_send_queue)
		MetricGaleraRecvQueue, MetricGaleraSendQueue}
	// PausedMetrics go on the paused-fraction panel.
	PausedMetrics = []string{MetricGaleraFCPaused}
	// ThrottleMetrics go on the throttle panel: Group Replication's flow control, measured
	// by the flow-control stats component (MySQL 9.7+), or inferred from the queues and
	// thresholds without it.
	ThrottleMetrics = []string{MetricGRFCThrottledSessions, MetricGRFCThrottleInferred}
	// MembershipMetrics go on the membership panel: the nodes each node sees (a partition
	// or an expelled member shows as a step down, UNREACHABLE members as a step up).
	MembershipMetrics = []string{MetricGaleraClusterSize, MetricGRMembersOnline, MetricGRMembersUnreachable}
	// HostCPUMetrics go on the host CPU panel (busy first: the solid line).
	HostCPUMetrics = []string{MetricHostCPUBusy, MetricHostCPUIOWait, MetricHostCPUSteal}
	// ServerCPUMetrics go on the mysqld CPU panel.
	ServerCPUMetrics = []string{MetricServerCPU}
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
	case strings.HasPrefix(metric, MetricSamplerErrors):
		return ClassOther
	case strings.HasSuffix(metric, "_fraction") &&
		(strings.Contains(metric, "paused") || strings.Contains(metric, "throttle") || strings.Contains(metric, "flow_control")):
		return ClassPaused
	case strings.Contains(metric, "queue"):
		return ClassQueue
	}
	return ClassOther
}
