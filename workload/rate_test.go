package workload

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"github.com/habench/habench/internal/testmachine"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// globalReadLock holds FLUSH TABLES WITH READ LOCK on its own connection from at to
// at+d after start is closed (a stall of every write on the server) and returns a func
// that waits for the UNLOCK TABLES.
func globalReadLock(t *testing.T, db *sql.DB, start <-chan struct{}, at, d time.Duration) func() {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close()
		<-start
		time.Sleep(at)
		if _, err := conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
			t.Errorf("FLUSH TABLES WITH READ LOCK: %v", err)
			return
		}
		time.Sleep(d)
		if _, err := conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
			t.Errorf("UNLOCK TABLES: %v", err)
		}
	}()
	return func() { <-done }
}

// whenStarted returns a channel closed when the run's workers start and a Reporter
// (passing intervals to rep, which may be nil) that closes it: a stall is timed from the
// run's start, not from before its connections were made.
func whenStarted(rep Reporter) (<-chan struct{}, Reporter) {
	ch := make(chan struct{})
	return ch, WithLive(rep, func(*Live) { close(ch) })
}

// intervalLog collects intervals and prints them as habench would.
type intervalLog struct {
	mu  sync.Mutex
	o   Options
	ivs []Interval
	out bytes.Buffer
}

func (l *intervalLog) Interval(iv Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ivs = append(l.ivs, iv)
	PrintInterval(&l.out, iv, l.o)
}

