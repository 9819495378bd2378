package sampler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// Metric names this sampler emits (Sample.Metric; see Metrics and docs/results.md).
const (
	// MetricSemiSyncOn: on the source: semi-sync active, 0/1.
	MetricSemiSyncOn = "semisync_on"
	// MetricSemiSyncClients: on the source: replicas acknowledging.
	MetricSemiSyncClients = "semisync_clients"
	// MetricSemiSyncYesTx: commits acknowledged by a replica in the tick.
	MetricSemiSyncYesTx = "semisync_yes_tx"
	// MetricSemiSyncNoTx: commits without an acknowledgement in the tick.
	MetricSemiSyncNoTx = "semisync_no_tx"
	// MetricSemiSyncAvgWait: the server's average acknowledgement wait since startup, us.
	MetricSemiSyncAvgWait = "semisync_avg_wait_us"
	// MetricSemiSyncIntervalAvgWait: the average acknowledgement wait over the last tick, us.
	MetricSemiSyncIntervalAvgWait = "semisync_interval_avg_wait_us"
	// MetricSemiSyncReplicaOn: on replicas: semi-sync replica status, 0/1.
	MetricSemiSyncReplicaOn = "semisync_replica_on"
)

// SemiSync reports semi-synchronous replication from status variables, read with one
// SHOW GLOBAL STATUS LIKE '<prefix>%' per node per tick, where prefix is
// Caps.SemiSyncNames().StatusPrefix (Rpl_semi_sync_source_ on MySQL >= 8.0.26,
// Rpl_semi_sync_master_ before and on MariaDB). On the writable node:
//
//	semisync_on                  1 if <prefix>status is ON (the source waits for acks), else 0
//	semisync_clients             <prefix>clients: connected semi-sync replicas
//	semisync_yes_tx              transactions acknowledged since the previous tick (delta of <prefix>yes_tx)
//	semisync_no_tx               transactions committed without an ack since the previous tick (delta of <prefix>no_tx)
//	semisync_avg_wait_us         <prefix>tx_avg_wait_time: the server's average ack wait since it started, µs
//	semisync_interval_avg_wait_us  delta of <prefix>tx_wait_time / delta of <prefix>tx_waits: the
//	                             average ack wait during the last tick, µs (0 without waits; omitted
//	                             if the server lacks these variables)
//
// Deltas count from the baseline read in Start (before the workload; without Start they
// are 0 on a node's first tick), and when a counter went down (server restart) the
// delta is the new value. On replicas: semisync_replica_on, 1 if Caps.SemiSyncNames().ReplicaStatus
// (Rpl_semi_sync_replica_status | Rpl_semi_sync_slave_status) is ON.
//
// Supports writable nodes and replicas. Sample errors when the status variables are missing
// (semi-sync plugin not loaded) or not numbers.
type SemiSync struct {
	mu   sync.Mutex
	prev map[string]map[string]float64 // node -> counter -> last value
}

// NewSemiSync returns the semi-sync sampler.
func NewSemiSync() *SemiSync { return &SemiSync{prev: map[string]map[string]float64{}} }

// Name is "semisync".
func (*SemiSync) Name() string { return "semisync" }

// Supports the writable node and replicas.
func (*SemiSync) Supports(n Node) bool { return n.Role.Writable() || n.Role == topology.RoleReplica }

// Sample returns the source metrics on a writable node and semisync_replica_on on a replica.
func (s *SemiSync) Sample(ctx context.Context, _ *Tick, n Node) ([]Sample, error) {
	names := n.Caps.SemiSyncNames()
	if !n.Role.Writable() {
		st, err := globalStatus(ctx, n.DB, names.ReplicaStatus)
		if err != nil {
			return nil, err
		}
		v, ok := st[names.ReplicaStatus]
		if !ok {
			return nil, fmt.Errorf("status %s missing (semi-sync replica plugin not loaded?)", names.ReplicaStatus)
		}
		return []Sample{{Metric: MetricSemiSyncReplicaOn, Value: onOff(v)}}, nil
	}
	st, err := globalStatus(ctx, n.DB, names.StatusPrefix+"%")
	if err != nil {
		return nil, err
	}
	return s.sourceSamples(n.Name, names.StatusPrefix, st)
}

