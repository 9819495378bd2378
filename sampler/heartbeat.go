package sampler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/habench/habench/topology"
)

// Metric names this sampler emits (Sample.Metric; see Metrics and docs/results.md).
const (
	// MetricLag: visibility lag of the node, seconds.
	MetricLag = "lag_s"
	// MetricHeartbeatSeqBehind: heartbeat writes the node has not shown yet.
	MetricHeartbeatSeqBehind = "heartbeat_seq_behind"
	// MetricHeartbeatWriteAge: on the writer: age of the newest heartbeat commit, seconds.
	MetricHeartbeatWriteAge = "heartbeat_write_age_s"
	// MetricHeartbeatWriteErrors: on the writer: failed heartbeat writes so far.
	MetricHeartbeatWriteErrors = "heartbeat_write_errors"
)

// HeartbeatWindow is how long the heartbeat remembers the commit time of each write. A node
// further behind than this reports the age of the oldest remembered write (a lower bound).
const HeartbeatWindow = 10 * time.Minute

// heartbeatSetupTimeout bounds creating the heartbeat table at the start of a run.
const heartbeatSetupTimeout = 15 * time.Second

// Heartbeat measures visibility lag the same way on every topology (pt-heartbeat's idea,
// without its period-sized floor). During a run a writer goroutine on the first writable node
// runs, every Config.HeartbeatPeriod,
//
//	REPLACE INTO habench.heartbeat (id, seq, ts_us) VALUES (1, <seq>, <wall clock µs>)
//
// with seq = 1, 2, 3, ... (continuing after any seq left by an earlier run), and remembers in
// memory the wall-clock time each write's commit completed (the statement returned). The row
// replicates like any other write. Each tick, every node's row is read and
//
//	lag_s = 0                                   if the node's seq >= the latest committed seq
//	lag_s = now - commit time of node_seq+1     otherwise: the age of the oldest committed
//	                                            write the node has not shown yet
//
// so an idle, caught-up node reads exactly 0 and a stalled node's lag grows at one second
// per second. "now" is taken just before the node's row is read and "latest committed" is the
// latest write completed at that moment. A node with no row (or no table) yet counts as
// seq 0. Writer and readers run in this process on one host, so commit times and "now" come
// from the same clock: there is no clock skew to correct, unlike pt-heartbeat across hosts.
//
// Metrics: lag_s, heartbeat_seq_behind (every node); heartbeat_write_age_s and
// heartbeat_write_errors (the writer node). Start fails when the habench database or table
// cannot be created; Sample fails when the row cannot be read (other than a missing table).
// With no writable node the heartbeat is disabled (Supports is false) and a warning logged.
type Heartbeat struct {
	now func() time.Time // the clock; time.Now outside tests

	mu      sync.Mutex
	writer  string    // name of the writer node; "" when not running
	started time.Time // when the writer started
	log     *hbLog

	writeErrors atomic.Uint64
}

// NewHeartbeat returns a heartbeat sampler; its writer starts with Runner.Run.
func NewHeartbeat() *Heartbeat {
	return &Heartbeat{now: time.Now, log: newHBLog(HeartbeatWindow)}
}

// Name is "heartbeat".
func (h *Heartbeat) Name() string { return "heartbeat" }

// Supports every node with SQL (not a proxy) once a writer runs (after Start found a
// writable node).
func (h *Heartbeat) Supports(n Node) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.writer != "" && n.DB != nil
}

