package experiment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/knob"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// A run is a list of phases over one runState. The setup phases (checks, the proxy's
// checks, knobs, results, links, sampling, background: faults and the probe writer) stop
// the run at their first error; the workload phase records its error and the run goes
// on, so that the closing phases (catch-up and convergence, collection, summary and
// results, the proxy's own checks back) always say what
// happened. Each phase pushes what undoes it onto one cleanup stack, run in reverse on
// success, error and interrupt. A new kind of work during a run (a fault schedule, a probe)
// is one more phase, not a branch inside the others.

// phase is one step of a run.
type phase struct {
	name string
	run  func(*runState) error
}

// setupPhases run in order before the workload; the first error ends the run.
var setupPhases = []phase{
	{"checks", (*runState).checks},
	{"proxy checks", (*runState).proxyChecks},
	{"knobs", (*runState).knobs},
	{"results", (*runState).results},
	{"failover", (*runState).clientFailover},
	{"links", (*runState).links},
	{"sampling", (*runState).sampling},
	{"proxy", (*runState).proxy},
	{"background", (*runState).background},
}

// closingPhases run after the workload, whatever its outcome.
var closingPhases = []phase{
	{"convergence", (*runState).convergence},
	{"collect", (*runState).collect},
	{"summary", (*runState).summarize},
	{"write", (*runState).write},
	{"proxy checks back", (*runState).proxyChecksBack},
}

// runState is what the phases of one Bench.Run share.
type runState struct {
	b        *Bench
	ctx      context.Context
	out      *Outcome
	cleanups []func()

	started      time.Time
	standing     *links.Standing
	standingPID  int
	applied      *knob.Applied
	restoreKnobs func() error
	restoreProxy func() error // the proxy's own health checks back (phase_proxy.go)
	res          *Results
	nodes        []sampler.Node
	man          *schema.Manifest
	dataCheck    string

	// sampling
	sampler      *sampler.Runner
	stopSampling context.CancelFunc
	swg          sync.WaitGroup
	samplerErr   error
	smu          sync.Mutex
	allSamples   []sampler.Sample
	lastTick     time.Duration // start of the newest tick delivered, on the samples clock
	sampleStart  time.Time
	linkWatch    *links.Watch
	proxyWatch   *proxyWatch // the proxy's state, when the cluster has a proxy (phase_proxy.go)

	// background work during the workload (faults, probe writer): stopBackground ends it
	stopBackground func()
	probe          *probe
	checker        *checkerRun
	writers        *writerWatch         // the cluster's live writer (hangs.go)
	liveWatch      *liveWatch           // the nodes live, when the workers fail over between writers (failover.go)
	scheduled      []schema.FaultRecord // the faults the run's schedule injected (read after stopBackground)
	// threadsStarted is closed when the workers are connected and start (Threads
	// started!): the fault schedule's zero.
	threadsStarted     chan struct{}
	threadsStartedOnce sync.Once
	faultWarnings      []string // the schedule's warnings, said as they happened (read after stopBackground)

	// workload
	result    *workload.Result
	runErr    error
	intervals []FaultInterval // the workload's report intervals, on samples.csv's clock
	psNote    string

	// convergence and summary
	conv       *schema.Convergence
	positions  map[string]string
	consistent *bool
	sum        *schema.Summary
}

// onCleanup pushes f onto the cleanup stack.
func (st *runState) onCleanup(f func()) { st.cleanups = append(st.cleanups, f) }

func (st *runState) cleanup() {
	for i := len(st.cleanups) - 1; i >= 0; i-- {
		st.cleanups[i]()
	}
	st.cleanups = nil
}

// warn records w in the manifest's warnings and says it once (see say).
func (st *runState) warn(w, logMsg string, args ...any) {
	st.man.Warnings = append(st.man.Warnings, w)
	st.say(w, logMsg, args...)
}

// say prints w as a WARNING line, or, without an output to print it to, logs it at level
// WARN (logMsg and args): each warning once, never as both.
func (st *runState) say(w, logMsg string, args ...any) {
	if st.b.Stdout == nil {
		st.b.log().Warn(logMsg, args...)
		return
	}
	st.printf("WARNING: %s\n", w)
}

