package cluster

// Servers launched before a plan runs (launched): the plan runner's steps each wait for
// their own node's server, and a plan with StaggerStarts keeps at most one start per CPU
// going. The local sandbox launches them (sandbox_start.go).

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/habench/habench/topology"
)

// launched tracks the servers a deploy starts before its plan (every node no plan step
// starts): those waiting for a start slot, and whether each launched one accepts
// connections yet, or why not. Its methods are called from the deploy's goroutine only.
type launched struct {
	ctx    context.Context
	slots  int
	queue  []*Node // prepared, not launched yet, in node order
	starts []*serverStart
	ended  chan struct{} // one value per launched server that ended its start
	launch func(n *Node) (ready func(context.Context) error, err error)
	save   func() error
	log    *slog.Logger
	start  time.Time
	upLogs bool // "servers up" logged
}

// serverStart is one launched server's start: err is set before done closes.
type serverStart struct {
	node   string
	done   chan struct{}
	err    error
	waited bool // a step waited for it (its "launched server up" is logged)
}

// add queues node n, launching it at once when a slot is free.
func (l *launched) add(n *Node) error {
	l.queue = append(l.queue, n)
	return l.poll()
}

// inflight is the number of launched servers still starting.
func (l *launched) inflight() int {
	k := 0
	for _, st := range l.starts {
		select {
		case <-st.done:
		default:
			k++
		}
	}
	return k
}

// poll launches queued nodes while start slots are free, saving the state (their PIDs)
// after each launch; the error is the state file's.
func (l *launched) poll() error {
	for len(l.queue) > 0 && l.inflight() < l.slots && l.allOK() {
		n := l.queue[0]
		l.queue = l.queue[1:]
		ready, err := l.launch(n)
		l.log.Debug("server launched", "node", n.Name)
		st := &serverStart{node: n.Name, done: make(chan struct{}), err: err}
		l.starts = append(l.starts, st)
		go func() {
			if st.err == nil {
				st.err = ready(l.ctx)
			}
			close(st.done)
			l.ended <- struct{}{}
		}()
		if err := l.save(); err != nil {
			return err
		}
	}
	if len(l.queue) == 0 && l.inflight() == 0 && !l.upLogs && len(l.starts) > 0 && l.allOK() {
		l.upLogs = true
		l.log.Info("servers up", "elapsed", time.Since(l.start).Round(time.Millisecond))
	}
	return nil
}

// allOK reports whether no launched server failed its start (so far).
func (l *launched) allOK() bool {
	for _, st := range l.starts {
		select {
		case <-st.done:
			if st.err != nil {
				return false
			}
		default:
		}
	}
	return true
}

// await waits until node accepts connections, launching queued nodes as slots free up
// (nil at once for a node not started here: a plan step starts it). When it does not come
// up, the error is every launched server's (each waited for), said as startError says them.
func (l *launched) await(node string) error {
	if l == nil {
		return nil
	}
	for {
		if err := l.poll(); err != nil {
			return err
		}
		for _, st := range l.starts {
			if st.node != node {
				continue
			}
			<-st.done
			if st.err != nil {
				return l.all()
			}
			if !st.waited {
				st.waited = true
				l.log.Debug("launched server up", "node", node)
			}
			return l.poll()
		}
		if !l.queued(node) {
			return nil
		}
		// A server ended its start (maybe one noticed before: then poll finds no slot
		// and this waits again): a slot may be free.
		<-l.ended
	}
}

// queued reports whether node waits for a start slot.
func (l *launched) queued(node string) bool {
	for _, n := range l.queue {
		if n.Name == node {
			return true
		}
	}
	return false
}

// all launches every queued node (none once a start failed) and waits for every launched
// server; it returns their start errors (startError) or the state file's.
func (l *launched) all() error {
	if l == nil {
		return nil
	}
	for len(l.queue) > 0 && l.allOK() {
		if err := l.poll(); err != nil {
			l.queue = nil
			return errors.Join(err, l.waitAll())
		}
		if len(l.queue) > 0 && l.inflight() >= l.slots {
			<-l.ended
		}
	}
	l.queue = nil
	return l.waitAll()
}

// abandon launches no more servers and waits for the launched ones' starts (a failed
// deploy then destroys them), discarding their errors.
func (l *launched) abandon() {
	if l == nil {
		return
	}
	l.queue = nil
	l.waitAll()
}

// waitAll waits for every launched server's start and returns their errors (startError).
func (l *launched) waitAll() error {
	errs := make([]error, len(l.starts))
	for i, st := range l.starts {
		<-st.done
		errs[i] = st.err
	}
	return startError(errs)
}

// startError is the nodes' start errors joined, or the first *topology.FieldError alone:
// the same bad option on every node is said once.
func startError(errs []error) error {
	for _, e := range errs {
		var fe *topology.FieldError
		if errors.As(e, &fe) {
			return fe
		}
	}
	return errors.Join(errs...)
}
