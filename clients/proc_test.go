package clients

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/workload"
)

// procServer is a throwaway MariaDB with database sbtest prepared (1 table of 1000 rows),
// the target of the client processes' tests, and the habench binary they run.
type procServer struct {
	s       *testserver.Server
	tg      workload.Target
	bin     string
	version string
}

func startProcServer(t *testing.T) *procServer {
	t.Helper()
	s := testserver.StartMariaDB(t) // first: it skips in -short mode
	bin := testenv.Habench(t)
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	testserver.Exec(t, s.Open(t, ""), "CREATE DATABASE sbtest")
	tg := workload.Target{Endpoints: []workload.Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}}, User: "root", DB: "sbtest"}
	w, _ := workload.Lookup("oltp_read_write")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Prepare(ctx, tg, procOptions(), nil); err != nil {
		t.Fatal(err)
	}
	return &procServer{s: s, tg: tg, bin: bin, version: strings.TrimPrefix(strings.TrimSpace(string(out)), "habench ")}
}

// procOptions are the runs' options: 1 table of 1000 rows, 2 threads, --rate 20, 1 s
// reports, 30 s (tests end them earlier, or set less).
func procOptions() workload.Options {
	o := workload.DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Rate, o.Time, o.ReportInterval = 1, 1000, 2, 20, 30*time.Second, time.Second
	return o
}

// TestClientProcesses runs habench client-run processes (HABENCH_TEST_BIN) against one
// throwaway MariaDB, one subtest after the other (the server's commit counter is global).
func TestClientProcesses(t *testing.T) {
	t.Parallel()
	ps := startProcServer(t)
	t.Run("StdinClosed", ps.stdinClosed)
	t.Run("TwoClients", ps.twoClients)
	t.Run("OneKilled", ps.oneKilled)
	t.Run("Stopped", ps.stopped)
}

// stopped: Run's context ended (the coordinator's Ctrl-C) after the first merged interval
// of a 30 s run: Run returns within 3 s, with both clients' own (partial) results merged,
// none lost, and their runs' error (the coordinator gone).
func (ps *procServer) stopped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ivs int
	cfg := ps.config(t, LocalRunner{Bin: ps.bin}, &ivs)
	cfg.Options.Time = 30 * time.Second
	var stopped time.Time
	cfg.Reporter = workload.ReporterFunc(func(workload.Interval) {
		if ivs++; ivs == 1 {
			stopped = time.Now()
			cancel()
		}
	})
	out, err := Run(ctx, cfg)
	took := time.Since(stopped)
	t.Logf("Run returned %v after its context ended: %v", took.Round(time.Millisecond), err)
	if stopped.IsZero() || took > 3*time.Second {
		t.Errorf("Run returned %v after its context ended, want within 3 s", took)
	}
	if err == nil || errors.Is(err, ErrLost) || !strings.Contains(err.Error(), ErrCoordinatorGone.Error()) {
		t.Errorf("error %v: want the clients' runs ended by the coordinator, none lost", err)
	}
	if out == nil || len(out.Clients) != 2 || out.Clients[0].Partial || out.Clients[1].Partial || out.Result.Transactions == 0 || out.Result.TotalTime > 10*time.Second {
		t.Fatalf("outcome %+v: want both clients' own results of a run ended early", out)
	}
	t.Logf("merged %d transactions over %v", out.Result.Transactions, out.Result.TotalTime)
}

// config is a Run of oltp_read_write from clients c1 and c2 (local processes) on ps's
// server, 3 threads at --rate 30 for 3 s, its merged intervals counted in *ivs.
func (ps *procServer) config(t *testing.T, runner Runner, ivs *int) Config {
	o := procOptions()
	o.Threads, o.Rate, o.Time = 3, 30, 3*time.Second
	return Config{Clients: []string{"c1", "c2"}, Runner: runner, Version: ps.version, Workload: "oltp_read_write",
		Options: o, Target: ps.tg, StartIn: 500 * time.Millisecond, Note: func(l string) { t.Log(l) },
		Reporter: workload.ReporterFunc(func(workload.Interval) { *ivs++ })}
}

