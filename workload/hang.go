package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultWriterHang is the default Options.WriterHang: how long a following worker's
// event may be in progress, while Follow names another writer, before the worker gives
// it up and moves there. 2 s: twice MinOutage, so a lock wait or a slow commit of an
// ordinary run is never cut, while a worker left on a primary cut off in a minority moves
// within about 2 s of the group's election (a group takes ~5 s or more to expel a member).
const DefaultWriterHang = 2 * time.Second

// EndGrace is how long a time-limited run waits, after Options.Time, for events still in
// progress: then their sockets are closed and they count as in flight at the end (Wait,
// a lower bound of their latency). sysbench 1.0.20 waits for them forever unless
// --forced-shutdown is given; a run on a hung node would never end.
const EndGrace = 5 * time.Second

// MaxWaits is how many Waits a Result keeps (the longest); Result.WaitCount counts all.
const MaxWaits = 100

// errAbandoned marks an event given up by a following or failing-over worker (see
// watchHangs): an unknown outcome (abandon).
var errAbandoned = errors.New("event abandoned: its node no longer took the writes while it hung")

// errCommitLost marks an event a following or failing-over worker gives up because the
// connection was lost when it may have committed (mayHaveCommitted): an unknown outcome,
// like errAbandoned, which it wraps.
var errCommitLost = fmt.Errorf("event abandoned: the connection was lost when it may have committed: %w", errAbandoned)

// writerHang is o.WriterHang, or DefaultWriterHang when unset.
func (o Options) writerHang() time.Duration {
	if o.WriterHang > 0 {
		return o.WriterHang
	}
	return DefaultWriterHang
}

// watchHangs runs while a following run (Target.Follow) or a failing-over one
// (Target.Failover) runs: every stallCheck, when a worker's event has been in progress for
// Options.WriterHang, it asks which endpoints to leave (leaving: every one but the writer
// Follow names, every one Failover does not list); a worker hung on one of those has its
// socket closed (connSlot.close) and gives the event up (errAbandoned: an unknown
// outcome), then reconnects where Follow or Failover says (reconnect, moveTo).
func (r *runner) watchHangs(ctx context.Context) {
	bound := int64(r.o.writerHang())
	tk := time.NewTicker(stallCheck)
	defer tk.Stop()
	type hungEvent struct {
		wk   *worker
		busy int64 // its busySince
	}
	var hung []hungEvent
	for {
		select {
		case <-r.done:
			return
		case <-tk.C:
		}
		now := time.Now().UnixNano()
		hung = hung[:0]
		for _, wk := range r.workers {
			if b := wk.busySince.Load(); b != 0 && now-b >= bound && wk.abandonAt.Load() != b {
				hung = append(hung, hungEvent{wk, b})
			}
		}
		if len(hung) == 0 {
			continue
		}
		leave := r.leaving(ctx)
		if leave == nil {
			continue
		}
		for _, h := range hung {
			// Still the same event: Follow may take long, and a worker whose hung
			// event completed meanwhile is busy with a new one, not hung.
			if h.wk.busySince.Load() == h.busy && leave(*h.wk.on.Load()) {
				h.wk.abandonAt.Store(h.busy)
				h.wk.slot.close()
			}
		}
	}
}

// leaving says which endpoints (by label) a hung worker leaves now: with Follow every one
// but the writer it names, with Failover every one it does not list; nil when Follow names
// no writer (an election) or Failover lists nothing (a view not known, or none live:
// nowhere to go): then none.
func (r *runner) leaving(ctx context.Context) func(label string) bool {
	if r.t.Follow == nil {
		live, known := r.t.Failover(time.Time{})
		if !known || len(live) == 0 {
			return nil
		}
		return func(l string) bool { return !slices.Contains(live, l) }
	}
	ep, err := r.t.Follow(ctx)
	if err != nil || ep.Label() == "" {
		return nil
	}
	return func(l string) bool { return l != ep.Label() }
}

// abandonedNow reports whether the watchdog gave up the event in progress (the one begun
// at w.startNs): true once, after a failed attempt.
func (w *worker) abandonedNow() bool {
	a := w.abandonAt.Load()
	if a == 0 {
		return false
	}
	w.abandonAt.Store(0)
	return a == w.startNs
}

