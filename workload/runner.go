package workload

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
	// autocommit: src's events write without transactions (eventSource.autocommits).
	autocommit bool

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
		ps: o.PSMode == PSAuto, autocommit: src.autocommits(),
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
