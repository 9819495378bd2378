package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// runner is the state of one Run call.
type runner struct {
	name string // the workload, in messages
	src  eventSource
	o    Options
	t    Target
	sess *session
	dbs  []*sql.DB
	ps   bool

	workers []*worker

	t0       time.Time     // workers released
	warmup   time.Duration // measured part starts at t0+warmup
	limit    time.Duration // t0+limit ends the run; 0 = no time limit
	warming  atomic.Bool
	nevents  atomic.Int64
	running  atomic.Int32
	done     chan struct{} // closed to stop workers and helpers
	stopOnce sync.Once

	rt   *rateState // --rate arrivals (rate.go); nil without --rate
	live *Live      // live counters (live.go)

	errMu    sync.Mutex
	err      error
	moreErrs map[uint16]int // fatal errors after the first, by code (see fail)

	outages map[string]*outageTracker // by endpoint label ("writer" with Target.Follow)

	poolMu sync.Mutex
	pools  map[string]*sql.DB // by endpoint label, for following workers (Target.Follow)

	hangMu sync.Mutex   // guards waits and moves (hang.go)
	waits  []Wait       // transactions that never completed
	moves  []WriterMove // following workers' moves

	hv harvester
}

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

// runEvents is the generic runner behind every workload's Run: o.Threads workers
// (worker i on t.Endpoints[i % n]) run src's events until o.Time, o.Events or ctx ends
// the run, with --rate arrivals, warm-up, retries of ignored errors, reconnects and
// statistics; rep gets an Interval every o.ReportInterval. name is the workload's name
// in messages. The Result covers the measured part (after o.Warmup); when ctx ends the
// run early it is returned with ctx.Err(), on a fatal statement error with a
// *StatementError.
func runEvents(ctx context.Context, t Target, o Options, rep Reporter, name string, src eventSource) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	r := &runner{
		name: name, src: src, o: o, t: t,
		ps:   o.PSMode == PSAuto,
		done: make(chan struct{}),
	}
	r.sess = newSession(t)
	defer r.sess.close()

	sr, _ := rep.(StartReporter)
	fallback, err := r.setup(ctx, sr)
	if err != nil {
		return nil, err
	}
	return r.measure(ctx, rep, sr, fallback)
}

// setup is everything before the clock starts: the pre-flight (preflight.go: every
// endpoint reachable, the run fits its limits; it may turn prepared statements off,
// which sr is told), the connection pools and the workers, each connected with its
// statements prepared (sysbench's thread_init before the start barrier). fallback is the
// pre-flight's note when it turned prepared statements off, "" otherwise. On an error
// nothing is left open.
func (r *runner) setup(ctx context.Context, sr StartReporter) (fallback string, err error) {
	texts := r.src.statements()
	note, off, err := preflight(ctx, r.sess, r.t, r.o, countStatements(texts))
	if err != nil {
		return "", err
	}
	if off {
		r.ps = false
		r.o.PSMode = PSDisable
		fallback = note
		if sr != nil {
			sr.Note(note)
		}
	}
	readTexts, rdbs, err := r.openPools()
	if err != nil {
		return "", err
	}
	r.newWorkers(texts, readTexts, rdbs)
	if err := r.connectWorkers(ctx); err != nil {
		return "", err
	}
	return fallback, nil
}

