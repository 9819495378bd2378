package sampler

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/topology"
)

// Real-server tests: a MariaDB source and one replica from the system install, on 127.0.0.1
// with ports from testserver. Skipped with -short or when MariaDB is not installed.

// Test cadence: faster than production so a few seconds of load give enough ticks.
var testCfg = Config{Interval: 500 * time.Millisecond, Timeout: 400 * time.Millisecond, HeartbeatPeriod: 50 * time.Millisecond}

type pairEnv struct {
	src, rep     *testserver.Server
	srcDB, repDB *sql.DB
	caps         topology.Capabilities
	nodes        []Node
}

// startPair starts a GTID source and a replica replicating from it, and waits until the
// replica's threads run.
func startPair(t *testing.T) *pairEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("real-server test (-short)")
	}
	t0 := time.Now()
	common := []string{"--log-bin=mysql-bin", "--binlog-format=ROW", "--gtid-strict-mode=ON", "--log-slave-updates"}
	e := &pairEnv{}
	e.src = testserver.StartMariaDB(t, append(common, "--server-id=1")...)
	e.rep = testserver.StartMariaDB(t, append(common, "--server-id=2")...)
	e.srcDB, e.repDB = e.src.Open(t, ""), e.rep.Open(t, "")
	var vs string
	if err := e.srcDB.QueryRow("SELECT VERSION()").Scan(&vs); err != nil {
		t.Fatal(err)
	}
	v, err := topology.ParseVersion(vs)
	if err != nil {
		t.Fatal(err)
	}
	e.caps = topology.CapabilitiesFor(topology.MariaDB, v)
	testserver.Exec(t, e.repDB, e.caps.ChangeSource("127.0.0.1", e.src.Port, "root", ""), e.caps.StartReplica())
	testserver.Exec(t, e.srcDB, "CREATE DATABASE hbt", "CREATE TABLE hbt.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)")
	e.waitReplica(t, func(io, sqlRun string) bool { return io == "Yes" && sqlRun == "Yes" })
	e.nodes = []Node{
		{Name: "src", Role: topology.RoleSource, Caps: e.caps, DB: e.srcDB},
		{Name: "rep", Role: topology.RoleReplica, Caps: e.caps, DB: e.repDB},
	}
	t.Logf("MariaDB %s source %s, replica %s ready in %v", v, e.src, e.rep, time.Since(t0).Round(time.Millisecond))
	return e
}

// waitReplica polls the replica status (setup only; assertions use the Runner's samples).
func (e *pairEnv) waitReplica(t *testing.T, ok func(io, sqlRun string) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows, err := e.repDB.Query(e.caps.ShowReplicaStatus())
		if err != nil {
			t.Fatal(err)
		}
		_, st, err := scanRows(rows)
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(st) == 1 && ok(st[0][e.caps.ReplicaStatusColumn("io_running")], st[0][e.caps.ReplicaStatusColumn("sql_running")]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica not in the wanted state after 20s: %v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writer inserts into hbt.t on the source every 5 ms (about 200 transactions/s) until stopped.
type writer struct {
	cancel context.CancelFunc
	done   chan struct{}
	n      atomic.Int64
}

func startWriter(t *testing.T, db *sql.DB) *writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &writer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := db.ExecContext(ctx, "INSERT INTO hbt.t (v) VALUES (?)", i); err != nil {
				if ctx.Err() == nil {
					t.Errorf("writer: %v", err)
				}
				return
			}
			w.n.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *writer) stop() { w.cancel(); <-w.done }

// recorder is the test's sink: it keeps every tick with the phase the test was in when the
// tick arrived.
type recorder struct {
	mu    sync.Mutex
	phase string
	ticks []recTick
}

type recTick struct {
	phase string
	at    time.Time
	s     []Sample
}

func (r *recorder) sink(s []Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ticks = append(r.ticks, recTick{r.phase, time.Now(), s})
}

func (r *recorder) setPhase(p string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase = p
	return time.Now()
}

func (r *recorder) in(phase string) []recTick {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recTick
	for _, k := range r.ticks {
		if k.phase == phase {
			out = append(out, k)
		}
	}
	return out
}

// waitFor waits (at most timeout) for a tick arriving after now that satisfies cond.
func (r *recorder) waitFor(t *testing.T, timeout time.Duration, what string, cond func(s []Sample) bool) recTick {
	t.Helper()
	r.mu.Lock()
	from := len(r.ticks)
	r.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		ticks := r.ticks[from:]
		r.mu.Unlock()
		for _, k := range ticks {
			if cond(k.s) {
				return k
			}
		}
		from += len(ticks)
		if time.Now().After(deadline) {
			t.Fatalf("no tick within %v where %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTicks waits (at most 30 s) until n ticks arrived in phase and returns them: a
// fixed sleep gets fewer on a loaded machine, where a late tick of the 500 ms ticker is
// dropped.
func (r *recorder) waitTicks(t *testing.T, phase string, n int) []recTick {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ticks := r.in(phase); len(ticks) >= n {
			return ticks
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d ticks in phase %s within 30 s, want %d", len(r.in(phase)), phase, n)
		}
	}
}

// get returns node/metric from a tick's samples, failing the test when absent.
func get(t *testing.T, s []Sample, node, metric string) float64 {
	t.Helper()
	v, ok := value(s, node, metric)
	if !ok {
		t.Fatalf("tick has no %s/%s: %v", node, metric, s)
	}
	return v
}

// series returns node/metric over ticks (ticks lacking it are skipped).
func series(ticks []recTick, node, metric string) []float64 {
	var out []float64
	for _, k := range ticks {
		if v, ok := value(k.s, node, metric); ok {
			out = append(out, v)
		}
	}
	return out
}

// runRunner starts a Runner in the background; the returned func stops it and checks that
// Run returned nil.
func runRunner(t *testing.T, kind topology.Kind, nodes []Node, rec *recorder) (*Runner, func()) {
	cfg := testCfg
	cfg.Kind = kind
	cfg.Logger = slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r := NewRunner(cfg, nodes, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx, rec.sink) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("Run did not return within 5s of cancellation")
			}
		})
	}
	t.Cleanup(stop)
	return r, stop
}

