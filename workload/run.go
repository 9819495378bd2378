package workload

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// maxQueueLen is sysbench's MAX_QUEUE_LEN for --rate.
const maxQueueLen = 131072

// runner is the state of one Run call.
type runner struct {
	spec  *spec
	o     Options
	t     Target
	sess  *session
	dbs   []*sql.DB
	ps    bool
	trx   bool
	deck  []group
	kinds []stmtKind

	workers []*worker

	t0       time.Time     // workers released
	warmup   time.Duration // measured part starts at t0+warmup
	limit    time.Duration // t0+limit ends the run; 0 = no time limit
	warming  atomic.Bool
	nevents  atomic.Int64
	running  atomic.Int32
	done     chan struct{} // closed to stop workers and helpers
	stopOnce sync.Once

	queue       chan struct{} // --rate event queue
	concurrency atomic.Int32

	unique *uniqueSeq

	errMu sync.Mutex
	err   error

	hv harvester
}

// driverConn is what the workers need of the driver's connection.
type driverConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
}

// driverStmt is what the workers need of a server-side prepared statement.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// worker is one connection and its event loop. Everything but st and slot is
// private to the worker goroutine.
//
// The worker owns a dedicated *sql.Conn and runs each event inside
// conn.Raw on the driver connection: statements are prepared once per
// connection with the driver's PrepareContext (server-side COM_STMT_PREPARE),
// BEGIN/COMMIT are plain COM_QUERYs, and statements run with a
// non-cancellable context, which spares the driver's per-statement context
// watcher and database/sql's per-Rows goroutine (about a third of the
// client's CPU on a small machine). Cancellation instead closes the socket
// (connSlot.kill), which fails a blocked statement at once.
type worker struct {
	id    int
	r     *runner
	ep    Endpoint
	label string
	db    *sql.DB
	slot  *connSlot
	conn  *sql.Conn
	dc    driverConn
	stmts [][numStmtKinds]driverStmt // [table-1][kind], ps mode
	texts [][numStmtKinds]string     // [table-1][kind]
	nv    [4]driver.NamedValue
	g     *randGen
	st    *workerStats
	ev    counts // statement counts of the current attempt
	cbuf  []byte
	pbuf  []byte
}

// qctx is the context statements run with: not cancellable (see worker).
var qctx = context.Background()

