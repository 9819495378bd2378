package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// recorder is a StartReporter that keeps everything it hears, in order.
type recorder struct {
	mu     sync.Mutex
	ivs    []Interval
	notes  []string
	events []string // "note", "started"
}

func (r *recorder) Interval(iv Interval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ivs = append(r.ivs, iv)
}

func (r *recorder) Note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, msg)
	r.events = append(r.events, "note")
}

func (r *recorder) Started() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "started")
}

// lostIgnored is the ignore list of a run that rides through a dead server.
func lostIgnored() []uint16 {
	return append(DefaultIgnoreErrors[:len(DefaultIgnoreErrors):len(DefaultIgnoreErrors)], 2013, 2006, 2003, 1053, 1927)
}

// TestServerKilled kills the server (kill -9 of mariadbd) in the middle of runs: with
// sysbench's default ignore list the run ends with the lost connection's error; with the
// connection codes ignored the workers reconnect, the interval lines show the errors and
// reconnects, and the result names the endpoint's outage, closed when the server comes
// back on the same port and datadir, open (and the run failed) when it does not.
func TestServerKilled(t *testing.T) {
	t.Parallel()
	s := testserver.StartMariaDB(t)
	tg := serverTarget(s, "sbtest")
	rw := mustLookup(t, "oltp_read_write")
	o := runOpts(4, 0)
	o.Tables, o.TableSize = 1, 1000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := rw.Prepare(ctx, tg, o, nil); err != nil {
		t.Fatal(err)
	}

	t.Run("many_workers_one_error_line", func(t *testing.T) {
		// --tables 2 on 1 prepared table: every worker's PREPARE on sbtest2 fails (1146).
		oo := runOpts(16, time.Second)
		oo.Tables = 2
		_, err := rw.Run(ctx, tg, oo, nil)
		if err == nil {
			t.Fatal("run on a missing table succeeded")
		}
		msg := err.Error()
		t.Logf("error (%d bytes): %s", len(msg), msg)
		if !strings.Contains(msg, "(and 15 more workers: error 1146 on n1)") || strings.Contains(msg, "\n") || len(msg) > 400 {
			t.Errorf("16 workers failing alike: %q; want one line naming 1146 and the count", msg)
		}
	})

	t.Run("default_fails_like_sysbench", func(t *testing.T) {
		o := o
		o.Time = 10 * time.Second
		// Times are compared on the wall clock: the run's own clock starts after its
		// pre-flight and connections, which a loaded machine makes slow.
		killed := make(chan struct{})
		var killedAt time.Time
		time.AfterFunc(time.Second, func() { killedAt = time.Now(); s.Kill(t); close(killed) })
		defer func() { <-killed; s.Restart(t) }()
		start := time.Now()
		res, err := rw.Run(ctx, tg, o, nil)
		<-killed
		var se *StatementError
		if !errors.As(err, &se) || (se.Code != 2013 && se.Code != 2006) || se.Endpoint != "n1" {
			t.Fatalf("err = %v, want a StatementError on n1 with 2013 or 2006", err)
		}
		t.Logf("error: %v", err)
		if !regexp.MustCompile(`MySQL error 20(13|06) \((Lost connection to MySQL server during query|MySQL server has gone away)\)`).MatchString(err.Error()) {
			t.Errorf("error text %q lacks the client code and its text", err)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("run went on for %v after the kill at 1 s", d)
		}
		if res == nil || len(res.Outages) != 1 || res.Outages[0].Endpoint != "n1" || !res.Outages[0].Open {
			t.Fatalf("outages %+v, want one open outage of n1", res)
		}
		if d := res.Outages[0].StartedAt.Sub(killedAt); d < -100*time.Millisecond || d > time.Second {
			t.Errorf("outage starts %v after the kill, want near it", d)
		}
	})

	t.Run("ignored_reconnects_and_records_the_outage", func(t *testing.T) {
		o := o
		o.Time, o.ReportInterval = 9*time.Second, time.Second
		o.IgnoreErrors = lostIgnored()
		var killedAt, restartedAt time.Time // wall clock, as in the first subtest
		done := make(chan struct{})
		time.AfterFunc(2*time.Second, func() {
			defer close(done)
			killedAt = time.Now()
			s.Kill(t)
			time.Sleep(2 * time.Second)
			s.Restart(t)
			restartedAt = time.Now()
		})
		rec := &recorder{}
		res, err := rw.Run(ctx, tg, o, rec)
		<-done
		if err != nil {
			t.Fatalf("run with the connection errors ignored: %v", err)
		}
		var out bytes.Buffer
		PrintOutages(&out, res)
		for _, iv := range rec.ivs {
			PrintInterval(&out, iv, o)
			t.Logf("interval at %v: length %v", iv.Elapsed, iv.Length)
		}
		t.Logf("server back %v after the kill; output:\n%s", restartedAt.Sub(killedAt), out.String())
		var errSec, reconnSec, tpsLast float64
		for _, iv := range rec.ivs {
			errSec = max(errSec, iv.ErrPerSec)
			reconnSec = max(reconnSec, iv.ReconnPerSec)
			tpsLast = iv.TPS
		}
		if errSec == 0 || reconnSec == 0 {
			t.Errorf("interval lines: max err/s %.2f, max reconn/s %.2f; want both > 0", errSec, reconnSec)
		}
		if !regexp.MustCompile(`err/s: [1-9][0-9.]* reconn/s: [0-9.]+`).MatchString(out.String()) {
			t.Errorf("no interval line shows err/s > 0")
		}
		if tpsLast == 0 {
			t.Errorf("TPS did not resume after the restart")
		}
		if res.ErrorsByCode[2013]+res.ErrorsByCode[2006] < 1 || res.ErrorsByCode[2003] < 1 || res.Reconnects < 4 {
			t.Errorf("errors by code %v, reconnects %d: want 2013/2006, 2003 (refused while down) and a reconnect per worker",
				res.ErrorsByCode, res.Reconnects)
		}
		if len(res.Outages) != 1 {
			t.Fatalf("outages %+v, want one", res.Outages)
		}
		ot := res.Outages[0]
		fromKill, fromRestart := ot.StartedAt.Sub(killedAt), ot.StartedAt.Add(ot.Duration()).Sub(restartedAt)
		if ot.Endpoint != "n1" || ot.Open || fromKill < -200*time.Millisecond || fromKill > time.Second ||
			fromRestart < -500*time.Millisecond || fromRestart > 3*time.Second || ot.Duration() < 1500*time.Millisecond {
			t.Errorf("outage %+v (%s): starts %v after the kill, ends %v after the restart; want n1 from the kill to just after the restart", ot, ot, fromKill, fromRestart)
		}
		if !strings.Contains(out.String(), "WARNING: n1 could not commit from ") {
			t.Errorf("PrintOutages does not warn:\n%s", out.String())
		}
	})

	t.Run("stall_without_errors_is_an_outage", func(t *testing.T) {
		// A global read lock from 1 s to 3 s: the writes hang without failing.
		admin := s.Open(t, "")
		lock, err := admin.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		oo := o
		oo.Time = 4 * time.Second
		var locked, unlocked time.Time // wall clock, as in the first subtest
		done := make(chan struct{})
		time.AfterFunc(time.Second, func() {
			defer close(done)
			if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
				t.Errorf("FTWRL: %v", err)
			}
			locked = time.Now()
			time.Sleep(2 * time.Second)
			lock.ExecContext(ctx, "UNLOCK TABLES")
			unlocked = time.Now()
		})
		res, err := rw.Run(ctx, tg, oo, nil)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Outages) != 1 {
			t.Fatalf("outages %v, want one (the stall)", res.Outages)
		}
		ot := res.Outages[0]
		fromLock, fromUnlock := ot.StartedAt.Sub(locked), ot.StartedAt.Add(ot.Duration()).Sub(unlocked)
		t.Logf("outage starts %v after the lock, ends %v after the unlock: %s", fromLock, fromUnlock, ot)
		if ot.Endpoint != "n1" || ot.Open || ot.Failures != 0 || fromLock < -500*time.Millisecond || fromLock > 100*time.Millisecond ||
			fromUnlock < -100*time.Millisecond || fromUnlock > time.Second || !strings.Contains(ot.String(), "no failed attempt") {
			t.Errorf("outage %+v (%s): starts %v after the lock, ends %v after the unlock; want n1 stalled from the lock to the unlock, no failures", ot, ot, fromLock, fromUnlock)
		}
	})

	t.Run("ignored_not_restarted_is_an_error", func(t *testing.T) {
		o := o
		o.Time = 3 * time.Second
		o.IgnoreErrors = lostIgnored()
		killed := make(chan struct{})
		time.AfterFunc(time.Second, func() { s.Kill(t); close(killed) })
		defer func() { <-killed; s.Restart(t) }()
		res, err := rw.Run(ctx, tg, o, nil)
		var lost *EndpointLostError
		if !errors.As(err, &lost) || len(lost.Outages) != 1 || lost.Outages[0].Endpoint != "n1" || !lost.Outages[0].Open {
			t.Fatalf("err = %v, want an EndpointLostError naming n1", err)
		}
		t.Logf("error: %v", err)
		if res == nil || res.ErrorsByCode[2003] < 1 || len(res.Outages) != 1 {
			t.Errorf("result %+v: want 2003 counted and the outage", res)
		}
	})
}

