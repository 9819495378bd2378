package workload

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// serverTarget is a Target for s as root on database db.
func serverTarget(s *testserver.Server, db string) Target {
	return Target{
		Endpoints: []Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}},
		User:      "root", DB: db,
	}
}

func mustLookup(t *testing.T, name string) Workload {
	t.Helper()
	w, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func delta(before, after map[string]int64, keys ...string) int64 {
	var n int64
	for _, k := range keys {
		n += after[k] - before[k]
	}
	return n
}

func runOpts(threads int, d time.Duration) Options {
	o := DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Time = 2, 10000, threads, d
	return o
}

// packetCutter is a Target.Dial for tests: once armed, it closes the first connection on
// which a packet that match accepts (the whole packet, its 4-byte header first) was
// written, right after writing it: the statement reached the server and its answer is
// lost.
type packetCutter struct {
	match func(packet []byte) bool
	armed atomic.Bool
	cut   atomic.Int32
}

func (pc *packetCutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: c, pc: pc}, nil
}

// cutConn is a connection of a packetCutter.
type cutConn struct {
	net.Conn
	pc *packetCutter
}

func (c *cutConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil && len(b) > 4 && c.pc.armed.Load() && c.pc.match(b) && c.pc.armed.CompareAndSwap(true, false) {
		c.pc.cut.Add(1)
		c.Conn.Close()
	}
	return n, err
}

// downDialer is a Target.Dial for tests that can take its endpoints down: while down, its
// connections are closed and a dial is refused (ECONNREFUSED).
type downDialer struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func (d *downDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	w := struct{ net.Conn }{c} // not a *net.TCPConn: kept as it is (blocking dups a socket)
	d.conns = append(d.conns, w)
	return w, nil
}

// setDown takes the endpoints down (closing their connections) or brings them back.
func (d *downDialer) setDown(down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = down
	if down {
		for _, c := range d.conns {
			c.Close()
		}
		d.conns = nil
	}
}

