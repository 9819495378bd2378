package sampler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/habench/habench/topology"
)

// Metric names this sampler emits (Sample.Metric; see Metrics and docs/results.md).
const (
	// MetricSamplerErrors: failed or timed-out sampler calls so far; per sampler as MetricSamplerErrors + "_" + its name.
	MetricSamplerErrors = "sampler_errors"
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
	// Roles, when set, returns the nodes' roles now, by name (a node it leaves out keeps
	// its role; nil or an error: no change): read at the start of every tick, so that the
	// samplers follow a promotion (the replica sampler leaves the new source, Tick.Source
	// and the heartbeat's writer move to it). The tick then carries a MetricRole sample
	// for every node, at the first tick and whenever its role changed.
	Roles func(ctx context.Context) (map[string]topology.Role, error)
	// Expected, when set, says why failures of the node are expected now ("" when they
	// are not), e.g. "fault kill at 3.0 s" for a node the run's own fault took down.
	// Failures blamed on such a node (its own samplers', and samplers of other nodes
	// that failed reading it: NodeError) are counted as usual but not logged as
	// warnings: Note gets one line per node and reason instead.
	Expected func(node string) string
	// Note receives those lines (default: Logger at Info).
	Note func(msg string)
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
	s       Sampler
	n       Node
	log     *slog.Logger
	busy    atomic.Bool // a Sample call is in flight (possibly past its timeout)
	errs    uint64      // cumulative errors; touched only by Run's goroutine
	streak  int         // consecutive failing ticks; touched only by Run's goroutine
	quiet   bool        // the streak's failures so far were expected (Config.Expected)
	pending error       // the streak's first failure, not logged yet (Config.Expected)
}

// Runner samples every node with every sampler that supports it, once per Interval.
type Runner struct {
	cfg      Config
	nodes    []Node
	samplers []Sampler
	pairs    []*pair // node-major, samplers in the given order

	mu     sync.RWMutex
	latest map[string]map[string]float64

	rolesSeen bool            // a tick has recorded the roles; touched only by Run's goroutine
	noted     map[string]bool // node + reason already noted; touched only by Run's goroutine

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
	r := &Runner{cfg: cfg, nodes: slices.Clone(nodes), samplers: samplers, latest: map[string]map[string]float64{}, started: make(chan struct{})}
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
	roleSamples := r.updateRoles(ctx, elapsed)
	t := NewTick(now, elapsed, slices.Clone(r.nodes)) // a copy: later ticks may change roles
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
		go r.call(ctx, t, i, p, p.n, ch)
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
			counters = append(counters, Sample{Elapsed: elapsed, Node: n.Name, Metric: MetricSamplerErrors + "_" + p.s.Name(), Value: float64(p.errs)})
		}
		samples = append(samples, Sample{Elapsed: elapsed, Node: n.Name, Metric: MetricSamplerErrors, Value: float64(total)})
		if tried {
			samples = append(samples, Sample{Elapsed: elapsed, Node: n.Name, Metric: MetricNodeUp, Value: boolf(reached)})
		}
		samples = append(samples, counters...)
	}
	samples = append(samples, roleSamples...)
	return samples, true
}

// MetricRole is a node's role in the cluster's record (Config.Roles): RoleCodes.
const MetricRole = "role"

// RoleCodes are MetricRole's values.
var RoleCodes = map[topology.Role]float64{topology.RoleSource: 1, topology.RoleReplica: 2, topology.RolePrimary: 3,
	topology.RoleSecondary: 4, topology.RoleNode: 5, topology.RoleProxy: 6}

// RoleOfCode is the role of a MetricRole value ("" when unknown).
func RoleOfCode(v float64) topology.Role {
	for r, c := range RoleCodes {
		if c == v {
			return r
		}
	}
	return ""
}

