// Package metrics exposes a run's numbers live, in Prometheus' text format, while it is in
// progress: transaction, query, error and reconnect counters read from the workers as
// transactions complete (AttachLive; from report intervals when no run is attached),
// interval gauges from the workload's report intervals, latency as a
// histogram in seconds built from each interval's HdrHistogram, and every node's sampled
// lag, backlog, queues and flow-control paused fraction. It uses its own registry (never
// the global one), so only habench_* metrics are served.
//
// Feed it from experiment.Bench's hooks: StartRun when a run (a topology, a sweep cell)
// begins, AttachLive from OnLive, ObserveInterval from OnInterval, ObserveSamples from
// OnSamples, EndRun when the run is over. Serve exposes /metrics over HTTP.
package metrics

import (
	"fmt"
	"strings"
	"sync"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/workload"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, a contract with grafana/habench-dashboard.json.
const (
	Transactions    = "habench_transactions_total"
	Queries         = "habench_queries_total"
	Errors          = "habench_errors_total"
	Reconnects      = "habench_reconnects_total"
	Latency         = "habench_latency_seconds"
	IntervalTPS     = "habench_interval_tps"
	IntervalQPS     = "habench_interval_qps"
	IntervalLatency = "habench_interval_latency_seconds"
	Threads         = "habench_threads"
	NodeLag         = "habench_node_lag_seconds"
	NodeBacklog     = "habench_node_backlog_transactions"
	NodeQueue       = "habench_node_queue_transactions"
	NodePaused      = "habench_node_flow_control_paused_ratio"
	NodeThrottle    = "habench_node_flow_control_throttle"
	NodeSample      = "habench_node_sample"
	HostCPU         = "habench_host_cpu_ratio"
	NodeServerCPU   = "habench_node_mysqld_cpu_cores"
	RunInfo         = "habench_run_info"
	RunActive       = "habench_run_active"
)

// LatencyBuckets are the upper bounds (seconds) of habench_latency_seconds.
var LatencyBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10}

// Run describes the run in progress, shown as labels of habench_run_info.
type Run struct {
	Scenario string // scenario name, "" for `habench sysbench run`
	Topology string // topology (cluster) name
	Kind     string // the topology kind: single, async, group, galera, ...
	Flavor   string // mariadb, mysql
	Workload string // oltp_read_write, ...
	// Cell names the sweep cell ("threads=16"), "" outside sweeps.
	Cell string
}

// Metrics holds the registry and every habench_* collector.
type Metrics struct {
	reg *prometheus.Registry

	counters                 *runCounters // transactions, queries, errors, reconnects (live.go)
	latency                  *latencyHistogram
	intervalTPS, intervalQPS prometheus.Gauge
	intervalLatency          *prometheus.GaugeVec
	threads                  prometheus.Gauge

	nodeLag, nodeBacklog, nodeQueue, nodePaused, nodeThrottle, nodeSample *prometheus.GaugeVec
	hostCPU, nodeServerCPU                                                *prometheus.GaugeVec
	runInfo                                                               *prometheus.GaugeVec
	runActive                                                             prometheus.Gauge

	mu       sync.Mutex
	lastTick map[sampleKey]bool // series set by the previous tick
}

type sampleKey struct{ node, metric string }