// TestPreflight: before any worker starts, an unreachable server fails like sysbench
// (error 2003), more threads than max_connections allows are refused in one line, and
// prepared statements that would not fit max_prepared_stmt_count make the run use
// client-side statements, with one NOTE; errors that many workers share are one line.
func TestPreflight(t *testing.T) {
	t.Parallel()
	s := testserver.StartMariaDB(t, "--max-connections=20", "--max-prepared-stmt-count=30")
	admin := s.Open(t, "")
	admin.SetMaxOpenConns(1)
	tg := serverTarget(s, "sbtest")
	rw := mustLookup(t, "oltp_read_write")
	o := runOpts(2, 0)
	o.Tables, o.TableSize = 2, 1000
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := rw.Prepare(ctx, tg, o, nil); err != nil {
		t.Fatal(err)
	}

	t.Run("unreachable", func(t *testing.T) {
		port := testserver.FreePort(t)
		bad := Target{Endpoints: []Endpoint{{Host: "127.0.0.1", Port: port}}, User: "root", DB: "sbtest"}
		rec := &recorder{}
		_, err := rw.Run(ctx, bad, runOpts(2, time.Second), rec)
		want := fmt.Sprintf("unable to connect to MySQL server on host '127.0.0.1', port %d, aborting...: error 2003: Can't connect to MySQL server on '127.0.0.1' (111)", port)
		if err == nil || err.Error() != want {
			t.Errorf("err = %v\nwant %s", err, want)
		}
		var ce *ConnError
		if !errors.As(err, &ce) || ce.Code != 2003 {
			t.Errorf("err %v is not a ConnError 2003", err)
		}
		if len(rec.events) != 0 {
			t.Errorf("reporter heard %v before the refusal", rec.events)
		}
	})

	t.Run("threads_over_max_connections", func(t *testing.T) {
		if err := admin.PingContext(ctx); err != nil { // one connection in use
			t.Fatal(err)
		}
		rec := &recorder{}
		start := time.Now()
		_, err := rw.Run(ctx, tg, runOpts(25, time.Second), rec)
		want := regexp.MustCompile(`^--threads 25: n1 has max_connections=20 with \d in use; the run needs 25$`)
		if err == nil || !want.MatchString(err.Error()) {
			t.Errorf("err = %v\nwant %s", err, want)
		}
		if len(rec.events) != 0 || time.Since(start) > 2*time.Second {
			t.Errorf("reporter heard %v, refusal took %v", rec.events, time.Since(start))
		}
	})

	t.Run("prepared_statements_fall_back_to_text", func(t *testing.T) {
		before := testserver.ComCounters(t, admin)
		rec := &recorder{}
		oo := runOpts(4, time.Second)
		oo.Tables = 2
		res, err := rw.Run(ctx, tg, oo, rec)
		if err != nil {
			t.Fatal(err)
		}
		after := testserver.ComCounters(t, admin)
		if len(rec.notes) != 1 || strings.Join(rec.events, ",") != "note,started" {
			t.Fatalf("notes %q, events %v: want one note, then started", rec.notes, rec.events)
		}
		note := rec.notes[0]
		t.Logf("NOTE: %s", note)
		if !strings.Contains(note, "n1 has max_prepared_stmt_count=30 with 0 in use; the run needs 72 (4 threads x 18 statements)") ||
			!strings.Contains(note, "client-side statements") || strings.Contains(note, "\n") {
			t.Errorf("note %q", note)
		}
		if res.PSMode != PSDisable || res.PSFallback != note || res.Transactions == 0 {
			t.Errorf("ps mode %q, fallback %q, %d transactions", res.PSMode, res.PSFallback, res.Transactions)
		}
		if n := delta(before, after, "Com_stmt_prepare"); n != 0 {
			t.Errorf("%d statements prepared after the fall-back", n)
		}
	})
}
