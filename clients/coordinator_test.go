package clients

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/workload"
)

// scriptedRunner starts clients that speak the stream as client-run does but run no
// workload: client c reports intervals[c] intervals of 5 transactions of 1 ms each, then
// its Result with fail[c] as its run's error, and ends once its standard input ends.
type scriptedRunner struct {
	intervals map[string]int
	fail      map[string]error
}

func (s scriptedRunner) Start(_ context.Context, client string) (*Proc, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		defer outW.Close()
		br := bufio.NewReader(inR)
		line, err := br.ReadBytes('\n')
		var job Job
		if err != nil || json.Unmarshal(line, &job) != nil {
			return
		}
		o := job.Options
		e, err := NewEncoder(outW, Hello{Version: "v", Client: client, Threads: o.Threads, Start: time.Now(), Workload: job.Workload, Percentile: o.Percentile})
		if err != nil {
			return
		}
		t0 := time.Now()
		lats := []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond}
		k := s.intervals[client]
		for n := 1; n <= k; n++ {
			e.Interval(engineInterval(t0, time.Duration(n)*time.Second, lats, o.Percentile))
		}
		var all []time.Duration
		for range k {
			all = append(all, lats...)
		}
		res := engineResult(all, o.Threads, o.Percentile, nil)
		res.StartedAt, res.TotalTime = t0, time.Duration(k)*time.Second
		_ = e.Result(res, s.fail[client])
		_, _ = io.Copy(io.Discard, br) // until the coordinator closes its input
	}()
	var once sync.Once
	return &Proc{Stdin: inW, Stdout: outR, Wait: func() error { return nil },
		Kill: func() { once.Do(func() { inW.Close(); outR.Close() }) }}, nil
}

// ivReporter keeps the intervals given to it.
type ivReporter struct{ got []time.Duration }

func (r *ivReporter) Interval(iv workload.Interval) { r.got = append(r.got, iv.Elapsed) }

// TestCoordinatorRunsEnd: the interval one client's run ended before, when that client
// had reported the one before it (the runs' last interval), goes to no reporter; a client
// that ended early (its statement failed after 2 intervals) leaves the other's later
// intervals reported, each noted without it; the failed client's error is the
// *workload.StatementError its engine returned (a capacity search judges it so), and it
// stops the other clients.
func TestCoordinatorRunsEnd(t *testing.T) {
	run := func(intervals map[string]int, fail map[string]error) (*ivReporter, []string, *Outcome, error) {
		t.Helper()
		rep := &ivReporter{}
		var notes []string
		o := workload.DefaultOptions()
		o.Threads, o.Time, o.ReportInterval = 2, time.Minute, time.Second
		cfg := Config{Clients: []string{"a", "b"}, Runner: scriptedRunner{intervals, fail}, Version: "v", Workload: "oltp_read_write", Options: o,
			Target:   workload.Target{Endpoints: []workload.Endpoint{{Name: "n1", Host: "127.0.0.1", Port: 3306}}, User: "u", DB: "sbtest"},
			Reporter: rep, StartIn: time.Millisecond, Note: func(l string) { notes = append(notes, l) }}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := Run(ctx, cfg)
		return rep, notes, out, err
	}
	rep, notes, out, err := run(map[string]int{"a": 3, "b": 2}, nil)
	if out == nil {
		t.Fatalf("Run: %v", err)
	}
	if err != nil || len(rep.got) != 2 || len(out.Intervals) != 3 || strings.Join(notes, "") != "" {
		t.Errorf("b's run ended after 2 intervals, a's after 3: err %v, reported %v, merged %d, notes %q; want intervals 1 and 2 reported, 3 merged, no note", err, rep.got, len(out.Intervals), notes)
	}
	se := &workload.StatementError{Workload: "oltp_read_write", Endpoint: "n1", Statement: "COMMIT", Code: 1213, Err: errors.New("Deadlock found")}
	rep, notes, out, err = run(map[string]int{"a": 6, "b": 2}, map[string]error{"b": se})
	var got *workload.StatementError
	if !errors.As(err, &got) || got.Code != 1213 || got.Endpoint != "n1" || !strings.Contains(err.Error(), "client b: ") {
		t.Errorf("b's statement failed: err %v, want client b's *workload.StatementError with code 1213", err)
	}
	if out == nil || len(rep.got) != 6 || !strings.Contains(strings.Join(notes, "\n"), "clients: interval 6 without client(s) b") {
		t.Errorf("a's intervals after b's run ended: reported %v, notes %q; want all 6, each noted without b", rep.got, notes)
	}
}
