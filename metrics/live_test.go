package metrics

import (
	"context"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/workload"
)

// sum adds up every series of f (0 when f is nil: no series yet).
func sum(f *dto.MetricFamily) float64 {
	var n float64
	for _, m := range f.GetMetric() {
		n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return n
}

// TestLiveCountersMoveWithinAnInterval runs a real workload with a report interval
// longer than the run: the counters still move between two scrapes 500 ms apart, never
// go down or past the Result's counts, and end at them.
func TestLiveCountersMoveWithinAnInterval(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server test skipped in -short mode")
	}
	s := testserver.StartMariaDB(t)
	tg := workload.Target{Endpoints: []workload.Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}}, User: "root", DB: "sbtest"}
	rw, err := workload.Lookup("oltp_read_write")
	if err != nil {
		t.Fatal(err)
	}
	o := workload.DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Time = 1, 1000, 2, 5*time.Second
	o.Warmup = time.Second
	o.ReportInterval = time.Minute // no interval ends during the run
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := rw.Prepare(ctx, tg, o, nil); err != nil {
		t.Fatal(err)
	}

	m := New()
	m.StartRun(Run{Workload: rw.Name()})
	var intervals int
	var mu sync.Mutex
	attached := make(chan time.Time, 1)
	rep := workload.WithLive(workload.ReporterFunc(func(iv workload.Interval) {
		mu.Lock()
		intervals++
		mu.Unlock()
		m.ObserveInterval(iv)
	}), func(l *workload.Live) {
		m.AttachLive(l)
		attached <- time.Now()
	})
	type scrape struct {
		at           time.Time
		tx, rd, errs float64
	}
	var scrapes []scrape
	done := make(chan struct{})
	go func() {
		defer close(done)
		t0 := <-attached
		// Measured from t0 + warm-up (1 s) to t0 + 6 s: scrape at 2, 2.5 and 5 s.
		for _, at := range []time.Duration{2 * time.Second, 2500 * time.Millisecond, 5 * time.Second} {
			time.Sleep(time.Until(t0.Add(at)))
			f := gather(t, m)
			scrapes = append(scrapes, scrape{time.Now(), value(f[Transactions]), value(f[Queries], "type=read"), sum(f[Errors])})
		}
	}()
	res, err := rw.Run(ctx, tg, o, rep)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	m.EndRun()
	if intervals != 0 {
		t.Fatalf("%d intervals reported: the test needs none during the run", intervals)
	}
	for _, sc := range scrapes {
		t.Logf("scrape at +%s: transactions %v, reads %v, ignored errors %v", sc.at.Sub(scrapes[0].at).Round(time.Millisecond), sc.tx, sc.rd, sc.errs)
	}
	if !(scrapes[1].tx > scrapes[0].tx && scrapes[0].tx > 0) {
		t.Errorf("transactions %v then %v 500 ms later, within one report interval: want them moving", scrapes[0].tx, scrapes[1].tx)
	}
	// 14 reads per transaction, and as in sysbench the reads of an attempt that failed
	// with an ignored error (a deadlock on this one small table) count too: at most 14
	// each. A scrape never sees half of a worker's transaction (one lock per worker).
	if sc := scrapes[1]; sc.rd < 14*sc.tx || sc.rd > 14*(sc.tx+sc.errs) {
		t.Errorf("reads %v for %v transactions and %v ignored errors: want 14 per transaction, up to 14 per error", sc.rd, sc.tx, sc.errs)
	}
	rate := (scrapes[2].tx - scrapes[0].tx) / scrapes[2].at.Sub(scrapes[0].at).Seconds()
	t.Logf("counter rate %.1f/s; Result %d transactions, %.1f tps", rate, res.Transactions, res.TPS())
	// Counters only grow, and never past the Result's count. (Their rate is not compared
	// with the run's TPS: on the loaded CI machine a 3 s window ran at 208/s in a run of
	// 157 tps. Counters that moved once per report interval would not move at all here,
	// and counters counting twice end above the Result: the checks above and below.)
	for i, sc := range scrapes {
		if i > 0 && sc.tx < scrapes[i-1].tx {
			t.Errorf("transactions went down from %v to %v", scrapes[i-1].tx, sc.tx)
		}
		if sc.tx > float64(res.Transactions) {
			t.Errorf("transactions %v at a scrape during the run, Result %d at its end", sc.tx, res.Transactions)
		}
	}
	f := gather(t, m)
	if got := value(f[Transactions]); got != float64(res.Transactions) {
		t.Errorf("after the run: %s %v, Result %d (warm-up excluded)", Transactions, got, res.Transactions)
	}
	if got := value(f[Queries], "type=write"); got != float64(res.Writes) {
		t.Errorf("after the run: writes %v, Result %d", got, res.Writes)
	}
}
