package checker

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/time/rate"

	"github.com/habench/habench/history"
	"github.com/habench/habench/internal/mysqlerr"
)

// sessions runs a checker workload's transactions on threads sessions (session i on
// nodes[i % len(nodes)], its read-only transactions on readNodes[i % len(readNodes)]
// when there are read nodes) and records each in a history.
type sessions struct {
	nodes     []Node
	readNodes []Node // where read-only transactions go (none: on nodes)
	threads   int
	isolation string        // a key of isolations, or ""
	timeout   time.Duration // bounds one transaction
	rate      float64       // transactions per second of all sessions together (0: no cap)
	limit     *rate.Limiter // from rate, made by run
	// txn runs one transaction through t, filling t.op.Value with its reads and writes
	// as they are known; t's methods record its outcome.
	txn    func(t *tx, rng *rand.Rand)
	follow Follow     // the writer now (nil: sessions stay on their nodes)
	live   []inflight // by session: its transaction in progress (followHangs)
	h      *history.History
}

// run runs the sessions for d (or until ctx ends) and returns the history; the error
// is a session that could not connect or set its isolation level.
func (s *sessions) run(ctx context.Context, d time.Duration) (*history.History, error) {
	if len(s.nodes) == 0 {
		return nil, errors.New("checker: no nodes")
	}
	s.h = history.New()
	if s.rate > 0 {
		s.limit = rate.NewLimiter(rate.Limit(s.rate), 1)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	s.live = make([]inflight, s.threads)
	if s.follow != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.followHangs(ctx)
		}()
	}
	errs := make([]error, s.threads)
	for i := 0; i < s.threads; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = s.session(ctx, i)
		}(i)
	}
	s.waitEnd(ctx, &wg)
	return s.h, errors.Join(errs...)
}

// endGrace is how long the sessions' transactions in progress when the run ends may
// take to finish before they are given up (the workload's EndGrace): a session hung on a
// node cut off does not hold the run's end for its whole transaction timeout.
const endGrace = 5 * time.Second

// waitEnd waits for wg; once ctx has ended it gives the transactions still in progress
// endGrace, then gives them up (failed, or unknown after COMMIT was sent).
func (s *sessions) waitEnd(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	select {
	case <-done:
		return
	case <-time.After(endGrace):
	}
	for i := range s.live {
		s.live[i].giveUp("in flight at the end of the run, " + endGrace.String() + " after it")
	}
	<-done
}

// session runs transactions on one connection (and one to its read node, opened at its
// first read-only transaction) until ctx ends; after an unknown outcome or a lost
// connection it reconnects (a new process number after an unknown outcome), every
// 100 ms while the node refuses, to the writer s.follow names when it follows one (also
// after a read-only refusal: followWriter). Its error is a first connection that failed.
func (s *sessions) session(ctx context.Context, id int) error {
	node := s.nodes[id%len(s.nodes)]
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	process := id
	var c *sql.Conn
	rc := &readConn{s: s, ctx: ctx}
	if len(s.readNodes) > 0 {
		rc.node = s.readNodes[id%len(s.readNodes)]
	}
	defer func() {
		if c != nil {
			c.Close()
		}
		rc.close()
	}()
	connected := false
	for ctx.Err() == nil {
		if c == nil {
			if connected {
				node = s.writer(ctx, node)
			}
			var err error
			if c, err = s.connect(ctx, node); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if !connected {
					return fmt.Errorf("checker session %d on %s: %w", id, node.Name, err)
				}
				// The node went away during the run (a fault): try again until it is back
				// or the run ends.
				pause(ctx, redialAfter)
				continue
			}
			connected = true
		}
		if s.limit != nil && s.limit.Wait(ctx) != nil {
			break // the run ended while waiting for its turn
		}
		t := s.begin(c)
		t.rc = rc
		s.track(id, t, node.Name)
		s.txn(t, rng)
		s.track(id, nil, "")
		t.cancel()
		t.abandoned()
		t.op.Process, t.op.Session, t.op.Node = process, id, node.Name
		if t.onRead.Load() {
			t.op.Node = rc.node.Name
		}
		s.h.Add(t.op)
		if !t.lost && s.followWriter(ctx, t, node) {
			c.Close()
			c = nil
			continue
		}
		if !t.lost {
			continue
		}
		if t.onRead.Load() {
			rc.close()
		} else {
			c.Close()
			c = nil
		}
		if t.op.Outcome == history.Unknown {
			process += s.threads
		}
	}
	return nil
}

// readConn is a session's connection to its read node (node.DB nil: no read node),
// opened when first used.
type readConn struct {
	s        *sessions
	ctx      context.Context
	node     Node
	c        *sql.Conn
	failedAt time.Time // the last connection attempt that failed (zero: none)
}

// redialAfter is how long a session waits after a failed connection (to its node or its
// read node) before it tries again.
const redialAfter = 100 * time.Millisecond

// pause waits d, or less when ctx ends first.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (r *readConn) close() {
	if r.c != nil {
		r.c.Close()
		r.c = nil
	}
}

