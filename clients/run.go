package clients

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/workload"
)

// Config is a run driven from several clients (Run).
type Config struct {
	// Clients are the clients' names (hosts), each once; Runner starts their processes.
	Clients []string
	Runner  Runner
	// Version is the coordinator's habench version: every client's must be the same.
	Version string
	// Workload is the test; Options the whole run's options (Threads, Rate and Events
	// are split among the clients: Split).
	Workload string
	Options  workload.Options
	// Target is where the workers connect: its Endpoints, ReadEndpoints and credentials
	// (Follow and Failover are the coordinator's view of a cluster: refused; Dial is the
	// coordinator's: the clients dial directly).
	Target workload.Target
	// Reporter receives the merged interval reports (with Options.ReportInterval > 0),
	// as a single client's run gives its reports; nil: none.
	Reporter workload.Reporter
	// Offsets are the clients' measured clock offsets (the client's clock minus the
	// coordinator's): each client's start is moved by its own. Missing: 0.
	Offsets map[string]time.Duration
	// StartIn is how long after the jobs are sent the clients start (default 2 s).
	StartIn time.Duration
	// Dirs are the directories made for the run on clients' hosts (their copies of
	// habench: CheckCopyDir), each sent in its client's Job.RemoveDir: the client removes
	// it when it ends. Missing: none.
	Dirs map[string]string
	// Note receives lines about the run as it goes (a client lost, an interval merged
	// without a client); nil: none.
	Note func(line string)
}

// LostClient is a client whose stream ended or broke before its result.
type LostClient struct {
	Client string
	// At is when the coordinator saw it lost; Into is At from the run's start (the
	// coordinator's start time for the clients).
	At   time.Time
	Into time.Duration
	// Intervals is how many of its interval reports came before.
	Intervals int
	Err       error
}

// Unwrap is the reason it was lost (wrapping ErrLost).
func (l LostClient) Unwrap() error { return l.Err }

// Error names the client, when it was lost (UTC and seconds into the run), how many of its
// interval reports came before, and why.
func (l LostClient) Error() string {
	return fmt.Sprintf("client %s lost at %s (%.1f s into the run, after %d interval reports; its data until then kept): %v",
		l.Client, l.At.UTC().Format("15:04:05.000"), l.Into.Seconds(), l.Intervals, l.Err)
}

// Outcome is what Run returns: the merged run (Merged, each ClientRow of a lost client
// marked Partial: its Result rebuilt from its interval reports), the lost clients, and the
// merged intervals.
type Outcome struct {
	*Merged
	Lost      []LostClient
	Intervals []Interval
}

// collectWait is how long, after the run's context ended (the clients' standard inputs
// closed), the coordinator waits for the clients' results before it kills them; runSlack
// how long past a timed run's end.
const (
	collectWait = 10 * time.Second
	runSlack    = time.Minute
)

// Run runs cfg.Workload from every client at once and merges what they measured. It
// starts one `habench client-run` per client (cfg.Runner), sends each its Job (its share
// of threads, rate and events, every client's start the same moment StartIn ahead on the
// coordinator's clock, moved by its offset), reads the clients' streams, hands the merged
// intervals to cfg.Reporter as they complete and merges their Results (Merge). Clients
// report every second, or every Options.ReportInterval when set. When ctx ends, the
// clients' standard inputs are closed: they end their runs and send their partial results
// (those not done within 10 s are killed). A client lost mid-run (its stream ends or breaks
// before its result: its host or connection gone, its process killed) is named with the
// time in the error (a LostClient, wrapping ErrLost); its interval reports until then are
// kept in the merge and its ClientRow marked Partial; the other clients run on. Run returns
// the Outcome whenever at least one client measured something, and an error when a client
// was lost or its run failed. Errors before anything starts: bad Config (one line naming
// the field), a client that could not be started (the started ones are killed).
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	shares, err := cfg.check()
	if err != nil {
		return nil, err
	}
	c := newCoordinator(cfg)
	if err := c.start(ctx, shares); err != nil {
		return nil, err
	}
	c.loop(ctx)
	return c.finish()
}

