package sampler

import (
	"context"
	"fmt"
	"sync"

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