// openPools opens a pool per endpoint (r.dbs) and, with read endpoints, one per read
// endpoint (returned as rdbs, and appended to r.dbs so closeAll closes them), with the
// read-only statements of the workload. No idle pool: a closed worker connection is really
// closed, and a reconnect really dials (recording the socket in the worker's slot).
// Errors: the first pool that cannot be opened, or read endpoints for a workload without
// read-only statements; nothing is left open then.
func (r *runner) openPools() (readTexts []string, rdbs []*sql.DB, err error) {
	for _, ep := range r.t.Endpoints {
		db, err := r.sess.open(ep, r.t.DB, !r.ps)
		if err != nil {
			r.closeAll()
			return nil, nil, err
		}
		r.dbs = append(r.dbs, db)
	}
	for _, db := range r.dbs {
		db.SetMaxIdleConns(0)
	}
	if len(r.t.ReadEndpoints) == 0 {
		return nil, nil, nil
	}
	rsrc, ok := r.src.(readSource)
	if !ok {
		r.closeAll()
		return nil, nil, fmt.Errorf("%s: read nodes: this workload has no read-only statements to send to them", r.name)
	}
	readTexts = rsrc.readStatements()
	for _, ep := range r.t.ReadEndpoints {
		db, err := r.sess.open(ep, r.t.DB, !r.ps)
		if err != nil {
			r.closeAll()
			for _, d := range rdbs {
				d.Close()
			}
			return nil, nil, err
		}
		db.SetMaxIdleConns(0)
		rdbs = append(rdbs, db)
	}
	r.dbs = append(r.dbs, rdbs...) // closed with the others
	return readTexts, rdbs, nil
}

// connectWorkers connects and prepares every worker at once; the first errors, grouped
// (groupErrors), close everything.
func (r *runner) connectWorkers(ctx context.Context) error {
	initErrs := make([]error, len(r.workers))
	var wg sync.WaitGroup
	for i, wk := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			initErrs[i] = wk.connect(ctx)
		}()
	}
	wg.Wait()
	if err := groupErrors(initErrs); err != nil {
		r.closeAll()
		return fmt.Errorf("%s: initializing workers: %w", r.name, err)
	}
	return nil
}

// measure runs the connected workers from the start barrier to the end of the run (time,
// events, ctx) and returns the Result of the measured part, as runEvents documents.
func (r *runner) measure(ctx context.Context, rep Reporter, sr StartReporter, fallback string) (*Result, error) {
	r.arm(rep)
	stopCtx := context.AfterFunc(ctx, r.cancelWorkers)
	defer stopCtx()

	if sr != nil {
		sr.Started()
	}
	r.running.Store(int32(len(r.workers)))
	cpu0 := processCPU()
	r.t0 = time.Now()
	if r.limit > 0 {
		tm := time.AfterFunc(r.limit, r.stop)
		defer tm.Stop()
		kill := time.AfterFunc(r.limit+EndGrace, r.killAtEnd)
		defer kill.Stop()
	}
	end := r.runWorkers(ctx, rep)
	return r.finish(ctx, end, cpu0, fallback)
}

// arm sets the run's clock state before the start: the latency histograms, warm-up and
// limit, the --rate arrival state, and the Live view handed to rep when it takes one.
func (r *runner) arm(rep Reporter) {
	r.hv.init(len(r.workers))
	r.warmup = r.o.Warmup
	if r.o.Time > 0 {
		r.limit = r.o.Warmup + r.o.Time
	}
	r.warming.Store(r.o.Warmup > 0)
	if r.o.Rate > 0 {
		r.rt = newRateState(&r.o)
	}
	r.live = &Live{r: r}
	if lr, ok := rep.(LiveReporter); ok {
		lr.Live(r.live)
	}
}

// cancelWorkers ends the run when its context ends: the run stops and every worker's
// connections (and read side's) are killed, so a statement in progress returns.
func (r *runner) cancelWorkers() {
	r.stop()
	for _, wk := range r.workers {
		wk.slot.kill()
		if wk.rd != nil {
			wk.rd.slot.kill()
		}
	}
}