// onReadNode moves t, a read-only transaction before its first statement, to the
// session's read node (nothing without one), connecting to it when needed; false (the
// transaction failed, outcome recorded) when that connection cannot be opened. A
// connection attempt is bounded by the transaction's timeout and comes at least
// redialAfter after the last failed one (the session waits for it), so a read node that
// is down costs one failed operation per redialAfter, not a loop of them.
func (t *tx) onReadNode() bool {
	if t.rc == nil || t.rc.node.DB == nil {
		return true
	}
	t.onRead.Store(true)
	if t.rc.c == nil {
		if wait := redialAfter - time.Since(t.rc.failedAt); !t.rc.failedAt.IsZero() && wait > 0 {
			pause(t.rc.ctx, wait)
			t.op.Start = t.s.h.Since(time.Now())
		}
		c, err := t.s.connect(t.ctx, t.rc.node)
		if err != nil {
			t.rc.failedAt = time.Now()
			t.op.End = t.s.h.Since(time.Now())
			t.op.Outcome, t.op.Error = history.Fail, err.Error()
			return false
		}
		t.rc.c, t.rc.failedAt = c, time.Time{}
	}
	t.c = t.rc.c
	return true
}

// connect opens a session's connection and sets its isolation level.
func (s *sessions) connect(ctx context.Context, node Node) (*sql.Conn, error) {
	c, err := node.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if s.isolation != "" {
		if _, err := c.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL "+isolations[s.isolation]); err != nil {
			c.Close()
			return nil, fmt.Errorf("setting isolation %s: %w", s.isolation, err)
		}
	}
	return c, nil
}

// tx is one transaction in progress: its connection, its bound and its operation. Each
// method returns false once the transaction has failed (outcome recorded).
type tx struct {
	s      *sessions
	c      *sql.Conn
	ctx    context.Context
	cancel context.CancelFunc
	op     history.Op
	lost   bool                   // the connection is no longer usable
	rc     *readConn              // the session's read node (nil: none)
	onRead atomic.Bool            // t runs on rc (onReadNode); read by followHangs
	code   uint16                 // the server's error number when it refused t (0: none)
	gaveUp atomic.Pointer[string] // why it was given up (followHangs, waitEnd)
}

func (s *sessions) begin(c *sql.Conn) *tx {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	return &tx{s: s, c: c, ctx: ctx, cancel: cancel, op: history.Op{Start: s.h.Since(time.Now())}}
}

// exec runs a statement of the transaction.
func (t *tx) exec(q string, args ...any) bool {
	if _, err := t.c.ExecContext(t.ctx, q, args...); err != nil {
		return t.fail(err)
	}
	return true
}

// scan runs a one-row query and scans it into dest.
func (t *tx) scan(q string, args []any, dest ...any) bool {
	if err := t.c.QueryRowContext(t.ctx, q, args...).Scan(dest...); err != nil {
		return t.fail(err)
	}
	return true
}

// query runs a query and calls row for each row (scanning into dest).
func (t *tx) query(q string, dest []any, row func()) bool {
	rows, err := t.c.QueryContext(t.ctx, q)
	if err != nil {
		return t.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return t.fail(err)
		}
		row()
	}
	if err := rows.Err(); err != nil {
		return t.fail(err)
	}
	return true
}

// fail records a failure before COMMIT: the transaction did not take effect (rolled
// back here, or by the server when the connection died).
func (t *tx) fail(err error) bool {
	t.op.End = t.s.h.Since(time.Now())
	t.op.Outcome, t.op.Error = history.Fail, err.Error()
	t.code = mysqlerr.Code(err)
	if isConnLost(err) {
		t.lost = true
	} else {
		t.c.ExecContext(t.ctx, "ROLLBACK")
	}
	return false
}

// commit sends COMMIT: ok, failed (the server answered with an error) or unknown (no
// answer: the connection died or the transaction's bound passed).
func (t *tx) commit() {
	_, err := t.c.ExecContext(t.ctx, "COMMIT")
	t.op.End = t.s.h.Since(time.Now())
	switch {
	case err == nil:
		t.op.Outcome = history.OK
	case isConnLost(err):
		t.op.Outcome, t.op.Error, t.lost = history.Unknown, err.Error(), true
	default:
		t.op.Outcome, t.op.Error, t.code = history.Fail, err.Error(), mysqlerr.Code(err)
	}
}

// OutcomeOf is the outcome of a statement that committed (autocommit, or COMMIT) and
// returned err: ok (nil), fail (an error the server answered with, or a connect that
// failed, so that nothing was sent: refused, no route, a connect timeout) or unknown (no
// answer: the connection died or the statement's bound passed).
func OutcomeOf(err error) history.Outcome {
	switch {
	case err == nil:
		return history.OK
	case notSent(err):
		return history.Fail
	case isConnLost(err):
		return history.Unknown
	}
	return history.Fail
}

// notSent reports whether err says the statement never reached the server: a failed
// connect (a dial's *net.OpError: the pool had no connection and could not open one), or
// driver.ErrBadConn, which a driver returns only when nothing was written (database/sql
// retries a pool's statement on a new connection after it, and returns it from a
// dedicated sql.Conn).
func notSent(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial" || errors.Is(err, driver.ErrBadConn)
}

// isConnLost reports whether err left the outcome of what was sent unknown: anything
// but an error the server answered with.
func isConnLost(err error) bool {
	var me *mysql.MySQLError
	return !errors.As(err, &me) && !strings.Contains(err.Error(), "converting") && !errors.Is(err, sql.ErrNoRows)
}
