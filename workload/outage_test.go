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
		// Killed 1 s into the work (timed from the run's start: its pre-flight and
		// connections may take seconds on a loaded machine); times are compared on the
		// wall clock, against the kill's bracket.
		var killBefore, killAfter time.Time
		rep, wait := afterStart(func() {
			time.Sleep(time.Second)
			killBefore = time.Now()
			s.Kill(t)
			killAfter = time.Now()
		})
		defer func() {
			if wait() {
				s.Restart(t)
			}
		}()
		res, err := rw.Run(ctx, tg, o, rep)
		returned := time.Now()
		if !wait() {
			t.Fatalf("err = %v before the run started", err)
		}
		var se *StatementError
		if !errors.As(err, &se) || (se.Code != 2013 && se.Code != 2006) || se.Endpoint != "n1" {
			t.Fatalf("err = %v, want a StatementError on n1 with 2013 or 2006", err)
		}
		t.Logf("error: %v", err)
		if !regexp.MustCompile(`MySQL error 20(13|06) \((Lost connection to MySQL server during query|MySQL server has gone away)\)`).MatchString(err.Error()) {
			t.Errorf("error text %q lacks the client code and its text", err)
		}
		if d := returned.Sub(killAfter); d > 3*time.Second {
			t.Errorf("run went on for %v after the kill", d)
		}
		if res == nil || len(res.Outages) != 1 || res.Outages[0].Endpoint != "n1" || !res.Outages[0].Open {
			t.Fatalf("outages %+v, want one open outage of n1", res)
		}
		at := res.Outages[0].StartedAt
		t.Logf("outage starts %v after the kill began, %v after it returned", at.Sub(killBefore), at.Sub(killAfter))
		if !within(at, killBefore, killAfter) {
			t.Errorf("outage starts %v after the kill began, %v after it returned (took %v); want inside it, %v slack",
				at.Sub(killBefore), at.Sub(killAfter), killAfter.Sub(killBefore), edgeSlack)
		}
	})

	t.Run("ignored_reconnects_and_records_the_outage", func(t *testing.T) {
		o := o
		// Killed 2 s into the work, started again 2 s later. The run goes on long enough
		// for a restart with crash recovery on a loaded machine (0.2 s on a 2-core machine
		// at load 8; 4 s down and 3 s for the first commit after it leave it 8 s) and for
		// the workers to commit again after it.
		o.Time, o.ReportInterval = 15*time.Second, time.Second
		o.IgnoreErrors = lostIgnored()
		var killBefore, killAfter, restartBefore, restartAfter time.Time // wall clock
		rec, wait := afterStart(func() {
			time.Sleep(2 * time.Second)
			killBefore = time.Now()
			s.Kill(t)
			killAfter = time.Now()
			time.Sleep(2 * time.Second)
			restartBefore = time.Now()
			s.Restart(t)
			restartAfter = time.Now()
		})
		res, err := rw.Run(ctx, tg, o, rec)
		if !wait() {
			t.Fatalf("run: %v (it did not start)", err)
		}
		if err != nil {
			t.Fatalf("run with the connection errors ignored: %v (the restart took %v, back %v after the kill, in a %v run)",
				err, restartAfter.Sub(restartBefore), restartAfter.Sub(killAfter), o.Time)
		}
		var out bytes.Buffer
		PrintOutages(&out, res)
		for _, iv := range rec.ivs {
			PrintInterval(&out, iv, o)
			t.Logf("interval at %v: length %v", iv.Elapsed, iv.Length)
		}
		t.Logf("kill took %v; restart began %v after it and took %v (at %v of the run); output:\n%s", killAfter.Sub(killBefore),
			restartBefore.Sub(killAfter), restartAfter.Sub(restartBefore), restartAfter.Sub(res.StartedAt), out.String())
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
		// It opens with the first failure, inside the kill; it closes with the first
		// commit after the restart, which the workers (reconnecting, backing off) may
		// make before Restart's own ping saw the server, and at most 3 s after it.
		ot := res.Outages[0]
		end := ot.StartedAt.Add(ot.Duration())
		t.Logf("outage starts %v after the kill began, ends %v after the restart began", ot.StartedAt.Sub(killBefore), end.Sub(restartBefore))
		if ot.Endpoint != "n1" || ot.Open || !within(ot.StartedAt, killBefore, killAfter) ||
			!within(end, restartBefore, restartAfter.Add(3*time.Second)) || ot.Duration() < 1500*time.Millisecond {
			t.Errorf("outage %+v (%s): starts %v after the kill began (it took %v), ends %v after the restart began (it took %v); want n1 from the kill to just after the restart",
				ot, ot, ot.StartedAt.Sub(killBefore), killAfter.Sub(killBefore), end.Sub(restartBefore), restartAfter.Sub(restartBefore))
		}
		if !strings.Contains(out.String(), "WARNING: n1 could not commit from ") {
			t.Errorf("PrintOutages does not warn:\n%s", out.String())
		}
	})

	t.Run("stall_without_errors_is_an_outage", func(t *testing.T) {
		// A global read lock from 1 s to 3 s of the work: the writes hang without failing.
		admin := s.Open(t, "")
		lock, err := admin.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		oo := o
		oo.Time = 5 * time.Second
		var lockBefore, locked, unlockBefore, unlocked time.Time // wall clock
		rep, wait := afterStart(func() {
			start := time.Now()
			time.Sleep(time.Second)
			lockBefore = time.Now()
			if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
				t.Errorf("FTWRL: %v", err)
			}
			locked = time.Now()
			time.Sleep(time.Until(start.Add(3 * time.Second)))
			unlockBefore = time.Now()
			lock.ExecContext(ctx, "UNLOCK TABLES")
			unlocked = time.Now()
		})
		res, err := rw.Run(ctx, tg, oo, rep)
		if !wait() {
			t.Fatalf("run: %v (it did not start)", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Outages) != 1 {
			t.Fatalf("outages %v, want one (the stall)", res.Outages)
		}
		// The stall starts at the last commit before the lock took hold (inside the
		// FTWRL, or just before it: the commit before it, the 4 workers committing
		// continuously); it ends at the first commit after the unlock, the blocked
		// transactions finishing (within 1 s).
		ot := res.Outages[0]
		end := ot.StartedAt.Add(ot.Duration())
		t.Logf("outage starts %v after the lock began (FTWRL took %v), ends %v after the unlock began (UNLOCK took %v): %s",
			ot.StartedAt.Sub(lockBefore), locked.Sub(lockBefore), end.Sub(unlockBefore), unlocked.Sub(unlockBefore), ot)
		if ot.Endpoint != "n1" || ot.Open || ot.Failures != 0 || !within(ot.StartedAt, lockBefore.Add(-500*time.Millisecond+edgeSlack), locked) ||
			!within(end, unlockBefore, unlocked.Add(time.Second)) || !strings.Contains(ot.String(), "no failed attempt") {
			t.Errorf("outage %+v (%s): starts %v after the lock began, ends %v after the unlock began; want n1 stalled from the lock to the unlock, no failures",
				ot, ot, ot.StartedAt.Sub(lockBefore), end.Sub(unlockBefore))
		}
	})

	t.Run("ignored_not_restarted_is_an_error", func(t *testing.T) {
		o := o
		o.Time = 3 * time.Second
		o.IgnoreErrors = lostIgnored()
		// Killed 1 s into the work (timed from the run's start), never started again.
		rep, wait := afterStart(func() {
			time.Sleep(time.Second)
			s.Kill(t)
		})
		defer func() {
			if wait() {
				s.Restart(t)
			}
		}()
		res, err := rw.Run(ctx, tg, o, rep)
		if !wait() {
			t.Fatalf("err = %v before the run started", err)
		}
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

// edgeSlack is how far outside the bracket of the action that caused it (wall-clock
// stamps taken just before and just after it) an outage's edge may fall: the worker that
// saw the failure or made the commit may be scheduled late on a loaded machine.
const edgeSlack = 250 * time.Millisecond

// within reports whether at is between from and to, edgeSlack either side.
func within(at, from, to time.Time) bool {
	return !at.Before(from.Add(-edgeSlack)) && !at.After(to.Add(edgeSlack))
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
