package report

import (
	"strings"

	"github.com/habench/habench/sampler"
)

// Panel is one time-series panel of a run's chart, under the TPS and latency panels, on
// the same time axis. A sampled metric goes on the first panel that claims it (see
// sampler.Classify); a panel without data is left out.
type Panel struct {
	Class sampler.Class
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
	{Class: sampler.ClassLag, Title: "visibility lag per node (heartbeat)", YLabel: "lag s"},
	{Class: sampler.ClassQueue, Title: "backlog and queues per node", YLabel: "transactions, writesets"},
	{Class: sampler.ClassPaused, Title: "flow control: fraction of each second paused", YLabel: "paused fraction", Fraction: true},
	{Class: sampler.ClassThrottle, Title: "flow control: sessions throttled (avg per second; inferred 0/1)", YLabel: "sessions"},
	{Class: sampler.ClassMembership, Title: "membership as each node sees it (Galera component size; group members ONLINE, UNREACHABLE)", YLabel: "nodes"},
	{Class: sampler.ClassHostCPU, Title: "host CPU: busy (solid), iowait and steal (dashed), share of all CPUs, once per host", YLabel: "CPU fraction", Fraction: true,
		MetricLabel: func(m string) string { return strings.TrimSuffix(strings.TrimPrefix(m, "host_cpu_"), "_fraction") }},
	{Class: sampler.ClassServerCPU, Title: "mysqld CPU per node (1 = one core)", YLabel: "cores"},
}
