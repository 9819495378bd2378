package sampler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/habench/habench/topology"
)

// Config tunes a Runner. Zero fields take the defaults shown.
type Config struct {
	// Interval between ticks (default 1s). Samples carry the time since the run started.
	Interval time.Duration
	// Timeout for one sampler on one node within a tick (default 800ms). It should be
	// shorter than Interval; a call still running after Timeout is counted as an error and
	// its late result is dropped.
	Timeout time.Duration
	// HeartbeatPeriod between heartbeat writes on the writable node (default 100ms).
	HeartbeatPeriod time.Duration
	// Logger receives sampler errors and recoveries (default: discard).
	Logger *slog.Logger
	// Kind selects Default(Kind) when NewRunner is given no samplers.
	Kind topology.Kind
	// Epoch is time zero of Sample.Elapsed; zero means "when the first tick's timer starts"
	// (after the samplers' Start, which may block, e.g. heartbeat DDL behind a stalled
	// semi-sync source). Set it to line samples up with another clock.
	Epoch time.Time
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 800 * time.Millisecond
	}
	if c.HeartbeatPeriod <= 0 {
		c.HeartbeatPeriod = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// pair is one (sampler, node) combination and its error bookkeeping.
type pair struct {
	s      Sampler
	n      Node
	log    *slog.Logger
	busy   atomic.Bool // a Sample call is in flight (possibly past its timeout)
	errs   uint64      // cumulative errors; touched only by Run's goroutine
	streak int         // consecutive failing ticks; touched only by Run's goroutine
}

// Runner samples every node with every sampler that supports it, once per Interval.
type Runner struct {
	cfg      Config
	nodes    []Node
	samplers []Sampler
	pairs    []*pair // node-major, samplers in the given order

	mu     sync.RWMutex
	latest map[string]map[string]float64

	started     chan struct{} // closed when Run has finished the samplers' Start (or gave up)
	startedOnce sync.Once
}

// Started is closed once Run has called every sampler's Start (baselines read, heartbeat
// writer running), or Run returned before that. A caller that starts a workload after it
// gets deltas (semi-sync, group counters) that cover the whole workload.
func (r *Runner) Started() <-chan struct{} { return r.started }

func (r *Runner) markStarted() { r.startedOnce.Do(func() { close(r.started) }) }

// NewRunner prepares a Runner; it does no I/O. With no samplers it uses Default(cfg.Kind).
// Nodes are sampled in the given order (the order of samples in each tick).
func NewRunner(cfg Config, nodes []Node, samplers []Sampler) *Runner {
	cfg = cfg.withDefaults()
	if len(samplers) == 0 {
		samplers = Default(cfg.Kind)
	}
	r := &Runner{cfg: cfg, nodes: nodes, samplers: samplers, latest: map[string]map[string]float64{}, started: make(chan struct{})}
	for _, n := range nodes {
		for _, s := range samplers {
			r.pairs = append(r.pairs, &pair{s: s, n: n, log: cfg.Logger.With("sampler", s.Name(), "node", n.Name)})
		}
	}
	return r
}

type result struct {
	idx     int
	samples []Sample
	err     error
}

// Run starts the samplers' background work (the heartbeat writer on the first writable node,
// which creates habench.heartbeat), then ticks every Interval until ctx is done (the first
// tick one Interval after the start; a tick that overruns makes the next ones drop). Each tick
// samples all (sampler, node) pairs in parallel, each under its own Timeout, and calls sink
// once with all samples of the tick (from Run's goroutine, never concurrently), including for
// every node `sampler_errors` and `sampler_errors_<name>` (cumulative error counts).
//
// Run returns nil when ctx is cancelled (a tick cut short by the cancellation is not passed
// to sink), and an error only when setup fails (for example the heartbeat table cannot be
// created). A Runner runs once.
func (r *Runner) Run(ctx context.Context, sink func([]Sample)) error {
	defer r.markStarted()
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	for _, s := range r.samplers {
		st, ok := s.(Starter)
		if !ok {
			continue
		}
		stop, err := st.Start(ctx, r.cfg, r.nodes)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sampler %s: setup: %w", s.Name(), err)
		}
		if stop != nil {
			stops = append(stops, stop)
		}
	}

	r.markStarted()
	start := r.cfg.Epoch
	if start.IsZero() {
		start = time.Now()
	}
	ticker := time.NewTicker(r.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-ticker.C:
			samples, ok := r.tick(ctx, now, now.Sub(start))
			if !ok {
				return nil
			}
			r.remember(samples)
			if sink != nil {
				sink(samples)
			}
		}
	}
}

// grace is how long after Timeout the Runner still waits for a call that honours its context.
func (r *Runner) grace() time.Duration {
	g := (r.cfg.Interval - r.cfg.Timeout) / 2
	return max(0, min(g, 50*time.Millisecond))
}