// New returns Metrics with a fresh registry holding all habench_* collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), lastTick: map[sampleKey]bool{}}
	m.counters = newRunCounters()
	m.latency = newLatencyHistogram(prometheus.NewDesc(Latency,
		"Transaction (event) latency in seconds: every event of every report interval, from the interval's HdrHistogram (3 significant digits).", nil, nil), LatencyBuckets)
	m.intervalTPS = prometheus.NewGauge(prometheus.GaugeOpts{Name: IntervalTPS, Help: "Transactions per second over the last report interval."})
	m.intervalQPS = prometheus.NewGauge(prometheus.GaugeOpts{Name: IntervalQPS, Help: "Queries per second over the last report interval."})
	m.intervalLatency = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: IntervalLatency,
		Help: "Latency in seconds over the last report interval: stat avg, p50, p95, p99 (HdrHistogram) or max."}, []string{"stat"})
	m.threads = prometheus.NewGauge(prometheus.GaugeOpts{Name: Threads, Help: "Workload threads running."})
	m.nodeLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NodeLag,
		Help: "Visibility lag in seconds: age of the oldest heartbeat row the node has not shown yet (0 when it shows the newest), sampled once per second (sampler metric lag_s)."}, []string{"node"})
	m.nodeBacklog = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NodeBacklog,
		Help: "Transactions committed on the source and not yet applied on the replica (GTID sets; sampler metric backlog_trx)."}, []string{"node"})
	m.nodeQueue = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NodeQueue,
		Help: "Transactions waiting in a node's queue (certifier, applier, Galera receive queue), label queue = the sampler metric name."}, []string{"node", "queue"})
	m.nodePaused = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NodePaused,
		Help: "Fraction (0..1) of the last sampling second the node was paused or throttled by flow control, label metric = the sampler metric name."}, []string{"node", "metric"})
	m.nodeThrottle = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NodeThrottle,
		Help: "Group Replication flow control other than a fraction: average sessions throttled over the last second (gr_fc_throttled_sessions_avg) or the inferred 0/1 throttle (gr_fc_throttle_inferred), label metric = the sampler metric name."}, []string{"node", "metric"})
	m.nodeSample = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NodeSample,
		Help: "Every per-node sample of the last tick as in samples.csv (unit per metric: docs/results.md, Sampled metrics)."}, []string{"node", "metric"})
	m.hostCPU = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: HostCPU,
		Help: "Share (0..1) of all a host's CPUs over the last sampling second, once per host (not per node): mode busy (neither idle nor iowait; steal included), iowait or steal, from /proc/stat (sampler metrics host_cpu_*_fraction); host = the host's name (local for sandboxes)."}, []string{"host", "mode"})
	m.nodeServerCPU = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NodeServerCPU,
		Help: "CPU of the node's own server process over the last sampling second, in cores (1 = one core busy; /proc/PID/stat utime+stime, sampler metric mysqld_cpu_cores)."}, []string{"node"})
	m.runInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: RunInfo,
		Help: "1 for the run in progress or last run: scenario, topology, kind, flavor, workload and sweep cell."}, []string{"scenario", "topology", "kind", "flavor", "workload", "cell"})
	m.runActive = prometheus.NewGauge(prometheus.GaugeOpts{Name: RunActive, Help: "1 while a workload run is in progress, else 0."})
	m.reg.MustRegister(m.counters, m.latency, m.intervalTPS, m.intervalQPS,
		m.intervalLatency, m.threads, m.nodeLag, m.nodeBacklog, m.nodeQueue, m.nodePaused, m.nodeThrottle, m.nodeSample, m.hostCPU, m.nodeServerCPU, m.runInfo, m.runActive)
	return m
}

// Registry is the registry to serve (or gather in tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// StartRun marks a run as in progress: habench_run_info gets r's labels, per-node and
// per-interval gauges of the previous run are removed (counters keep counting).
func (m *Metrics) StartRun(r Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range []*prometheus.GaugeVec{m.nodeLag, m.nodeBacklog, m.nodeQueue, m.nodePaused, m.nodeThrottle, m.nodeSample, m.hostCPU, m.nodeServerCPU, m.intervalLatency, m.runInfo} {
		v.Reset()
	}
	m.lastTick = map[sampleKey]bool{}
	m.intervalTPS.Set(0)
	m.intervalQPS.Set(0)
	m.threads.Set(0)
	m.runInfo.WithLabelValues(r.Scenario, r.Topology, r.Kind, r.Flavor, r.Workload, r.Cell).Set(1)
	m.runActive.Set(1)
}

// EndRun marks the run as over (habench_run_active 0, habench_threads 0); its last
// values stay until the next StartRun.
func (m *Metrics) EndRun() {
	m.counters.attach(nil)
	m.runActive.Set(0)
	m.threads.Set(0)
}

// ObserveInterval adds one report interval: the latency histogram (every event that
// completed in the interval, once: iv.Recorded, without the waits of transactions still in
// flight, which the next intervals would count again), the interval gauges and, when no
// live counters are attached (AttachLive), the interval's counts to the counters. The
// interval gauges keep the in-flight waits (what the interval's report line shows).
func (m *Metrics) ObserveInterval(iv workload.Interval) {
	m.counters.observe(iv)
	h := iv.Recorded
	if h == nil {
		h = iv.Histogram
	}
	if h != nil {
		// The exact sum of the interval's latencies: avg (ms) x events.
		m.latency.add(h, iv.LatencyAvg*float64(iv.Transactions)/1000)
	}
	m.intervalTPS.Set(iv.TPS)
	m.intervalQPS.Set(iv.QPS)
	m.threads.Set(float64(iv.Threads))
	for stat, ms := range map[string]float64{"avg": iv.LatencyAvg, "p50": iv.LatencyP50, "p95": iv.LatencyP95, "p99": iv.LatencyP99, "max": iv.LatencyMax} {
		m.intervalLatency.WithLabelValues(stat).Set(ms / 1000)
	}
}