// mayHaveCommitted reports whether err, the lost connection (code) of an event's attempt
// whose statement counts are ev, leaves the outcome unknown: the statement was sent and no
// answer came (2013, 2055; not 2006, found closed before anything was sent) and it was the
// COMMIT of a transaction that changed rows, or, in a workload without transactions
// (autocommit: oltp_insert, oltp_update_*, oltp_delete, bulk_insert, --skip-trx), a write
// (INSERT, UPDATE, DELETE, REPLACE). A transaction cut before its COMMIT is rolled back by
// the server: a failure, retried. Only called on a failure.
func (r *runner) mayHaveCommitted(err error, code uint16, ev *counts) bool {
	if code != CRServerLost && code != 2055 {
		return false
	}
	var se *StatementError
	if !errors.As(err, &se) {
		return false
	}
	if se.Statement == "COMMIT" {
		return ev.writes > 0
	}
	return r.autocommit && isWrite(se.Statement)
}

// isWrite reports whether statement text q is a DML write (INSERT, UPDATE, DELETE,
// REPLACE), by its first word.
func isWrite(q string) bool {
	q = strings.TrimLeft(q, " \t\n(")
	for _, w := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if len(q) >= len(w) && strings.EqualFold(q[:len(w)], w) {
			return true
		}
	}
	return false
}

// abandon records the event given up (begun at arrival: hung, watchHangs, or its
// connection lost when it may have committed, errCommitLost) as an unknown outcome, its
// wait as a lower bound of its latency, and reconnects to the writer Follow names (with
// Failover: to a node it lists); it returns when it gave the event up, from when the
// worker is busy again (busySince: the reconnect), and the reconnect's error (errAborted
// when the run ended first).
func (w *worker) abandon(ctx context.Context, arrival time.Time) (time.Time, error) {
	now := time.Now()
	w.startNs = now.UnixNano()
	w.arrivedAt.Store(w.startNs) // the abandoned event's wait is recorded: not in flight too
	w.busySince.Store(w.startNs)
	waited := now.Sub(arrival)
	w.c.ev.unknown++
	w.st.recordWait(&w.c.ev, waited)
	if now.After(w.r.t0.Add(w.r.warmup)) { // in the warm-up, its statistics are dropped
		w.r.addWait(Wait{Endpoint: w.label, Worker: w.id, Start: arrival, Waited: waited, Abandoned: true})
	}
	w.leftHung = true
	err := w.reconnect(ctx, "")
	w.leftHung = false
	if err != nil {
		return now, err
	}
	w.c.ev.reconnects++
	w.st.record(&w.c.ev, -1, 0)
	return now, nil
}

// inFlightAtEnd records an event the end of the run cut (begun at arrival) when it had
// waited MinOutage: its wait is a lower bound of its latency (shorter ones are ordinary
// events in flight, not counted, as in sysbench).
func (w *worker) inFlightAtEnd(arrival time.Time) {
	now := time.Now()
	if waited := now.Sub(arrival); waited >= MinOutage && now.After(w.r.t0.Add(w.r.warmup)) {
		w.st.recordWait(&counts{}, waited)
		w.r.addWait(Wait{Endpoint: w.label, Worker: w.id, Start: arrival, Waited: waited})
	}
}

// killAtEnd closes the sockets of the events still in progress EndGrace after the time
// limit (see EndGrace).
func (r *runner) killAtEnd() {
	for _, wk := range r.workers {
		if wk.busySince.Load() != 0 {
			wk.slot.kill()
			if wk.rd != nil {
				wk.rd.slot.kill()
			}
		}
	}
}

// addWait keeps w among the run's waits.
func (r *runner) addWait(w Wait) {
	w.At = w.Start.Sub(r.t0.Add(r.warmup))
	r.hangMu.Lock()
	r.waits = append(r.waits, w)
	r.hangMu.Unlock()
}

// noteMove records a worker's move from one writer to another (see WriterMove) and
// returns the index of the move it joined: the move from the same node to the same node
// begun within WriterHang (the workers that one event sent there), unless a worker left
// To since; starts says the worker left the node it last committed on (it counts in the
// move's Settled).
func (r *runner) noteMove(from, to string, abandoned, starts bool) int {
	r.hangMu.Lock()
	defer r.hangMu.Unlock()
	now := time.Now()
	i := len(r.moves) - 1
	for ; i >= 0; i-- {
		m := &r.moves[i]
		if now.Sub(m.At) > r.o.writerHang() {
			i = -1 // another event's moves (all older ones too)
			break
		}
		if m.From == from && m.To == to {
			break
		}
		if m.From == to { // the writer left To since: a new move
			i = -1
			break
		}
	}
	if i < 0 {
		r.moves = append(r.moves, WriterMove{From: from, To: to, At: now})
		i = len(r.moves) - 1
	}
	m := &r.moves[i]
	m.Workers++
	if abandoned {
		m.Abandoned++
	}
	if starts {
		m.Left++
		m.pending++
		m.Settled = time.Time{}
	}
	return i
}