// tick runs one round. ok is false when ctx ended during the tick.
func (r *Runner) tick(ctx context.Context, now time.Time, elapsed time.Duration) (samples []Sample, ok bool) {
	t := NewTick(now, elapsed, r.nodes)
	results := make([][]Sample, len(r.pairs))
	errs := make([]error, len(r.pairs))
	supported := make([]bool, len(r.pairs))
	ch := make(chan result, len(r.pairs)) // buffered: late senders never block
	pending := 0
	for i, p := range r.pairs {
		if !p.s.Supports(p.n) {
			continue
		}
		supported[i] = true
		if !p.busy.CompareAndSwap(false, true) {
			errs[i] = fmt.Errorf("previous call still running (hung past its %v timeout)", r.cfg.Timeout)
			continue
		}
		pending++
		go r.call(ctx, t, i, p, ch)
	}
	deadline := time.NewTimer(r.cfg.Timeout + r.grace())
	defer deadline.Stop()
	done := make([]bool, len(r.pairs))
collect:
	for pending > 0 {
		select {
		case res := <-ch:
			pending--
			done[res.idx] = true
			results[res.idx], errs[res.idx] = res.samples, res.err
		case <-deadline.C:
			break collect
		}
	}
	if ctx.Err() != nil {
		return nil, false
	}
	for i := range r.pairs {
		if supported[i] && !done[i] && errs[i] == nil {
			errs[i] = fmt.Errorf("timed out after %v", r.cfg.Timeout)
		}
	}

	// Assemble node by node: sampler samples, then the error counters.
	per := len(r.samplers)
	for ni, n := range r.nodes {
		var total uint64
		var counters []Sample
		reached, tried := false, false
		for si := range r.samplers {
			i := ni*per + si
			p := r.pairs[i]
			if !supported[i] {
				continue
			}
			for _, s := range results[i] {
				s.Elapsed = elapsed
				if s.Node == "" {
					s.Node = n.Name
				}
				samples = append(samples, s)
			}
			r.account(p, errs[i])
			if _, hostOnly := p.s.(*Host); !hostOnly { // the host answers for a dead server
				tried = true
				reached = reached || errs[i] == nil
			}
			total += p.errs
			counters = append(counters, Sample{Elapsed: elapsed, Node: n.Name, Metric: "sampler_errors_" + p.s.Name(), Value: float64(p.errs)})
		}
		samples = append(samples, Sample{Elapsed: elapsed, Node: n.Name, Metric: "sampler_errors", Value: float64(total)})
		if tried {
			samples = append(samples, Sample{Elapsed: elapsed, Node: n.Name, Metric: MetricNodeUp, Value: boolf(reached)})
		}
		samples = append(samples, counters...)
	}
	return samples, true
}

// MetricNodeUp is 1 in a tick where at least one sampler reached the node, 0 where every
// one failed (the node is down or unreachable).
const MetricNodeUp = "node_up"

// call runs one Sample under its own timeout and reports on ch. A panic is an error.
func (r *Runner) call(ctx context.Context, t *Tick, i int, p *pair, ch chan<- result) {
	defer p.busy.Store(false)
	cctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	res := result{idx: i}
	func() {
		defer func() {
			if v := recover(); v != nil {
				res.samples, res.err = nil, fmt.Errorf("panic: %v", v)
			}
		}()
		res.samples, res.err = p.s.Sample(cctx, t, p.n)
	}()
	if res.err != nil && errors.Is(res.err, context.DeadlineExceeded) {
		res.err = fmt.Errorf("timed out after %v: %w", r.cfg.Timeout, res.err)
	}
	ch <- res
}

// account counts an error and logs the first error of a streak (Warn), later ones (Debug)
// and the recovery (Info), so a dead node does not flood the log.
func (r *Runner) account(p *pair, err error) {
	if err == nil {
		if p.streak > 0 {
			p.log.Info("sampler recovered", "failed_ticks", p.streak)
		}
		p.streak = 0
		return
	}
	p.errs++
	p.streak++
	if p.streak == 1 {
		p.log.Warn("sampler failed", "err", err)
	} else {
		p.log.Debug("sampler still failing", "err", err, "failed_ticks", p.streak)
	}
}

func (r *Runner) remember(samples []Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range samples {
		m := r.latest[s.Node]
		if m == nil {
			m = map[string]float64{}
			r.latest[s.Node] = m
		}
		m[s.Metric] = s.Value
	}
}

// Latest returns a copy of the last value of every metric: node -> metric -> value, as of the
// last completed tick (empty before the first). Safe for concurrent use with Run.
func (r *Runner) Latest() map[string]map[string]float64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]map[string]float64, len(r.latest))
	for n, m := range r.latest {
		c := make(map[string]float64, len(m))
		for k, v := range m {
			c[k] = v
		}
		out[n] = c
	}
	return out
}