func (w *oltp) Run(ctx context.Context, t Target, o Options, rep Reporter) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	r := &runner{
		spec: w.spec, o: o, t: t,
		ps:    o.PSMode == PSAuto,
		trx:   w.spec.usesTrx(&o),
		deck:  w.spec.deck(&o),
		kinds: w.spec.stmtKinds(&o),
		done:  make(chan struct{}),
	}
	r.sess = newSession(t)
	defer r.sess.close()

	for _, ep := range t.Endpoints {
		db, err := r.sess.open(ep, t.DB, !r.ps)
		if err != nil {
			r.closeAll()
			return nil, err
		}
		r.dbs = append(r.dbs, db)
	}
	for _, db := range r.dbs {
		// No idle pool: a closed worker connection is really closed, and a
		// reconnect really dials (recording the socket in the worker's slot).
		db.SetMaxIdleConns(0)
	}

	seed := seedOf(&o)
	r.unique = newUniqueSeq(uint32(seed), uint32(seed>>32))
	r.workers = make([]*worker, o.Threads)
	for i := range r.workers {
		ep := t.Endpoints[i%len(t.Endpoints)]
		wk := &worker{
			id: i, r: r, ep: ep, label: ep.Label(), db: r.dbs[i%len(r.dbs)],
			g:    newRandGen(&o, seed, uint64(i)+1),
			slot: &connSlot{},
			st:   &workerStats{hist: NewHistogram(), endpoint: ep.Label()},
		}
		wk.texts = make([][numStmtKinds]string, o.Tables)
		for tb := range wk.texts {
			for k := range wk.texts[tb] {
				wk.texts[tb][k] = fmt.Sprintf(stmtTemplates[k], tb+1)
			}
		}
		r.workers[i] = wk
	}

	// Connect and prepare every worker before the clock starts (sysbench's
	// thread_init before the start barrier).
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
	if err := errors.Join(initErrs...); err != nil {
		r.closeAll()
		return nil, fmt.Errorf("%s: initializing workers: %w", w.spec.name, err)
	}

	r.hv.init(len(r.workers))
	r.warmup = o.Warmup
	if o.Time > 0 {
		r.limit = o.Warmup + o.Time
	}
	r.warming.Store(o.Warmup > 0)
	if o.Rate > 0 {
		r.queue = make(chan struct{}, maxQueueLen)
	}
	stopCtx := context.AfterFunc(ctx, func() {
		r.stop()
		for _, wk := range r.workers {
			wk.slot.kill()
		}
	})
	defer stopCtx()

	r.running.Store(int32(len(r.workers)))
	r.t0 = time.Now()
	if r.limit > 0 {
		tm := time.AfterFunc(r.limit, r.stop)
		defer tm.Stop()
	}
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
	if r.queue != nil {
		go r.generate()
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

	res := r.result(end)
	r.closeAll()
	if err := r.firstErr(); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
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

func (r *runner) fail(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
	r.stop()
}

func (r *runner) firstErr() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
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
// worker; with --rate it blocks until an event is queued.
func (r *runner) more() bool {
	if r.stopping() {
		return false
	}
	if r.limit > 0 && time.Since(r.t0) >= r.limit {
		return false
	}
	if r.o.Events > 0 && !r.warming.Load() && r.nevents.Add(1) > r.o.Events {
		return false
	}
	if r.queue != nil {
		select {
		case <-r.queue:
		case <-r.done:
			return false
		}
		r.concurrency.Add(1)
	}
	return true
}

// generate is sysbench's event generator for --rate: exponentially
// distributed inter-arrival times (a Poisson process of Rate events/s).
func (r *runner) generate() {
	g := rand.New(rand.NewPCG(seedOf(&r.o), 0x5eed))
	lambda := 1e9 / float64(r.o.Rate)
	next := time.Since(r.t0)
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	for {
		next += time.Duration(-lambda * math.Log(1-g.Float64()))
		now := time.Since(r.t0)
		if r.limit > 0 && now >= r.limit {
			return
		}
		if next > now {
			tm.Reset(next - now)
			select {
			case <-tm.C:
			case <-r.done:
				return
			}
		}
		select {
		case r.queue <- struct{}{}:
		case <-r.done:
			return
		default:
			r.fail(errQueueFull)
			return
		}
	}
}

// loop runs events until more() says stop.
func (w *worker) loop(ctx context.Context) {
	r := w.r
	defer r.running.Add(-1)
	for r.more() {
		start := time.Now()
		err := w.eventWithRetry(ctx)
		if r.queue != nil {
			r.concurrency.Add(-1)
		}
		if err != nil {
			w.st.record(&w.ev, -1, 0)
			if !errors.Is(err, errAborted) {
				r.fail(err)
			}
			return
		}
		w.st.record(&w.ev, time.Since(start), 0)
	}
}

// aborting reports whether an event in progress should be abandoned: the
// caller's context ended, another worker failed, or the time limit passed.
func (w *worker) aborting(ctx context.Context) bool {
	r := w.r
	return ctx.Err() != nil || r.firstErr() != nil ||
		(r.limit > 0 && time.Since(r.t0) >= r.limit)
}

// eventWithRetry runs one event, retrying it after ignored errors (with a
// ROLLBACK) and lost connections (after reconnecting), like sysbench's
// restart_event. After the third consecutive failure it backs off
// exponentially from 1 ms up to 100 ms so that a persistent ignored error
// does not spin.
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
		switch code, isServer := mysqlCode(err); {
		case isConnLost(err):
			w.st.record(&w.ev, -1, 0)
			if err := w.reconnect(ctx); err != nil {
				return err
			}
			w.ev.reconnects++
			w.st.record(&w.ev, -1, 0)
		case isServer && r.o.ignores(code):
			if w.rollback(ctx) {
				// The rollback found the connection gone.
				if err := w.reconnect(ctx); err != nil {
					return err
				}
				w.ev.reconnects++
			}
			w.ev.errors++
			w.st.record(&w.ev, -1, code)
		default:
			return err
		}
		if attempt >= 2 {
			d := time.Millisecond << min(attempt-2, 7)
			if !w.sleep(ctx, min(d, 100*time.Millisecond)) {
				return errAborted
			}
		}
	}
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
		return fmt.Errorf("connecting to %s: %w", w.label, err)
	}
	w.conn = conn
	err = conn.Raw(func(dci any) error {
		dc, ok := dci.(driverConn)
		if !ok {
			return fmt.Errorf("driver connection %T lacks context methods", dci)
		}
		w.dc = dc
		if !w.r.ps {
			return nil
		}
		if w.stmts == nil {
			w.stmts = make([][numStmtKinds]driverStmt, w.r.o.Tables)
		}
		for tb := range w.stmts {
			for _, k := range w.r.kinds {
				st, err := dc.PrepareContext(ctx, w.texts[tb][k])
				if err != nil {
					return &StatementError{Workload: w.r.spec.name, Endpoint: w.label,
						Statement: "PREPARE " + w.texts[tb][k], Code: codeOf(err), Err: err}
				}
				ds, ok := st.(driverStmt)
				if !ok {
					st.Close()
					return fmt.Errorf("driver statement %T lacks context methods", st)
				}
				w.stmts[tb][k] = ds
			}
		}
		return nil
	})
	if err != nil {
		w.closeConn()
	}
	return err
}