// TestRate runs the open-loop --rate cases against one throwaway MariaDB: a stall held
// on the server shows in the latency percentiles (not in the service time) and misses
// the target rate even though the queue caught up with it, a rate the
// server cannot sustain is warned about with a growing queue, and a warm-up's backlog
// is dropped.
func TestRate(t *testing.T) {
	if testing.Short() {
		t.Skip("real-server tests skipped in -short mode")
	}
	testmachine.Alone(t) // it measures an open-loop rate's timing: nothing else may load the machine
	s := testserver.StartMariaDB(t)
	admin := s.Open(t, "")
	tg := serverTarget(s, "sbtest")
	o := DefaultOptions()
	o.Tables, o.TableSize = 1, 1000
	if err := mustLookup(t, "oltp_read_write").Prepare(context.Background(), tg, o, nil); err != nil {
		t.Fatal(err)
	}
	upd := mustLookup(t, "oltp_update_index")

	t.Run("stall_counts_in_latency_not_service_time", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ro := o
		ro.Threads, ro.Rate, ro.Time, ro.ReportInterval = 2, 50, 6*time.Second, time.Second
		ro.ExtraPercentiles = []float64{99}
		log := &intervalLog{o: ro}
		started, rep := whenStarted(log)
		wait := globalReadLock(t, admin, started, time.Second, 3*time.Second)
		res, err := upd.Run(ctx, tg, ro, rep)
		wait()
		if err != nil {
			t.Fatal(err)
		}
		var sum bytes.Buffer
		PrintSummary(&sum, res, ro)
		t.Logf("intervals:\n%ssummary:\n%s", log.out.String(), sum.String())
		rr := res.Rate
		if rr == nil {
			t.Fatal("Result.Rate is nil under --rate")
		}
		// About half of the arrivals came during the 3 s stall and waited for it.
		if res.LatencyP95 < 1000 || res.LatencyP99 < 1000 || res.LatencyPct < 1000 {
			t.Errorf("latency p95 %.2f ms, p99 %.2f ms, --percentile %.2f ms: want >= 1000 ms with a 3 s stall under --rate",
				res.LatencyP95, res.LatencyP99, res.LatencyPct)
		}
		// Only the two events in progress when the lock came waited in the server.
		if rr.ServiceP95 > 200 {
			t.Errorf("service time p95 %.2f ms: want the queueing excluded (< 200 ms)", rr.ServiceP95)
		}
		if rr.ServiceMax < 1000 {
			t.Errorf("service time max %.2f ms: the events blocked by the lock took >= 1 s", rr.ServiceMax)
		}
		if rr.MaxBacklogAge < 2*time.Second {
			t.Errorf("longest queue wait %s: want >= 2 s", rr.MaxBacklogAge)
		}
		// It caught up, but was behind for the stall: not met, said how long.
		if rr.Met || rr.Behind < 2*time.Second || rr.Behind > 5*time.Second || rr.MaxBacklog < 50 {
			t.Errorf("behind during a 3 s stall: met %v, behind %s, max backlog %d; want false, 2..5 s, >= 50", rr.Met, rr.Behind, rr.MaxBacklog)
		}
		if !regexp.MustCompile(`WARNING: the target rate was not met \(more than 1s behind --rate 50\): the run was behind for \d\.\d\d s \(from \d\.\d\d s to \d\.\d\d s of the measured run\)`).MatchString(sum.String()) {
			t.Errorf("summary lacks the behind WARNING:\n%s", sum.String())
		}
		if !strings.Contains(sum.String(), "Service time (ms, without the time queued): avg: ") ||
			!regexp.MustCompile(`(?m)^         99th percentile: +\d`).MatchString(sum.String()) {
			t.Errorf("summary lacks the service time line or the 99th percentile:\n%s", sum.String())
		}
		// Some interval during the stall had a queue and was behind.
		var maxQ int
		var maxAge time.Duration
		for _, iv := range log.ivs {
			maxQ = max(maxQ, iv.QueueLength)
			if iv.Rate != nil {
				maxAge = max(maxAge, iv.Rate.BacklogAge)
			}
		}
		if maxQ < 50 || maxAge < time.Second {
			t.Errorf("largest interval queue length %d, backlog age %s: want >= 50 and >= 1 s during a 3 s stall at 50/s", maxQ, maxAge)
		}
	})

	t.Run("unsustainable_rate_warns", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ro := o
		ro.Threads, ro.Rate, ro.Time, ro.ReportInterval = 1, 5000, 3*time.Second, time.Second
		log := &intervalLog{o: ro}
		res, err := mustLookup(t, "oltp_read_write").Run(ctx, tg, ro, log)
		if err != nil {
			t.Fatal(err)
		}
		var sum bytes.Buffer
		PrintSummary(&sum, res, ro)
		t.Logf("intervals:\n%ssummary:\n%s", log.out.String(), sum.String())
		if res.Rate == nil || res.Rate.Met {
			t.Fatalf("--rate 5000 on 1 thread of oltp_read_write: Met should be false: %+v", res.Rate)
		}
		if !regexp.MustCompile(`(?m)^\[ [23]s \] behind --rate: the oldest queued arrival has waited \d+\.\d{3} s, \d+ queued; \d+ arrived, \d+ done in this interval$`).MatchString(log.out.String()) {
			t.Errorf("intervals lack the behind --rate line:\n%s", log.out.String())
		}
		if !strings.Contains(sum.String(), "WARNING: the target rate was not met") {
			t.Errorf("summary lacks the WARNING:\n%s", sum.String())
		}
		// sysbench's queue line, growing from interval to interval.
		re := regexp.MustCompile(`(?m)^\[ \d+s \] queue length: (\d+), concurrency: (\d+)$`)
		m := re.FindAllStringSubmatch(log.out.String(), -1)
		if len(m) < 2 {
			t.Fatalf("want >= 2 queue lines:\n%s", log.out.String())
		}
		prev := -1
		for _, x := range m {
			q, _ := strconv.Atoi(x[1])
			if q <= prev {
				t.Errorf("queue length %d after %d: want it growing:\n%s", q, prev, log.out.String())
			}
			prev = q
		}
		if res.Rate.Backlog < 1000 || res.Rate.BacklogAge < time.Second {
			t.Errorf("backlog %d, oldest %s at the end: want >= 1000 and >= 1 s", res.Rate.Backlog, res.Rate.BacklogAge)
		}
		if res.LatencyP95 < 500 {
			t.Errorf("latency p95 %.2f ms: the queueing must count", res.LatencyP95)
		}
	})

	t.Run("queue_overflow_is_fatal", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ro := o
		ro.Threads, ro.Rate, ro.Time = 1, 400000, 5*time.Second
		// Every write waits for the lock: 131072 arrivals queue up in well under 5 s.
		now := make(chan struct{})
		close(now)
		wait := globalReadLock(t, admin, now, 0, 3*time.Second)
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		_, err := upd.Run(ctx, tg, ro, nil)
		d := time.Since(start)
		wait()
		if !errors.Is(err, errQueueFull) {
			t.Fatalf("--rate 400000 against a locked server: %v, want the queue-full error", err)
		}
		t.Logf("after %s: %v", d.Round(time.Millisecond), err)
		if d > 2500*time.Millisecond {
			t.Errorf("the run ended %s after it started, when the lock (3 s) was released: want it to end as the queue filled", d)
		}
	})

	t.Run("warmup_backlog_dropped", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ro := o
		ro.Threads, ro.Rate, ro.Time, ro.Warmup = 2, 50, 3*time.Second, 2*time.Second
		// The lock covers the warm-up's last 1.5 s and the measured part's first 0.5 s.
		started, rep := whenStarted(nil)
		wait := globalReadLock(t, admin, started, 500*time.Millisecond, 2*time.Second)
		res, err := upd.Run(ctx, tg, ro, rep)
		wait()
		if err != nil {
			t.Fatal(err)
		}
		var sum bytes.Buffer
		PrintSummary(&sum, res, ro)
		t.Logf("summary:\n%s", sum.String())
		rr := res.Rate
		if rr.WarmupDropped < 30 || rr.WarmupUnmeasured < 1 {
			t.Errorf("warm-up arrivals dropped %d, unmeasured %d: want >= 30 (1.5 s at 50/s) and >= 1", rr.WarmupDropped, rr.WarmupUnmeasured)
		}
		// Measured arrivals waited at most the 0.5 s of the lock inside the measured part.
		if res.LatencyMax > 1500 {
			t.Errorf("latency max %.2f ms: the warm-up's backlog was carried into the measured run", res.LatencyMax)
		}
		if !strings.Contains(sum.String(), "NOTE: the warm-up's backlog was not carried into the measured run") {
			t.Errorf("summary lacks the warm-up NOTE:\n%s", sum.String())
		}
		if res.Transactions < rr.Arrivals-10 || res.Transactions > rr.Arrivals {
			t.Errorf("%d transactions for %d measured arrivals", res.Transactions, rr.Arrivals)
		}
	})
}
