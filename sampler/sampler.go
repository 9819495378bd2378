// Package sampler samples, once per interval and per node, the numbers that say how far
// behind each node of an HA topology is and whether its replication is healthy: a
// heartbeat visibility lag for every topology, the GTID backlog, replica thread state,
// semi-synchronous replication counters and Group Replication queues, certification and
// flow control.
//
// It is modelled on mysqld_exporter's Scraper: one file per source, each Sampler has a
// Name, says whether it Supports a node and Samples it under its own timeout. One failing or
// hanging sampler never stops the others nor the run: the Runner counts and logs its errors
// and reports them as samples (sampler_errors, sampler_errors_<name>).
//
// The package knows nothing of how a cluster is deployed: it gets nodes (name, role,
// capabilities and a *sql.DB pool owned by the caller) and hands samples to a sink.
// Metrics lists every metric name with its unit and source; the names are a contract.
package sampler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// Node is one server to sample. DB is a connection pool to that node, owned (opened and
// closed) by the caller; samplers only borrow connections from it. Caps say how the node's
// flavor/version spells things (SHOW REPLICA STATUS columns, semi-sync variable names).
//
// Host, HostName, Netns, PID and StartTicks are for the host sampler (zero: the node's host
// is not sampled): Host reads files on the machine the node runs on; HostName names that
// machine in samples (machine-wide values go under HostNode(HostName); nodes with the same
// HostName share one machine, "" means "local"); Netns is the node's own network namespace
// on it ("" when it shares the host's); PID and StartTicks (field 22 of /proc/PID/stat)
// identify the node's server process on the host (0 when unknown). Server, when set, is
// asked for the current PID and StartTicks on every read instead (a server restarted
// during the run, e.g. by `habench fault restart`, keeps being sampled; PID 0: no server).
type Node struct {
	Name string
	Role topology.Role
	Caps topology.Capabilities
	DB   *sql.DB

	Host       host.Host
	HostName   string
	Netns      string
	PID        int
	StartTicks uint64
	Server     func() (pid int, startTicks uint64, err error)

	// ClockOffset is the node's host's wall clock minus this machine's, within
	// ± ClockUncertainty (host.ClockOffset measures both); zero for a node on this machine.
	// The replica sampler corrects applier_lag_s with it (two hosts' timestamps); the
	// heartbeat needs no correction (one clock: this process's).
	ClockOffset      time.Duration
	ClockUncertainty time.Duration
}

// Sample is one value in long form, written as the CSV row `elapsed_s,node,metric,value`.
// Elapsed is the time from Config.Epoch (default: when ticking started, after the samplers'
// Start) to when the tick began; Metric is one of
// the names in Metrics; Value is in the metric's unit. Samplers fill Metric and Value, and
// Node only for a value of the node's machine rather than the node (HostNode(name)): the
// Runner sets Elapsed, and Node where the sampler left it empty.
type Sample struct {
	Elapsed time.Duration
	Node    string
	Metric  string
	Value   float64
}

// Sampler reads one source of numbers from a node.
//
// Name is a short lower-case identifier ("heartbeat") used in logs and in the
// sampler_errors_<name> metric. Supports reports whether the sampler applies to the node
// (by role and capabilities); it must be cheap and must not do I/O. Sample reads the node
// under ctx (which carries the per-sampler timeout) and returns the samples it could read;
// it may return samples and an error together (both are kept). Sample may be called
// concurrently for different nodes, and a sampler keeps any per-node state (deltas) itself.
type Sampler interface {
	Name() string
	Supports(n Node) bool
	Sample(ctx context.Context, t *Tick, n Node) ([]Sample, error)
}

// Starter is implemented by samplers that need background work for the duration of a run
// (the heartbeat writer). Runner.Run calls Start before the first tick with the run's context;
// an error aborts the run. The returned stop function ends the background work and waits for
// it; Run calls it when the run ends.
type Starter interface {
	Start(ctx context.Context, cfg Config, nodes []Node) (stop func(), err error)
}