// tWriter sends log lines to t.Log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// checkErrors fails when the samplers failed on more than a tenth of the ticks (a systematic
// failure, not a slow query on a busy machine).
func checkErrors(t *testing.T, r *Runner, rec *recorder, nodes []Node) {
	t.Helper()
	rec.mu.Lock()
	n := len(rec.ticks)
	rec.mu.Unlock()
	for _, node := range nodes {
		m := r.Latest()[node.Name]
		if m["sampler_errors"] > float64(n)/10 {
			t.Errorf("node %s: %v sampler errors in %d ticks: %v", node.Name, m["sampler_errors"], n, m)
		}
	}
}

func TestMariaDBAsyncLagAndBacklog(t *testing.T) {
	e := startPair(t)
	rec := &recorder{phase: "warmup"}
	r, stopRunner := runRunner(t, topology.Async, e.nodes, rec)

	// The heartbeat row reaches the replica and nothing is pending: lag exactly 0 while idle.
	rec.waitFor(t, 15*time.Second, "idle replica shows lag_s 0 and backlog_trx 0", func(s []Sample) bool {
		lag, ok1 := value(s, "rep", "lag_s")
		b, ok2 := value(s, "rep", "backlog_trx")
		return ok1 && ok2 && lag == 0 && b == 0
	})

	// (a) healthy replica under load: lag small, threads running.
	rec.setPhase("healthy")
	w := startWriter(t, e.srcDB)
	healthy := rec.waitTicks(t, "healthy", 5)
	for _, k := range healthy {
		if lag := get(t, k.s, "rep", "lag_s"); lag >= 1 {
			t.Errorf("healthy: replica lag_s %v, want < 1s", lag)
		}
		if b := get(t, k.s, "rep", "backlog_trx"); b >= 100 {
			t.Errorf("healthy: replica backlog_trx %v, want < 100", b)
		}
		if get(t, k.s, "rep", "io_running") != 1 || get(t, k.s, "rep", "sql_running") != 1 {
			t.Errorf("healthy: replica threads not running: %v", k.s)
		}
		if lag := get(t, k.s, "src", "lag_s"); lag != 0 {
			t.Errorf("healthy: the heartbeat writer itself shows lag_s %v, want 0", lag)
		}
	}
	t.Logf("healthy: %d ticks, replica lag_s %v, backlog_trx %v", len(healthy),
		series(healthy, "rep", "lag_s"), series(healthy, "rep", "backlog_trx"))

	// (b) applier stopped during the load: sql_running 0, lag and backlog rise.
	rec.setPhase("stopped")
	testserver.Exec(t, e.repDB, e.caps.StopReplica("SQL_THREAD"))
	stopped := rec.waitTicks(t, "stopped", 6)
	stopped = stopped[1:] // the first may have been sampled before STOP
	lags, backlogs := series(stopped, "rep", "lag_s"), series(stopped, "rep", "backlog_trx")
	t.Logf("stopped: replica lag_s %v, backlog_trx %v, sql_running %v, seconds_behind_source %v", lags, backlogs,
		series(stopped, "rep", "sql_running"), series(stopped, "rep", "seconds_behind_source"))
	for _, k := range stopped {
		if get(t, k.s, "rep", "sql_running") != 0 || get(t, k.s, "rep", "io_running") != 1 {
			t.Errorf("stopped: want sql_running 0, io_running 1: %v", k.s)
		}
		if v := get(t, k.s, "rep", "seconds_behind_source"); v != -1 {
			t.Errorf("stopped: seconds_behind_source %v, want -1 (NULL)", v)
		}
	}
	// lag rises every tick; the backlog never falls and grows over the phase (a tick may
	// see no new commit when the loaded source stalls for a moment).
	for i := 1; i < len(lags); i++ {
		if lags[i] <= lags[i-1] || backlogs[i] < backlogs[i-1] {
			t.Errorf("stopped: lag_s %v should rise every tick and backlog_trx %v never fall", lags, backlogs)
			break
		}
	}
	if backlogs[len(backlogs)-1] <= backlogs[0] {
		t.Errorf("stopped: backlog_trx %v did not grow", backlogs)
	}
	// lag grows at one second per second of wall time.
	span := stopped[len(stopped)-1].s[0].Elapsed - stopped[0].s[0].Elapsed
	if grow := lags[len(lags)-1] - lags[0]; grow < 0.8*span.Seconds() || grow > 1.2*span.Seconds()+0.1 {
		t.Errorf("stopped: lag_s grew %.3fs over %v of ticks, want about the same", grow, span)
	}
	if lags[len(lags)-1] < 1.5 || backlogs[len(backlogs)-1] < 100 {
		t.Errorf("stopped for 2.5 s or more at ~200 trx/s: last lag_s %v (want >= 1.5), backlog_trx %v (want >= 100)",
			lags[len(lags)-1], backlogs[len(backlogs)-1])
	}

	// Resume: lag falls back under load, and to exactly 0 once the load stops.
	resumed := rec.setPhase("resumed")
	testserver.Exec(t, e.repDB, e.caps.StartReplicaThread("SQL_THREAD"))
	k := rec.waitFor(t, 15*time.Second, "lag_s < 0.2 after START SQL_THREAD under load", func(s []Sample) bool {
		lag, ok := value(s, "rep", "lag_s")
		run, _ := value(s, "rep", "sql_running")
		return ok && lag < 0.2 && run == 1
	})
	t.Logf("resumed: lag_s %v after %v (under load)", get(t, k.s, "rep", "lag_s"), k.at.Sub(resumed).Round(time.Millisecond))
	time.Sleep(time.Second)
	w.stop()
	idle := rec.setPhase("idle")
	k = rec.waitFor(t, 15*time.Second, "lag_s == 0 and backlog_trx == 0 once the load stopped", func(s []Sample) bool {
		lag, _ := value(s, "rep", "lag_s")
		b, ok := value(s, "rep", "backlog_trx")
		return ok && lag == 0 && b == 0
	})
	t.Logf("idle: lag_s 0 and backlog_trx 0 %v after the load stopped, %v after resume; %d rows written",
		k.at.Sub(idle).Round(time.Millisecond), k.at.Sub(resumed).Round(time.Millisecond), w.n.Load())
	stopRunner()
	checkErrors(t, r, rec, e.nodes)
}

