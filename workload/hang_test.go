package workload

import (
	"bytes"
	"context"
	"errors"
	"github.com/habench/habench/internal/testmachine"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// lockAt holds a global read lock on s (the writes there hang without failing) from at to
// at+d after the run's workers start; it returns the Reporter that times the start
// (passing intervals to rep), when the lock is taken, and a func that waits for the
// unlock.
func lockAt(t *testing.T, s *testserver.Server, rep Reporter, at, d time.Duration) (Reporter, func() time.Time, func()) {
	t.Helper()
	admin := s.Open(t, "")
	t.Cleanup(func() { admin.Close() })
	started, r := whenStarted(rep)
	var t0 time.Time
	ch := make(chan struct{})
	go func() { <-started; t0 = time.Now(); close(ch) }()
	wait := globalReadLock(t, admin, ch, at, d)
	return r, func() time.Time { <-ch; return t0.Add(at) }, wait
}

// inFlightClause is the end of an interval line with workers in flight.
var inFlightClause = regexp.MustCompile(`reconn/s: \d+\.\d\d \[in flight: [1-4] >= 1 s, longest \d+\.\d\d s; lat includes them as lower bounds\]\n$`)

// longestOutage is the longest of res's outages.
func longestOutage(res *Result) time.Duration {
	var d time.Duration
	for _, o := range res.Outages {
		d = max(d, o.Duration())
	}
	return d
}

// checkMaxCoversOutages is the invariant: a run's max latency is never below the longest
// outage its workers sat in (less slack: a worker that began its event just after the
// last commit, or the time a following worker took to reconnect and commit).
func checkMaxCoversOutages(t *testing.T, res *Result, slack time.Duration) {
	t.Helper()
	if lo := longestOutage(res); res.LatencyMax < float64((lo - slack).Milliseconds()) {
		t.Errorf("latency max %.2f ms is below the longest outage %v (%v)", res.LatencyMax, lo, res.Outages)
	}
}

// checkRecordedAddUp is latency.hlog's invariant: the intervals' Recorded histograms and
// the run's Tail add up to the run's Histogram, bucket by bucket, each event and wait
// once; an interval with waits in flight has them in Histogram only.
func checkRecordedAddUp(t *testing.T, ivs []Interval, res *Result) {
	t.Helper()
	if res.Tail == nil {
		t.Fatal("no Tail histogram in the result of a measured run")
	}
	sum := NewHistogram()
	var flagged int
	for _, iv := range ivs {
		sum.Merge(iv.Recorded)
		if iv.InFlight == 0 {
			if iv.Recorded != iv.Histogram {
				t.Errorf("interval at %v: nothing in flight, yet Recorded is not Histogram", iv.Elapsed)
			}
			continue
		}
		flagged++
		if d := iv.Histogram.TotalCount() - iv.Recorded.TotalCount(); d != int64(iv.InFlight) {
			t.Errorf("interval at %v: Histogram holds %d more than Recorded, want the %d in flight", iv.Elapsed, d, iv.InFlight)
		}
	}
	if flagged == 0 {
		t.Error("no interval had waits in flight: the test proves nothing about Recorded")
	}
	sum.Merge(res.Tail)
	if !sum.Equals(res.Histogram) {
		t.Errorf("intervals' Recorded + Tail (%d values, max %d us) differ from the run's histogram (%d, max %d us)",
			sum.TotalCount(), sum.Max(), res.Histogram.TotalCount(), res.Histogram.Max())
	}
	if len(ivs) > 0 && res.TailFrom != ivs[len(ivs)-1].Elapsed {
		t.Errorf("tail from %v, want from the last interval's end %v", res.TailFrom, ivs[len(ivs)-1].Elapsed)
	}
}

// TestHang makes one MariaDB server hang (a global read lock: the writes wait without
// failing) under runs: a following run moves to a second server when Follow names it
// (the abandoned transactions unknown, their waits in the latencies); a run that ends with
// its workers hung ends EndGrace after its time limit with their waits as lower bounds and
// a WARNING; the interval lines show the waits in progress; under --rate the execution
// time stays within the wall time.
func TestHang(t *testing.T) {
	if testing.Short() {
		t.Skip("real-server tests skipped in -short mode")
	}
	testmachine.Alone(t) // it times hangs and an open-loop rate: nothing else may load the machine
	s1, s2 := testserver.StartMariaDB(t), testserver.StartMariaDB(t)
	tg1, tg2 := serverTarget(s1, "sbtest"), serverTarget(s2, "sbtest")
	tg2.Endpoints[0].Name = "n2"
	rw := mustLookup(t, "oltp_read_write")
	o := runOpts(4, 0)
	o.Tables, o.TableSize = 1, 1000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tg := range []Target{tg1, tg2} {
		if err := rw.Prepare(ctx, tg, o, nil); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("follow_moves_off_a_hung_writer", func(t *testing.T) {
		// n1 hangs at 1 s; Follow names n2 from 1.5 s: the workers move at the
		// WriterHang bound (2 s after their events began, ~3 s) plus a watchdog tick.
		var named atomic.Bool
		tg := tg1
		tg.Follow = func(context.Context) (Endpoint, error) {
			if named.Load() {
				return tg2.Endpoints[0], nil
			}
			return tg1.Endpoints[0], nil
		}
		oo := o
		oo.Time = 6 * time.Second
		oo.IgnoreErrors = lostIgnored()
		rep, lockedAt, unlocked := lockAt(t, s1, nil, time.Second, 6*time.Second)
		defer unlocked()
		time.AfterFunc(1500*time.Millisecond, func() { named.Store(true) })
		res, err := rw.Run(ctx, tg, oo, rep)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		locked := lockedAt()
		t.Logf("moves %+v; unknown %d; waits %+v; max %.2f ms; outages %v", res.WriterMoves, res.Unknown, res.Waits, res.LatencyMax, res.Outages)
		if len(res.WriterMoves) != 1 {
			t.Fatalf("writer moves %+v, want one n1 -> n2", res.WriterMoves)
		}
		m := res.WriterMoves[0]
		if m.From != "n1" || m.To != "n2" || m.Workers != 4 || m.Abandoned != 4 || m.FirstCommit.Before(m.At) {
			t.Errorf("move %+v: want n1 -> n2 by the 4 workers, each abandoning its transaction, and a first commit after it", m)
		}
		if d := m.At.Sub(locked); d < DefaultWriterHang-100*time.Millisecond || d > DefaultWriterHang+time.Second {
			t.Errorf("moved %v after the lock, want within the %v bound + 1 s", d, DefaultWriterHang)
		}
		if res.Unknown != 4 || res.WaitCount != 4 || !res.Waits[0].Abandoned || res.Waits[0].Endpoint != "n1" {
			t.Errorf("unknown %d, waits %+v: want the 4 abandoned transactions on n1", res.Unknown, res.Waits)
		}
		if hang := m.At.Sub(locked); res.LatencyMax < float64(hang.Milliseconds()) || res.Histogram.Max() < hang.Microseconds()*99/100 {
			t.Errorf("latency max %.2f ms, histogram max %d us: below the hang of %v", res.LatencyMax, res.Histogram.Max(), hang)
		}
		if n := res.Histogram.TotalCount(); n != res.Transactions+int64(res.WaitCount) {
			t.Errorf("histogram holds %d, want the %d transactions and %d waits once each", n, res.Transactions, res.WaitCount)
		}
		if ep := res.PerEndpoint["n2"]; ep.Transactions == 0 {
			t.Errorf("no transaction on n2: %+v", res.PerEndpoint)
		}
		checkMaxCoversOutages(t, res, 500*time.Millisecond)
	})

	t.Run("hung_at_the_end", func(t *testing.T) {
		// n1 hangs at 1 s and stays hung: the run ends EndGrace after its 3 s, its
		// workers' waits are lower bounds in the latencies, the intervals show them.
		oo := o
		oo.Time, oo.ReportInterval = 3*time.Second, time.Second
		rec := &recorder{}
		rep, lockedAt, unlocked := lockAt(t, s1, rec, time.Second, oo.Time+EndGrace)
		defer unlocked()
		start := time.Now()
		res, err := rw.Run(ctx, tg1, oo, rep)
		took := time.Since(start)
		var lost *EndpointLostError
		if !errors.As(err, &lost) {
			t.Fatalf("err = %v, want the endpoint lost (open outage)", err)
		}
		hang := time.Since(lockedAt())
		t.Logf("run took %v; waits %d %+v; max %.2f ms; outages %v", took, res.WaitCount, res.Waits, res.LatencyMax, res.Outages)
		if took > oo.Time+EndGrace+2*time.Second {
			t.Errorf("run took %v, want it ended about EndGrace after its time", took)
		}
		if res.WaitCount != 4 || res.Unknown != 0 || res.Waits[0].Abandoned || res.Waits[0].Waited < hang-time.Second {
			t.Errorf("waits %d %+v, unknown %d: want the 4 in flight at the end, the longest about %v", res.WaitCount, res.Waits, res.Unknown, hang)
		}
		checkMaxCoversOutages(t, res, 10*time.Millisecond)
		var out bytes.Buffer
		PrintOutages(&out, res)
		if !strings.Contains(out.String(), "WARNING: a transaction on n1 waited at least ") || !strings.Contains(out.String(), "in flight at the end of the run") {
			t.Errorf("no WARNING about the waits:\n%s", out.String())
		}
		out.Reset()
		PrintSummary(&out, res, oo)
		if !strings.Contains(out.String(), "Lower bounds (habench): 4 transactions never completed") {
			t.Errorf("summary lacks the lower bounds line:\n%s", out.String())
		}
		var flagged int
		for _, iv := range rec.ivs {
			if iv.InFlight > 0 {
				flagged++
				if iv.LatencyMax < float64(iv.LongestInFlight.Milliseconds()) || iv.LatencyMax < 1000 {
					t.Errorf("interval at %v: max %.2f ms below its in-flight wait %v", iv.Elapsed, iv.LatencyMax, iv.LongestInFlight)
				}
				out.Reset()
				PrintInterval(&out, iv, oo)
				if !inFlightClause.MatchString(out.String()) {
					t.Errorf("interval line lacks the in-flight clause: %q", out.String())
				}
			}
		}
		if flagged == 0 {
			t.Errorf("no interval shows the workers in flight: %+v", rec.ivs)
		}
	})

	t.Run("rate_execution_time_within_wall_time", func(t *testing.T) {
		// One worker, 200/s, n1 hung from 1 s to 2.5 s: the arrivals queue; their
		// latencies (from arrival) sum to far more than the run, their service times not.
		oo := o
		oo.Threads, oo.Rate, oo.Time = 1, 200, 4*time.Second
		rep, _, unlocked := lockAt(t, s1, nil, time.Second, 1500*time.Millisecond)
		res, err := rw.Run(ctx, tg1, oo, rep)
		unlocked()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("execution time %.2f s, latency sum %.2f s, total time %v", res.ExecTimeAvg, res.LatencySum/1000, res.TotalTime)
		if res.LatencySum/1000 <= res.TotalTime.Seconds() {
			t.Fatalf("latency sum %.2f s within the run: no queueing, the test proves nothing", res.LatencySum/1000)
		}
		if res.ExecTimeAvg > res.TotalTime.Seconds()+1 {
			t.Errorf("execution time %.2f s per thread exceeds the run's %v", res.ExecTimeAvg, res.TotalTime)
		}
	})
}

// deadEndpoint is an endpoint named name on a loopback port nothing listens on: every
// connect is refused (2003).
func deadEndpoint(t *testing.T, name string) Endpoint {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return Endpoint{Name: name, Host: "127.0.0.1", Port: port}
}

// TestHangEdges are the hang watchdog's edge cases, on one MariaDB server hung by a
// global read lock: an abandoned transaction whose worker cannot reconnect before the run
// ends is one wait, not two; a Follow that answers only after the hung transactions
// completed does not abandon the ones begun since; a transaction abandoned in the
// warm-up is not among the measured part's waits.
func TestHangEdges(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server tests skipped in -short mode")
	}
	s := testserver.StartMariaDB(t)
	tg := serverTarget(s, "sbtest")
	alias := tg.Endpoints[0] // the same server under another writer's label
	alias.Name = "n2"
	rw := mustLookup(t, "oltp_read_write")
	o := runOpts(4, 0)
	o.Tables, o.TableSize = 1, 1000
	o.IgnoreErrors = lostIgnored()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := rw.Prepare(ctx, tg, o, nil); err != nil {
		t.Fatal(err)
	}

	t.Run("abandoned_then_the_run_ends", func(t *testing.T) {
		// n1 hangs from 1 s to the end; Follow names n2, where nothing listens: the
		// workers abandon at ~3 s and still reconnect when the run ends at 6 s. Each
		// worker's wait is split, never counted twice: its abandoned transaction's up to
		// ~3 s, then its next one's (the reconnect) to the end, in flight.
		tt := tg
		dead := deadEndpoint(t, "n2")
		tt.Follow = func(context.Context) (Endpoint, error) { return dead, nil }
		oo := o
		oo.Time, oo.ReportInterval = 6*time.Second, time.Second
		rec := &recorder{}
		rep, _, unlocked := lockAt(t, s, rec, time.Second, oo.Time+EndGrace)
		defer unlocked()
		res, err := rw.Run(ctx, tt, oo, rep)
		if res == nil {
			t.Fatalf("run: %v", err)
		}
		t.Logf("err %v; unknown %d; waits %d %+v", err, res.Unknown, res.WaitCount, res.Waits)
		left := map[int]time.Duration{} // by worker, when it abandoned (run's clock)
		first, last := time.Hour, time.Duration(0)
		for _, w := range res.Waits {
			if w.Abandoned {
				left[w.Worker] = w.At + w.Waited
				first, last = min(first, w.At+w.Waited), max(last, w.At+w.Waited)
			}
		}
		if res.Unknown != 4 || res.WaitCount != 8 || len(left) != 4 {
			t.Fatalf("unknown %d, waits %d: want the 4 abandoned transactions and the 4 next ones in flight at the end", res.Unknown, res.WaitCount)
		}
		for _, w := range res.Waits {
			at := left[w.Worker]
			if !w.Abandoned && (w.At < at || w.At > at+50*time.Millisecond || w.Endpoint != "n2") {
				t.Errorf("worker %d in flight at the end from %v on %s, want from its abandon at %v, on n2", w.Worker, w.At, w.Endpoint, at)
			}
		}
		for _, iv := range rec.ivs {
			if iv.Elapsed > last+500*time.Millisecond && iv.LongestInFlight > iv.Elapsed-first+300*time.Millisecond {
				t.Errorf("interval at %v: in flight for %v, longer than since the abandons at %v", iv.Elapsed, iv.LongestInFlight, first)
			}
		}
		checkRecordedAddUp(t, rec.ivs, res)
	})

	t.Run("follow_answers_after_the_hang", func(t *testing.T) {
		// n1 hangs from 1 s to 3.5 s; the watchdog asks Follow at ~3 s, and Follow names
		// n2 only 1.5 s after the unlock (~5 s), when the hung transactions have committed
		// and the workers' new ones have run for less than the 2 s hang bound: nothing is
		// hung, nothing abandoned. (It answered 1 s after the question before: 0.5 s after
		// the unlock, which a loaded machine did not leave the hung transactions to finish.)
		oo := o
		oo.Time = 8 * time.Second
		rep, lockedAt, unlocked := lockAt(t, s, nil, time.Second, 2500*time.Millisecond)
		defer unlocked()
		hangBegun, unlockDone := make(chan struct{}), make(chan struct{})
		go func() { time.Sleep(time.Until(lockedAt())); close(hangBegun) }()
		go func() { unlocked(); close(unlockDone) }()
		tt := tg
		tt.Follow = func(context.Context) (Endpoint, error) {
			select {
			case <-hangBegun: // asked about the hang: answer once it is over
				<-unlockDone
				time.Sleep(1500 * time.Millisecond)
			default:
				time.Sleep(time.Second)
			}
			return alias, nil
		}
		res, err := rw.Run(ctx, tt, oo, rep)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		t.Logf("unknown %d; moves %+v; waits %d", res.Unknown, res.WriterMoves, res.WaitCount)
		if res.Unknown != 0 || len(res.WriterMoves) != 0 {
			t.Errorf("unknown %d, moves %+v: want no transaction abandoned, no move", res.Unknown, res.WriterMoves)
		}
	})

	t.Run("abandoned_in_the_warmup", func(t *testing.T) {
		// n1 hangs from 0.5 s to 4 s of a 4.5 s warm-up; Follow names n2: the workers
		// abandon at ~2.5 s, in the warm-up (2 s before its end: room for a late lock on a
		// loaded machine), and the measured part is clean.
		tt := tg
		tt.Follow = func(context.Context) (Endpoint, error) { return alias, nil }
		oo := o
		oo.Warmup, oo.Time = 4500*time.Millisecond, 2*time.Second
		rep, _, unlocked := lockAt(t, s, nil, 500*time.Millisecond, 3500*time.Millisecond)
		defer unlocked()
		res, err := rw.Run(ctx, tt, oo, rep)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		t.Logf("unknown %d; moves %+v; waits %d %+v; warning %q", res.Unknown, res.WriterMoves, res.WaitCount, res.Waits, res.WaitWarning())
		if res.Unknown != 0 || res.WaitCount != 0 || res.WaitWarning() != "" {
			t.Errorf("unknown %d, waits %d, warning %q: want the warm-up's abandoned transactions out of the measured part",
				res.Unknown, res.WaitCount, res.WaitWarning())
		}
	})

	t.Run("last_word_hung_at_the_end", func(t *testing.T) {
		// The events' last word (eventFinisher, bulk_insert's pending rows) hangs on the
		// server: the run still ends EndGrace after its time, failing.
		oo := o
		oo.Threads, oo.Time = 1, time.Second
		start := time.Now()
		_, err := runEvents(ctx, tg, oo, nil, "sleepy", sleepySource{})
		took := time.Since(start)
		t.Logf("took %v; err %v", took, err)
		if took > oo.Time+EndGrace+3*time.Second {
			t.Errorf("run took %v, want it ended about EndGrace after its time", took)
		}
		if err == nil || !strings.Contains(err.Error(), "after the time limit") {
			t.Errorf("err = %v, want the last statement cut after the time limit", err)
		}
	})
}

// sleepySource's events sleep 10 ms without a statement; their last word sleeps a minute
// on the server.
type sleepySource struct{}

func (sleepySource) statements() []string  { return nil }
func (sleepySource) autocommits() bool     { return false }
func (sleepySource) newEvents(int) eventer { return sleepySource{} }

func (sleepySource) event(*Conn) error { time.Sleep(10 * time.Millisecond); return nil }

func (sleepySource) finish(c *Conn) error { return c.Plain("DO SLEEP(60)") }