func codeOf(err error) uint16 {
	c, _ := mysqlCode(err)
	return c
}

func (w *worker) closeConn() {
	if w.conn == nil {
		return
	}
	w.conn.Raw(func(any) error {
		for tb := range w.stmts {
			for k, st := range w.stmts[tb] {
				if st != nil {
					st.Close()
					w.stmts[tb][k] = nil
				}
			}
		}
		return nil
	})
	w.conn.Close()
	w.conn, w.dc = nil, nil
}

// reconnect replaces a lost connection, retrying (1 ms doubling to 50 ms)
// while the failure is a connection error or an ignored server error, until
// it succeeds or the run stops.
func (w *worker) reconnect(ctx context.Context) error {
	w.closeConn()
	backoff := time.Millisecond
	for {
		if w.aborting(ctx) {
			return errAborted
		}
		err := w.connect(ctx)
		if err == nil {
			return nil
		}
		code, isServer := mysqlCode(err)
		if !isConnLost(err) && !(isServer && w.r.o.ignores(code)) {
			if w.aborting(ctx) {
				return errAborted
			}
			return err
		}
		if !w.sleep(ctx, backoff) {
			return errAborted
		}
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}

func (w *worker) stmtErr(tb int, k stmtKind, err error) error {
	return &StatementError{Workload: w.r.spec.name, Endpoint: w.label,
		Statement: w.texts[tb][k], Code: codeOf(err), Err: err}
}

// table picks a table index (0-based) uniformly, like sysbench's get_table_num.
func (w *worker) table() int { return int(w.g.uniform(1, uint32(w.r.o.Tables))) - 1 }

// rowID picks a row id with the configured distribution (sysbench's get_id).
func (w *worker) rowID() int64 { return int64(w.g.def(1, uint32(w.r.o.TableSize))) }

// rawEvent runs one event on the driver connection (inside conn.Raw).
func (w *worker) rawEvent(any) error { return w.event(qctx) }

// event runs one transaction of the workload's deck.
func (w *worker) event(ctx context.Context) error {
	r := w.r
	if r.trx {
		if err := w.plain(ctx, "BEGIN"); err != nil {
			return err
		}
	}
	rs := int64(r.o.RangeSize)
	for _, gr := range r.deck {
		if gr.n <= 0 {
			continue
		}
		switch gr.kind {
		case gPointSelects:
			tb := w.table()
			for i := 0; i < gr.n; i++ {
				if err := w.read(ctx, tb, stPointSelect, w.rowID()); err != nil {
					return err
				}
			}
		case gSimpleRanges, gSumRanges, gOrderRanges, gDistinctRanges:
			k := groupStmts(gr.kind)[0]
			tb := w.table()
			for i := 0; i < gr.n; i++ {
				id := w.rowID()
				if err := w.read(ctx, tb, k, id, id+rs-1); err != nil {
					return err
				}
			}
		case gIndexUpdates:
			tb := w.table()
			for i := 0; i < gr.n; i++ {
				if err := w.write(ctx, tb, stIndexUpdate, w.rowID()); err != nil {
					return err
				}
			}
		case gNonIndexUpdates:
			tb := w.table()
			for i := 0; i < gr.n; i++ {
				w.cbuf = w.g.fillString(w.cbuf, cTemplate)
				if err := w.write(ctx, tb, stNonIndexUpdate, string(w.cbuf), w.rowID()); err != nil {
					return err
				}
			}
		case gDeleteInserts:
			tb := w.table()
			for i := 0; i < gr.n; i++ {
				id, k := w.rowID(), w.rowID()
				w.cbuf = w.g.fillString(w.cbuf, cTemplate)
				w.pbuf = w.g.fillString(w.pbuf, padTemplate)
				if err := w.write(ctx, tb, stDelete, id); err != nil {
					return err
				}
				if err := w.write(ctx, tb, stInsert, id, k, string(w.cbuf), string(w.pbuf)); err != nil {
					return err
				}
			}
		case gDelete:
			if err := w.write(ctx, w.table(), stDelete, w.rowID()); err != nil {
				return err
			}
		case gInsert:
			if err := w.insertText(ctx); err != nil {
				return err
			}
		}
	}
	if r.trx {
		return w.plain(ctx, "COMMIT")
	}
	return nil
}

var errConnMissing = fmt.Errorf("no connection: %w", sql.ErrConnDone)

// args fills the worker's reusable argument slice.
func (w *worker) args(vals ...driver.Value) []driver.NamedValue {
	for i, v := range vals {
		w.nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return w.nv[:len(vals)]
}

// read runs a statement that returns rows and drains them (a "read").
func (w *worker) read(ctx context.Context, tb int, k stmtKind, vals ...driver.Value) error {
	var rows driver.Rows
	var err error
	if w.r.ps {
		rows, err = w.stmts[tb][k].QueryContext(ctx, w.args(vals...))
	} else {
		rows, err = w.dc.QueryContext(ctx, w.texts[tb][k], w.args(vals...))
	}
	if err != nil {
		return w.stmtErr(tb, k, err)
	}
	// Drained, not decoded (issue 9, speed): Close reads every row packet
	// off the wire and fails on an error packet, without Next's allocation
	// per column and row; sysbench too stores the rows and frees them.
	if err := rows.Close(); err != nil {
		return w.stmtErr(tb, k, err)
	}
	w.ev.reads++
	return nil
}

// write runs a DML statement: a "write" when it changed rows, else "other".
func (w *worker) write(ctx context.Context, tb int, k stmtKind, vals ...driver.Value) error {
	var res driver.Result
	var err error
	if w.r.ps {
		res, err = w.stmts[tb][k].ExecContext(ctx, w.args(vals...))
	} else {
		res, err = w.dc.ExecContext(ctx, w.texts[tb][k], w.args(vals...))
	}
	if err != nil {
		return w.stmtErr(tb, k, err)
	}
	w.countExec(res)
	return nil
}

func (w *worker) countExec(res driver.Result) {
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		w.ev.writes++
	} else {
		w.ev.others++
	}
}

// plain runs a statement without parameters over the text protocol.
func (w *worker) plain(ctx context.Context, q string) error {
	res, err := w.dc.ExecContext(ctx, q, nil)
	if err != nil {
		return &StatementError{Workload: w.r.spec.name, Endpoint: w.label, Statement: q, Code: codeOf(err), Err: err}
	}
	w.countExec(res)
	return nil
}

// insertText is oltp_insert's event: one INSERT over the text protocol with
// id 0 (auto-increment) or, without auto-inc, an id from a unique random
// sequence mapped to the signed INT range.
func (w *worker) insertText(ctx context.Context) error {
	o := &w.r.o
	tb := w.table()
	k := w.rowID()
	var id int64
	if !o.AutoInc {
		id = int64(w.r.unique.next()) - 2147483648
	}
	w.cbuf = w.g.fillString(w.cbuf, cTemplate)
	w.pbuf = w.g.fillString(w.pbuf, padTemplate)
	q := make([]byte, 0, 256)
	q = append(q, "INSERT INTO sbtest"...)
	q = strconv.AppendInt(q, int64(tb+1), 10)
	q = append(q, " (id, k, c, pad) VALUES ("...)
	q = strconv.AppendInt(q, id, 10)
	q = append(q, ", "...)
	q = strconv.AppendInt(q, k, 10)
	q = append(q, ", '"...)
	q = append(q, w.cbuf...)
	q = append(q, "', '"...)
	q = append(q, w.pbuf...)
	q = append(q, "')"...)
	return w.plain(ctx, string(q))
}

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
	length := now.Sub(r.hv.last)
	r.hv.last = now
	h := r.hv.ivHist
	iv := Interval{
		Elapsed: now.Sub(start), Length: length,
		Threads:      int(r.running.Load()),
		Transactions: c.events, Reads: c.reads, Writes: c.writes, Others: c.others,
		Errors: c.errors, Reconnects: c.reconnects,
		PerEndpoint: perEp, ErrorsByCode: byCode,
		Histogram: h.Clone(),
	}
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
	if r.queue != nil {
		iv.QueueLength = len(r.queue)
		iv.Concurrency = int(r.concurrency.Load())
	}
	return iv
}