// TestServer runs the real-server tests against one throwaway MariaDB started
// with Galera's auto-increment trap (increment 3, offset 2) and a 1 s lock
// wait timeout.
func TestServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server tests skipped in -short mode")
	}
	s := testserver.StartMariaDB(t, "--auto-increment-increment=3", "--auto-increment-offset=2",
		"--innodb-lock-wait-timeout=1")
	admin := s.Open(t, "")
	admin.SetMaxOpenConns(4)
	tg := serverTarget(s, "sbtest")
	rw := mustLookup(t, "oltp_read_write")

	t.Run("prepare", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		o := runOpts(2, 0)
		var out bytes.Buffer
		if err := rw.Prepare(ctx, tg, o, &out); err != nil {
			t.Fatalf("prepare: %v\n%s", err, out.String())
		}
		for n := 1; n <= o.Tables; n++ {
			for _, line := range []string{
				fmt.Sprintf("Creating table 'sbtest%d'...\n", n),
				fmt.Sprintf("Inserting 10000 records into 'sbtest%d'\n", n),
				fmt.Sprintf("Creating a secondary index on 'sbtest%d'...\n", n),
			} {
				if !strings.Contains(out.String(), line) {
					t.Errorf("prepare output lacks %q:\n%s", line, out.String())
				}
			}
			var cnt, minID, maxID, distinct, kOut int64
			q := fmt.Sprintf("SELECT COUNT(*), MIN(id), MAX(id), COUNT(DISTINCT id), SUM(k < 1 OR k > 10000) FROM sbtest.sbtest%d", n)
			if err := admin.QueryRow(q).Scan(&cnt, &minID, &maxID, &distinct, &kOut); err != nil {
				t.Fatal(err)
			}
			if cnt != 10000 || minID != 1 || maxID != 10000 || distinct != 10000 {
				t.Errorf("sbtest%d: count=%d min=%d max=%d distinct=%d, want ids exactly 1..10000 (auto-increment trap)", n, cnt, minID, maxID, distinct)
			}
			if kOut != 0 {
				t.Errorf("sbtest%d: %d rows with k outside [1,10000]", n, kOut)
			}
			var idx string
			err := admin.QueryRow("SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME=? AND COLUMN_NAME='k'",
				fmt.Sprintf("sbtest%d", n)).Scan(&idx)
			if err != nil || idx != fmt.Sprintf("k_%d", n) {
				t.Errorf("sbtest%d: secondary index = %q, %v; want k_%d", n, idx, err, n)
			}
			var tbl, ddl string
			if err := admin.QueryRow(fmt.Sprintf("SHOW CREATE TABLE sbtest.sbtest%d", n)).Scan(&tbl, &ddl); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"`id` int(11) NOT NULL AUTO_INCREMENT", "`k` int(11) NOT NULL DEFAULT 0",
				"`c` char(120) NOT NULL DEFAULT ''", "`pad` char(60) NOT NULL DEFAULT ''", "PRIMARY KEY (`id`)", "ENGINE=InnoDB"} {
				if !strings.Contains(ddl, want) {
					t.Errorf("sbtest%d DDL lacks %q:\n%s", n, want, ddl)
				}
			}
		}
		cRE := regexp.MustCompile(`^(\d{11}-){9}\d{11}$`)
		padRE := regexp.MustCompile(`^(\d{11}-){4}\d{11}$`)
		rows, err := admin.Query("SELECT c, pad FROM sbtest.sbtest1 WHERE id IN (1, 777, 10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var c, pad string
			if err := rows.Scan(&c, &pad); err != nil {
				t.Fatal(err)
			}
			if !cRE.MatchString(c) || !padRE.MatchString(pad) {
				t.Errorf("row data c=%q pad=%q does not match sysbench's templates", c, pad)
			}
		}
		// Preparing again fails like sysbench (the table exists).
		if err := rw.Prepare(ctx, tg, o, nil); err == nil || !strings.Contains(err.Error(), "1050") {
			t.Errorf("second prepare: err = %v, want table-exists error 1050", err)
		}
	})

	t.Run("run_disable_matches_server_counters", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		o := runOpts(4, 2*time.Second)
		o.PSMode = PSDisable
		o.ReportInterval = time.Second
		var ivs []Interval
		var mu sync.Mutex
		// The general log names every SELECT the server received, for when Com_select
		// and habench disagree (CI once saw one SELECT more than the run's).
		testserver.Exec(t, admin, "SET GLOBAL general_log=OFF", "TRUNCATE TABLE mysql.general_log", "SET GLOBAL log_output='TABLE'", "SET GLOBAL general_log=ON")
		before := testserver.ComCounters(t, admin)
		res, err := rw.Run(ctx, tg, o, ReporterFunc(func(iv Interval) {
			mu.Lock()
			ivs = append(ivs, iv)
			mu.Unlock()
		}))
		after := testserver.ComCounters(t, admin)
		testserver.Exec(t, admin, "SET GLOBAL general_log=OFF")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("trx=%d reads=%d writes=%d others=%d errors=%d tps=%.1f p95=%.2fms", res.Transactions, res.Reads, res.Writes, res.Others, res.IgnoredErrors, res.TPS(), res.LatencyP95)
		checkMix(t, res, 14, 4, 2)
		e := res.IgnoredErrors // each ignored error may add one failed statement and one ROLLBACK
		checkSelects(t, admin, delta(before, after, "Com_select"), res.Reads, e)
		checkNear(t, "Com_update+Com_delete+Com_insert", delta(before, after, "Com_update", "Com_delete", "Com_insert"), res.Writes, e)
		checkNear(t, "Com_begin", delta(before, after, "Com_begin"), res.Transactions, e)
		checkNear(t, "Com_commit", delta(before, after, "Com_commit"), res.Transactions, 0)
		if n := delta(before, after, "Com_stmt_prepare"); n != 0 {
			t.Errorf("Com_stmt_prepare delta = %d in disable mode, want 0", n)
		}
		if len(ivs) < 1 || len(ivs) > 3 {
			t.Errorf("got %d interval reports in a 2 s run with 1 s interval", len(ivs))
		}
		var ivTrx int64
		for i, iv := range ivs {
			ivTrx += iv.Transactions
			// The report due at the time limit may see the workers leaving.
			thdsOK := iv.Threads == 4 || (i == len(ivs)-1 && iv.Threads <= 4)
			if !thdsOK || iv.TPS <= 0 || iv.LatencyPct <= 0 || iv.PerEndpoint["n1"].Transactions != iv.Transactions ||
				iv.Histogram.TotalCount() != iv.Transactions {
				t.Errorf("odd interval %d: threads=%d tps=%.1f pct=%.2f trx=%d per-endpoint=%v hist=%d", i, iv.Threads, iv.TPS, iv.LatencyPct, iv.Transactions, iv.PerEndpoint, iv.Histogram.TotalCount())
			}
		}
		if ivTrx > res.Transactions {
			t.Errorf("intervals sum to %d transactions, more than the run's %d", ivTrx, res.Transactions)
		}
		if res.TotalTime < 2*time.Second || res.TotalTime > 3*time.Second {
			t.Errorf("total time %v for --time=2", res.TotalTime)
		}
		if res.PerEndpoint["n1"].Transactions != res.Transactions || res.Histogram.TotalCount() != res.Transactions {
			t.Errorf("per-endpoint %+v / histogram count %d disagree with %d transactions", res.PerEndpoint, res.Histogram.TotalCount(), res.Transactions)
		}
		if !(res.LatencyMin > 0 && res.LatencyMin <= res.LatencyAvg && res.LatencyAvg <= res.LatencyMax && res.LatencyPct <= res.LatencyMax) {
			t.Errorf("latencies min=%v avg=%v max=%v pct=%v", res.LatencyMin, res.LatencyAvg, res.LatencyMax, res.LatencyPct)
		}
		if res.EventsAvg*4 != float64(res.Transactions) || res.ExecTimeAvg < 1.5 {
			t.Errorf("fairness events avg %v exec avg %v", res.EventsAvg, res.ExecTimeAvg)
		}
	})

	t.Run("run_auto_uses_server_side_prepares", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		o := runOpts(4, 2*time.Second)
		before := testserver.ComCounters(t, admin)
		res, err := rw.Run(ctx, tg, o, nil)
		after := testserver.ComCounters(t, admin)
		if err != nil {
			t.Fatal(err)
		}
		checkMix(t, res, 14, 4, 2)
		// 9 statements per table (point, 4 ranges, 2 updates, delete, insert)
		// prepared once per worker connection.
		if n := delta(before, after, "Com_stmt_prepare"); n != int64(9*o.Tables*o.Threads) {
			t.Errorf("Com_stmt_prepare delta = %d, want %d", n, 9*o.Tables*o.Threads)
		}
		e := res.IgnoredErrors
		checkNear(t, "Com_stmt_execute", delta(before, after, "Com_stmt_execute"), res.Reads+res.Writes, e)
		checkNear(t, "Com_begin", delta(before, after, "Com_begin"), res.Transactions, e)
		checkNear(t, "Com_commit", delta(before, after, "Com_commit"), res.Transactions, 0)
		// COM_STMT_CLOSE has no reply: the server may count the last ones
		// just after Run returned.
		want := int64(9 * o.Tables * o.Threads)
		for deadline := time.Now().Add(3 * time.Second); delta(before, after, "Com_stmt_close") < want && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			after = testserver.ComCounters(t, admin)
		}
		if n := delta(before, after, "Com_stmt_close"); n != want {
			t.Errorf("Com_stmt_close delta = %d, want %d (statements closed at the end)", n, want)
		}
	})

	t.Run("endpoints_round_robin_dial_and_socket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var mu sync.Mutex
		dials := map[string]int{}
		tg2 := tg
		tg2.Endpoints = []Endpoint{{Name: "tcp", Host: s.Host, Port: s.Port}, {Name: "sock", Socket: s.Socket, Host: "ignored", Port: 1}}
		tg2.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dials[network+" "+addr]++
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		o := runOpts(3, 0)
		o.Events = 300
		res, err := rw.Run(ctx, tg2, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Pre-flight's connection and workers 0 and 2 use "tcp" through Dial, worker 1
		// the socket.
		if want := map[string]int{"tcp " + s.String(): 3}; !reflect.DeepEqual(dials, want) {
			t.Errorf("dials %v, want %v", dials, want)
		}
		tcp, sock := res.PerEndpoint["tcp"], res.PerEndpoint["sock"]
		if tcp.Transactions == 0 || sock.Transactions == 0 || tcp.Transactions+sock.Transactions != res.Transactions || len(res.PerEndpoint) != 2 {
			t.Errorf("per endpoint %+v for %d transactions", res.PerEndpoint, res.Transactions)
		}
		if tcp.Queries != 20*tcp.Transactions && res.IgnoredErrors == 0 {
			t.Errorf("tcp endpoint: %d queries for %d transactions", tcp.Queries, tcp.Transactions)
		}
	})

	t.Run("other_workloads", func(t *testing.T) {
		for _, c := range []struct {
			name    string
			r, w, o int64
		}{
			{"oltp_read_only", 14, 0, 2}, {"oltp_write_only", 0, 4, 2}, {"oltp_point_select", 1, 0, 0},
			{"oltp_update_index", 0, 1, 0}, {"oltp_update_non_index", 0, 1, 0}, {"oltp_insert", 0, 1, 0},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			o := runOpts(2, 0)
			o.Events = 200
			res, err := mustLookup(t, c.name).Run(ctx, tg, o, nil)
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if res.Transactions != 200 {
				t.Errorf("%s: --events=200 ran %d events", c.name, res.Transactions)
			}
			t.Logf("%s: %d events r/w/o %d/%d/%d", c.name, res.Transactions, res.Reads, res.Writes, res.Others)
			checkMix(t, res, c.r, c.w, c.o)
		}
	})

	t.Run("ignored_lock_wait_timeout_is_retried", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Rows held 3 s against the server's 1 s lock wait timeout: the first UPDATE
		// waits out the timeout even when the run took 2 s to connect on a loaded machine.
		release := holdAllRows(t, admin, 3*time.Second)
		defer release()
		o := runOpts(1, 5*time.Second)
		o.Tables = 1
		res, err := mustLookup(t, "oltp_update_index").Run(ctx, tg, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.ErrorsByCode[1205] < 1 || res.IgnoredErrors != res.ErrorsByCode[1205] || res.PerEndpoint["n1"].Errors != res.IgnoredErrors ||
			res.PerEndpoint["n1"].ErrorsByCode[1205] != res.ErrorsByCode[1205] {
			t.Errorf("ignored errors %d, by code %v, per endpoint %+v: want 1205 counted", res.IgnoredErrors, res.ErrorsByCode, res.PerEndpoint)
		}
		if res.Transactions < 1 {
			t.Errorf("no transaction completed after the lock was released")
		}
		// The retried event's latency includes the lock waits.
		if res.LatencyMax < 1000 {
			t.Errorf("max latency %.1f ms, want >= 1000 ms (retried event includes the waits)", res.LatencyMax)
		}
	})

	t.Run("unignored_error_ends_run", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Rows held 3 s against the server's 1 s lock wait timeout: the first UPDATE
		// waits out the timeout even when the run took 2 s to connect on a loaded machine.
		release := holdAllRows(t, admin, 3*time.Second)
		defer release()
		o := runOpts(1, 5*time.Second)
		o.Tables = 1
		o.IgnoreErrors = nil
		res, err := mustLookup(t, "oltp_update_index").Run(ctx, tg, o, nil)
		var se *StatementError
		if !errors.As(err, &se) || se.Code != 1205 || se.Statement != "UPDATE sbtest1 SET k=k+1 WHERE id=?" || se.Endpoint != "n1" {
			t.Fatalf("err = %v, want a StatementError for 1205 on the UPDATE", err)
		}
		if !strings.Contains(err.Error(), "1205") || !strings.Contains(err.Error(), "UPDATE sbtest1 SET k=k+1") {
			t.Errorf("error text %q does not name the statement and code", err)
		}
		if res == nil || res.TotalTime <= 0 {
			t.Errorf("want the partial result with the error, got %+v", res)
		}
	})

	// KILL CONNECTION of a worker: like sysbench, the lost connection (2013, or 2006
	// when the driver finds it closed first, 1927 from MariaDB) ends a run with the default
	// ignore list, and with the codes ignored the worker reconnects.
	// killOne returns a reporter for Run that, once every worker has connected (Started),
	// kills the newest sbtest connection (a worker's: older ones may be an earlier
	// subtest's, closing) 300 ms into the work, and the channel of the killed id.
	killOne := func(ctx context.Context) (Reporter, chan int64) {
		killed := make(chan int64, 1)
		rep := &onStart{recorder: &recorder{}, f: func() {
			go func() {
				time.Sleep(300 * time.Millisecond)
				var id int64
				err := admin.QueryRowContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE DB='sbtest' AND ID <> CONNECTION_ID() ORDER BY ID DESC LIMIT 1").Scan(&id)
				if err == nil {
					_, err = admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
				}
				if err != nil {
					t.Errorf("killing a worker: %v", err)
				}
				killed <- id
			}()
		}}
		return rep, killed
	}
	t.Run("kill_connection_ends_default_run", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, killed := killOne(ctx)
		res, err := rw.Run(ctx, tg, runOpts(2, 3*time.Second), rep)
		<-killed
		var se *StatementError
		if !errors.As(err, &se) || (se.Code != 2013 && se.Code != 2006 && se.Code != 1927) || se.Endpoint != "n1" {
			t.Fatalf("err = %v, want a StatementError on n1 with 2013, 2006 or 1927", err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("MySQL error %d", se.Code)) {
			t.Errorf("error text %q does not name the code", err)
		}
		if res == nil || res.TotalTime > 2500*time.Millisecond {
			t.Errorf("the run did not stop at the lost connection: %+v", res)
		}
	})
	t.Run("kill_connection_reconnects_when_ignored", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		o := runOpts(2, 3*time.Second)
		o.IgnoreErrors = append(o.IgnoreErrors, 2013, 2006, 1927)
		rep, killed := killOne(ctx)
		res, err := rw.Run(ctx, tg, o, rep)
		<-killed
		if err != nil {
			t.Fatalf("run after KILL: %v", err)
		}
		if res.Reconnects < 1 || res.PerEndpoint["n1"].Reconnects != res.Reconnects {
			t.Errorf("reconnects = %d (per endpoint %+v), want >= 1 after KILL", res.Reconnects, res.PerEndpoint)
		}
		lost := res.ErrorsByCode[2013] + res.ErrorsByCode[2006] + res.ErrorsByCode[1927]
		if lost < 1 || res.IgnoredErrors < lost {
			t.Errorf("errors by code %v, %d counted: want the lost connection counted", res.ErrorsByCode, res.IgnoredErrors)
		}
		if res.Transactions < 10 {
			t.Errorf("only %d transactions", res.Transactions)
		}
		if len(res.Outages) != 0 {
			t.Errorf("one killed connection (the other worker committing) is no outage: %v", res.Outages)
		}
	})

	t.Run("failover_none_live_stays", func(t *testing.T) {
		// Two endpoints on the server, failing over between them. Every node refuses the
		// writes (read_only: 1290, as a Galera node outside the Primary component refuses
		// them with 1047) from 1 s to 3 s while the view, known, lists none live: the
		// workers retry where they are, backing off, with no move and no reconnect (they
		// used to tour the nodes ~10 times a second, a move each).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		live := &liveSet{live: []string{"n1", "n2"}, known: true}
		tgf := tg
		tgf.Endpoints = []Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}, {Name: "n2", Host: s.Host, Port: s.Port}}
		tgf.Failover, tgf.User, tgf.Password = live.get, "hbw", "hbw"
		testserver.Exec(t, admin, "CREATE USER IF NOT EXISTS 'hbw'@'%' IDENTIFIED BY 'hbw'", "GRANT ALL ON sbtest.* TO 'hbw'@'%'")
		readOnly := func(on string) {
			if _, err := admin.Exec("SET GLOBAL read_only = " + on); err != nil {
				t.Error(err)
			}
		}
		defer readOnly("OFF")
		// The window is timed from the run's start, not from before its connections were
		// made (a loaded machine took 2 s to connect: the window had closed by then).
		rep, wait := afterStart(func() {
			start := time.Now()
			time.Sleep(time.Until(start.Add(time.Second)))
			live.set()
			readOnly("ON")
			time.Sleep(time.Until(start.Add(3 * time.Second)))
			readOnly("OFF")
			live.set("n1", "n2")
		})
		o := runOpts(4, 5*time.Second)
		o.Rate = 100
		res, err := rw.Run(ctx, tgf, o, rep)
		if !wait() {
			t.Fatalf("run: %v (it did not start)", err)
		}
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		var hops []string
		for _, m := range res.WriterMoves[:min(len(res.WriterMoves), 4)] {
			hops = append(hops, m.From+"->"+m.To)
		}
		t.Logf("%d moves %v; reconnects %d; errors %v; unknown %d; %d transactions", len(res.WriterMoves), hops, res.Reconnects, res.ErrorsByCode, res.Unknown, res.Transactions)
		if res.ErrorsByCode[1290] == 0 {
			t.Fatalf("errors %v: want the refusals (1290) counted; the test did not refuse", res.ErrorsByCode)
		}
		if len(res.WriterMoves) != 0 || res.Reconnects != 0 {
			t.Errorf("%d moves, %d reconnects while no node was live: want none", len(res.WriterMoves), res.Reconnects)
		}
		if n := res.ErrorsByCode[1290]; n > 4*40 {
			t.Errorf("%d refusals in 2 s from 4 workers: want the retries backing off (100 ms at most)", n)
		}
	})

	t.Run("lost_commit_unknown_outcome", func(t *testing.T) {
		// A following or failing-over worker whose connection is lost when its
		// transaction may have committed (its COMMIT sent, no answer; a write in
		// autocommit) gives it up as an unknown outcome (a Wait, abandoned), then
		// reconnects; one lost before its COMMIT is a failure, retried. The cut is a dial
		// wrapper that closes the connection right after the matching packet went to the
		// server (which then most likely committed it).
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		two := []Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}, {Name: "n2", Host: s.Host, Port: s.Port}}
		live := &liveSet{live: []string{"n1", "n2"}, known: true}
		follow := func(context.Context) (Endpoint, error) { return two[0], nil }
		const comQuery, comStmtExecute = 3, 0x17
		commit := func(p []byte) bool { return p[4] == comQuery && string(p[5:]) == "COMMIT" }
		execute := func(p []byte) bool { return p[4] == comStmtExecute }
		for _, c := range []struct {
			name, workload string
			follow         bool
			cut            func([]byte) bool
			unknown        int64
		}{
			{"commit_failover", "oltp_read_write", false, commit, 1},
			{"before_commit_failover", "oltp_read_write", false, execute, 0},
			{"autocommit_write_follow", "oltp_update_index", true, execute, 1},
		} {
			t.Run(c.name, func(t *testing.T) {
				cc := &packetCutter{match: c.cut}
				tgc := tg
				tgc.Dial = cc.dial
				if c.follow {
					tgc.Follow = follow
				} else {
					tgc.Endpoints, tgc.Failover = two, live.get
				}
				time.AfterFunc(500*time.Millisecond, func() { cc.armed.Store(true) })
				o := runOpts(2, 2*time.Second)
				o.Rate = 50
				res, err := mustLookup(t, c.workload).Run(ctx, tgc, o, nil)
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				t.Logf("cut %d; unknown %d; waits %d %+v; errors %v; reconnects %d; %d transactions", cc.cut.Load(), res.Unknown, res.WaitCount, res.Waits, res.ErrorsByCode, res.Reconnects, res.Transactions)
				if cc.cut.Load() != 1 || res.ErrorsByCode[CRServerLost] != 1 || res.Reconnects != 1 {
					t.Fatalf("cut %d, errors %v, reconnects %d: want one connection lost (2013) and one reconnect", cc.cut.Load(), res.ErrorsByCode, res.Reconnects)
				}
				if res.Unknown != c.unknown || int64(res.WaitCount) != c.unknown || (c.unknown > 0 && !res.Waits[0].Abandoned) {
					t.Errorf("unknown %d, waits %+v: want %d unknown outcome(s), each a Wait given up", res.Unknown, res.Waits, c.unknown)
				}
				if res.Transactions < 50 {
					t.Errorf("%d transactions: want the run to go on", res.Transactions)
				}
			})
		}
	})

	t.Run("failover_home_at_the_warmup_end", func(t *testing.T) {
		// One worker at rate 20; its own node n1 over TCP through a dialer that can take it
		// down, n2 over the unix socket. n1 down from 0.5 s to 1 s of a 3 s warm-up and out
		// of the view until 2.7 s: the worker fails over to n2 and stays there. Its
		// transaction in progress at the warm-up's end (an arrival of the warm-up, held by
		// a global read lock from 2.6 s to 3.4 s) finishes after it, n1 live again: the
		// worker goes home right after it, and no measured transaction runs on n2 (the
		// home check used to be skipped for such a transaction).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		started, rep := whenStarted(nil)
		dd := &downDialer{}
		live := &liveSet{live: []string{"n1", "n2"}, known: true}
		tgf := tg
		tgf.Endpoints = []Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}, {Name: "n2", Socket: s.Socket, Host: "ignored", Port: 1}}
		tgf.Dial, tgf.Failover = dd.dial, live.get
		go func() {
			<-started
			time.Sleep(500 * time.Millisecond)
			live.set("n2")
			dd.setDown(true)
			time.Sleep(500 * time.Millisecond)
			dd.setDown(false)
			time.Sleep(1700 * time.Millisecond)
			live.set("n1", "n2")
		}()
		unlocked := globalReadLock(t, admin, started, 2600*time.Millisecond, 800*time.Millisecond)
		o := runOpts(1, time.Second)
		o.Warmup, o.Rate = 3*time.Second, 20
		res, err := rw.Run(ctx, tgf, o, rep)
		unlocked()
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		var away, home *WriterMove
		for i, m := range res.WriterMoves {
			t.Logf("move %s -> %s at %v of the measured part, first commit %v", m.From, m.To, m.At.Sub(res.StartedAt), m.FirstCommit.Sub(res.StartedAt))
			switch {
			case m.From == "n1" && m.To == "n2":
				away = &res.WriterMoves[i]
			case m.From == "n2" && m.To == "n1":
				home = &res.WriterMoves[i]
			}
		}
		t.Logf("measured: n1 %d, n2 %d transactions", res.PerEndpoint["n1"].Transactions, res.PerEndpoint["n2"].Transactions)
		if away == nil || home == nil || !away.At.Before(res.StartedAt) {
			t.Fatalf("moves %+v: want the worker to n2 in the warm-up and back", res.WriterMoves)
		}
		if n := res.PerEndpoint["n2"].Transactions; n != 0 || res.PerEndpoint["n1"].Transactions == 0 {
			t.Errorf("measured transactions on n2: %d (n1 %d), want none: the worker home before its first measured transaction", n, res.PerEndpoint["n1"].Transactions)
		}
	})

	t.Run("cancel_returns_partial_result", func(t *testing.T) {
		// Cancelled 700 ms into the work (timed from the run's start: connecting may take
		// seconds on a loaded machine), Run returns soon after the cancel with what ran.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var cancelled time.Time
		rep, wait := afterStart(func() {
			time.Sleep(700 * time.Millisecond)
			cancelled = time.Now()
			cancel()
		})
		o := runOpts(2, 10*time.Second)
		res, err := rw.Run(ctx, tg, o, rep)
		returned := time.Now()
		if !wait() {
			t.Fatalf("err = %v before the run started, want it cancelled once started", err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		d := returned.Sub(cancelled)
		if res != nil {
			t.Logf("Run returned %v after the cancel, %d transactions", d, res.Transactions)
		}
		if d > 2*time.Second || res == nil || res.Transactions == 0 {
			t.Errorf("Run returned %v after the cancel, result %+v", d, res)
		}
	})

	t.Run("cancel_unblocks_hung_statement", func(t *testing.T) {
		// A global read lock makes every write wait (lock_wait_timeout is a
		// day): only closing the sockets can stop the run in time.
		ctx := context.Background()
		lock, err := admin.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
			t.Fatal(err)
		}
		defer lock.ExecContext(ctx, "UNLOCK TABLES")
		rctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(500*time.Millisecond, cancel)
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := mustLookup(t, "oltp_update_index").Run(rctx, tg, runOpts(2, 10*time.Second), nil)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("cancel took %v", d)
			}
		case <-time.After(5 * time.Second):
			lock.ExecContext(ctx, "UNLOCK TABLES")
			<-done
			t.Fatal("Run did not return within 5 s of cancel while a statement was blocked")
		}
	})

	t.Run("rate_and_warmup", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		o := runOpts(2, 2*time.Second)
		o.Rate = 100
		o.Warmup = 500 * time.Millisecond
		o.ReportInterval = time.Second
		var ivs []Interval
		res, err := rw.Run(ctx, tg, o, ReporterFunc(func(iv Interval) { ivs = append(ivs, iv) }))
		if err != nil {
			t.Fatal(err)
		}
		// A Poisson process of 100/s over 2 s: 200 +- 3 sigma (42) arrivals. The completed
		// transactions depend on what the shared host gives the server (a loaded CI ran 110
		// of them): they are checked against the arrivals, not against the rate.
		if res.Rate == nil {
			t.Fatal("--rate=100: no rate result")
		}
		if a := res.Rate.Arrivals; a < 140 || a > 260 {
			t.Errorf("--rate=100 for 2 s generated %d arrivals", a)
		}
		if res.Transactions < 1 || res.Transactions > res.Rate.Arrivals+int64(o.Threads) {
			t.Errorf("--rate=100 for 2 s ran %d transactions of %d arrivals", res.Transactions, res.Rate.Arrivals)
		}
		if res.TotalTime < 2*time.Second || res.TotalTime > 2500*time.Millisecond {
			t.Errorf("measured time %v, want about 2 s (warmup excluded)", res.TotalTime)
		}
		var out bytes.Buffer
		for _, iv := range ivs {
			PrintInterval(&out, iv, o)
		}
		if !regexp.MustCompile(`(?m)^\[ 1s \] queue length: \d+, concurrency: \d+$`).Match(out.Bytes()) {
			t.Errorf("rate interval output lacks the queue line:\n%s", out.String())
		}
	})

	t.Run("cleanup", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out bytes.Buffer
		if err := rw.Cleanup(ctx, tg, runOpts(1, 0), &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != "Dropping table 'sbtest1'...\nDropping table 'sbtest2'...\n" {
			t.Errorf("cleanup output %q", out.String())
		}
		var n int
		if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='sbtest'").Scan(&n); err != nil || n != 0 {
			t.Errorf("%d tables left after cleanup (%v)", n, err)
		}
	})

	t.Run("prepare_without_auto_inc_and_index", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		o := runOpts(1, 0)
		o.Tables, o.TableSize, o.AutoInc, o.CreateSecondary = 1, 100, false, false
		tg2 := serverTarget(s, "other_db")
		if err := rw.Prepare(ctx, tg2, o, nil); err != nil {
			t.Fatal(err)
		}
		var tbl, ddl string
		if err := admin.QueryRow("SHOW CREATE TABLE other_db.sbtest1").Scan(&tbl, &ddl); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ddl, "AUTO_INCREMENT") || strings.Contains(ddl, "KEY `k_1`") {
			t.Errorf("auto-inc off / no secondary DDL:\n%s", ddl)
		}
		var maxID int
		if err := admin.QueryRow("SELECT MAX(id) FROM other_db.sbtest1").Scan(&maxID); err != nil || maxID != 100 {
			t.Errorf("max id %d (%v)", maxID, err)
		}
	})
}