func (st *runState) printf(format string, args ...any) {
	if st.b.Stdout != nil {
		fmt.Fprintf(st.b.Stdout, format, args...)
	}
}

// post is a context for work after the run: it must work even when ctx was cancelled.
func (st *runState) post() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(st.ctx), 30*time.Second)
}

// Run executes the workload with sampling, links and knobs, then waits for the replicas
// to catch up, checks convergence and writes the results (see Bench). It returns the
// outcome and the run's error: a setup failure (nothing ran), the workload's error, an
// interrupt, or nodes that did not converge; joined with a failure to put the proxy's own
// health checks back.
func (b *Bench) Run(ctx context.Context) (_ *Outcome, err error) {
	st := &runState{b: b, ctx: ctx, out: &Outcome{}}
	defer func() {
		st.cleanup()
		err = st.proxyBackErr(err)
	}()
	for _, ph := range setupPhases {
		if err := ph.run(st); err != nil {
			return nil, err // nothing ran
		}
	}
	st.workload()
	for _, ph := range closingPhases {
		if err := ph.run(st); err != nil {
			return st.out, err
		}
	}
	return st.out, st.verdict()
}

// checks: the target, the cluster's state and run lock, reachability, the ignore list
// for several writers, and the standing impairments the run will measure.
func (st *runState) checks() error {
	b := st.b
	if err := b.Target.Validate(); err != nil {
		return err
	}
	if b.Cluster != nil && b.Cluster.State != "ready" {
		return fmt.Errorf("cluster %s is %q, not ready (destroy and deploy it again)", b.Cluster.Name, b.Cluster.State)
	}
	unlockRun, err := lockRun(b.Cluster, b.CommandLine)
	if err != nil {
		return err
	}
	st.onCleanup(unlockRun)
	// Every endpoint answers before anything is read, set or written (sysbench's first
	// FATAL line otherwise comes after a page of warnings about the same dead server).
	if err := workload.Reachable(st.ctx, b.Target); err != nil {
		return err
	}
	if b.Cluster == nil {
		return nil
	}
	if note := multiWriterIgnore(b.Cluster.Spec.Kind, len(b.Target.Endpoints), &b.Options); note != "" {
		b.ignoreNote = note
		st.printf("NOTE: %s\n", note)
	}
	// Impairments applied with `habench netem apply` stay for the run; they are part of
	// what is measured, and --links cannot be added on top.
	s, err := links.ReadStanding(b.Cluster)
	if err != nil {
		return err
	}
	switch {
	case s == nil && b.Links == nil && links.RunLinksActive(b.Cluster):
		// Another run's links are on the cluster now; this run would measure them
		// without recording them.
		return fmt.Errorf("cluster %s: another run with links is going on; wait for it to end", b.Cluster.Name)
	case s == nil:
	case links.ApplyInProgress(b.Cluster):
		return fmt.Errorf("cluster %s: `habench netem apply` is in progress; run again when it has finished", b.Cluster.Name)
	case b.Links != nil:
		return &topology.FieldError{Field: "links", Value: strings.Join(b.Links.Describe(), ", "),
			Reason: fmt.Sprintf("cluster %s already has impairments from `habench netem apply %s`: run without links, or remove those first with `habench netem clear %s`",
				b.Cluster.Name, s.Request.String(), b.Cluster.Name)}
	case !s.Alive(b.Cluster) || s.Report == nil:
		return fmt.Errorf("cluster %s: the impairments of `habench netem apply %s` are not in effect (link process gone, or apply did not finish): run `habench netem clear %s`",
			b.Cluster.Name, s.Request.String(), b.Cluster.Name)
	default:
		st.standing = s
		st.standingPID = s.LinkPID(b.Cluster)
	}
	return nil
}

