package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// worker is one connection and its event loop. Everything but st and slot is
// private to the worker goroutine.
//
// The worker owns a dedicated *sql.Conn and runs each event inside conn.Raw on the
// driver connection (see Conn): statements are prepared once per connection with the
// driver's PrepareContext (server-side COM_STMT_PREPARE), BEGIN/COMMIT are plain
// COM_QUERYs, and statements run with a non-cancellable context (qctx).
type worker struct {
	id     int
	r      *runner
	ep     Endpoint
	label  string
	db     *sql.DB
	slot   *connSlot
	conn   *sql.Conn
	c      Conn
	events eventer
	st     *workerStats
	rd     *readSide      // nil without Target.ReadEndpoints
	trk    *outageTracker // the endpoint's

	// For stall detection (watchStalls), written by the worker, read by the watchdog:
	// the wall time (UnixNano) of its last commit, and of the start of the event in
	// progress (0 between events); with --rate, arrivedAt is that event's arrival.
	lastCommit, busySince, arrivedAt atomic.Int64
	// abandonAt is the busySince of the event the hang watchdog gave up (watchHangs),
	// 0 when none; on is the label of the endpoint the worker is on (for the watchdog).
	abandonAt atomic.Int64
	on        atomic.Pointer[string]
	// startNs is busySince of the event in progress; leftHung is set while the worker
	// reconnects after abandoning one; move is the index of its last move (runner.moves)
	// until its first commit there, -1 when none; chain the index of the move that took it
	// from the node it last committed on, until it commits again (-1: none).
	startNs  int64
	leftHung bool
	move     int
	chain    int
	// With Target.Failover (failover.go): home is the worker's own endpoint, away says it
	// is on another (since leftHome), homeCheck (UnixNano) when it next asks whether home
	// is live again.
	home      Endpoint
	away      bool
	leftHome  time.Time
	homeCheck int64
}

// loop runs events until more() says stop. An event's latency runs from its
// intended start (its arrival under --rate), its service time from when the
// worker began it.
func (w *worker) loop(ctx context.Context) {
	r := w.r
	defer r.running.Add(-1)
	var resume time.Time // after an abandon without --rate: when the next event began
	for {
		arrival, ok := r.more()
		if !ok {
			w.finish(ctx)
			return
		}
		start := time.Now()
		if !resume.IsZero() {
			start, resume = resume, time.Time{}
		}
		w.startNs = start.UnixNano()
		if arrival.IsZero() {
			arrival = start
		} else {
			w.arrivedAt.Store(arrival.UnixNano())
		}
		w.busySince.Store(w.startNs)
		err := w.eventWithRetry(ctx)
		if r.rt != nil {
			r.rt.conc.Add(-1)
		}
		if errors.Is(err, errAbandoned) {
			// Without --rate the next event begins now: the reconnect is part of it,
			// as a reconnect after a lost connection is part of the event retried.
			// Under --rate the queued arrivals' latencies count it.
			if arrival, err = w.abandon(ctx, arrival); err == nil {
				if r.rt == nil {
					resume = arrival
				} else {
					w.busySince.Store(0)
				}
				continue
			}
			if r.rt != nil {
				arrival = time.Time{} // no event waits for the reconnect
			}
		}
		if err != nil {
			w.st.record(&w.c.ev, -1, 0)
			if !errors.Is(err, errAborted) {
				r.fail(err)
			} else if !arrival.IsZero() {
				w.inFlightAtEnd(arrival)
			}
			return
		}
		end := time.Now()
		w.lastCommit.Store(end.UnixNano())
		w.busySince.Store(0)
		w.trk.committed(end)
		if w.move >= 0 {
			r.committedAfterMove(w.move, w.chain, end)
			w.move, w.chain = -1, -1
		}
		if r.warmupArrival(arrival) {
			w.c.ev = counts{} // a warm-up arrival finishing after it: not measured
		} else {
			w.st.recordEvent(&w.c.ev, end.Sub(arrival), end.Sub(start))
		}
		if w.away { // failed over (failover.go): back to its own node once it is live
			back, err := w.goHome(ctx, end)
			if err != nil {
				if !errors.Is(err, errAborted) {
					r.fail(err)
				}
				return
			}
			if !back.IsZero() && r.rt == nil {
				resume = back // the move is part of the next transaction, as a reconnect is
			}
		}
	}
}