// committedAfterMove notes a moved worker's first commit at at: the FirstCommit of its
// last move (index move) when none is set yet, and, for the move its chain began with
// (chain, -1: none), one worker less to wait for (Settled when none is left).
func (r *runner) committedAfterMove(move, chain int, at time.Time) {
	r.hangMu.Lock()
	if m := &r.moves[move]; m.FirstCommit.IsZero() {
		m.FirstCommit = at
	}
	if chain >= 0 {
		if m := &r.moves[chain]; m.pending > 0 {
			if m.pending--; m.pending == 0 {
				m.Settled = at
			}
		}
	}
	r.hangMu.Unlock()
}

// hangResult fills res's Waits (the longest MaxWaits) and WriterMoves.
func (r *runner) hangResult(res *Result) {
	r.hangMu.Lock()
	defer r.hangMu.Unlock()
	res.WaitCount = len(r.waits)
	if len(r.waits) > 0 {
		ws := slices.Clone(r.waits)
		slices.SortStableFunc(ws, func(a, b Wait) int { return cmp.Compare(b.Waited, a.Waited) })
		res.Waits = ws[:min(len(ws), MaxWaits)]
	}
	res.WriterMoves = slices.Clone(r.moves)
}

// inFlight adds to iv (at now) the events in progress that have waited MinOutage: their
// waits, lower bounds, go into the interval's histogram copy (not into Recorded), its max
// and percentiles (never into the run's totals), and InFlight/LongestInFlight say so.
func (r *runner) inFlight(iv *Interval, now time.Time) {
	var longest int64
	for _, wk := range r.workers {
		b := wk.busySince.Load()
		if b == 0 {
			continue
		}
		if r.rt != nil {
			b = min(b, wk.arrivedAt.Load())
		}
		if d := now.UnixNano() - b; d >= int64(MinOutage) {
			if iv.Histogram == iv.Recorded {
				iv.Histogram = iv.Recorded.Clone() // Recorded stays without the waits
			}
			iv.InFlight++
			longest = max(longest, d)
			_ = iv.Histogram.RecordValue(min(d/1000, histHighest))
		}
	}
	if iv.InFlight == 0 {
		return
	}
	iv.LongestInFlight = time.Duration(longest)
	iv.LatencyMax = max(iv.LatencyMax, nsToMs(longest))
	maxNs := int64(iv.LatencyMax * 1e6)
	iv.LatencyPct = pctMs(iv.Histogram, r.o.Percentile, maxNs)
	iv.LatencyP50 = pctMs(iv.Histogram, 50, maxNs)
	iv.LatencyP95 = pctMs(iv.Histogram, 95, maxNs)
	iv.LatencyP99 = pctMs(iv.Histogram, 99, maxNs)
}

// recordWait adds a transaction that did not complete, with the statements it ran (ev)
// and its wait, a lower bound of its latency: into the histogram and the max, not into
// the events, the sum or the min.
func (s *workerStats) recordWait(ev *counts, waited time.Duration) {
	s.mu.Lock()
	s.addLocked(ev, -1, 0)
	s.c.latMax = max(s.c.latMax, int64(waited))
	_ = s.hist.RecordValue(min(max(int64(waited), 1)/1000, histHighest))
	s.mu.Unlock()
	*ev = counts{}
}

// LowerBounds reports whether r's latencies include lower bounds (Waits).
func (r *Result) LowerBounds() bool { return r.WaitCount > 0 }

// WaitWarning is the WARNING about the transactions that never completed, naming the
// longest ("" when none), e.g. "a transaction on n1 waited at least 32.10 s from 9.68 s of
// the run and was given up by its worker, outcome unknown (it hung on a node its worker left, following the writer or failing over, or the connection was lost during its COMMIT); 8
// transactions never completed (8 abandoned, 0 in flight at the end): latency max and
// percentiles include their waits as lower bounds".
func (r *Result) WaitWarning() string {
	if r.WaitCount == 0 || len(r.Waits) == 0 {
		return ""
	}
	w := r.Waits[0]
	how := "was still in flight at the end of the run"
	if w.Abandoned {
		how = "was given up by its worker, outcome unknown (it hung on a node its worker left, following the writer or failing over, or the connection was lost during its COMMIT)"
	}
	return fmt.Sprintf("a transaction on %s waited at least %.2f s from %.2f s of the run and %s; %d transactions never completed (%d abandoned, %d in flight at the end): latency max and percentiles include their waits as lower bounds",
		w.Endpoint, w.Waited.Seconds(), w.At.Seconds(), how, r.WaitCount, r.Unknown, int64(r.WaitCount)-r.Unknown)
}