// Start creates `habench`.`heartbeat` (IF NOT EXISTS) on the first writable node, reads the
// seq left there by earlier runs, and starts the writer goroutine. Error if the table cannot
// be created or read. stop cancels the writer and waits for it.
func (h *Heartbeat) Start(ctx context.Context, cfg Config, nodes []Node) (func(), error) {
	cfg = cfg.withDefaults()
	var src Node
	found := false
	for _, n := range nodes {
		if n.Role.Writable() {
			src, found = n, true
			break
		}
	}
	if !found {
		cfg.Logger.Warn("heartbeat disabled: no writable node")
		return nil, nil
	}
	sctx, cancel := context.WithTimeout(ctx, heartbeatSetupTimeout)
	defer cancel()
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS habench",
		"CREATE TABLE IF NOT EXISTS habench.heartbeat (id INT UNSIGNED NOT NULL PRIMARY KEY, " +
			"seq BIGINT UNSIGNED NOT NULL, ts_us BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB",
	} {
		if _, err := src.DB.ExecContext(sctx, q); err != nil {
			return nil, fmt.Errorf("node %s: %s: %w", src.Name, q, err)
		}
	}
	var base uint64
	if err := src.DB.QueryRowContext(sctx, "SELECT COALESCE(MAX(seq), 0) FROM habench.heartbeat").Scan(&base); err != nil {
		return nil, fmt.Errorf("node %s: read heartbeat seq: %w", src.Name, err)
	}

	h.mu.Lock()
	h.writer, h.started = src.Name, h.now()
	h.log = newHBLog(HeartbeatWindow)
	h.mu.Unlock()
	h.writeErrors.Store(0)

	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.write(wctx, src, base, cfg, nodes)
	}()
	return func() {
		wcancel()
		<-done
		h.mu.Lock()
		h.writer = ""
		h.mu.Unlock()
	}, nil
}

// write is the writer loop: one REPLACE per period, its commit time recorded on success.
// A failed write is counted and its seq skipped (it may or may not have committed). With
// cfg.Roles the writer follows the writable node: checked every second, after a failed
// write and while a write hangs (execFollowing), it moves to the node the cluster's record
// now calls the source (a promotion), the seq continuing there. A failed write on a node cfg.Expected says is down is not a warning.
func (h *Heartbeat) write(ctx context.Context, src Node, seq uint64, cfg Config, nodes []Node) {
	period := cfg.HeartbeatPeriod
	log := cfg.Logger.With("sampler", "heartbeat", "node", src.Name)
	t := time.NewTicker(period)
	defer t.Stop()
	failing, reportAfter := 0, 3
	var firstErr error
	var checked time.Time
	for {
		if cfg.Roles != nil && (failing > 0 || time.Since(checked) >= time.Second) {
			checked = time.Now()
			if n, ok := writableNow(ctx, cfg, nodes, period); ok && n.Name != src.Name {
				log.Info("heartbeat writer moved", "to", n.Name)
				src, log, failing = n, cfg.Logger.With("sampler", "heartbeat", "node", n.Name), 0
				h.mu.Lock()
				h.writer = n.Name
				h.mu.Unlock()
			}
		}
		seq++
		q := fmt.Sprintf("REPLACE INTO habench.heartbeat (id, seq, ts_us) VALUES (1, %d, %d)", seq, h.now().UnixMicro())
		err := execFollowing(ctx, src, q, cfg, nodes)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			h.writeErrors.Add(1)
			if failing++; failing == 1 {
				firstErr = err
			}
			// Reported after a few failures (or at the recovery): a fault's record
			// (Expected) is written once its action returned, just after the first
			// failures it causes.
			if failing == reportAfter {
				if why := expected(cfg, src.Name); why != "" {
					log.Debug("heartbeat write failed (expected)", "err", firstErr, "why", why)
				} else {
					log.Warn("heartbeat write failed", "err", firstErr)
				}
			}
		default:
			h.log.record(seq, h.now())
			switch {
			case failing >= reportAfter:
				log.Info("heartbeat write recovered", "failed_writes", failing)
			case failing > 0 && expected(cfg, src.Name) == "":
				log.Warn("heartbeat write failed", "err", firstErr, "failed_writes", failing)
			}
			failing = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// execFollowing runs the heartbeat write q on src. With cfg.Roles, while the write waits it
// asks, once a second, which node is writable now, and gives the write up (an error) when
// that is another node: an old primary cut off in a minority holds its commits until it
// learns it was expelled (half a minute and more), and the heartbeat must not stay there
// while the new primary commits, every node showing lag 0 against a stale heartbeat. A
// write that only waits (semi-sync, flow control) on the node still writable is kept.
func execFollowing(ctx context.Context, src Node, q string, cfg Config, nodes []Node) error {
	if cfg.Roles == nil {
		_, err := src.DB.ExecContext(ctx, q)
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := src.DB.ExecContext(wctx, q)
		done <- err
	}()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
			if n, ok := writableNow(ctx, cfg, nodes, cfg.HeartbeatPeriod); ok && n.Name != src.Name {
				cancel()
				<-done
				return fmt.Errorf("heartbeat write on %s given up: the writable node is now %s", src.Name, n.Name)
			}
		}
	}
}