// finish gives the worker's events their last word when the run ends normally (see
// eventFinisher); a failure ends the run with it. Like an event, it is busy (busySince):
// EndGrace after the time limit its connection is closed (killAtEnd).
func (w *worker) finish(ctx context.Context) {
	f, ok := w.events.(eventFinisher)
	if !ok || w.conn == nil || ctx.Err() != nil || w.r.firstErr() != nil {
		return
	}
	w.busySince.Store(time.Now().UnixNano())
	err := w.conn.Raw(func(any) error { return f.finish(&w.c) })
	w.busySince.Store(0)
	w.st.record(&w.c.ev, -1, 0)
	if err != nil {
		if r := w.r; r.limit > 0 && time.Since(r.t0) >= r.limit+EndGrace {
			err = fmt.Errorf("a worker's last statement still ran %s s after the time limit and its connection was closed: %w", secs(EndGrace), err)
		}
		w.r.fail(err)
	}
}

// aborting reports whether an event in progress should be abandoned: the
// caller's context ended, another worker failed, or the time limit passed.
func (w *worker) aborting(ctx context.Context) bool {
	r := w.r
	return ctx.Err() != nil || r.firstErr() != nil ||
		(r.limit > 0 && time.Since(r.t0) >= r.limit)
}

// eventWithRetry runs one event, retrying it like sysbench's check_error and
// restart_event: every failed attempt is counted (by code, see failed); an error whose code
// is not in the ignore list ends the run, whatever it is (a lost connection too, 2013 or
// 2006, as in sysbench); an ignored one is rolled back and the event retried, after
// reconnecting when the connection is gone (2002/2003/2006/2013, 1053, 1927, ...). A
// following or failing-over worker (Target.Follow, Target.Failover) retries a lost
// connection and a node's refusal of its writes (refusedByNode) whatever the list says,
// reconnecting where Follow or Failover says; with Failover and no node live (noneLive) a
// refusal is retried on the same connection. Such a worker gives the event up instead
// (errCommitLost, an unknown outcome: the loop's abandon) when its connection was lost
// when it may have committed (mayHaveCommitted: during its COMMIT, or a write in
// autocommit). After the third consecutive failure it backs
// off exponentially from 1 ms up to 100 ms so that a persistent ignored error does not
// spin.
func (w *worker) eventWithRetry(ctx context.Context) error {
	r := w.r
	for attempt := 0; ; attempt++ {
		err := errConnMissing
		if w.conn != nil {
			err = w.conn.Raw(w.rawEvent)
		}
		if err == nil {
			return nil
		}
		if w.aborting(ctx) {
			return errAborted
		}
		if w.abandonedNow() {
			return errAbandoned
		}
		code, lost := errorCode(err)
		follow := lost && (r.t.Follow != nil || r.t.Failover != nil)
		if follow && r.mayHaveCommitted(err, code, &w.c.ev) { // before failed() records ev
			w.failed(code)
			return errCommitLost // an unknown outcome, then a reconnect (abandon)
		}
		w.failed(code)
		refused := !lost && w.refusedByNode(code) // a node that no longer takes its writes
		follow = follow || refused
		if code == 0 || !(r.o.ignores(code) || follow) {
			return err
		}
		lost = lost || follow
		if refused && w.noneLive() {
			lost = false // no node takes writes now: retry here, backing off (failover.go)
		}
		if lost || w.rollback(ctx) {
			// Gone, or the rollback found it gone.
			avoid := ""
			if refused {
				avoid = w.label
			}
			if err := w.reconnect(ctx, avoid); err != nil {
				return err
			}
			w.c.ev.reconnects++
			w.st.record(&w.c.ev, -1, 0)
		}
		if attempt >= 2 {
			d := time.Millisecond << min(attempt-2, 7)
			if !w.sleep(ctx, min(d, 100*time.Millisecond)) {
				return errAborted
			}
		}
	}
}

// failed counts one failed attempt with MySQL error code (0: none), with the statements
// it ran (w.c.ev), and opens the endpoint's outage window if none is open.
func (w *worker) failed(code uint16) {
	w.c.ev.errors++
	w.st.record(&w.c.ev, -1, code)
	w.trk.failed(time.Now(), code)
}

// sleep waits d unless the run stops; false when it stopped.
func (w *worker) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return !w.aborting(ctx)
	case <-w.r.done:
		return false
	}
}

// rollback rolls the failed transaction back; true when the connection is gone.
func (w *worker) rollback(ctx context.Context) (lost bool) {
	if w.conn == nil {
		return true
	}
	err := w.conn.Raw(func(dc any) error {
		_, err := dc.(driverConn).ExecContext(qctx, "ROLLBACK", nil)
		return err
	})
	return isConnLost(err)
}

