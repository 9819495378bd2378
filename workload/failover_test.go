package workload

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/internal/testmachine"
	"github.com/habench/habench/internal/testserver"
)

// TestFailoverOrder: a worker tries its own endpoint first, then the others in turn, the
// workers of one endpoint starting at different ones so that they spread.
func TestFailoverOrder(t *testing.T) {
	for _, c := range []struct {
		id, n int
		want  []int
	}{
		{2, 3, []int{2, 0, 1}}, {5, 3, []int{2, 1, 0}}, {8, 3, []int{2, 0, 1}},
		{0, 3, []int{0, 1, 2}}, {3, 3, []int{0, 2, 1}}, {1, 2, []int{1, 0}}, {0, 1, []int{0}},
	} {
		if got := failoverOrder(c.id, c.n); !slices.Equal(got, c.want) {
			t.Errorf("failoverOrder(%d, %d) = %v, want %v", c.id, c.n, got, c.want)
		}
	}
	// The 4 workers of n3 out of 12 on 3 endpoints: two land on n1, two on n2.
	first := map[int]int{}
	for id := 2; id < 12; id += 3 {
		first[failoverOrder(id, 3)[1]]++
	}
	if first[0] != 2 || first[1] != 2 {
		t.Errorf("n3's workers' first other endpoint %v, want 2 on n1 and 2 on n2", first)
	}
}

// TestFailoverTarget: the endpoint a worker connects to next is the first in its order that
// is live (all are when the view is not known) and has not failed in this round.
func TestFailoverTarget(t *testing.T) {
	r := &runner{t: Target{Endpoints: []Endpoint{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}}}
	w := &worker{id: 2, r: r} // n3's
	for _, c := range []struct {
		live  []string // nil: not known
		tried []string
		want  string // "" = none left
	}{
		{nil, nil, "n3"},
		{[]string{"n1", "n2", "n3"}, nil, "n3"},
		{[]string{"n1", "n2"}, nil, "n1"},
		{[]string{"n2"}, nil, "n2"},
		{nil, []string{"n3"}, "n1"},
		{[]string{"n1", "n2"}, []string{"n1"}, "n2"},
		{[]string{"n1", "n2"}, []string{"n1", "n2"}, ""},
		{[]string{}, nil, ""},
	} {
		tried := map[string]bool{}
		for _, l := range c.tried {
			tried[l] = true
		}
		ep, ok := w.failoverTarget(c.live, c.live != nil, tried)
		if got := map[bool]string{true: ep.Label(), false: ""}[ok]; got != c.want {
			t.Errorf("live %v, tried %v: %q, want %q", c.live, c.tried, got, c.want)
		}
	}
}

// TestFailoverRoundNoneLive: when the view is known and no endpoint is live (a Galera
// cluster without a Primary component, every node down), a worker's reconnect stays on the
// node it is on and backs off between attempts, with no move; a node live again is
// where it goes next. A view not known yet sends it round every endpoint in turn.
func TestFailoverRoundNoneLive(t *testing.T) {
	live := &liveSet{known: true} // known, none live
	r := &runner{t: Target{Endpoints: []Endpoint{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}, Failover: live.get}}
	r.pools = map[string]*sql.DB{"n1": new(sql.DB), "n2": new(sql.DB), "n3": new(sql.DB)}
	newWorker := func(id int) *worker {
		ep := r.t.Endpoints[id%3]
		w := &worker{id: id, r: r, ep: ep, label: ep.Label(), home: ep, move: -1, chain: -1,
			st: &workerStats{hist: NewHistogram(), endpoint: ep.Label()}}
		w.on.Store(&w.label)
		return w
	}
	w := newWorker(2)                           // n3's, refused by n3: reconnect avoids it
	f := newFailoverRound(w.label)              // as eventWithRetry's reconnect after a 1047
	for attempt := 0; attempt < 10; attempt++ { // reconnect's attempts, each connect refused
		wait, err := f.next(w)
		if err != nil || wait {
			t.Fatalf("attempt %d: wait %v, err %v; want a connect where it is", attempt, wait, err)
		}
		if w.label != "n3" {
			t.Fatalf("attempt %d: the worker is on %s, want it kept on n3 (no node live)", attempt, w.label)
		}
		if f.failed(w.label) {
			t.Fatalf("attempt %d: failed says try the next node at once, want a back-off", attempt)
		}
	}
	if len(r.moves) != 0 || w.away {
		t.Fatalf("moves %+v, away %v: want none while no node is live", r.moves, w.away)
	}
	if !w.noneLive() {
		t.Error("noneLive false with a known view listing none")
	}
	live.set("n1") // the cluster's quorum back on n1
	if wait, err := f.next(w); wait || err != nil || w.label != "n1" || len(r.moves) != 1 || !w.away {
		t.Errorf("n1 live again: wait %v, err %v, on %s, moves %+v, away %v; want a move to n1", wait, err, w.label, r.moves, w.away)
	}
	if w.noneLive() {
		t.Error("noneLive true with n1 live")
	}
	// A view not known yet: every endpoint in turn, no back-off until each was tried.
	unknown := &liveSet{}
	r.t.Failover, r.moves = unknown.get, nil
	w = newWorker(0)
	f = newFailoverRound("")
	var tour []string
	for i := 0; i < 3; i++ {
		if wait, err := f.next(w); wait || err != nil {
			t.Fatalf("unknown view, attempt %d: wait %v, err %v", i, wait, err)
		}
		tour = append(tour, w.label)
		if !f.failed(w.label) {
			t.Fatalf("unknown view, attempt %d: a back-off before every node was tried", i)
		}
	}
	if wait, _ := f.next(w); !wait || strings.Join(tour, ",") != "n1,n2,n3" || w.noneLive() {
		t.Errorf("unknown view: tour %v, then wait %v; want n1,n2,n3 then a back-off", tour, wait)
	}
}