// knobs go on before anything is written, and come off after the run (restoreKnobs, in
// the collect phase and on the cleanup stack for early returns; on a fresh context after
// an interrupt).
func (st *runState) knobs() error {
	b := st.b
	applied, err := b.applyKnobs(st.ctx)
	if err != nil {
		return err
	}
	st.applied = applied
	var once sync.Once
	var knobErr error
	st.restoreKnobs = func() error {
		once.Do(func() {
			if applied == nil || b.KeepKnobs {
				return
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(st.ctx), 5*time.Minute)
			defer cancel()
			if knobErr = applied.Restore(rctx); knobErr != nil {
				knobErr = fmt.Errorf("knobs not restored: %w (habench knob restore %s)", knobErr, b.Cluster.Name)
				b.log().Error("knobs not restored", "err", knobErr)
			}
		})
		return knobErr
	}
	st.onCleanup(func() { st.restoreKnobs() })
	return nil
}

// results opens the results directory, the admin pools to every node and writes the
// first manifest (so even a killed run says what it was).
func (st *runState) results() error {
	b := st.b
	st.started = time.Now().UTC()
	if b.ResultsDir != "" {
		label := b.Label
		if label == "" {
			who := b.Target.Endpoints[0].Label()
			if b.Cluster != nil {
				who = b.Cluster.Name
			}
			label = sanitize(who) + "-" + b.Workload.Name()
		}
		res, err := NewResults(filepath.Join(b.ResultsDir, RunDirName(label, st.started)))
		if err != nil {
			return err
		}
		st.res = res
		st.onCleanup(func() { res.Close() })
	}
	nodes, closeNodes, err := b.openNodes()
	if err != nil {
		return err
	}
	st.nodes = nodes
	st.onCleanup(closeNodes)
	st.man = b.manifest(st.ctx, st.started, nodes)
	st.man.Hosts = hostInfos(st.nodes)
	st.clocks()
	if b.Cluster != nil {
		for _, w := range optionMismatches(requestedOptions(b.Cluster), st.man.Nodes) {
			st.warn(w, "server option not in effect as requested", "detail", w)
		}
	}
	st.man.Knobs = st.applied.Report()
	if st.standing != nil {
		st.man.Links["impairment"] = st.standing.Report
	}
	if err := st.writeManifest(); err != nil {
		return err
	}
	if st.res != nil {
		st.out.Dir = st.res.Dir
	}
	return nil
}

// clocks measures the clock offsets of the nodes' hosts other than this machine (once
// per host, measureClocks): the samplers correct applier_lag_s with them, the manifest's
// hosts record them with each host's server, and one line says them. A host whose clock
// cannot be read is a warning, not the end of the run.
func (st *runState) clocks() {
	if !slices.ContainsFunc(st.nodes, func(n sampler.Node) bool { return remoteHost(n.Host) }) {
		return
	}
	for _, w := range measureClocks(st.ctx, st.nodes, st.man.Hosts) {
		st.warn(w, "clock offset not measured", "detail", w)
	}
	hostServers(st.b.Cluster, st.man.Hosts, st.nodes, st.man.Nodes)
	if line := report.HostsLine(st.man.Hosts); line != "" {
		st.printf("NOTE: hosts (clock offsets to this machine's): %s\n", line)
	}
}

func (st *runState) writeManifest() error {
	if st.res == nil {
		return nil
	}
	return st.res.WriteJSON(schema.ManifestFile, st.man)
}

// links applies the run's own impairments (--links) and checks the prepared data.
func (st *runState) links() error {
	b := st.b
	if b.Links != nil {
		if b.Cluster == nil {
			return fmt.Errorf("links need a habench cluster (--cluster)")
		}
		unlock, err := links.LockRunLinks(b.Cluster)
		if err != nil {
			return err
		}
		st.onCleanup(unlock)
		backend, rep, err := links.Apply(st.ctx, b.Cluster, b.Links)
		if err != nil {
			return fmt.Errorf("apply links: %w", err)
		}
		st.onCleanup(func() { backend.Close() })
		st.man.Links["impairment"] = rep
		for _, w := range rep.Warnings {
			st.say(w, "link differs from the request by more than 10%", "detail", w)
		}
		if rep.Note != "" {
			st.printf("NOTE: %s\n", rep.Note)
		}
		if err := st.writeManifest(); err != nil {
			return err
		}
	}
	st.dataCheck = b.checkData(st.ctx, st.nodes)
	if st.dataCheck != "" {
		st.say(st.dataCheck, "prepared data does not match the options", "check", st.dataCheck)
	}
	return nil
}

