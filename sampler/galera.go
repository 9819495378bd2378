package sampler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// Metric names this sampler emits (Sample.Metric; see Metrics and docs/results.md).
const (
	// MetricGaleraFCPaused: share of the tick replication was paused by flow control, 0..1.
	MetricGaleraFCPaused = "galera_fc_paused_fraction"
	// MetricGaleraFCSent: flow-control pause requests sent in the tick.
	MetricGaleraFCSent = "galera_fc_sent"
	// MetricGaleraFCRecv: flow-control pause requests received in the tick.
	MetricGaleraFCRecv = "galera_fc_recv"
	// MetricGaleraRecvQueue: wsrep_local_recv_queue, write sets.
	MetricGaleraRecvQueue = "galera_recv_queue"
	// MetricGaleraSendQueue: wsrep_local_send_queue, write sets.
	MetricGaleraSendQueue = "galera_send_queue"
	// MetricGaleraCertFailures: local certification failures in the tick.
	MetricGaleraCertFailures = "galera_cert_failures"
	// MetricGaleraBFAborts: brute-force aborts in the tick.
	MetricGaleraBFAborts = "galera_bf_aborts"
	// MetricGaleraLastCommittedGap: the most advanced node's wsrep_last_committed minus this node's.
	MetricGaleraLastCommittedGap = "galera_last_committed_gap"
	// MetricGaleraClusterSize: wsrep_cluster_size.
	MetricGaleraClusterSize = "galera_cluster_size"
	// MetricGaleraPrimary: wsrep_cluster_status = Primary, 0/1.
	MetricGaleraPrimary = "galera_primary"
	// MetricGaleraLocalState: wsrep_local_state code.
	MetricGaleraLocalState = "galera_local_state"
	// MetricGaleraReady: wsrep_ready, 0/1.
	MetricGaleraReady = "galera_ready"
)

// Galera reports a Galera node's flow control, queues, conflicts and membership from its
// wsrep status variables, read with one SHOW GLOBAL STATUS LIKE 'wsrep\_%' per node per tick:
//
//	galera_fc_paused_fraction  delta of wsrep_flow_control_paused_ns divided by the wall time
//	                           between this read and the node's previous one: the share of the
//	                           interval replication was paused by flow control, 0..1
//	galera_fc_sent             delta of wsrep_flow_control_sent: pause requests this node sent
//	                           (its receive queue passed gcs.fc_limit)
//	galera_fc_recv             delta of wsrep_flow_control_recv: pause requests it received
//	                           (from any node, itself included)
//	galera_recv_queue          wsrep_local_recv_queue: write sets received, not yet applied
//	galera_send_queue          wsrep_local_send_queue: write sets waiting to be sent
//	galera_cert_failures       delta of wsrep_local_cert_failures: local transactions that
//	                           failed certification (conflict with a write set from another node)
//	galera_bf_aborts           delta of wsrep_local_bf_aborts: local transactions aborted by
//	                           an applied write set ("brute force" abort)
//	galera_last_committed_gap  the largest wsrep_last_committed of the run's Galera nodes in
//	                           this tick minus this node's, in write sets (seqnos); read from
//	                           all nodes at once, once per tick (Tick.Once)
//	galera_cluster_size        wsrep_cluster_size: nodes in this node's component
//	galera_primary             1 if wsrep_cluster_status is Primary, else 0 (Non-Primary,
//	                           Disconnected)
//	galera_local_state         wsrep_local_state: 1 Joining, 2 Donor/Desynced, 3 Joined,
//	                           4 Synced (0 Initialized: e.g. in a non-Primary component; 5 Error on some versions)
//	galera_ready               1 if wsrep_ready is ON (the node accepts queries), else 0
//
// Deltas count from the baseline read in Start (before the workload); without one a node's
// first tick reports 0 counter deltas and no paused fraction. A counter that went down (the
// server restarted) counts from 0. Supports Galera nodes (role node). Sample errors when the
// status query fails or the wsrep variables are missing (no provider loaded).
type Galera struct {
	mu   sync.Mutex
	prev map[string]galeraCounters // node -> counters at its previous read
}