// sourceSamples computes the source metrics from status name -> value.
func (s *SemiSync) sourceSamples(node, prefix string, st map[string]string) ([]Sample, error) {
	status, ok := st[prefix+"status"]
	if !ok {
		return nil, fmt.Errorf("status %sstatus missing (semi-sync source plugin not loaded?)", prefix)
	}
	num := func(suffix string) (float64, error) {
		v, ok := st[prefix+suffix]
		if !ok {
			return 0, fmt.Errorf("status %s%s missing", prefix, suffix)
		}
		return parseFloat(prefix+suffix, v)
	}
	cur := map[string]float64{}
	for _, k := range []string{"clients", "yes_tx", "no_tx", "tx_avg_wait_time"} {
		v, err := num(k)
		if err != nil {
			return nil, err
		}
		cur[k] = v
	}
	_, hasWT := st[prefix+"tx_wait_time"]
	_, hasW := st[prefix+"tx_waits"]
	interval := hasWT && hasW
	if interval {
		for _, k := range []string{"tx_wait_time", "tx_waits"} {
			v, err := num(k)
			if err != nil {
				return nil, err
			}
			cur[k] = v
		}
	}

	s.mu.Lock()
	prev, seen := s.prev[node]
	s.prev[node] = cur
	s.mu.Unlock()
	delta := func(k string) float64 {
		if !seen {
			return 0
		}
		p, ok := prev[k]
		if !ok {
			return 0
		}
		if d := cur[k] - p; d >= 0 {
			return d
		}
		return cur[k] // counter reset
	}
	out := []Sample{
		{Metric: MetricSemiSyncOn, Value: onOff(status)},
		{Metric: MetricSemiSyncClients, Value: cur["clients"]},
		{Metric: MetricSemiSyncYesTx, Value: delta("yes_tx")},
		{Metric: MetricSemiSyncNoTx, Value: delta("no_tx")},
		{Metric: MetricSemiSyncAvgWait, Value: cur["tx_avg_wait_time"]},
	}
	if interval {
		avg := 0.0
		if w := delta("tx_waits"); w > 0 {
			avg = delta("tx_wait_time") / w
		}
		out = append(out, Sample{Metric: MetricSemiSyncIntervalAvgWait, Value: avg})
	}
	return out, nil
}

// Start reads the writable nodes' counters as the baseline for the first tick's deltas, so
// the commits before the first tick are not lost from the totals. A node whose counters
// cannot be read yet is skipped (its first tick then reports 0 deltas); Start never fails.
func (s *SemiSync) Start(ctx context.Context, cfg Config, nodes []Node) (func(), error) {
	for _, n := range nodes {
		if !n.Role.Writable() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.withDefaults().Timeout)
		prefix := n.Caps.SemiSyncNames().StatusPrefix
		st, err := globalStatus(cctx, n.DB, prefix+"%")
		cancel()
		if err != nil {
			continue
		}
		s.sourceSamples(n.Name, prefix, st) // records the baseline; samples discarded
	}
	return nil, nil
}

// semiSyncSummary sums the source's semi-sync samples (nil when there are none).
func semiSyncSummary(samples []Sample) *schema.SemiSyncSummary {
	var ss schema.SemiSyncSummary
	seen := false
	yes := map[time.Duration]float64{}
	for _, sm := range samples {
		switch sm.Metric {
		case MetricSemiSyncOn:
			seen, ss.Node = true, sm.Node
			if sm.Value == 0 {
				ss.SecondsOff++
			}
		case MetricSemiSyncYesTx:
			ss.YesTx += sm.Value
			yes[sm.Elapsed] = sm.Value
		case MetricSemiSyncNoTx:
			ss.NoTx += sm.Value
		}
	}
	if !seen {
		return nil
	}
	// Weight each second's average wait by that second's acknowledged commits.
	var weighted float64
	for _, sm := range samples {
		if sm.Metric == MetricSemiSyncIntervalAvgWait {
			weighted += sm.Value * yes[sm.Elapsed]
		}
	}
	if ss.YesTx > 0 {
		ss.AvgWaitUs = weighted / ss.YesTx
	}
	return &ss
}

// semiSyncOff returns the periods in which a node's semisync_on samples were 0, in time
// order; every is the sample interval.
func semiSyncOff(samples []Sample, every time.Duration) []schema.SemiSyncOff {
	var out []schema.SemiSyncOff
	open := map[string]int{} // node -> index in out of its period still OFF
	last := map[string]float64{}
	for _, sm := range samples {
		if sm.Metric != MetricSemiSyncOn {
			continue
		}
		t := sm.Elapsed.Seconds()
		i, off := open[sm.Node]
		switch {
		case sm.Value == 0 && !off:
			open[sm.Node] = len(out)
			out = append(out, schema.SemiSyncOff{Node: sm.Node, FromS: t})
		case sm.Value != 0 && off:
			out[i].ToS = t
			delete(open, sm.Node)
		}
		last[sm.Node] = t
	}
	for node, i := range open {
		out[i].ToS, out[i].Open = last[node]+every.Seconds(), true
	}
	for _, sm := range samples {
		if sm.Metric != MetricSemiSyncNoTx {
			continue
		}
		t := sm.Elapsed.Seconds()
		for i, p := range out {
			// A delta covers the tick before it: the first sample ON again has the
			// last commits of the period.
			if p.Node == sm.Node && t >= p.FromS && (t < p.ToS || t == p.ToS && !p.Open) {
				out[i].NoTx += sm.Value
			}
		}
	}
	return out
}

