package sampler

import (
	"testing"
	"time"
)

// fakeClock is a manually advanced clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time           { return c.t }
func (c *fakeClock) add(d time.Duration)      { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock                { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func near(a, b time.Duration) bool            { return (a - b).Abs() < time.Microsecond }
func latestSeq(t *testing.T, l *hbLog) uint64 { t.Helper(); e, _ := l.latest(); return e.seq }

// writeN simulates the writer: n writes, one per period, each recorded at the clock's time.
func writeN(l *hbLog, c *fakeClock, from uint64, n int, period time.Duration) uint64 {
	seq := from
	for range n {
		c.add(period)
		seq++
		l.record(seq, c.now())
	}
	return seq
}

func TestHeartbeatLagIdleIsZero(t *testing.T) {
	c, l := newFakeClock(), newHBLog(HeartbeatWindow)
	if lag, behind := l.lagAt(0, latestSeq(t, l), c.now()); lag != 0 || behind != 0 {
		t.Fatalf("before any write: lag %v behind %d, want 0 0", lag, behind)
	}
	seq := writeN(l, c, 0, 50, 100*time.Millisecond)
	c.add(70 * time.Millisecond)
	// A node that shows the latest seq is exactly 0 behind, however old that write is.
	if lag, behind := l.lagAt(seq, latestSeq(t, l), c.now()); lag != 0 || behind != 0 {
		t.Fatalf("caught-up node: lag %v behind %d, want 0 0", lag, behind)
	}
	c.add(10 * time.Second) // writer stalled too: still nothing unseen
	if lag, _ := l.lagAt(seq, latestSeq(t, l), c.now()); lag != 0 {
		t.Fatalf("caught-up node after 10s idle: lag %v, want 0", lag)
	}
	// A node with a seq the writer has not seen complete yet (commit in flight) is not behind.
	if lag, behind := l.lagAt(seq+1, latestSeq(t, l), c.now()); lag != 0 || behind != 0 {
		t.Fatalf("node ahead: lag %v behind %d, want 0 0", lag, behind)
	}
}

func TestHeartbeatLagGrowsWhenStalled(t *testing.T) {
	c, l := newFakeClock(), newHBLog(HeartbeatWindow)
	const period = 100 * time.Millisecond
	seq := writeN(l, c, 0, 10, period) // seqs 1..10
	stalled := seq                     // the node stops at 10
	commit11 := c.now().Add(period)    // seq 11 will commit one period later
	var prev time.Duration
	for i := 1; i <= 30; i++ {
		seq = writeN(l, c, seq, 1, period)
		now := c.now().Add(3 * time.Millisecond) // sampled a little after the write
		lag, behind := l.lagAt(stalled, latestSeq(t, l), now)
		if want := now.Sub(commit11); !near(lag, want) {
			t.Fatalf("step %d: lag %v, want now - commit(11) = %v", i, lag, want)
		}
		if behind != uint64(i) {
			t.Fatalf("step %d: behind %d, want %d", i, behind, i)
		}
		if i > 1 && !near(lag-prev, period) {
			t.Fatalf("step %d: lag grew by %v, want %v per period", i, lag-prev, period)
		}
		prev = lag
	}
	// The node catches up: lag drops to 0 at once.
	if lag, _ := l.lagAt(seq, latestSeq(t, l), c.now()); lag != 0 {
		t.Fatalf("after catching up: lag %v, want 0", lag)
	}
	// Halfway: lag is the age of the oldest write it has not seen (seq 26 here).
	lag, behind := l.lagAt(25, latestSeq(t, l), c.now())
	if want := time.Duration(seq-26) * period; !near(lag, want) || behind != seq-25 {
		t.Fatalf("node at 25 of %d: lag %v behind %d, want %v %d", seq, lag, behind, want, seq-25)
	}
}

func TestHeartbeatLagNoRowAndGaps(t *testing.T) {
	c, l := newFakeClock(), newHBLog(HeartbeatWindow)
	base := uint64(1000) // seqs left by an earlier run: this run writes 1001...
	c.add(time.Second)
	first := c.now()
	l.record(base+1, first)
	c.add(100 * time.Millisecond)
	l.record(base+2, c.now())
	// seq base+3 failed (never recorded); base+4 committed
	c.add(200 * time.Millisecond)
	commit4 := c.now()
	l.record(base+4, commit4)
	c.add(50 * time.Millisecond)

	// No row yet (seq 0): age of the first write of the run.
	if lag, behind := l.lagAt(0, latestSeq(t, l), c.now()); !near(lag, c.now().Sub(first)) || behind != base+4 {
		t.Fatalf("no row: lag %v behind %d, want %v %d", lag, behind, c.now().Sub(first), base+4)
	}
	// An old row from the earlier run: same.
	if lag, _ := l.lagAt(500, latestSeq(t, l), c.now()); !near(lag, c.now().Sub(first)) {
		t.Fatalf("stale row: lag %v, want %v", lag, c.now().Sub(first))
	}
	// Node at base+2: base+3 is unknown, so the oldest unseen known write is base+4.
	if lag, _ := l.lagAt(base+2, latestSeq(t, l), c.now()); !near(lag, 50*time.Millisecond) {
		t.Fatalf("across a failed write: lag %v, want 50ms", lag)
	}
	// Commit time later than "now" (clock read before the write completed) never goes negative.
	if lag, _ := l.lagAt(base+2, base+4, commit4.Add(-time.Millisecond)); lag != 0 {
		t.Fatalf("negative lag not clamped: %v", lag)
	}
}

func TestHeartbeatWindowBounded(t *testing.T) {
	c, l := newFakeClock(), newHBLog(time.Second)
	first := c.now().Add(100 * time.Millisecond)
	seq := writeN(l, c, 0, 100, 100*time.Millisecond) // 10 s of writes, window 1 s
	if n := len(l.entries); n > 11 {
		t.Fatalf("window of 1s at 100ms kept %d entries, want <= 11", n)
	}
	lag, behind := l.lagAt(0, seq, c.now())
	if behind != 100 {
		t.Fatalf("behind %d, want 100", behind)
	}
	// The first write was forgotten: the lag is the age of the oldest remembered one, a lower bound.
	if lag > time.Second || lag < 900*time.Millisecond || lag >= c.now().Sub(first) {
		t.Fatalf("lag beyond the window = %v, want the oldest remembered write's age (~1s)", lag)
	}
	// Even a long silence keeps the newest entry.
	c.add(time.Hour)
	l.record(seq+1, c.now())
	if e, ok := l.latest(); !ok || e.seq != seq+1 || len(l.entries) != 1 {
		t.Fatalf("after an hour: entries %v", l.entries)
	}
}