// twoClients: Run with two client processes sharing 3 threads and --rate 30 (c1 2 threads
// and rate 15, c2 1 and 15): the merged transactions are the clients' sum and the
// server's Com_commit delta; every merged interval has both clients.
func (ps *procServer) twoClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := ps.s.Open(t, "")
	before := testserver.ComCounters(t, admin)
	var ivs int
	began := time.Now()
	out, err := Run(ctx, ps.config(t, LocalRunner{Bin: ps.bin}, &ivs))
	took := time.Since(began)
	after := testserver.ComCounters(t, admin)
	if err != nil {
		t.Fatal(err)
	}
	r, commits := out.Result, after["Com_commit"]-before["Com_commit"]
	t.Logf("%v: %d transactions, %.1f TPS, p95 %.2f ms, %d threads, rate %d; server Com_commit delta %d; %d intervals reported", took.Round(time.Millisecond),
		r.Transactions, r.TPS(), r.LatencyP95, r.Threads, r.Rate.Target, commits, ivs)
	for _, c := range out.Clients {
		t.Logf("client %s: %d threads, %d transactions, %.1f TPS, p95 %.2f ms, CPU %.3f of %d", c.Client, c.Threads, c.Transactions, c.TPS, c.LatencyP95, c.CPUCores, c.CPUs)
		if c.Partial || c.LatencyP95 <= 0 || c.CPUs == 0 {
			t.Errorf("client %s's row %+v: want its own result (not partial, its p95 and CPUs)", c.Client, c)
		}
	}
	if r.Transactions == 0 || r.Transactions != commits || r.Transactions != out.Clients[0].Transactions+out.Clients[1].Transactions {
		t.Errorf("merged %d transactions, server's Com_commit delta %d", r.Transactions, commits)
	}
	if r.Threads != 3 || out.Clients[0].Threads != 2 || out.Clients[1].Threads != 1 || r.Rate.Target != 30 {
		t.Errorf("threads %d (%d + %d), rate %d: want 3 (2 + 1), 30", r.Threads, out.Clients[0].Threads, out.Clients[1].Threads, r.Rate.Target)
	}
	// Every merged interval is reported but a last one that a client's run had ended
	// before (the runs end milliseconds apart).
	endOfRuns := 0
	if n := len(out.Intervals); n > 0 && len(out.Intervals[n-1].Ended) > 0 {
		endOfRuns = 1
	}
	if ivs < 2 || len(out.Intervals)-endOfRuns != ivs {
		t.Errorf("%d intervals reported, %d merged (%d the runs' end)", ivs, len(out.Intervals), endOfRuns)
	}
	for _, iv := range out.Intervals[:len(out.Intervals)-endOfRuns] {
		if !iv.Complete() || len(iv.Ended) > 0 {
			t.Errorf("interval %d: missing %v, lost %v, ended %v", iv.N, iv.Missing, iv.Lost, iv.Ended)
		}
	}
}

// killingRunner is a LocalRunner that keeps the processes it started by client.
type killingRunner struct {
	LocalRunner
	procs map[string]*Proc
}

func (k *killingRunner) Start(ctx context.Context, client string) (*Proc, error) {
	p, err := k.LocalRunner.Start(ctx, client)
	if err == nil {
		k.procs[client] = p
	}
	return p, err
}