// galeraCounters are the cumulative counters of one read and when it was taken.
type galeraCounters struct {
	at                                          time.Time
	pausedNs, fcSent, fcRecv, certFail, bfAbort float64
}

// NewGalera returns the Galera sampler.
func NewGalera() *Galera { return &Galera{prev: map[string]galeraCounters{}} }

// Name is "galera".
func (*Galera) Name() string { return "galera" }

// Supports Galera nodes.
func (*Galera) Supports(n Node) bool { return n.Role == topology.RoleNode }

// Sample returns the metrics listed on Galera for node n.
func (g *Galera) Sample(ctx context.Context, t *Tick, n Node) ([]Sample, error) {
	st, err := globalStatus(ctx, n.DB, `wsrep\_%`)
	if err != nil {
		return nil, err
	}
	at := time.Now()
	out, err := g.samples(n.Name, st, at)
	if err != nil {
		return nil, err
	}
	lc, _ := onceTyped(ctx, t, "galera.last_committed", func() (lastCommittedRead, error) {
		m, err := lastCommitted(ctx, t.Nodes)
		return lastCommittedRead{m, err}, nil // partial reads are shared too
	})
	v, ok := lc.byNode[n.Name]
	if !ok {
		err := lc.err
		if err == nil {
			err = errors.New("not read")
		}
		return out, fmt.Errorf("wsrep_last_committed: %w", err)
	}
	var top int64
	for _, c := range lc.byNode {
		top = max(top, c)
	}
	return append(out, Sample{Metric: MetricGaleraLastCommittedGap, Value: float64(top - v)}), nil
}

// lastCommittedRead is wsrep_last_committed of the nodes that answered, and the others' errors.
type lastCommittedRead struct {
	byNode map[string]int64
	err    error
}

// samples computes every metric but the last-committed gap from status name -> value read at
// at, and records the counters as the node's baseline for the next read.
func (g *Galera) samples(node string, st map[string]string, at time.Time) ([]Sample, error) {
	num := func(name string) (float64, error) {
		v, ok := st[name]
		if !ok {
			return 0, fmt.Errorf("status %s missing (no Galera provider loaded?)", name)
		}
		return parseFloat(name, v)
	}
	var errs []error
	get := func(name string) float64 {
		v, err := num(name)
		errs = append(errs, err)
		return v
	}
	cur := galeraCounters{at: at,
		pausedNs: get("wsrep_flow_control_paused_ns"),
		fcSent:   get("wsrep_flow_control_sent"),
		fcRecv:   get("wsrep_flow_control_recv"),
		certFail: get("wsrep_local_cert_failures"),
		bfAbort:  get("wsrep_local_bf_aborts"),
	}
	recvQ, sendQ := get("wsrep_local_recv_queue"), get("wsrep_local_send_queue")
	size, state := get("wsrep_cluster_size"), get("wsrep_local_state")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	g.mu.Lock()
	prev, seen := g.prev[node]
	g.prev[node] = cur
	g.mu.Unlock()
	delta := func(c, p float64) float64 {
		if !seen {
			return 0
		}
		if d := c - p; d >= 0 {
			return d
		}
		return c // counter reset: the server restarted
	}
	out := []Sample{}
	if seen {
		if wall := cur.at.Sub(prev.at); wall > 0 {
			f := delta(cur.pausedNs, prev.pausedNs) / float64(wall.Nanoseconds())
			out = append(out, Sample{Metric: MetricGaleraFCPaused, Value: min(1, max(0, f))})
		}
	}
	out = append(out,
		Sample{Metric: MetricGaleraFCSent, Value: delta(cur.fcSent, prev.fcSent)},
		Sample{Metric: MetricGaleraFCRecv, Value: delta(cur.fcRecv, prev.fcRecv)},
		Sample{Metric: MetricGaleraRecvQueue, Value: recvQ},
		Sample{Metric: MetricGaleraSendQueue, Value: sendQ},
		Sample{Metric: MetricGaleraCertFailures, Value: delta(cur.certFail, prev.certFail)},
		Sample{Metric: MetricGaleraBFAborts, Value: delta(cur.bfAbort, prev.bfAbort)},
		Sample{Metric: MetricGaleraClusterSize, Value: size},
		Sample{Metric: MetricGaleraPrimary, Value: boolf(strings.EqualFold(st["wsrep_cluster_status"], "Primary"))},
		Sample{Metric: MetricGaleraLocalState, Value: state},
		Sample{Metric: MetricGaleraReady, Value: onOff(st["wsrep_ready"])},
	)
	return out, nil
}