// runWorkers starts the workers, the --rate generator, the stall and hang watchdogs and
// the coordinator (intervals to rep), waits for every worker to end, stops the run and
// waits for the coordinator. It returns the time the last worker ended.
func (r *runner) runWorkers(ctx context.Context, rep Reporter) time.Time {
	workersDone := make(chan struct{})
	var wwg sync.WaitGroup
	for _, wk := range r.workers {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			wk.loop(ctx)
		}()
	}
	go func() {
		wwg.Wait()
		close(workersDone)
	}()
	if r.rt != nil {
		go r.generate()
	}
	go r.watchStalls()
	if r.t.Follow != nil || r.t.Failover != nil {
		go r.watchHangs(ctx)
	}
	coordDone := make(chan struct{})
	go func() {
		defer close(coordDone)
		r.coordinate(rep, workersDone)
	}()
	<-workersDone
	end := time.Now()
	r.stop()
	<-coordDone
	return end
}

// finish builds the Result at end (client CPU since cpu0, outages, hangs, the prepared
// statement fallback's note), closes every connection and returns the run's error: the
// first fatal statement error, ctx's, or the outages still open at the end.
func (r *runner) finish(ctx context.Context, end time.Time, cpu0 time.Duration, fallback string) (*Result, error) {
	res := r.result(end)
	if wall := end.Sub(r.t0).Seconds(); wall > 0 {
		res.ClientCPUCores = (processCPU() - cpu0).Seconds() / wall
	}
	res.ClientCPUs = min(runtime.GOMAXPROCS(0), runtime.NumCPU())
	res.Outages = r.outageList(end)
	r.hangResult(res)
	if fallback != "" {
		res.PSFallback = fallback
	}
	r.closeAll()
	if err := r.firstErr(); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if lost := openOutages(res.Outages); lost != nil {
		return res, lost
	}
	return res, nil
}

// newWorkers creates the run's workers (not yet connected): worker i on
// Endpoints[i % n] with its outage tracker (the endpoint's, or the writer's with
// Target.Follow) and, with read endpoints, its read side on rdbs[i % len(rdbs)].
func (r *runner) newWorkers(texts, readTexts []string, rdbs []*sql.DB) {
	t, o, name, src := r.t, r.o, r.name, r.src
	r.outages = map[string]*outageTracker{}
	r.workers = make([]*worker, o.Threads)
	for i := range r.workers {
		ep := t.Endpoints[i%len(t.Endpoints)]
		key := ep.Label()
		if t.Follow != nil {
			key = WriterLabel
		}
		trk := r.outages[key]
		if trk == nil {
			trk = &outageTracker{label: key}
			r.outages[key] = trk
		}
		r.workers[i] = &worker{
			id: i, r: r, ep: ep, label: ep.Label(), db: r.dbs[i%len(t.Endpoints)],
			c:      Conn{ps: r.ps, texts: texts, workload: name, label: ep.Label()},
			events: src.newEvents(i),
			slot:   &connSlot{},
			st:     &workerStats{hist: NewHistogram(), endpoint: ep.Label()},
			trk:    trk, move: -1, chain: -1, home: ep,
		}
		on := ep.Label() // a copy: the worker rewrites label when it moves
		r.workers[i].on.Store(&on)
		if len(rdbs) > 0 {
			rep := t.ReadEndpoints[i%len(rdbs)]
			wk := r.workers[i]
			wk.rd = &readSide{ep: rep, label: rep.Label(), db: rdbs[i%len(rdbs)], slot: &connSlot{}}
			wk.c.rd = &Conn{ps: r.ps, texts: readTexts, workload: name, label: rep.Label()}
		}
		if o.Rate > 0 {
			r.workers[i].st.svcHist = NewHistogram()
		}
	}
}

func (r *runner) stop() { r.stopOnce.Do(func() { close(r.done) }) }

func (r *runner) stopping() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// fail records a fatal error and stops the run. The first error is the run's; the
// workers that fail after it (at the same moment, usually the same way) are counted by
// code and named in one clause of the run's error (see firstErr).
func (r *runner) fail(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	} else {
		if r.moreErrs == nil {
			r.moreErrs = map[uint16]int{}
		}
		r.moreErrs[codeOf(err)]++
	}
	r.errMu.Unlock()
	r.stop()
}