func TestMariaDBSemiSync(t *testing.T) {
	e := startPair(t)
	names := e.caps.SemiSyncNames()
	// A 10 s timeout while the replica acknowledges: on a loaded machine an
	// acknowledgement took over 200 ms once, and semi-sync fell back in the healthy phase.
	testserver.Exec(t, e.srcDB,
		fmt.Sprintf("SET GLOBAL %s = ON", names.SourceEnabled),
		fmt.Sprintf("SET GLOBAL %s = 10000", names.Timeout))
	testserver.Exec(t, e.repDB,
		fmt.Sprintf("SET GLOBAL %s = ON", names.ReplicaEnabled),
		e.caps.StopReplica("IO_THREAD"), e.caps.StartReplicaThread("IO_THREAD"))

	rec := &recorder{phase: "warmup"}
	r, stopRunner := runRunner(t, topology.SemiSync, e.nodes, rec)
	rec.waitFor(t, 15*time.Second, "semisync_clients 1 and semisync_on 1", func(s []Sample) bool {
		c, _ := value(s, "src", "semisync_clients")
		on, _ := value(s, "src", "semisync_on")
		return c == 1 && on == 1
	})

	// Writes are acknowledged: yes_tx deltas > 0.
	rec.setPhase("semi")
	w := startWriter(t, e.srcDB)
	time.Sleep(2 * time.Second)
	semi := rec.in("semi")
	yes, no := series(semi, "src", "semisync_yes_tx"), series(semi, "src", "semisync_no_tx")
	t.Logf("semi-sync: yes_tx %v no_tx %v avg_wait_us %v interval_avg_wait_us %v", yes, no,
		series(semi, "src", "semisync_avg_wait_us"), series(semi, "src", "semisync_interval_avg_wait_us"))
	if sum(yes) == 0 || sum(yes) <= sum(no) {
		t.Errorf("semi-sync healthy: yes_tx deltas %v, no_tx deltas %v: want acknowledged transactions", yes, no)
	}
	for _, k := range semi {
		if get(t, k.s, "src", "semisync_on") != 1 || get(t, k.s, "rep", "semisync_replica_on") != 1 {
			t.Errorf("semi-sync healthy: want semisync_on 1 and semisync_replica_on 1: %v", k.s)
		}
	}
	// Deltas, not counters: the per-tick yes_tx is at most what was written in a tick
	// (~100 rows + 10 heartbeats per 500 ms), far below the cumulative count.
	if m := maxOf(yes); m > 400 {
		t.Errorf("semisync_yes_tx %v looks cumulative, want per-tick deltas", yes)
	}

	// No acknowledger: commits time out after 200 ms and count as no_tx; semi-sync switches off.
	testserver.Exec(t, e.srcDB, fmt.Sprintf("SET GLOBAL %s = 200", names.Timeout))
	rec.setPhase("noack")
	testserver.Exec(t, e.repDB, e.caps.StopReplica("IO_THREAD"))
	rec.waitFor(t, 15*time.Second, "semisync_no_tx > 0 and semisync_on 0 with the replica IO thread stopped", func(s []Sample) bool {
		n, _ := value(s, "src", "semisync_no_tx")
		on, ok := value(s, "src", "semisync_on")
		return ok && n > 0 && on == 0
	})
	time.Sleep(time.Second)
	noack := rec.in("noack")
	t.Logf("no ack: no_tx %v semisync_on %v clients %v", series(noack, "src", "semisync_no_tx"),
		series(noack, "src", "semisync_on"), series(noack, "src", "semisync_clients"))
	if last := noack[len(noack)-1]; get(t, last.s, "rep", "io_running") != 0 || get(t, last.s, "src", "semisync_clients") != 0 {
		t.Errorf("no ack: want io_running 0 and semisync_clients 0: %v", last.s)
	}

	// The replica reconnects: semi-sync switches back on once it has caught up.
	rec.setPhase("back")
	back := time.Now()
	testserver.Exec(t, e.repDB, e.caps.StartReplicaThread("IO_THREAD"))
	k := rec.waitFor(t, 15*time.Second, "semisync_on 1 with yes_tx > 0 after START IO_THREAD", func(s []Sample) bool {
		on, _ := value(s, "src", "semisync_on")
		y, _ := value(s, "src", "semisync_yes_tx")
		return on == 1 && y > 0
	})
	t.Logf("semi-sync back on %v after START IO_THREAD", k.at.Sub(back).Round(time.Millisecond))
	w.stop()
	stopRunner()
	checkErrors(t, r, rec, e.nodes)
}

func sum(v []float64) (s float64) {
	for _, x := range v {
		s += x
	}
	return s
}

func maxOf(v []float64) (m float64) {
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