// lastCommitted reads wsrep_last_committed from every Galera node of the tick at once;
// nodes that fail are missing from the map and their errors joined.
func lastCommitted(ctx context.Context, nodes []Node) (map[string]int64, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	out := map[string]int64{}
	for _, n := range nodes {
		if n.Role != topology.RoleNode {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var k, v string
			err := n.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_last_committed'").Scan(&k, &v)
			var c int64
			if err == nil {
				c, err = strconv.ParseInt(v, 10, 64)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
				return
			}
			out[n.Name] = c
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Start reads every Galera node's counters as the baseline for the first tick's deltas and
// paused fraction. A node that cannot be read yet is skipped; Start never fails.
func (g *Galera) Start(ctx context.Context, cfg Config, nodes []Node) (func(), error) {
	for _, n := range nodes {
		if !g.Supports(n) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.withDefaults().Timeout)
		st, err := globalStatus(cctx, n.DB, `wsrep\_%`)
		cancel()
		if err == nil {
			g.samples(n.Name, st, time.Now()) // records the baseline; samples discarded
		}
	}
	return nil, nil
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// galeraSummary sums the galera sampler's samples per node (nil when there are none).
func galeraSummary(samples []Sample) []schema.GaleraNodeSummary {
	by := map[string]*schema.GaleraNodeSummary{}
	get := func(n string) *schema.GaleraNodeSummary {
		if by[n] == nil {
			by[n] = &schema.GaleraNodeSummary{Node: n}
		}
		return by[n]
	}
	for _, s := range samples {
		if !strings.HasPrefix(s.Metric, "galera_") {
			continue
		}
		g := get(s.Node)
		switch s.Metric {
		case MetricGaleraFCPaused:
			g.Samples++
			g.PausedAvg += s.Value
			g.PausedMax = max(g.PausedMax, s.Value)
		case MetricGaleraFCSent:
			g.FCSent += s.Value
		case MetricGaleraFCRecv:
			g.FCRecv += s.Value
		case MetricGaleraCertFailures:
			g.CertFailures += s.Value
		case MetricGaleraBFAborts:
			g.BFAborts += s.Value
		case MetricGaleraRecvQueue:
			g.RecvQueueMax = max(g.RecvQueueMax, s.Value)
		case MetricGaleraLastCommittedGap:
			g.LastCommittedGapMax = max(g.LastCommittedGapMax, s.Value)
		}
	}
	if len(by) == 0 {
		return nil
	}
	var out []schema.GaleraNodeSummary
	for _, g := range by {
		if g.Samples > 0 {
			g.PausedAvg /= float64(g.Samples)
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// Markdown renders the summary's Galera table for report.md ("" without one).
func (*Galera) Markdown(s *schema.Summary) string {
	gs := s.Galera
	if len(gs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Galera flow control and conflicts\n\n")
	b.WriteString("| node | paused avg | paused max | fc sent | fc recv | cert failures | BF aborts | recv queue max | last committed gap max |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range gs {
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", g.Node, g.PausedAvg, g.PausedMax, g.FCSent, g.FCRecv, g.CertFailures, g.BFAborts, g.RecvQueueMax, g.LastCommittedGapMax)
	}
	b.WriteString("\npaused = share of each second replication was paused by flow control (delta of wsrep_flow_control_paused_ns); fc sent/recv = pause requests; cert failures and BF aborts come back to clients as error 1213 (deadlock).\n")
	return b.String()
}

// Summarize sets s.Galera from the galera samples in in, per node by name (nil without
// galera samples).
func (*Galera) Summarize(in SummaryInput, s *schema.Summary) error {
	s.Galera = galeraSummary(in.Samples)
	return nil
}

// SectionOrder: the Galera section comes after the knob settings.
func (*Galera) SectionOrder() int { return SectionsAfterKnobs + 10 }
