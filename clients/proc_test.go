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
	bin := testenv.Habench(t)
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	s := testserver.StartMariaDB(t)
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