// Tick is what the samplers of one tick share: when it began, all nodes of the run, and
// values read once per tick and reused by every node (Once), such as the source's GTID set.
type Tick struct {
	// Time is the wall-clock time the tick began.
	Time time.Time
	// Elapsed is the time since the run started, as put on the tick's samples.
	Elapsed time.Duration
	// Nodes are all nodes of the run, in the order given to NewRunner; read-only.
	Nodes []Node

	mu   sync.Mutex
	memo map[string]*memoEntry
}

type memoEntry struct {
	done chan struct{}
	val  any
	err  error
}

// NewTick returns a Tick for the given time and nodes. The Runner makes one per tick; tests
// and callers that drive samplers by hand may use it too.
func NewTick(now time.Time, elapsed time.Duration, nodes []Node) *Tick {
	return &Tick{Time: now, Elapsed: elapsed, Nodes: nodes, memo: map[string]*memoEntry{}}
}

// Source returns the first node whose role is writable (source, primary, Galera node), and
// false when there is none.
func (t *Tick) Source() (Node, bool) {
	for _, n := range t.Nodes {
		if n.Role.Writable() {
			return n, true
		}
	}
	return Node{}, false
}

// Once returns the value stored under key in this tick, calling fn to compute it the first
// time. Concurrent callers with the same key wait for the first call and share its value and
// error (an error is not retried within the tick). A waiting caller gives up with ctx's error
// when ctx ends first.
func (t *Tick) Once(ctx context.Context, key string, fn func() (any, error)) (any, error) {
	t.mu.Lock()
	e, ok := t.memo[key]
	if !ok {
		e = &memoEntry{done: make(chan struct{})}
		t.memo[key] = e
		t.mu.Unlock()
		func() {
			defer close(e.done)
			defer func() {
				if p := recover(); p != nil {
					e.err = fmt.Errorf("panic: %v", p)
				}
			}()
			e.val, e.err = fn()
		}()
		return e.val, e.err
	}
	t.mu.Unlock()
	select {
	case <-e.done: // done wins over an ended ctx: a late caller still gets the value
		return e.val, e.err
	default:
	}
	select {
	case <-e.done:
		return e.val, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// onceTyped is Once with a typed result.
func onceTyped[T any](ctx context.Context, t *Tick, key string, fn func() (T, error)) (T, error) {
	v, err := t.Once(ctx, key, func() (any, error) { return fn() })
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// constructors are the registered samplers by name (Register).
var constructors = map[string]func() Sampler{
	"heartbeat": func() Sampler { return NewHeartbeat() },
	"gtid":      func() Sampler { return NewGTID() },
	"replica":   func() Sampler { return NewReplica() },
	"semisync":  func() Sampler { return NewSemiSync() },
	"group":     func() Sampler { return NewGroup() },
	"galera":    func() Sampler { return NewGalera() },
	"host":      func() Sampler { return NewHost() },
}

// Register adds a sampler a topology kind can name in topology.KindDef.Samplers: a new
// sampler is one file that calls Register from its init function. A name registered
// twice keeps the first constructor and returns false.
func Register(name string, newSampler func() Sampler) bool {
	if _, dup := constructors[name]; dup {
		return false
	}
	constructors[name] = newSampler
	return true
}

// Default returns fresh samplers for a topology kind, in sampling order: the names its
// topology.KindDef.Samplers lists (single: heartbeat, host; async: heartbeat, gtid,
// replica, host; semisync: heartbeat, gtid, replica, semisync, host; group: heartbeat,
// gtid, group, host; galera: heartbeat, galera, host), heartbeat and host for a kind that
// names none or is unknown. Names without a registered sampler are skipped (a unit test
// keeps every registered kind's names known). (host samples only nodes with a
// Node.Host.) Each call returns new instances (samplers hold per-run state).
func Default(kind topology.Kind) []Sampler {
	names := topology.KindOf(kind).Samplers
	if len(names) == 0 {
		names = []string{"heartbeat", "host"}
	}
	var out []Sampler
	for _, n := range names {
		if f, ok := constructors[n]; ok {
			out = append(out, f())
		}
	}
	return out
}

// Known reports whether a sampler called name is registered.
func Known(name string) bool { _, ok := constructors[name]; return ok }

// errNoSource is returned by samplers that compare a node with the run's writable node when
// there is none.
var errNoSource = errors.New("no writable (source/primary) node in the run")