// writableNow is the node among nodes that cfg.Roles calls writable (a source or primary;
// false when it names none of them, or fails).
func writableNow(ctx context.Context, cfg Config, nodes []Node, timeout time.Duration) (Node, bool) {
	rctx, cancel := context.WithTimeout(ctx, max(timeout, 500*time.Millisecond))
	roles, err := cfg.Roles(rctx)
	cancel()
	if err != nil {
		return Node{}, false
	}
	for _, n := range nodes {
		if r, ok := roles[n.Name]; ok && (r == topology.RoleSource || r == topology.RolePrimary) {
			return n, true
		}
	}
	return Node{}, false
}

func expected(cfg Config, node string) string {
	if cfg.Expected == nil {
		return ""
	}
	return cfg.Expected(node)
}

// Sample reads the node's heartbeat row and returns lag_s and heartbeat_seq_behind, plus on
// the writer node heartbeat_write_age_s and heartbeat_write_errors. Error if the query fails
// for another reason than a missing database/table (which counts as "no row yet").
func (h *Heartbeat) Sample(ctx context.Context, _ *Tick, n Node) ([]Sample, error) {
	h.mu.Lock()
	writer, started, log := h.writer, h.started, h.log
	h.mu.Unlock()
	if writer == "" {
		return nil, errors.New("heartbeat writer not running")
	}
	latest, hasLatest := log.latest()
	now := h.now()
	var nodeSeq uint64
	err := n.DB.QueryRowContext(ctx, "SELECT seq FROM habench.heartbeat WHERE id = 1").Scan(&nodeSeq)
	switch {
	case err == nil:
	case errors.Is(err, sql.ErrNoRows), isServerError(err, erBadDB, erNoSuchTable):
		nodeSeq = 0
	default:
		return nil, err
	}
	lag, behind := log.lagAt(nodeSeq, latest.seq, now)
	out := []Sample{
		{Metric: MetricLag, Value: lag.Seconds()},
		{Metric: MetricHeartbeatSeqBehind, Value: float64(behind)},
	}
	if n.Name == writer {
		last := started
		if hasLatest {
			last = latest.at
		}
		out = append(out,
			Sample{Metric: MetricHeartbeatWriteAge, Value: max(0, now.Sub(last).Seconds())},
			Sample{Metric: MetricHeartbeatWriteErrors, Value: float64(h.writeErrors.Load())})
	}
	return out, nil
}

// hbEntry is one committed heartbeat write.
type hbEntry struct {
	seq uint64
	at  time.Time // when the write's commit completed
}

// hbLog remembers, in seq order, when each heartbeat write committed, for a bounded window.
// Safe for concurrent use.
type hbLog struct {
	mu      sync.Mutex
	window  time.Duration
	entries []hbEntry // ascending seq and time
}

func newHBLog(window time.Duration) *hbLog { return &hbLog{window: window} }

// record notes that write seq committed at at; seqs must be recorded in ascending order.
// Entries older than the window before at are dropped, the newest is always kept.
func (l *hbLog) record(seq uint64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, hbEntry{seq, at})
	cut := at.Add(-l.window)
	i := 0
	for i < len(l.entries)-1 && l.entries[i].at.Before(cut) {
		i++
	}
	if i > 0 {
		l.entries = l.entries[i:] // append reallocates only the live tail
	}
}

// latest returns the newest committed write (false when none yet).
func (l *hbLog) latest() (hbEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) == 0 {
		return hbEntry{}, false
	}
	return l.entries[len(l.entries)-1], true
}

// lagAt returns the lag at now of a node that shows seq nodeSeq, given that latest was the
// newest committed seq at now: 0 when nodeSeq >= latest, else now minus the commit time of the
// oldest remembered write newer than nodeSeq (never negative); and how many seqs it is behind.
func (l *hbLog) lagAt(nodeSeq, latest uint64, now time.Time) (time.Duration, uint64) {
	if nodeSeq >= latest {
		return 0, 0
	}
	behind := latest - nodeSeq
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].seq > nodeSeq })
	if i == len(l.entries) {
		return 0, behind
	}
	return max(0, now.Sub(l.entries[i].at)), behind
}