// background starts what runs beside the workload: the probe writer and the fault
// schedule. stopBackground (called when the workload ends, and on the cleanup stack)
// stops both and waits for them.
func (st *runState) background() error {
	b := st.b
	fctx, stop := context.WithCancel(st.ctx)
	ended := make(chan struct{}) // the workload ended: no new fault; one in progress finishes
	var wg sync.WaitGroup
	var once sync.Once
	st.stopBackground = func() { once.Do(func() { close(ended); stop(); wg.Wait() }) }
	st.threadsStarted = make(chan struct{})
	st.onCleanup(st.stopBackground)
	st.writers = watchWriters(fctx, b.Cluster, &wg)
	if b.Probe && b.Injector != nil && b.Cluster != nil {
		iv := b.ProbeInterval
		if iv <= 0 {
			iv = scenario.ProbeInterval
		}
		pr, err := startProbe(st.ctx, b.Injector.Store, b.Cluster, b.Target.DB, iv, probeVia(b), b.Target)
		if err != nil {
			return err
		}
		st.probe = pr
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.run(fctx)
		}()
	}
	if b.Checker != nil {
		if b.Cluster == nil {
			return fmt.Errorf("checker %s: needs a habench cluster (--cluster)", b.Checker.Workload)
		}
		cr, err := startChecker(fctx, b.Cluster, b.Target.DB, b.Checker, b.CheckerReadNodes, b.Target.Follow)
		if err != nil {
			return err
		}
		st.checker = cr
		st.onCleanup(cr.close)
	}
	if len(b.Faults) > 0 && b.Injector != nil && b.Cluster != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inject := func(ctx context.Context, ev scenario.FaultEvent) (schema.FaultRecord, error) {
				rec, _, err := b.Injector.InjectArgs(ctx, b.Cluster, ev.Action, ev.Node, ev.Args)
				return rec, err
			}
			// A fault's time counts from the workers' start, not from now: initializing
			// many workers on a loaded machine or against a distant cluster takes seconds,
			// and a fault meant for 6 s into the workload hit before it (and failed the
			// workers preparing their statements on the node it killed).
			select {
			case <-st.threadsStarted:
			case <-ended:
			}
			s := scheduleFaults(st.ctx, ended, inject, b.Faults, time.Now(), func(w string) {
				st.say(w, "scheduled fault", "detail", w)
			})
			// A node paused without duration whose resume the run never reached.
			for _, w := range b.Injector.ResumePaused(st.ctx) {
				st.say(w, "scheduled fault", "detail", w)
				s.Warnings = append(s.Warnings, w)
			}
			st.scheduled, st.faultWarnings = s.Done, s.Warnings
		}()
	}
	return nil
}