// harvester merges worker statistics; one goroutine at a time uses it.
type harvester struct {
	spare     *hdrhistogram.Histogram
	ivHist    *hdrhistogram.Histogram
	totalHist *hdrhistogram.Histogram
	perWorker []counts
	total     counts
	byCode    map[uint16]int64
	perEp     map[string]EndpointStats
	last      time.Time
}

func (h *harvester) init(n int) {
	h.spare = NewHistogram()
	h.ivHist = NewHistogram()
	h.totalHist = NewHistogram()
	h.perWorker = make([]counts, n)
	h.byCode = map[uint16]int64{}
	h.perEp = map[string]EndpointStats{}
}

// collect harvests every worker into the interval accumulators (returned,
// with the interval histogram in h.ivHist) and, when keep, into the run
// totals; without keep (end of warmup) the harvest is discarded.
func (h *harvester) collect(r *runner, keep bool) (c counts, perEp map[string]EndpointStats, byCode map[uint16]int64) {
	h.ivHist.Reset()
	perEp = map[string]EndpointStats{}
	byCode = map[uint16]int64{}
	for _, wk := range r.workers {
		perEp[wk.label] = perEp[wk.label] // every endpoint appears, even idle
	}
	for i, wk := range r.workers {
		sn := wk.st.harvest(h.spare)
		if keep {
			h.ivHist.Merge(sn.hist)
		}
		sn.hist.Reset()
		h.spare = sn.hist
		if !keep {
			continue
		}
		c.add(&sn.c)
		h.perWorker[i].add(&sn.c)
		e := perEp[wk.label]
		e.Transactions += sn.c.events
		e.Queries += sn.c.reads + sn.c.writes + sn.c.others
		e.Errors += sn.c.errors
		e.Reconnects += sn.c.reconnects
		for code, n := range sn.byCode {
			byCode[code] += n
			if e.ErrorsByCode == nil {
				e.ErrorsByCode = map[uint16]int64{}
			}
			e.ErrorsByCode[code] += n
		}
		perEp[wk.label] = e
	}
	if keep {
		h.total.add(&c)
		h.totalHist.Merge(h.ivHist)
		for k, v := range perEp {
			t := h.perEp[k]
			t.Transactions += v.Transactions
			t.Queries += v.Queries
			t.Errors += v.Errors
			t.Reconnects += v.Reconnects
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
		Workload: r.spec.name, Threads: len(r.workers),
		Reads: tot.reads, Writes: tot.writes, Others: tot.others,
		Queries:      tot.reads + tot.writes + tot.others,
		Transactions: tot.events, IgnoredErrors: tot.errors, Reconnects: tot.reconnects,
		Percentile: r.o.Percentile,
		Histogram:  r.hv.totalHist, PerEndpoint: r.hv.perEp, ErrorsByCode: r.hv.byCode,
		RandType: r.o.RandType, PSMode: r.o.PSMode,
	}
	if measured {
		res.TotalTime = end.Sub(start)
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

	n := float64(len(r.workers))
	res.EventsAvg = float64(tot.events) / n
	res.ExecTimeAvg = res.LatencySum / 1000 / n
	var ev, et float64
	for _, pw := range r.hv.perWorker {
		d := res.EventsAvg - float64(pw.events)
		ev += d * d
		d = res.ExecTimeAvg - float64(pw.latSum)/1e9
		et += d * d
	}
	res.EventsStddev = math.Sqrt(ev / n)
	res.ExecTimeStddev = math.Sqrt(et / n)
	return res
}