// check checks cfg and returns the clients' options.
func (cfg *Config) check() ([]workload.Options, error) {
	switch {
	case len(cfg.Clients) == 0:
		return nil, fmt.Errorf("clients: none")
	case cfg.Runner == nil:
		return nil, fmt.Errorf("clients: no runner")
	case cfg.Target.Follow != nil || cfg.Target.Failover != nil:
		return nil, fmt.Errorf("clients: the target follows the writer or fails over (the coordinator's view of the cluster): not with clients")
	}
	for i, c := range cfg.Clients {
		if c == "" || strings.ContainsAny(c, " \t\n,") {
			return nil, fmt.Errorf("clients %q: client %d: want a host name", strings.Join(cfg.Clients, ","), i+1)
		}
		for _, d := range cfg.Clients[:i] {
			if d == c {
				return nil, fmt.Errorf("clients %q: %s given twice", strings.Join(cfg.Clients, ","), c)
			}
		}
	}
	if _, err := workload.Lookup(cfg.Workload); err != nil {
		return nil, err
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Target.Validate(); err != nil {
		return nil, err
	}
	o := cfg.Options
	if o.ReportInterval == 0 {
		o.ReportInterval = time.Second
	}
	return Split(o, len(cfg.Clients))
}

// clientRun is what the coordinator knows of one client.
type clientRun struct {
	name      string
	options   workload.Options // its share
	proc      *Proc
	intervals []workload.Interval
	result    *workload.Result
	runErr    string
	stmtErr   *workload.StatementError // runErr as the client's engine returned it, when a statement failed
	done      bool                     // its stream ended (result or not)
	seen      time.Time                // when its last record came (its start before its hello)
	hello     bool                     // its hello came
	lost      *LostClient
}

// event is one thing a client's reader saw: a record, or the end of the stream (end set:
// err io.EOF after the result, else why it ended).
type event struct {
	c     *clientRun
	rec   Record
	hello bool
	end   bool
	err   error
	at    time.Time
}

// coordinator is one Run.
type coordinator struct {
	cfg     Config
	clients []*clientRun
	merger  *IntervalMerger
	events  chan event
	t0      time.Time     // the clients' start, on the coordinator's clock
	ri      time.Duration // the clients' report interval
	merged  []Interval
	errs    []error
	// held are merged intervals some client's run had ended just before (emit), not
	// given to the reporter yet: the runs' last interval, unless more follow.
	held []Interval
	// failed is the first client whose run failed (its statement error, say), on which
	// the coordinator stopped the others ("" while none has).
	failed string
}

func newCoordinator(cfg Config) *coordinator {
	if cfg.StartIn <= 0 {
		cfg.StartIn = 2 * time.Second
	}
	if cfg.Note == nil {
		cfg.Note = func(string) {}
	}
	m, _ := NewIntervalMerger(cfg.Clients, cfg.Options.Percentile, 2*time.Second) // names checked
	c := &coordinator{cfg: cfg, merger: m, events: make(chan event, 64)}
	for _, name := range cfg.Clients {
		c.clients = append(c.clients, &clientRun{name: name})
	}
	return c
}

// start starts every client's process, then sends each its job and starts its reader.
func (c *coordinator) start(ctx context.Context, shares []workload.Options) error {
	for _, cl := range c.clients {
		p, err := c.cfg.Runner.Start(ctx, cl.name)
		if err != nil {
			c.killAll()
			return fmt.Errorf("client %s: %w", cl.name, err)
		}
		cl.proc = p
	}
	c.t0 = time.Now().Add(c.cfg.StartIn)
	c.ri = shares[0].ReportInterval
	t := c.cfg.Target
	for k, cl := range c.clients {
		cl.options, cl.seen = shares[k], c.t0
		job := Job{Format: Format, Client: cl.name, Workload: c.cfg.Workload, Options: shares[k],
			Endpoints: t.Endpoints, ReadEndpoints: t.ReadEndpoints, User: t.User, Password: t.Password, DB: t.DB,
			Start: c.t0.Add(c.cfg.Offsets[cl.name]), RemoveDir: c.cfg.Dirs[cl.name]}
		b, err := encodeJob(job)
		if err == nil {
			_, err = cl.proc.Stdin.Write(b)
		}
		if err != nil {
			c.killAll()
			return fmt.Errorf("client %s: sending its job: %w", cl.name, err)
		}
	}
	for _, cl := range c.clients {
		go c.read(cl)
	}
	return nil
}

// read decodes cl's stream into events, the last one its end.
func (c *coordinator) read(cl *clientRun) {
	d := NewDecoder(cl.proc.Stdout, cl.name, c.cfg.Version)
	if _, err := d.Hello(); err != nil {
		c.events <- event{c: cl, end: true, err: err, at: time.Now()}
		return
	}
	c.events <- event{c: cl, hello: true, at: time.Now()}
	for {
		rec, err := d.Next()
		if err != nil {
			c.events <- event{c: cl, end: true, err: err, at: time.Now()}
			return
		}
		c.events <- event{c: cl, rec: rec, at: time.Now()}
	}
}

// killAll kills every started client process.
func (c *coordinator) killAll() {
	for _, cl := range c.clients {
		if cl.proc != nil && !cl.done {
			cl.proc.Kill()
		}
	}
}

// stopAll closes every client's standard input: each ends its run and sends its result.
func (c *coordinator) stopAll() {
	for _, cl := range c.clients {
		_ = cl.proc.Stdin.Close()
	}
}

// loop handles the clients' events until every stream has ended, merging the intervals
// as they complete; when ctx ends it stops the clients, and kills those not done within
// collectWait (or runSlack after a timed run's end).
func (c *coordinator) loop(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var deadline <-chan time.Time
	if o := c.cfg.Options; o.Time > 0 {
		tm := time.NewTimer(time.Until(c.t0.Add(o.Warmup + o.Time + runSlack)))
		defer tm.Stop()
		deadline = tm.C
	}
	done, stop := ctx.Done(), (<-chan time.Time)(nil)
	for running := len(c.clients); running > 0; {
		select {
		case ev := <-c.events:
			if c.handle(ev) {
				running--
			}
		case now := <-tick.C:
			c.emit(c.merger.Tick(now))
			c.silent(now)
		case <-done:
			done = nil
			c.stopAll()
			tm := time.NewTimer(collectWait)
			defer tm.Stop()
			stop = tm.C
		case <-stop:
			c.cfg.Note(fmt.Sprintf("clients: killing the clients not done %v after the run was stopped", collectWait))
			c.killAll()
		case <-deadline:
			c.cfg.Note(fmt.Sprintf("clients: killing the clients not done %v after the run's end", runSlack))
			c.killAll()
		}
	}
	c.emit(c.merger.Flush())
	c.stopAll()
}

// handle takes one event; it reports whether it ended its client's stream.
func (c *coordinator) handle(ev event) bool {
	cl := ev.c
	cl.seen = ev.at
	if cl.lost != nil && !ev.end {
		return false // declared lost: what it still sends is not merged
	}
	if ev.hello {
		cl.hello = true
		return false
	}
	if !ev.end {
		if iv := ev.rec.Interval; iv != nil {
			cl.intervals = append(cl.intervals, iv.Interval)
			out, err := c.merger.Add(*iv, ev.at)
			if err != nil {
				c.errs = append(c.errs, err)
			}
			c.emit(out)
			return false
		}
		cl.result, cl.runErr, cl.stmtErr = ev.rec.Result, ev.rec.RunErr, ev.rec.StatementErr
		_ = cl.proc.Stdin.Close() // its run is over: its session can end
		c.emit(c.merger.Ended(cl.name, ev.at))
		c.runFailed(cl)
		return false
	}
	cl.done = true
	switch {
	case cl.lost != nil: // declared lost when it fell silent
		_ = cl.proc.Wait()
	case ev.err != io.EOF:
		cl.proc.Kill()
		err := ev.err
		if werr := cl.proc.Wait(); werr != nil {
			err = fmt.Errorf("%w (%v)", err, werr)
		}
		c.lose(cl, ev.at, err)
	default:
		_ = cl.proc.Wait() // its run's error came in its result
	}
	return true
}

// lose marks cl lost at at, for err.
func (c *coordinator) lose(cl *clientRun, at time.Time, err error) {
	if !errors.Is(err, ErrLost) {
		err = fmt.Errorf("%w: %w", ErrLost, err)
	}
	cl.lost = &LostClient{Client: cl.name, At: at, Into: at.Sub(c.t0), Intervals: len(cl.intervals), Err: err}
	c.errs = append(c.errs, *cl.lost)
	c.cfg.Note(cl.lost.Error())
	c.emit(c.merger.Lost(cl.name, at))
}

// firstSilence is how long a client may take, after its start, to send its hello and,
// after its hello, its first interval report beyond its warm-up and report interval (its
// workers' setup); later, twice its report interval and silenceSlack.
const (
	firstSilence = 30 * time.Second
	silenceSlack = 3 * time.Second
)

// silent declares lost (at its last record), and kills, every client still running that
// has sent nothing for
// longer than it may (firstSilence, silenceSlack): its host or connection is gone while its
// SSH session has not noticed, or its process was killed while its session lives on.
func (c *coordinator) silent(now time.Time) {
	for _, cl := range c.clients {
		if cl.done || cl.lost != nil || cl.result != nil {
			continue
		}
		limit := 2*c.ri + silenceSlack
		switch {
		case !cl.hello:
			limit = firstSilence
		case len(cl.intervals) == 0:
			limit = firstSilence + c.cfg.Options.Warmup + c.ri
		}
		if quiet := now.Sub(cl.seen); quiet > limit {
			c.lose(cl, cl.seen, fmt.Errorf("client %s: nothing from it since (%.1f s when declared lost at %s)", cl.name, quiet.Seconds(), now.UTC().Format("15:04:05.000")))
			cl.proc.Kill()
		}
	}
}

// runFailed records client cl's run error, typed as the client's engine returned it
// when a statement failed (a *workload.StatementError, as a capacity search judges it).
// The first client whose run fails stops the others, as a failed worker stops a single
// engine's run; their errors from being stopped are then notes, not the run's.
func (c *coordinator) runFailed(cl *clientRun) {
	switch {
	case cl.runErr == "":
		return
	case c.failed != "" && cl.stmtErr == nil:
		c.cfg.Note(fmt.Sprintf("client %s: %s (stopped after client %s failed)", cl.name, cl.runErr, c.failed))
		return
	case cl.stmtErr != nil:
		c.errs = append(c.errs, fmt.Errorf("client %s: %w", cl.name, cl.stmtErr))
	default:
		c.errs = append(c.errs, fmt.Errorf("client %s: %s", cl.name, cl.runErr))
	}
	if c.failed == "" {
		c.failed = cl.name
		c.stopAll()
	}
}

// emit hands merged intervals to the reporter (with a report interval), noting those
// without some client. An interval some client's run had ended just before (it reported
// the one before: the runs' last interval, which one client's run may still report and
// another's not) is held: given to the reporter with a note when more intervals follow,
// dropped when none does (it would read as a drop in throughput; its counts are in the
// run's totals, as a single engine's last partial interval's are).
func (c *coordinator) emit(ivs []Interval) {
	for _, iv := range ivs {
		c.merged = append(c.merged, iv)
		if c.endOfRuns(iv) {
			c.held = append(c.held, iv)
			continue
		}
		for _, h := range c.held {
			c.report(h)
		}
		c.held = nil
		c.report(iv)
	}
}

// endOfRuns reports whether every client iv lacks because its run ended had reported the
// interval before iv (iv is then where the clients' runs ended, a few milliseconds apart).
func (c *coordinator) endOfRuns(iv Interval) bool {
	if len(iv.Ended) == 0 {
		return false
	}
	for _, e := range iv.Ended {
		if c.merger.Last(e) != iv.N-1 {
			return false
		}
	}
	return true
}

// report gives iv to the reporter, noting the clients it lacks.
func (c *coordinator) report(iv Interval) {
	if c.cfg.Reporter != nil && c.cfg.Options.ReportInterval > 0 {
		c.cfg.Reporter.Interval(iv.Interval)
	}
	if without := append(append(slices.Clone(iv.Missing), iv.Lost...), iv.Ended...); len(without) > 0 {
		c.cfg.Note(fmt.Sprintf("clients: interval %d without client(s) %s", iv.N, strings.Join(without, ",")))
	}
}

// finish merges the clients' results (a lost client's rebuilt from its intervals).
func (c *coordinator) finish() (*Outcome, error) {
	var parts []Part
	var lost []LostClient
	var partial []string
	var ref *workload.Result // a client's own Result
	for _, cl := range c.clients {
		if ref == nil {
			ref = cl.result
		}
	}
	for _, cl := range c.clients {
		if cl.lost != nil {
			lost = append(lost, *cl.lost)
		}
		switch {
		case cl.result != nil:
			parts = append(parts, Part{Client: cl.name, Result: cl.result})
		case len(cl.intervals) > 0:
			r := c.fromIntervals(cl)
			sameAs(r, ref)
			parts = append(parts, Part{Client: cl.name, Result: r})
			partial = append(partial, cl.name)
		}
	}
	runErr := errors.Join(c.errs...)
	if len(parts) == 0 {
		if runErr == nil {
			runErr = fmt.Errorf("clients: no client measured anything")
		}
		return nil, runErr
	}
	m, err := Merge(parts, c.cfg.Options.ExtraPercentiles)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	for i := range m.Clients {
		for _, p := range partial {
			if m.Clients[i].Client == p {
				m.Clients[i].Partial = true
			}
		}
	}
	return &Outcome{Merged: m, Lost: lost, Intervals: c.merged}, runErr
}