// workload runs the workload (its error is the run's, recorded, not returned) and prints
// the summary; the background work stops with it.
func (st *runState) workload() {
	b := st.b
	// intervals.csv wants rows even when the user asked for no interval lines.
	opts := b.Options
	printIntervals := opts.ReportInterval > 0
	if !printIntervals && (st.res != nil || b.OnInterval != nil) {
		opts.ReportInterval = time.Second
	}
	if b.Stdout != nil {
		workload.PrintHeaderStart(b.Stdout, b.Options, Version)
	}
	var offsetOnce sync.Once
	rep := benchReporter{note: func(msg string) {
		st.psNote = msg
		st.printf("NOTE: %s\n\n", msg)
	}, started: func() {
		if st.threadsStarted != nil {
			st.threadsStartedOnce.Do(func() { close(st.threadsStarted) })
		}
		if b.Stdout != nil {
			workload.PrintThreadsStarted(b.Stdout, b.Options)
		}
	}}
	rep.interval = func(iv workload.Interval) {
		offsetOnce.Do(func() {
			// Where intervals.csv's zero (start of measurement, after warmup) lies on
			// samples.csv's clock. Client hosts' merged intervals come when every client's
			// has (up to the merger's wait later): their start, on the earliest client's
			// clock, says it.
			st.man.IntervalsOffsetS = time.Since(st.sampleStart).Seconds() - iv.Elapsed.Seconds()
			if _, ok := b.Workload.(*ClientsWorkload); ok && !iv.Started.IsZero() {
				st.man.IntervalsOffsetS = iv.Started.Sub(st.sampleStart).Seconds()
			}
		})
		st.intervals = append(st.intervals, faultIntervals([]workload.Interval{iv}, st.man.IntervalsOffsetS)...)
		if b.Stdout != nil && printIntervals {
			workload.PrintInterval(b.Stdout, iv, b.Options)
		}
		if st.res != nil {
			st.res.Interval(iv)
		}
		if b.OnInterval != nil {
			b.OnInterval(iv)
		}
	}
	var reporter workload.Reporter = rep
	if b.OnLive != nil {
		reporter = workload.WithLive(rep, b.OnLive)
	}
	st.result, st.runErr = b.Workload.Run(st.ctx, b.Target, opts, reporter)
	if st.res != nil {
		st.res.LatencyTail(st.result)
	}
	st.stopBackground()
	st.man.Warnings = append(st.man.Warnings, st.faultWarnings...)
	st.out.Result = st.result
	result := st.result
	if result != nil && b.Stdout != nil {
		// Outages first, so that they are seen before the numbers they spoil.
		workload.PrintOutages(b.Stdout, result)
		workload.PrintSummary(b.Stdout, result, b.Options)
	}
	if st.psNote != "" {
		st.man.Workload.PSModeNote = st.psNote
	}
	for _, w := range outageWarnings(result) {
		st.man.Warnings = append(st.man.Warnings, w)
		if b.Stdout == nil { // else printed above, before the summary
			b.log().Warn("outage", "detail", w)
		}
	}
	for _, w := range lostClients(b.Workload) {
		st.warn(w, "client lost", "detail", w)
	}
	if w := clientBound(b.Workload, result); w != "" {
		st.warn(w, "client-bound", "cores", result.ClientCPUCores)
	}
	if result != nil && result.Rate != nil {
		// The summary printed it; the manifest and report.md say it at the top.
		if w := result.Rate.Warning(result.TPS()); w != "" {
			st.man.Warnings = append(st.man.Warnings, w)
			if b.Stdout == nil {
				b.log().Warn("target rate not met", "rate", result.Rate.Target, "backlog", result.Rate.Backlog)
			}
		}
	}
}

// convergence lets the replicas catch up while still sampling (so the samples show the
// drain), checks convergence, and waits for one sample tick after it. An interrupt ends
// the wait early; the results are still written.
func (st *runState) convergence() error {
	b, ctx := st.b, st.ctx
	// Nodes the links cut off from the writer cannot catch up: not waited for.
	reachable := st.nodes
	if spec := b.effectiveLinks(st.standing); spec != nil && b.Cluster != nil {
		reachable = nil
		w := b.Cluster.Writer().Name
		for _, n := range st.nodes {
			if n.Name != w && spec.Cut(w, n.Name) {
				msg := fmt.Sprintf("node %s is cut off from %s by the links: its catch-up and GTID set are not checked", n.Name, w)
				st.say(msg, msg)
				continue
			}
			reachable = append(reachable, n)
		}
	}
	if b.Cluster != nil && len(reachable) > 1 && ctx.Err() == nil {
		st.conv = checkConvergence(ctx, b.Cluster, reachable, b.Target.DB, b.Options.Tables, b.catchUp())
		st.positions = st.conv.Positions()
		ok := st.conv.OK()
		if ctx.Err() == nil {
			st.consistent = &ok
		}
		if !ok && ctx.Err() == nil {
			roles := map[string]string{}
			for _, n := range st.man.Nodes {
				roles[n.Name] = n.Role
			}
			p := convergenceProblemsAfter(st.conv, b.Cluster.Spec.Kind, nil, faultsDuring(b.Cluster, st.sampleStart, st.started, time.Now()), roles)
			st.warn("convergence after the run: "+p, "nodes did not converge", "problems", p)
		}
	}
	if st.sampler != nil && ctx.Err() == nil {
		st.waitSettledTick(ctx)
	}
	return nil
}