// connect opens the worker's connection and prepares its statements.
func (w *worker) connect(ctx context.Context) error {
	conn, err := w.db.Conn(context.WithValue(ctx, slotKey{}, w.slot))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", w.label, connectError(w.ep, err))
	}
	w.conn = conn
	err = conn.Raw(func(dci any) error {
		dc, ok := dci.(driverConn)
		if !ok {
			return fmt.Errorf("driver connection %T lacks context methods", dci)
		}
		w.c.dc = dc
		return w.c.prepare(ctx)
	})
	if err == nil && w.rd != nil {
		err = w.connectRead(ctx)
	}
	if err != nil {
		w.closeConn()
	}
	return err
}

func codeOf(err error) uint16 {
	c, _ := errorCode(err)
	return c
}

func (w *worker) closeConn() {
	w.closeRead()
	if w.conn == nil {
		return
	}
	w.conn.Raw(func(any) error {
		w.c.closeStmts()
		return nil
	})
	w.conn.Close()
	w.conn, w.c.dc = nil, nil
}

// reconnect replaces a lost connection, retrying (1 ms doubling to 50 ms) until it
// succeeds or the run stops. Every failed connect is counted (failed). Like sysbench's
// mysql_drv_reconnect it keeps trying while the server cannot be reached (2002, 2003,
// 2006, 2013 and the server's connection-gone codes), and also while the failure's code
// is ignored (1040 too many connections, 1047 Galera not ready, ... when in the list);
// any other error (1045 access denied, an unignored 1461 at prepare) ends the run, where
// sysbench would retry forever. A following worker (Target.Follow) connects to the
// writer Follow names; a failing-over one (Target.Failover) where its failoverRound
// says (failover.go), avoid (a node that refused its writes) last.
func (w *worker) reconnect(ctx context.Context, avoid string) error {
	w.closeConn()
	backoff := time.Millisecond
	var fo *failoverRound
	if w.r.t.Failover != nil {
		fo = newFailoverRound(avoid)
	}
	for {
		if w.aborting(ctx) {
			return errAborted
		}
		if w.r.t.Follow != nil {
			if ep, ferr := w.r.t.Follow(ctx); ferr == nil && ep.Label() != w.label {
				if err := w.moveTo(ep); err != nil {
					return err
				}
			}
		}
		if fo != nil {
			wait, err := fo.next(w)
			if err != nil {
				return err
			}
			if wait { // every candidate failed: a new round after the backoff
				if !w.sleep(ctx, backoff) {
					return errAborted
				}
				backoff = min(backoff*2, 50*time.Millisecond)
				continue
			}
		}
		err := w.connect(ctx)
		if err == nil {
			w.abandonAt.Store(0) // a give-up that came while reconnecting: moot
			return nil
		}
		if w.aborting(ctx) {
			return errAborted
		}
		code, _ := errorCode(err)
		w.failed(code)
		if code == 0 || !(isClientCode(code) || connGoneCodes[code] || w.r.o.ignores(code) || w.refusedByNode(code)) {
			return err
		}
		if fo != nil && fo.failed(w.label) {
			continue // the next candidate at once
		}
		if !w.sleep(ctx, backoff) {
			return errAborted
		}
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}

// WriterLabel is the outage label of workers that follow the writer (Target.Follow).
const WriterLabel = "writer"

// moveTo points a following or failing-over worker at ep (its pool opened on first use);
// the counts from now on are ep's.
func (w *worker) moveTo(ep Endpoint) error {
	r := w.r
	r.poolMu.Lock()
	if r.pools == nil {
		r.pools = map[string]*sql.DB{}
		for i, e := range r.t.Endpoints {
			r.pools[e.Label()] = r.dbs[i]
		}
	}
	db := r.pools[ep.Label()]
	if db == nil {
		var err error
		if db, err = r.sess.open(ep, r.t.DB, !r.ps); err != nil {
			r.poolMu.Unlock()
			return err
		}
		db.SetMaxIdleConns(0)
		r.pools[ep.Label()] = db
		r.dbs = append(r.dbs, db) // closed with the others
	}
	r.poolMu.Unlock()
	from := w.label
	w.ep, w.label, w.db = ep, ep.Label(), db
	w.c.label = ep.Label()
	label := ep.Label()
	w.on.Store(&label)
	w.st.switchTo(ep.Label())
	w.move = r.noteMove(from, label, w.leftHung, w.chain < 0)
	if w.chain < 0 {
		w.chain = w.move
	}
	if r.t.Failover != nil {
		w.movedFrom(from)
	}
	return nil
}

// rawEvent runs one event on the driver connection (inside conn.Raw).
func (w *worker) rawEvent(any) error { return w.events.event(&w.c) }

var errConnMissing = fmt.Errorf("no connection: %w", sql.ErrConnDone)