// updateRoles reads Config.Roles and applies changed roles to the nodes and pairs; it
// returns the tick's MetricRole samples (every node at the first tick, then the changed
// ones).
func (r *Runner) updateRoles(ctx context.Context, elapsed time.Duration) []Sample {
	if r.cfg.Roles == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	roles, err := r.cfg.Roles(rctx)
	cancel()
	if err != nil {
		roles = nil
	}
	var out []Sample
	for i := range r.nodes {
		n := &r.nodes[i]
		role, ok := roles[n.Name]
		changed := ok && role != n.Role
		if changed {
			n.Role = role
			for _, p := range r.pairs {
				if p.n.Name == n.Name {
					p.n.Role = role
				}
			}
		}
		if changed || !r.rolesSeen {
			out = append(out, Sample{Elapsed: elapsed, Node: n.Name, Metric: MetricRole, Value: RoleCodes[n.Role]})
		}
	}
	r.rolesSeen = true
	return out
}

// NodeError is a sampler error that is another node's failure (the source a replica's
// backlog is computed against): Runner blames Node for it (Config.Expected).
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// MetricNodeUp is 1 in a tick where at least one sampler reached the node, 0 where every
// one failed (the node is down or unreachable).
const MetricNodeUp = "node_up"

// call runs one Sample under its own timeout and reports on ch. A panic is an error.
func (r *Runner) call(ctx context.Context, t *Tick, i int, p *pair, n Node, ch chan<- result) {
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
		res.samples, res.err = p.s.Sample(cctx, t, n)
	}()
	if res.err != nil && errors.Is(res.err, context.DeadlineExceeded) {
		res.err = fmt.Errorf("timed out after %v: %w", r.cfg.Timeout, res.err)
	}
	ch <- res
}

// account counts an error and logs the first error of a streak (Warn), later ones (Debug)
// and the recovery (Info), so a dead node does not flood the log. With Config.Expected,
// failures blamed on a node that is down on purpose are one Note instead, and the first
// failure of a streak is judged at the next tick: a fault's record is written once its
// action returned, just after the first failures it causes.
func (r *Runner) account(p *pair, err error) {
	if err == nil {
		// A streak of one failure, judged now: the fault that explains it (a kill whose
		// record was written just after the failure) may be known by now, even though
		// the sampler has moved on (the GTID source followed the promote).
		if p.pending != nil && !r.expected(p, p.pending) {
			p.log.Warn("sampler failed", "err", p.pending)
		}
		p.pending = nil
		if p.streak > 0 {
			p.log.Info("sampler recovered", "failed_ticks", p.streak)
		}
		p.streak, p.quiet = 0, false
		return
	}
	p.errs++
	p.streak++
	if r.cfg.Expected != nil {
		if r.expected(p, err) {
			p.quiet, p.pending = true, nil
			return
		}
		if p.streak == 1 {
			p.pending = err // judged at the next tick
			return
		}
	}
	switch {
	case p.pending != nil:
		p.log.Warn("sampler failed", "err", p.pending)
		p.pending = nil
	case p.streak == 1 || p.quiet:
		p.log.Warn("sampler failed", "err", err)
	default:
		p.log.Debug("sampler still failing", "err", err, "failed_ticks", p.streak)
	}
	p.quiet = false
}

// expected reports whether err, a failure of p, is blamed on a node that is down on
// purpose (Config.Expected); if so it notes that once per node and reason (Note) and logs
// the failure at Debug only.
func (r *Runner) expected(p *pair, err error) bool {
	if r.cfg.Expected == nil {
		return false
	}
	blamed := p.n.Name
	var ne *NodeError
	if errors.As(err, &ne) {
		blamed = ne.Node
	}
	why := r.cfg.Expected(blamed)
	if why == "" {
		return false
	}
	if key := blamed + "\x00" + why; !r.noted[key] {
		if r.noted == nil {
			r.noted = map[string]bool{}
		}
		r.noted[key] = true
		msg := fmt.Sprintf("%s: not sampled while down (%s)", blamed, why)
		if r.cfg.Note != nil {
			r.cfg.Note(msg)
		} else {
			r.cfg.Logger.Info(msg)
		}
	}
	p.log.Debug("sampler failed (expected)", "err", err, "why", why, "failed_ticks", p.streak)
	return true
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