// ObserveSamples sets the per-node gauges from one tick's samples: every sample in
// habench_node_sample, lag_s in habench_node_lag_seconds, backlog_trx in
// habench_node_backlog_transactions, queues, paused fractions and throttling
// (sampler.Classify) in their gauges, each host's CPU (node "host:<name>") in
// habench_host_cpu_ratio and each server's CPU in habench_node_mysqld_cpu_cores. Series the tick no longer carries (a node that stopped answering) are
// removed, so a stale value never shows as current.
func (m *Metrics) ObserveSamples(ss []sampler.Sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := map[sampleKey]bool{}
	for _, s := range ss {
		k := sampleKey{s.Node, s.Metric}
		now[k] = true
		m.set(k, s.Value)
	}
	for k := range m.lastTick {
		if !now[k] {
			m.remove(k)
		}
	}
	m.lastTick = now
}

func (m *Metrics) set(k sampleKey, v float64) {
	m.nodeSample.WithLabelValues(k.node, k.metric).Set(v)
	switch {
	case k.metric == sampler.MetricLag:
		m.nodeLag.WithLabelValues(k.node).Set(v)
	case k.metric == sampler.MetricBacklog:
		m.nodeBacklog.WithLabelValues(k.node).Set(v)
	case sampler.Classify(k.metric) == sampler.ClassQueue:
		m.nodeQueue.WithLabelValues(k.node, k.metric).Set(v)
	case sampler.Classify(k.metric) == sampler.ClassPaused:
		m.nodePaused.WithLabelValues(k.node, k.metric).Set(v)
	case sampler.Classify(k.metric) == sampler.ClassThrottle:
		m.nodeThrottle.WithLabelValues(k.node, k.metric).Set(v)
	case sampler.IsHostNode(k.node) && sampler.Classify(k.metric) == sampler.ClassHostCPU:
		m.hostCPU.WithLabelValues(hostLabels(k)...).Set(v)
	case k.metric == sampler.MetricServerCPU:
		m.nodeServerCPU.WithLabelValues(k.node).Set(v)
	}
}

func (m *Metrics) remove(k sampleKey) {
	m.nodeSample.DeleteLabelValues(k.node, k.metric)
	switch {
	case k.metric == sampler.MetricLag:
		m.nodeLag.DeleteLabelValues(k.node)
	case k.metric == sampler.MetricBacklog:
		m.nodeBacklog.DeleteLabelValues(k.node)
	case sampler.Classify(k.metric) == sampler.ClassQueue:
		m.nodeQueue.DeleteLabelValues(k.node, k.metric)
	case sampler.Classify(k.metric) == sampler.ClassPaused:
		m.nodePaused.DeleteLabelValues(k.node, k.metric)
	case sampler.Classify(k.metric) == sampler.ClassThrottle:
		m.nodeThrottle.DeleteLabelValues(k.node, k.metric)
	case sampler.IsHostNode(k.node) && sampler.Classify(k.metric) == sampler.ClassHostCPU:
		m.hostCPU.DeleteLabelValues(hostLabels(k)...)
	case k.metric == sampler.MetricServerCPU:
		m.nodeServerCPU.DeleteLabelValues(k.node)
	}
}

// hostLabels are habench_host_cpu_ratio's host and mode of a host sample
// ("host:local", "host_cpu_busy_fraction" -> "local", "busy").
func hostLabels(k sampleKey) []string {
	mode := strings.TrimSuffix(strings.TrimPrefix(k.metric, "host_cpu_"), "_fraction")
	return []string{strings.TrimPrefix(k.node, sampler.HostNodePrefix), mode}
}

// String is for logs.
func (r Run) String() string {
	s := r.Topology
	if r.Cell != "" {
		s += " " + r.Cell
	}
	if r.Scenario != "" {
		s = fmt.Sprintf("%s/%s", r.Scenario, s)
	}
	return s
}