// settledTicks bounds the wait for the samplers' tick after catch-up, in sample intervals.
const settledTicks = 6

// waitSettledTick waits for one samplers' tick that began after catch-up, so that the
// last samples show the settled state and the per-second counters (semi-sync
// acknowledgements, commits) cover the run's last second. Bounded (settledTicks
// intervals: a hung sampler must not hold the run); when no such tick came, a WARNING
// says the counters miss the run's last moments.
func (st *runState) waitSettledTick(ctx context.Context) {
	settled := time.Since(st.sampleStart)
	wait := settledTicks * st.b.sampleInterval()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		st.smu.Lock()
		done := st.lastTick >= settled
		st.smu.Unlock()
		if done {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ctx.Err() == nil {
		st.warn(fmt.Sprintf("no sample of the nodes after the run within %s: the per-second counters (commits, semi-sync acknowledgements) miss the run's last second", wait), "no settled sample", "waited", wait)
	}
}

// collect stops the samplers and gathers what happened around the run: standing links
// changed by other commands, faults injected, knobs restored, a standing link process
// that died.
func (st *runState) collect() error {
	b := st.b
	st.stopSampling()
	st.swg.Wait()
	if st.samplerErr != nil {
		b.log().Warn("sampling failed", "err", st.samplerErr)
	}
	if b.Cluster != nil {
		st.man.Faults = markScheduled(faultsDuring(b.Cluster, st.sampleStart, st.started, time.Now()), st.scheduled)
	}
	if st.linkWatch != nil {
		changes, err := st.linkWatch.Result()
		if err != nil {
			b.log().Warn("cannot read the cluster's standing links record", "err", err)
		}
		// The partitions and heals of faults are faults, warned about below.
		changes = byOthers(changes, st.man.Faults)
		st.man.LinkChanges = changes
		if w := links.ChangeWarning(changes); w != "" {
			st.warn(w, "links changed during the run", "changes", len(changes))
		}
	}
	if w := faultWarning(st.man.Faults); w != "" {
		st.warn(w, "faults during the run", "faults", len(st.man.Faults))
	}
	for _, w := range escalationWarnings(st.man.Faults) {
		st.warn(w, "a clean stop escalated to SIGKILL", "detail", w)
	}
	if err := st.restoreKnobs(); err != nil && st.runErr == nil {
		st.runErr = err
	}
	st.man.Knobs = st.applied.Report()
	// Standing impairments must have held for the whole run.
	if s := st.standing; s != nil && s.Backend == netem.BackendUserspace && s.LinkPID(b.Cluster) != st.standingPID && st.runErr == nil {
		st.runErr = fmt.Errorf("the link process of `habench netem apply` (pid %d) ended during the run: the impairments were not in effect for all of it", st.standingPID)
	}
	return nil
}

// summarize builds summary.json: every figure covers the measured window, the samples
// from the start of measurement (after connecting and the warm-up) to the end of the
// catch-up.
func (st *runState) summarize() error {
	b, man := st.b, st.man
	sum := b.summary(st.result, st.runErr, st.nodes, measuredSamples(st.allSamples, man.IntervalsOffsetS), st.positions)
	if man.IntervalsOffsetS > 0 {
		sum.SamplesWindow = fmt.Sprintf("from the start of measurement (%.1f s on samples.csv's clock, after connecting and the warm-up) to the end of the catch-up", man.IntervalsOffsetS)
	}
	sum.ReplicasCaught = st.consistent
	sum.Convergence = st.conv
	if st.probe != nil {
		pctx, cancel := st.post()
		sum.Probe = st.probe.check(pctx)
		cancel()
		if p := sum.Probe; p != nil && p.Error == "" {
			st.printf("lost acknowledged commits: %d of %d (probe writer, checked on %s)\n", p.LostAcknowledged, p.Acknowledged, p.CheckedOn)
		}
		if w := probeWarning(sum.Probe); w != "" {
			st.warn(w, "lost acknowledged commits", "lost", sum.Probe.LostAcknowledged)
		}
		if st.res != nil {
			if err := st.probe.writeHistory(st.res.Dir, sum.Probe); err != nil {
				return err
			}
		}
	}
	if err := st.anomalyChecks(sum); err != nil {
		return err
	}
	sum.DataCheck = st.dataCheck
	if ss := sum.SemiSync; ss != nil && ss.Warning != "" {
		st.warn(ss.Warning, "semi-sync degraded", "no_tx", ss.NoTx, "off", len(ss.Off))
	}
	// Host CPU over the measured part only (not the catch-up, not warmup).
	from := time.Duration(man.IntervalsOffsetS * float64(time.Second))
	sum.Hosts = hostSummary(man.Hosts, st.allSamples, from, from+time.Duration(sum.TimeS*float64(time.Second)))
	for _, w := range cpuSaturationWarnings(sum.Hosts) {
		st.warn(w, "host CPU-saturated", "detail", w)
	}
	sum.Outages = outageSummaries(st.result)
	sum.Faults = faultSummaries(man.Faults, sum.Outages, st.allSamples, st.intervals)
	st.failover(sum)
	st.clientFailoverSummary(sum)
	if err := st.proxySummary(sum); err != nil {
		return err
	}
	st.probeStale(sum)
	sum.NodeStates = nodeStates(st.allSamples)
	setDownAtEnd(sum.Nodes, sum.NodeStates)
	if c := b.Cluster; c != nil && c.Dir() != "" && c.Deployed() {
		if now, err := c.Reload(); err == nil {
			setRolesAtEnd(sum.Nodes, now)
		}
	}
	st.sum = sum
	st.out.Summary = sum
	man.Finished = time.Now().UTC()
	return nil
}

// write writes the manifest, summary, report.md and variables.json, closes the CSV files
// (a write error names the file), and renders report.html and report.csv.
func (st *runState) write() error {
	res := st.res
	if res == nil {
		return nil
	}
	pctx, cancel := st.post()
	defer cancel()
	var werr []error
	st.man.CommandLine = RedactArgs(st.man.CommandLine)
	werr = append(werr, res.WriteJSON(schema.ManifestFile, st.man))
	werr = append(werr, res.WriteJSON(schema.SummaryFile, st.sum))
	werr = append(werr, res.WriteFile("report.md", Report(st.man, st.sum)))
	if vars := st.b.allVariables(pctx, st.nodes); vars != nil {
		werr = append(werr, res.WriteJSON("variables.json", vars))
	}
	werr = append(werr, res.Close())
	if err := errors.Join(werr...); err != nil {
		return fmt.Errorf("results %s: %w", res.Dir, err)
	}
	// report.html and report.csv beside report.md; a run is not failed by charts that
	// cannot be rendered, only by a file that cannot be written.
	var we *report.WriteError
	if _, err := report.Write(res.Dir, report.Options{}); errors.As(err, &we) {
		return fmt.Errorf("results %s: %w", res.Dir, err)
	} else if err != nil {
		st.b.log().Warn("cannot render report.html", "dir", res.Dir, "err", err)
	}
	return nil
}

// verdict is the run's error once everything is written: the workload's, an interrupt,
// or nodes that did not converge (except those one of the run's own faults left down).
func (st *runState) verdict() error {
	if st.runErr != nil {
		return st.runErr
	}
	if err := st.ctx.Err(); err != nil {
		return err
	}
	if st.conv != nil && !st.conv.OK() {
		if p := convergenceProblems(st.conv, st.b.Cluster.Spec.Kind, faultedDown(st.man.Faults)); p != "" {
			return fmt.Errorf("the nodes did not converge after the run (catch-up up to %v): %s", st.b.catchUp(), p)
		}
	}
	return nil
}