// checkMix checks the statement counts of a run without errors exactly, and
// bounds them when ignored errors or reconnects restarted transactions.
func checkMix(t *testing.T, res *Result, r, w, o int64) {
	t.Helper()
	if res.Transactions == 0 {
		t.Fatalf("no transactions")
	}
	n := res.Transactions
	if res.IgnoredErrors == 0 && res.Reconnects == 0 {
		if res.Reads != r*n || res.Writes != w*n || res.Others != o*n {
			t.Errorf("r/w/o = %d/%d/%d for %d transactions, want %d/%d/%d", res.Reads, res.Writes, res.Others, n, r*n, w*n, o*n)
		}
	} else {
		m := n + res.IgnoredErrors + res.Reconnects
		if res.Reads < r*n || res.Reads > r*m || res.Writes < w*n || res.Writes > w*m {
			t.Errorf("r/w/o = %d/%d/%d for %d transactions and %d retries", res.Reads, res.Writes, res.Others, n, m-n)
		}
	}
	if res.Queries != res.Reads+res.Writes+res.Others {
		t.Errorf("queries %d != r+w+o", res.Queries)
	}
}

// checkSelects checks the server's Com_select delta against habench's reads, within
// slack. When they differ it reads the general log (on during the run) and checks the
// workload's own SELECTs there (the oltp statements, on sbtest tables) against the reads
// instead: other SELECTs (not the engine's, whoever sent them) are named and logged, and
// only a workload SELECT habench did not count, or counted without the server seeing it,
// fails the test.
func checkSelects(t *testing.T, admin *sql.DB, got, reads, slack int64) {
	t.Helper()
	if got >= reads && got <= reads+slack {
		t.Logf("server Com_select delta = %d, habench %d", got, reads)
		return
	}
	rows, err := admin.Query("SELECT thread_id, argument FROM mysql.general_log WHERE command_type = 'Query' AND argument LIKE 'SELECT%'")
	if err != nil {
		t.Fatalf("server Com_select delta = %d, habench counted %d; general log: %v", got, reads, err)
	}
	defer rows.Close()
	var workload int64
	var others []string
	for rows.Next() {
		var thread int64
		var arg string
		if err := rows.Scan(&thread, &arg); err != nil {
			t.Fatal(err)
		}
		if workloadSelect.MatchString(arg) {
			workload++
		} else {
			others = append(others, fmt.Sprintf("thread %d: %.120s", thread, arg))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if workload < reads || workload > reads+slack {
		t.Errorf("server Com_select delta = %d; the general log has %d of the workload's SELECTs, habench counted %d (slack %d); other SELECTs: %q", got, workload, reads, slack, others)
		return
	}
	t.Logf("server Com_select delta = %d, habench %d: the general log has %d of the workload's SELECTs, as counted; %d others, not the engine's: %q", got, reads, workload, len(others), others)
}

// workloadSelect matches the oltp workloads' SELECTs as the general log shows them
// (text protocol: the values in place).
var workloadSelect = regexp.MustCompile(`^SELECT (c|SUM\(k\)|DISTINCT c) FROM sbtest\d+ WHERE id`)

func checkNear(t *testing.T, what string, got, want, slack int64) {
	t.Helper()
	if got < want || got > want+slack {
		t.Errorf("server %s delta = %d, habench counted %d (slack %d)", what, got, want, slack)
	} else {
		t.Logf("server %s delta = %d, habench %d", what, got, want)
	}
}

// onStart is a recorder that also calls f when the run has started (every worker
// connected).
type onStart struct {
	*recorder
	f func()
}

func (o *onStart) Started() {
	o.recorder.Started()
	o.f()
}

// afterStart returns a reporter for Run (a recorder: see onStart) that, once every worker
// has connected (Started), calls f in a goroutine of its own, and a func to call after
// Run returned: it waits for f to end and reports whether it ran (false: the run failed
// before its start). Actions timed from there do not depend on how long the run took to
// connect.
func afterStart(f func()) (*onStart, func() bool) {
	var started atomic.Bool
	done := make(chan struct{})
	rep := &onStart{recorder: &recorder{}, f: func() {
		started.Store(true)
		go func() {
			defer close(done)
			f()
		}()
	}}
	return rep, func() bool {
		if !started.Load() {
			return false
		}
		<-done
		return true
	}
}

// holdAllRows locks every row of sbtest.sbtest1 in a transaction for d and
// returns a func that waits for the release.
func holdAllRows(t *testing.T, db *sql.DB, d time.Duration) func() {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT id FROM sbtest.sbtest1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(d)
		conn.ExecContext(ctx, "COMMIT")
		conn.Close()
	}()
	return func() { <-done }
}