// TestMayHaveCommitted: a lost connection leaves a transaction's outcome unknown when the
// statement was sent without an answer (2013) and it was a COMMIT of a transaction that
// changed rows, or a write in a workload without transactions; not before the COMMIT
// (the server rolls the transaction back), not when nothing was sent (2006), not for a
// read-only transaction or a read.
func TestMayHaveCommitted(t *testing.T) {
	stmt := func(q string) error {
		return &StatementError{Statement: q, Code: CRServerLost, Err: io.ErrUnexpectedEOF}
	}
	wrote, read := &counts{reads: 10, writes: 4, others: 1}, &counts{reads: 14, others: 1}
	for _, c := range []struct {
		name       string
		autocommit bool
		err        error
		code       uint16
		ev         *counts
		want       bool
	}{
		{"COMMIT lost", false, stmt("COMMIT"), CRServerLost, wrote, true},
		{"COMMIT lost, 2055", false, stmt("COMMIT"), 2055, wrote, true},
		{"COMMIT never sent", false, stmt("COMMIT"), CRServerGone, wrote, false},
		{"read-only transaction's COMMIT", false, stmt("COMMIT"), CRServerLost, read, false},
		{"UPDATE before COMMIT", false, stmt("UPDATE sbtest1 SET k=k+1 WHERE id=?"), CRServerLost, wrote, false},
		{"BEGIN", false, stmt("BEGIN"), CRServerLost, &counts{}, false},
		{"autocommit UPDATE", true, stmt("UPDATE sbtest1 SET k=k+1 WHERE id=?"), CRServerLost, &counts{}, true},
		{"autocommit INSERT", true, stmt("INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 1, 'c', 'p')"), CRServerLost, &counts{}, true},
		{"autocommit delete, lower case", true, stmt("delete from sbtest1 where id=?"), CRServerLost, &counts{}, true},
		{"autocommit SELECT", true, stmt("SELECT c FROM sbtest1 WHERE id=?"), CRServerLost, &counts{}, false},
		{"not a statement's error", true, io.ErrUnexpectedEOF, CRServerLost, wrote, false},
	} {
		r := &runner{autocommit: c.autocommit}
		if got := r.mayHaveCommitted(c.err, c.code, c.ev); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMoveSettled: a move is settled when every worker that left its node in it committed
// again, also one that moved on before committing; a worker joining later unsettles it.
func TestMoveSettled(t *testing.T) {
	r := &runner{}
	t0 := time.Unix(100, 0)
	a := r.noteMove("n3", "n1", false, true) // worker A leaves n3
	b := r.noteMove("n3", "n1", false, true) // worker B too: the same move
	if a != b || r.moves[a].Workers != 2 || r.moves[a].Left != 2 {
		t.Fatalf("moves %+v, want one move of 2 workers", r.moves)
	}
	r.committedAfterMove(a, a, t0.Add(time.Second))
	if m := r.moves[a]; !m.Settled.IsZero() || !m.FirstCommit.Equal(t0.Add(time.Second)) {
		t.Errorf("one of two committed: %+v, want its first commit and not settled", m)
	}
	c := r.noteMove("n1", "n2", false, false) // B moves on before committing: its chain stays
	r.committedAfterMove(c, b, t0.Add(3*time.Second))
	if m := r.moves[a]; !m.Settled.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("both committed again: %+v, want settled at 3 s", m)
	}
	if m := r.moves[c]; !m.FirstCommit.Equal(t0.Add(3*time.Second)) || !m.Settled.IsZero() || m.Left != 0 {
		t.Errorf("the move on: %+v, want its first commit, no chain of its own", m)
	}
	// A later worker leaving n3 for n2 joins that move (n2 was not left since) and
	// unsettles it until it commits.
	d := r.noteMove("n1", "n2", false, true)
	if d != c || !r.moves[c].Settled.IsZero() {
		t.Errorf("join: move %d %+v, want move %d unsettled", d, r.moves[d], c)
	}
	r.committedAfterMove(d, d, t0.Add(5*time.Second))
	if m := r.moves[c]; !m.Settled.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("joined worker committed: %+v, want settled at 5 s", m)
	}
	// A move from the same node to the same node after WriterHang is another event's.
	r.moves[c].At = r.moves[c].At.Add(-DefaultWriterHang - time.Second)
	if e := r.noteMove("n1", "n2", false, true); e == c || r.moves[e].Workers != 1 {
		t.Errorf("a move %v after another: joined it (%d, %+v), want a new one", DefaultWriterHang+time.Second, e, r.moves)
	}
}