// firstErr returns the run's fatal error (nil when none), with the count of the other
// workers that failed as well.
func (r *runner) firstErr() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.err == nil || len(r.moreErrs) == 0 {
		return r.err
	}
	n, codes := 0, map[uint16]int64{}
	for c, k := range r.moreErrs {
		n += k
		codes[c] = int64(k)
	}
	return &sharedError{err: r.err, more: n, detail: "error codes " + codeCounts(codes)}
}

func (r *runner) closeAll() {
	for _, wk := range r.workers {
		if wk != nil {
			wk.closeConn()
		}
	}
	for _, db := range r.dbs {
		db.Close()
	}
}

// more is sysbench's sb_more_events: false when the run must end for this
// worker. With --rate it blocks until an arrival is queued and returns the
// arrival's scheduled time (the event's intended start); without, the zero time
// (the event starts when the worker begins it).
func (r *runner) more() (time.Time, bool) {
	if r.stopping() {
		return time.Time{}, false
	}
	if r.limit > 0 && time.Since(r.t0) >= r.limit {
		return time.Time{}, false
	}
	if r.o.Events > 0 && !r.warming.Load() && r.nevents.Add(1) > r.o.Events {
		return time.Time{}, false
	}
	if r.rt != nil {
		return r.take()
	}
	return time.Time{}, true
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
			continue
		}
		w.st.recordEvent(&w.c.ev, end.Sub(arrival), end.Sub(start))
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
// reconnecting when the connection is gone (2002/2003/2006/2013, 1053, 1927, ...). After the
// third consecutive failure it backs off exponentially from 1 ms up to 100 ms so that a
// persistent ignored error does not spin.
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
		w.failed(code)
		refused := !lost && w.refusedByNode(code) // a node that no longer takes its writes
		follow := lost && (r.t.Follow != nil || r.t.Failover != nil) || refused
		if code == 0 || !(r.o.ignores(code) || follow) {
			return err
		}
		lost = lost || follow
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
// writer Follow names; a failing-over one (Target.Failover) to the endpoints
// failoverTarget gives in turn, avoid (a node that refused its writes) last, and backs
// off only once every one of them failed.
func (w *worker) reconnect(ctx context.Context, avoid string) error {
	w.closeConn()
	backoff := time.Millisecond
	var tried map[string]bool // Failover: the endpoints that failed in this round
	if avoid != "" {
		tried = map[string]bool{avoid: true}
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
		if w.r.t.Failover != nil {
			ep, ok := w.failoverTarget(w.r.t.Failover(time.Time{}), tried)
			if !ok { // every candidate failed: a new round after the backoff
				tried = nil
				if !w.sleep(ctx, backoff) {
					return errAborted
				}
				backoff = min(backoff*2, 50*time.Millisecond)
				continue
			}
			if ep.Label() != w.label {
				if err := w.moveTo(ep); err != nil {
					return err
				}
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
		if w.r.t.Failover != nil {
			if tried == nil {
				tried = map[string]bool{}
			}
			tried[w.label] = true
			continue // the next candidate at once
		}
		if !w.sleep(ctx, backoff) {
			return errAborted
		}
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}

// processCPU is this process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ClientBound reports whether r's client (this process) used at least 90% of the CPUs it
// can run on: then the result measures habench as much as the servers.
func (r *Result) ClientBound() bool {
	return r.ClientCPUs > 0 && r.ClientCPUCores >= 0.9*float64(r.ClientCPUs)
}

// ClientBoundWarning is the WARNING for a client-bound run ("" when it was not).
func (r *Result) ClientBoundWarning() string {
	if !r.ClientBound() {
		return ""
	}
	return fmt.Sprintf("habench itself used %.2f of the %d CPUs it can run on during the run: the client, not the servers, may be the bottleneck (fewer threads, or the load generator on another machine)", r.ClientCPUCores, r.ClientCPUs)
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
		if from == w.home.Label() {
			w.leftHome = time.Now()
		}
		w.away = label != w.home.Label()
	}
	return nil
}

// rawEvent runs one event on the driver connection (inside conn.Raw).
func (w *worker) rawEvent(any) error { return w.events.event(&w.c) }

// coordinate ends the warmup and produces interval reports until the
// workers are done. It is the only harvester while the workers run.
func (r *runner) coordinate(rep Reporter, workersDone <-chan struct{}) {
	wait := func(at time.Time) bool {
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-workersDone:
			return false
		}
	}
	start := r.t0.Add(r.warmup)
	if r.warmup > 0 {
		if !wait(start) {
			return
		}
		r.hv.collect(r, false)
		r.warming.Store(false)
		r.live.startMeasuring(r.hv.warmupCum)
		if r.o.Events > 0 {
			r.nevents.Store(0)
		}
	}
	r.hv.last = start
	if rep == nil || r.o.ReportInterval <= 0 {
		return
	}
	next := start.Add(r.o.ReportInterval)
	for {
		if !wait(next) {
			return
		}
		rep.Interval(r.interval(start))
		now := time.Now()
		for !next.After(now) {
			next = next.Add(r.o.ReportInterval)
		}
	}
}

// interval harvests every worker and builds one Interval.
func (r *runner) interval(start time.Time) Interval {
	now := time.Now()
	c, perEp, byCode := r.hv.collect(r, true)
	svc := r.hv.ivSvc
	length := now.Sub(r.hv.last)
	r.hv.last = now
	h := r.hv.ivHist
	iv := Interval{
		Elapsed: now.Sub(start), Length: length,
		Threads:      int(r.running.Load()),
		Transactions: c.events, Reads: c.reads, Writes: c.writes, Others: c.others,
		Errors: c.errors, Reconnects: c.reconnects,
		PerEndpoint: perEp, ErrorsByCode: byCode,
		Histogram: h.Clone(), Unknown: c.unknown, Started: start,
	}
	iv.Recorded = iv.Histogram
	iv.TPS = perSec(c.events, length)
	iv.QPS = perSec(c.reads+c.writes+c.others, length)
	iv.ReadsPerSec = perSec(c.reads, length)
	iv.WritesPerSec = perSec(c.writes, length)
	iv.OthersPerSec = perSec(c.others, length)
	iv.ErrPerSec = perSec(c.errors, length)
	iv.ReconnPerSec = perSec(c.reconnects, length)
	iv.LatencyPct = pctMs(h, r.o.Percentile, c.latMax)
	iv.LatencyP50 = pctMs(h, 50, c.latMax)
	iv.LatencyP95 = pctMs(h, 95, c.latMax)
	iv.LatencyP99 = pctMs(h, 99, c.latMax)
	iv.LatencyMax = nsToMs(c.latMax)
	if c.events > 0 {
		iv.LatencyAvg = nsToMs(c.latSum) / float64(c.events)
	}
	r.inFlight(&iv, now)
	if r.rt != nil {
		iv.QueueLength = r.queueLength(now)
		iv.Concurrency = int(r.rt.conc.Load())
		iv.Rate = r.rateInterval(now, &svc, r.hv.ivSvcHist)
	}
	return iv
}

// harvester merges worker statistics; one goroutine at a time uses it.
type harvester struct {
	spare     *hdrhistogram.Histogram
	ivHist    *hdrhistogram.Histogram
	totalHist *hdrhistogram.Histogram
	perWorker []counts
	// perWorkerSvc are the service times by worker (--rate only): Threads fairness.
	perWorkerSvc []counts
	total        counts
	byCode       map[uint16]int64
	perEp        map[string]EndpointStats
	last         time.Time

	// Service times (--rate only): the interval's and the run's, like ivHist/totalHist.
	spareSvc, ivSvcHist, totalSvcHist *hdrhistogram.Histogram
	ivSvc, totalSvc                   counts
	// warmupCum are the workers' cumulative counts at the end of the warm-up.
	warmupCum counts
}

func (h *harvester) init(n int) {
	h.spare = NewHistogram()
	h.ivHist = NewHistogram()
	h.totalHist = NewHistogram()
	h.perWorker = make([]counts, n)
	h.perWorkerSvc = make([]counts, n)
	h.byCode = map[uint16]int64{}
	h.perEp = map[string]EndpointStats{}
	h.spareSvc = NewHistogram()
	h.ivSvcHist = NewHistogram()
	h.totalSvcHist = NewHistogram()
}

// collect harvests every worker into the interval accumulators (returned,
// with the interval histogram in h.ivHist) and, when keep, into the run
// totals; without keep (end of warmup) the harvest is discarded.
func (h *harvester) collect(r *runner, keep bool) (c counts, perEp map[string]EndpointStats, byCode map[uint16]int64) {
	h.ivHist.Reset()
	h.ivSvcHist.Reset()
	h.ivSvc = counts{}
	if !keep {
		h.warmupCum = counts{}
	}
	perEp = map[string]EndpointStats{}
	byCode = map[uint16]int64{}
	for _, ep := range r.t.Endpoints {
		perEp[ep.Label()] = perEp[ep.Label()] // every endpoint appears, even idle
	}
	for _, wk := range r.workers {
		if wk.rd != nil {
			perEp[wk.rd.label] = perEp[wk.rd.label]
		}
	}
	addEp := func(label string, sc *counts, codes map[uint16]int64) {
		e := perEp[label]
		e.Transactions += sc.events
		e.Queries += sc.reads + sc.writes + sc.others - sc.rdQueries
		e.Errors += sc.errors
		e.Reconnects += sc.reconnects
		for code, n := range codes {
			byCode[code] += n
			if e.ErrorsByCode == nil {
				e.ErrorsByCode = map[uint16]int64{}
			}
			e.ErrorsByCode[code] += n
		}
		perEp[label] = e
	}
	for i, wk := range r.workers {
		sn := wk.st.harvest(h.spare, h.spareSvc)
		if keep {
			h.ivHist.Merge(sn.hist)
		}
		sn.hist.Reset()
		h.spare = sn.hist
		if sn.svcHist != nil {
			if keep {
				h.ivSvcHist.Merge(sn.svcHist)
			}
			sn.svcHist.Reset()
			h.spareSvc = sn.svcHist
		}
		if !keep {
			h.warmupCum.add(&sn.cum)
			continue
		}
		for label, cr := range sn.carry {
			sn.c.add(&cr.c) // the worker's totals; the endpoint's share below
			addEp(label, &cr.c, cr.byCode)
		}
		h.ivSvc.add(&sn.svc)
		h.perWorkerSvc[i].add(&sn.svc)
		c.add(&sn.c)
		h.perWorker[i].add(&sn.c)
		if wk.rd != nil {
			re := perEp[wk.rd.label]
			re.Queries += sn.c.rdQueries
			re.ReadChecks += sn.c.rdChecks
			re.StaleReads += sn.c.rdStale
			perEp[wk.rd.label] = re
		}
		for _, cr := range sn.carry {
			sn.c.sub(&cr.c)
		}
		addEp(sn.endpoint, &sn.c, sn.byCode)
	}
	if keep {
		h.total.add(&c)
		h.totalHist.Merge(h.ivHist)
		h.totalSvc.add(&h.ivSvc)
		h.totalSvcHist.Merge(h.ivSvcHist)
		for k, v := range perEp {
			t := h.perEp[k]
			t.Transactions += v.Transactions
			t.Queries += v.Queries
			t.Errors += v.Errors
			t.Reconnects += v.Reconnects
			t.ReadChecks += v.ReadChecks
			t.StaleReads += v.StaleReads
			addCodes(&t.ErrorsByCode, v.ErrorsByCode)
			h.perEp[k] = t
		}
		for k, v := range byCode {
			h.byCode[k] += v
		}
	}
	return c, perEp, byCode
}

// result harvests what is left and builds the Result of the measured part.
func (r *runner) result(end time.Time) *Result {
	start := r.t0.Add(r.warmup)
	measured := end.After(start)
	r.hv.collect(r, measured)
	tot := r.hv.total
	res := &Result{
		Workload: r.name, Threads: len(r.workers),
		Reads: tot.reads, Writes: tot.writes, Others: tot.others,
		Queries:      tot.reads + tot.writes + tot.others,
		Transactions: tot.events, IgnoredErrors: tot.errors, Reconnects: tot.reconnects,
		Unknown:    tot.unknown,
		Percentile: r.o.Percentile,
		Histogram:  r.hv.totalHist, PerEndpoint: r.hv.perEp, ErrorsByCode: r.hv.byCode,
		RandType: r.o.RandType, PSMode: r.o.PSMode,
	}
	for _, ep := range r.t.ReadEndpoints {
		res.ReadNodes = append(res.ReadNodes, ep.Label())
	}
	res.StartedAt = start
	if measured {
		res.TotalTime = end.Sub(start)
		// What collect left in ivHist came after the last interval report.
		res.Tail = r.hv.ivHist.Clone()
		res.TailFrom = max(r.hv.last.Sub(start), 0)
	}
	res.LatencyMin = nsToMs(tot.latMin)
	res.LatencyMax = nsToMs(tot.latMax)
	res.LatencySum = nsToMs(tot.latSum)
	if tot.events > 0 {
		res.LatencyAvg = res.LatencySum / float64(tot.events)
	}
	h := r.hv.totalHist
	res.LatencyPct = pctMs(h, r.o.Percentile, tot.latMax)
	res.LatencyP50 = pctMs(h, 50, tot.latMax)
	res.LatencyP95 = pctMs(h, 95, tot.latMax)
	res.LatencyP99 = pctMs(h, 99, tot.latMax)
	for _, p := range r.o.ExtraPercentiles {
		res.ExtraLatencyPct = append(res.ExtraLatencyPct, pctMs(h, p, tot.latMax))
	}

	r.fairness(res)
	if r.rt != nil {
		res.Rate = r.rateResult(end, &r.hv.totalSvc, r.hv.totalSvcHist)
	}
	r.live.finish()
	return res
}

// fairness fills sysbench's "Threads fairness": events and execution time per worker.
// Execution time is the time spent executing events: the latency sums without --rate and,
// with --rate, the service times (from when a worker began each event), so that it never
// exceeds the wall time. sysbench 1.0.20 adds each event's queue wait to its timer
// (sb_timer_stop: elapsed = end - start + queue_time) and takes the latency sum, so under
// --rate its execution time includes the time events sat queued and can exceed the run.
func (r *runner) fairness(res *Result) {
	n := float64(len(r.workers))
	exec := r.hv.perWorker
	if r.rt != nil {
		exec = r.hv.perWorkerSvc
	}
	var sum int64
	for _, pw := range exec {
		sum += pw.latSum
	}
	res.EventsAvg = float64(r.hv.total.events) / n
	res.ExecTimeAvg = float64(sum) / 1e9 / n
	var ev, et float64
	for i, pw := range r.hv.perWorker {
		d := res.EventsAvg - float64(pw.events)
		ev += d * d
		d = res.ExecTimeAvg - float64(exec[i].latSum)/1e9
		et += d * d
	}
	res.EventsStddev = math.Sqrt(ev / n)
	res.ExecTimeStddev = math.Sqrt(et / n)
}

var errConnMissing = fmt.Errorf("no connection: %w", sql.ErrConnDone)