// degradedSemiSync sets ss's Degraded, Off and Warning from the samples (nothing when
// ss is nil).
func degradedSemiSync(ss *schema.SemiSyncSummary, samples []Sample, every time.Duration) {
	if ss == nil {
		return
	}
	ss.Off = semiSyncOff(samples, every)
	ss.Degraded = ss.NoTx > 0 || len(ss.Off) > 0
	ss.Warning = semiSyncWarning(ss)
}

// semiSyncWarning is the run's WARNING for a degraded semi-sync guarantee ("" when it
// held): how long and when semi-sync was OFF, and how many commits of all were
// acknowledged to clients without any replica having them.
func semiSyncWarning(ss *schema.SemiSyncSummary) string {
	if ss == nil || !ss.Degraded {
		return ""
	}
	all := ss.YesTx + ss.NoTx
	share := 0.0
	if all > 0 {
		share = 100 * ss.NoTx / all
	}
	acked := fmt.Sprintf("%.0f of %.0f commits (%.1f%%) were acknowledged to clients without any replica having them (no_tx; the counts include habench's heartbeat writes)",
		ss.NoTx, all, share)
	if len(ss.Off) == 0 {
		return fmt.Sprintf("semi-sync on %s did not hold: %s, though no sample saw it OFF", ss.Node, acked)
	}
	var spans []string
	total := 0.0
	for _, p := range ss.Off {
		end := fmt.Sprintf("%.1f s", p.ToS)
		if p.Open {
			end = "the end, still OFF"
		}
		spans = append(spans, fmt.Sprintf("%s from %.1f s to %s (%.0f commits without a replica)", p.Node, p.FromS, end, p.NoTx))
		total += p.ToS - p.FromS
	}
	return fmt.Sprintf("semi-sync fell back to async: OFF for %.1f s in all, %s (samples.csv's clock); %s",
		total, strings.Join(spans, ", "), acked)
}

// Markdown is report.md's semi-sync section ("" without semi-sync samples): the
// source's counts and, when it fell back to async, its OFF periods.
func (*SemiSync) Markdown(s *schema.Summary) string {
	ss := s.SemiSync
	if ss == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Semi-sync on %s\n\n", ss.Node)
	b.WriteString("| acknowledged commits (yes_tx) | unacknowledged (no_tx) | seconds OFF (async fallback) | avg ack wait us |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %.0f | %.0f | %d | %.0f |\n", ss.YesTx, ss.NoTx, ss.SecondsOff, ss.AvgWaitUs)
	if len(ss.Off) > 0 {
		b.WriteString("\n**Semi-sync was OFF (fallen back to async):**\n\n| node | OFF from s | to s | commits acknowledged without a replica (no_tx) |\n|---|---|---|---|\n")
		for _, p := range ss.Off {
			to := fmt.Sprintf("%.1f", p.ToS)
			if p.Open {
				to += " (still OFF at the end)"
			}
			fmt.Fprintf(&b, "| %s | %.1f | %s | %.0f |\n", p.Node, p.FromS, to, p.NoTx)
		}
		b.WriteString("\nfrom = the first sample OFF, to = the first sample ON again (samples.csv's clock).\n")
	}
	b.WriteString("\nyes_tx also counts habench's heartbeat writes (10 per second).\n")
	return b.String()
}

// Summarize sets s.SemiSync from the source's semi-sync samples in in: the counts, and
// whether the guarantee held (Degraded, the OFF periods and the warning). Nil without
// semi-sync samples.
func (*SemiSync) Summarize(in SummaryInput, s *schema.Summary) error {
	s.SemiSync = semiSyncSummary(in.Samples)
	degradedSemiSync(s.SemiSync, in.Samples, in.Every)
	return nil
}

// SectionOrder: report.md's semi-sync section comes first of the samplers' sections.
func (*SemiSync) SectionOrder() int { return 10 }