// liveSet is a Target.Failover for tests: the labels a test marks live, as a view whose
// every answer is fresh (any since); known once a test set it (or marked it known).
type liveSet struct {
	mu    sync.Mutex
	live  []string
	known bool
}

func (l *liveSet) get(time.Time) ([]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.live), l.known
}

func (l *liveSet) set(labels ...string) {
	l.mu.Lock()
	l.live, l.known = labels, true
	l.mu.Unlock()
}

// TestFailoverServers runs two MariaDB servers as the two writers of one target (each its
// own data: the engine's failover, not a cluster's, is what is measured), 4 workers, 2 on
// each, sysbench's default ignore list. n2 killed: without Failover the run ends at once
// with 2013 on n2, as sysbench; with it, n2's workers commit on n1 within a second, go back
// once the view lists n2 again after its restart, and the run ends well. n2 hung (a global
// read lock) and out of the view: its workers give their transactions up after
// WriterHang (unknown outcomes) and move to n1.
func TestFailoverServers(t *testing.T) {
	if testing.Short() {
		t.Skip("real-server tests skipped in -short mode")
	}
	testmachine.Alone(t) // it times failovers and an open-loop rate: nothing else may load the machine
	s1, s2 := testserver.StartMariaDB(t), testserver.StartMariaDB(t)
	tg1, tg2 := serverTarget(s1, "sbtest"), serverTarget(s2, "sbtest")
	rw := mustLookup(t, "oltp_read_write")
	o := runOpts(4, 8*time.Second)
	o.Tables, o.TableSize, o.Rate = 1, 1000, 100
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tg := range []Target{tg1, tg2} {
		if err := rw.Prepare(ctx, tg, o, nil); err != nil {
			t.Fatal(err)
		}
	}
	tg := tg1
	tg.Endpoints = []Endpoint{{Name: "n1", Host: s1.Host, Port: s1.Port}, {Name: "n2", Host: s2.Host, Port: s2.Port}}
	// killAt kills s2 at 1.5 s (and takes it out of live), and restarts it at 3.5 s (live
	// again once it accepts connections); it returns when n2 was killed and back.
	killAt := func(live *liveSet) (killed, back func() time.Time) {
		var k, b time.Time
		kc, bc := make(chan struct{}), make(chan struct{})
		time.AfterFunc(1500*time.Millisecond, func() {
			s2.Kill(t)
			k = time.Now()
			if live != nil {
				live.set("n1")
			}
			close(kc)
			time.Sleep(2 * time.Second)
			s2.Restart(t)
			b = time.Now()
			if live != nil {
				live.set("n1", "n2")
			}
			close(bc)
		})
		return func() time.Time { <-kc; return k }, func() time.Time { <-bc; return b }
	}

	t.Run("without_failover_ends_like_sysbench", func(t *testing.T) {
		_, back := killAt(nil)
		defer back()
		_, err := rw.Run(ctx, tg, o, nil)
		var se *StatementError
		if !errors.As(err, &se) || (se.Code != 2013 && se.Code != 2006) || se.Endpoint != "n2" {
			t.Fatalf("err = %v, want a StatementError on n2 with 2013 or 2006", err)
		}
	})

	t.Run("kill_and_restart", func(t *testing.T) {
		live := &liveSet{live: []string{"n1", "n2"}, known: true}
		tgf := tg
		tgf.Failover = live.get
		killed, back := killAt(live)
		res, err := rw.Run(ctx, tgf, o, nil)
		k, b := killed(), back()
		if err != nil {
			t.Fatalf("run with failover: %v", err)
		}
		t.Logf("moves %+v; per endpoint %+v; outages %v; errors %v; unknown %d", res.WriterMoves, res.PerEndpoint, res.Outages, res.ErrorsByCode, res.Unknown)
		var away, home *WriterMove
		for i, m := range res.WriterMoves {
			switch {
			case m.From == "n2" && m.To == "n1" && away == nil:
				away = &res.WriterMoves[i]
			case m.From == "n1" && m.To == "n2" && m.At.After(b):
				home = &res.WriterMoves[i]
			}
		}
		// A worker killed in its COMMIT gave that transaction up (an unknown outcome);
		// one killed before it retried it on n1.
		if away == nil || away.Workers != 2 || int64(away.Abandoned) != res.Unknown || away.Settled.IsZero() {
			t.Fatalf("moves %+v, unknown %d: want n2's 2 workers moved to n1, those that lost a COMMIT counted, all committed again", res.WriterMoves, res.Unknown)
		}
		if d := away.Settled.Sub(k); d <= 0 || d > time.Second {
			t.Errorf("n2's workers committed on n1 %v after the kill, want within 1 s", d)
		}
		if home == nil || home.Workers != 2 || home.FirstCommit.IsZero() || home.At.Sub(b) > time.Second {
			t.Errorf("moves %+v: want n2's 2 workers back on n2 within 1 s of its restart at %v, committing there", res.WriterMoves, b.Sub(k))
		}
		if res.Reconnects < 4 || res.Unknown > 2 || res.ErrorsByCode[2013]+res.ErrorsByCode[2006] == 0 {
			t.Errorf("reconnects %d, unknown %d, errors %v: want the 2 moves and 2 returns as reconnects, the lost connections counted, an unknown outcome only for a lost COMMIT", res.Reconnects, res.Unknown, res.ErrorsByCode)
		}
		for _, ou := range res.Outages {
			if ou.Open || ou.Duration() > 1500*time.Millisecond {
				t.Errorf("outage %v: want none open, none longer than the failover", ou)
			}
		}
	})

	t.Run("hung_node_left", func(t *testing.T) {
		live := &liveSet{live: []string{"n1", "n2"}, known: true}
		tgf := tg
		tgf.Failover = live.get
		rep, lockedAt, unlocked := lockAt(t, s2, nil, time.Second, 4*time.Second)
		time.AfterFunc(1500*time.Millisecond, func() { live.set("n1") })
		time.AfterFunc(5500*time.Millisecond, func() { live.set("n1", "n2") })
		res, err := rw.Run(ctx, tgf, o, rep)
		unlocked()
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		locked := lockedAt()
		t.Logf("moves %+v; unknown %d; waits %d; outages %v", res.WriterMoves, res.Unknown, res.WaitCount, res.Outages)
		if len(res.WriterMoves) == 0 {
			t.Fatal("no move")
		}
		m := res.WriterMoves[0]
		if m.From != "n2" || m.To != "n1" || m.Workers != 2 || m.Abandoned != 2 || m.Settled.IsZero() {
			t.Errorf("move %+v: want n2's 2 workers off to n1, each leaving its hung transaction, all committed again", m)
		}
		if d := m.At.Sub(locked); d < DefaultWriterHang-100*time.Millisecond || d > DefaultWriterHang+time.Second {
			t.Errorf("moved %v after the lock, want within the %v bound + 1 s", d, DefaultWriterHang)
		}
		if res.Unknown != 2 {
			t.Errorf("unknown %d, want the 2 abandoned transactions", res.Unknown)
		}
	})
}
