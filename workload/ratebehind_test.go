package workload

import (
	"strings"
	"testing"
	"time"
)

// TestRateBehindIsNotMet: a --rate run whose queue caught up with a 3.3 s stall (the
// source killed, a replica promoted) averaged its target rate and ended with an empty
// queue, yet was behind for 3.3 s: Met is false and the WARNING says for how long, from
// when, how many arrivals were queued and the longest wait. A late arrival within the
// report interval is no miss.
func TestRateBehindIsNotMet(t *testing.T) {
	s := func(sec float64) int64 { return int64(sec * float64(time.Second)) }
	run := func(report, warmup time.Duration, waits func(rs *rateState)) *RateResult {
		o := DefaultOptions()
		o.Rate, o.ReportInterval, o.Warmup = 100, report, warmup
		r := &runner{o: o, t0: time.Now().Add(-30 * time.Second), warmup: warmup}
		r.rt = newRateState(&r.o)
		r.rt.first.Store(0)
		r.rt.gen.Store(3000)
		r.rt.deq.Store(3000) // all taken: nothing queued at the end
		waits(r.rt)
		return r.rateResult(time.Now(), &counts{}, NewHistogram())
	}
	// Source killed at 12 s (10 s into the measured run after a 2 s warm-up), the new
	// source taking writes at 15.3 s: the arrivals of 12.0 .. 14.3 s waited over 1 s.
	rr := run(time.Second, 2*time.Second, func(rs *rateState) {
		for a := 12.0; a < 14.3; a += 0.01 {
			rs.late(s(a), s(15.3), int64((15.3-a)*100))
		}
		rs.maxWaitNs.Store(s(3.3))
	})
	if rr.Met {
		t.Errorf("behind for 3.3 s: Met is true: %+v", rr)
	}
	if d := rr.Behind - 3300*time.Millisecond; d < -10*time.Millisecond || d > 10*time.Millisecond || rr.BehindAt != 10*time.Second || rr.MaxBacklog != 330 {
		t.Errorf("behind %s from %s, max backlog %d: want 3.3 s from 10 s, 330", rr.Behind, rr.BehindAt, rr.MaxBacklog)
	}
	w := rr.Warning(99.1)
	for _, want := range []string{"the target rate was not met", "behind for 3.30 s (from 10.00 s to 13.30 s of the measured run)",
		"up to 330 arrivals queued", "the longest queue wait 3.300 s", "achieved 99.10 of 100 events/s"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if strings.Contains(w, "at the end") {
		t.Errorf("warning %q: the queue was empty at the end", w)
	}
	// Two short late periods 5 s apart are not one long one.
	rr = run(time.Second, 0, func(rs *rateState) {
		rs.late(s(5), s(6.2), 3)
		rs.late(s(11), s(12.4), 4)
	})
	if rr.Met || rr.Behind != 1400*time.Millisecond || rr.BehindAt != 11*time.Second || rr.MaxBacklog != 4 {
		t.Errorf("two late periods: met %v, behind %s from %s, max backlog %d; want false, 1.4 s from 11 s, 4", rr.Met, rr.Behind, rr.BehindAt, rr.MaxBacklog)
	}
	// Behind 1.4 s with 2 s report intervals: within one interval, met.
	rr = run(2*time.Second, 0, func(rs *rateState) { rs.late(s(5), s(6.4), 3) })
	if !rr.Met || rr.Warning(100) != "" {
		t.Errorf("behind 1.4 s with 2 s report intervals: met %v, warning %q", rr.Met, rr.Warning(100))
	}
	if rr := run(time.Second, 0, func(*rateState) {}); !rr.Met || rr.Behind != 0 {
		t.Errorf("never behind: %+v", rr)
	}
	// A merge of clients' runs not met without being behind itself (a client lost):
	// the warning says why, not an empty reason.
	merged := &RateResult{Target: 30}
	if w := merged.Warning(19.8); !strings.Contains(w, "--rate 30): not every client of the run met its share") {
		t.Errorf("merged, not met, never behind: warning %q", w)
	}
}
