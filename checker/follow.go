package checker

import (
	"context"
	"sync"
	"time"

	"github.com/habench/habench/history"
	"github.com/habench/habench/internal/mysqlerr"
)

// Follow names the node that takes writes now, for sessions that follow the writer
// (RegisterOptions.Follow); its error means no writer is named now.
type Follow func(ctx context.Context) (Node, error)

// writerHang is how long a following session's transaction may be in progress, while
// Follow names another writer, before it is given up (the workload's
// DefaultWriterHang, for the same reasons: a lock wait or a slow commit of an ordinary
// run is not cut, a session left on a primary cut off in a minority moves within about
// 2 s of the group's election).
const writerHang = 2 * time.Second

// hangCheck is how often followHangs looks at the sessions' transactions.
const hangCheck = 250 * time.Millisecond

// writer is the node a reconnecting session goes to: the one s.follow names, or node
// when it follows no writer or none is named now.
func (s *sessions) writer(ctx context.Context, node Node) Node {
	if s.follow == nil {
		return node
	}
	if n, err := s.follow(ctx); err == nil && n.DB != nil {
		return n
	}
	return node
}

// followWriter reports whether a session on node should reconnect after t: t was
// refused as read-only (the node no longer takes writes) and s.follow names another
// node. While it names node itself (or none), the session waits redialAfter before its
// next transaction, so a demoted writer is not hammered.
func (s *sessions) followWriter(ctx context.Context, t *tx, node Node) bool {
	if s.follow == nil || t.onRead.Load() || !mysqlerr.ReadOnly(t.code) {
		return false
	}
	if n, err := s.follow(ctx); err == nil && n.DB != nil && n.Name != node.Name {
		return true
	}
	pause(ctx, redialAfter)
	return false
}

// inflight is a session's transaction in progress and the node it runs on.
type inflight struct {
	mu    sync.Mutex
	tx    *tx
	node  string
	since time.Time
}

// track records t (nil: none) as session id's transaction in progress on node.
func (s *sessions) track(id int, t *tx, node string) {
	l := &s.live[id]
	l.mu.Lock()
	l.tx, l.node, l.since = t, node, time.Now()
	l.mu.Unlock()
}

// followHangs runs while following sessions run (until ctx ends): every hangCheck, when a
// transaction has been in progress for writerHang and Follow names another node than
// the one it runs on, it gives the transaction up (its context cancelled: the connection
// closes, the outcome is unknown after COMMIT was sent, failed before), so the session
// reconnects to the writer. Follow is asked only when some transaction hangs.
func (s *sessions) followHangs(ctx context.Context) {
	tick := time.NewTicker(hangCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		hung := map[int]*tx{}
		for i := range s.live {
			l := &s.live[i]
			l.mu.Lock()
			if l.tx != nil && !l.tx.onRead.Load() && time.Since(l.since) >= writerHang {
				hung[i] = l.tx
			}
			l.mu.Unlock()
		}
		if len(hung) == 0 {
			continue
		}
		// Asked without a session's lock held: Follow may take a while (it reads the
		// cluster), and the sessions go on meanwhile.
		writer, err := s.follow(ctx)
		if err != nil || writer.DB == nil {
			continue
		}
		for i, t := range hung {
			l := &s.live[i]
			l.mu.Lock()
			if l.tx == t && l.node != writer.Name {
				l.giveUpLocked("the writer moved to " + writer.Name + " while it hung")
			}
			l.mu.Unlock()
		}
	}
}

// giveUp gives up l's transaction in progress, if any, for reason: its context is
// cancelled (the driver closes the connection; the outcome is unknown when COMMIT was
// sent, failed before) and abandoned notes the reason in its error.
func (l *inflight) giveUp(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.giveUpLocked(reason)
}

func (l *inflight) giveUpLocked(reason string) {
	if l.tx != nil {
		l.tx.gaveUp.Store(&reason)
		l.tx.cancel()
	}
}

// abandoned notes in t's error that it was given up, and why (giveUp).
func (t *tx) abandoned() {
	if why := t.gaveUp.Load(); why != nil && t.op.Outcome != history.OK {
		t.op.Error = "abandoned: " + *why + " (" + t.op.Error + ")"
		t.lost = true
	}
}