// oneKilled: client c2's process killed (SIGKILL) after the second merged interval of a
// 3 s run: Run's error names c2 as lost (ErrLost, a LostClient with its time), c1's run
// goes on to its end, and the outcome keeps c2's intervals (its row Partial, with
// transactions), the merged transactions c1's plus c2's until then.
func (ps *procServer) oneKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kr := &killingRunner{LocalRunner: LocalRunner{Bin: ps.bin}, procs: map[string]*Proc{}}
	var ivs int
	cfg := ps.config(t, kr, &ivs)
	var killed time.Time
	cfg.Reporter = workload.ReporterFunc(func(workload.Interval) {
		if ivs++; ivs == 2 {
			killed = time.Now()
			kr.procs["c2"].Kill()
		}
	})
	out, err := Run(ctx, cfg)
	t.Logf("error: %v", err)
	var lost LostClient
	if !errors.Is(err, ErrLost) || !errors.As(err, &lost) || lost.Client != "c2" || lost.At.Before(killed) || lost.At.Sub(killed) > time.Second {
		t.Fatalf("Run's error %v: want client c2 lost within 1 s of its kill at %v", err, killed)
	}
	if out == nil || len(out.Clients) != 2 || len(out.Lost) != 1 {
		t.Fatalf("outcome %+v: want both clients' rows and c2 lost", out)
	}
	c1, c2 := out.Clients[0], out.Clients[1]
	t.Logf("merged %d transactions: c1 %d, c2 %d (partial %v, %d intervals)", out.Result.Transactions, c1.Transactions, c2.Transactions, c2.Partial, lost.Intervals)
	if c1.Partial || !c2.Partial || c2.Transactions == 0 || lost.Intervals < 2 || out.Result.Transactions != c1.Transactions+c2.Transactions {
		t.Errorf("rows %+v, %+v: want c2's partial, with transactions", c1, c2)
	}
	if c1.TPS < 10 || out.Result.TotalTime < 3*time.Second {
		t.Errorf("c1: %.1f TPS, the run %v: want c1 to run on to the end", c1.TPS, out.Result.TotalTime)
	}
}

// stdinClosed: a client whose standard input is closed two intervals into its 30 s run (its
// coordinator gone) ends its run and exits within 3 s, its stream ending with its partial
// result (the run's error naming the coordinator's end) or cut (ErrLost).
func (ps *procServer) stdinClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := LocalRunner{Bin: ps.bin}.Start(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	job := Job{Format: Format, Client: "c1", Workload: "oltp_read_write", Options: procOptions(),
		Endpoints: ps.tg.Endpoints, User: ps.tg.User, DB: ps.tg.DB, Start: time.Now().Add(200 * time.Millisecond)}
	b, _ := encodeJob(job)
	if _, err := p.Stdin.Write(b); err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(p.Stdout, "c1", ps.version)
	if _, err := d.Hello(); err != nil {
		t.Fatal(err)
	}
	var ivs int
	var closed time.Time
	var rec Record
	for {
		rec, err = d.Next()
		if err != nil || rec.Interval == nil {
			break
		}
		if ivs++; ivs == 2 {
			closed = time.Now()
			p.Stdin.Close()
		}
	}
	waitErr := p.Wait()
	took := time.Since(closed)
	t.Logf("%d intervals, then stdin closed: the process exited %v later (%v); end record %+v, stream error %v", ivs, took.Round(time.Millisecond), waitErr, rec.RunErr, err)
	if closed.IsZero() || took > 3*time.Second {
		t.Errorf("the client exited %v after its standard input was closed (%d intervals), want within 3 s", took, ivs)
	}
	switch {
	case err != nil && !errors.Is(err, ErrLost):
		t.Errorf("stream: %v", err)
	case err == nil && (rec.Result == nil || rec.Result.Transactions == 0 || !strings.Contains(rec.RunErr, ErrCoordinatorGone.Error())):
		t.Errorf("end record: result %v, error %q: want a partial result and the coordinator's end", rec.Result, rec.RunErr)
	case err == nil && rec.Result.TotalTime > 10*time.Second:
		t.Errorf("result over %v: not ended early", rec.Result.TotalTime)
	}
	if _, err := d.Next(); err != io.EOF && err == nil {
		t.Errorf("after the end: %v", err)
	}
}
