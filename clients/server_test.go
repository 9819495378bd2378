package clients

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/workload"
)

// TestServerTwoClients: two workload engines (two "clients", 2 threads at --rate 40 each,
// 3 s) against one throwaway MariaDB, each streaming through an Encoder and a Decoder (an
// io.Pipe for the SSH session) to a coordinator that merges their intervals as they come
// and their Results at the end. The merged transactions equal the clients' sum and the
// server's Com_commit delta; the merged histogram is the union of the clients' interval
// histograms and tails, and its p99 that union's; the merged intervals and the merged tail
// add up to the merged histogram.
func TestServerTwoClients(t *testing.T) {
	t.Parallel()
	s := testserver.StartMariaDB(t)
	admin := s.Open(t, "")
	tg := workload.Target{Endpoints: []workload.Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}}, User: "root", DB: "sbtest"}
	testserver.Exec(t, admin, "CREATE DATABASE sbtest")
	w, err := workload.Lookup("oltp_read_write")
	if err != nil {
		t.Fatal(err)
	}
	o := workload.DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Time, o.Rate, o.ReportInterval = 1, 1000, 2, 3*time.Second, 40, time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Prepare(ctx, tg, o, nil); err != nil {
		t.Fatal(err)
	}

	names := []string{"c1", "c2"}
	m, err := NewIntervalMerger(names, o.Percentile, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // the merger and what the coordinator keeps
	var merged []Interval
	results := map[string]*workload.Result{}
	var clientIvs []ClientInterval
	streamBytes := map[string]*[2]int{"c1": {}, "c2": {}} // bytes and records sent by each client
	before := testserver.ComCounters(t, admin)
	var wg sync.WaitGroup
	for _, name := range names {
		pr, pw := io.Pipe()
		wg.Add(2)
		go func() { // the client
			defer wg.Done()
			e, err := NewEncoder(&counted{w: pw, n: streamBytes[name]}, Hello{Version: "test", Client: name, Threads: o.Threads, Start: time.Now(),
				Workload: "oltp_read_write", Percentile: o.Percentile, ExtraPercentiles: o.ExtraPercentiles})
			if err == nil {
				res, runErr := w.Run(ctx, tg, o, e)
				err = e.Result(res, runErr)
			}
			pw.CloseWithError(err)
		}()
		go func() { // the coordinator's reader of that client
			defer wg.Done()
			if err := coordinate(pr, name, m, &mu, &merged, results, &clientIvs); err != nil {
				t.Error(err)
				pr.CloseWithError(err)
			}
		}()
	}
	wg.Wait()
	after := testserver.ComCounters(t, admin)
	if t.Failed() {
		return
	}
	merged = append(merged, m.Flush()...)
	mg, err := Merge([]Part{{"c1", results["c1"]}, {"c2", results["c2"]}}, o.ExtraPercentiles)
	if err != nil {
		t.Fatal(err)
	}
	r := mg.Result
	for _, name := range names {
		t.Logf("client %s sent %d bytes in %d records", name, streamBytes[name][0], streamBytes[name][1])
	}
	commits := after["Com_commit"] - before["Com_commit"]
	t.Logf("merged: %d transactions (c1 %d, c2 %d), server Com_commit delta %d, %.1f TPS, p99 %.2f ms, %d merged intervals",
		r.Transactions, results["c1"].Transactions, results["c2"].Transactions, commits, r.TPS(), r.LatencyP99, len(merged))
	if r.Transactions != results["c1"].Transactions+results["c2"].Transactions || r.Transactions != commits || r.Transactions == 0 {
		t.Errorf("merged %d transactions, clients %d + %d, server Com_commit delta %d", r.Transactions, results["c1"].Transactions, results["c2"].Transactions, commits)
	}
	union, ivSum := workload.NewHistogram(), workload.NewHistogram()
	for _, ci := range clientIvs {
		union.Merge(ci.Recorded)
	}
	for _, name := range names {
		union.Merge(results[name].Tail)
	}
	for _, iv := range merged {
		ivSum.Merge(iv.Recorded)
		if !iv.Complete() {
			t.Errorf("merged interval %d incomplete: missing %v lost %v", iv.N, iv.Missing, iv.Lost)
		}
	}
	ivSum.Merge(r.Tail)
	if !union.Equals(r.Histogram) || !ivSum.Equals(r.Histogram) {
		t.Errorf("merged histogram (%d) is not the union of the clients' intervals and tails (%d) or of the merged intervals and tail (%d)",
			r.Histogram.TotalCount(), union.TotalCount(), ivSum.TotalCount())
	}
	if p := workload.LatencyAt(union, 99, r.LatencyMax); r.LatencyP99 != p || p <= 0 {
		t.Errorf("merged p99 %v ms, the union's %v", r.LatencyP99, p)
	}
	if r.Rate == nil || r.Rate.Target != 80 || r.Threads != 4 || len(mg.Clients) != 2 {
		t.Errorf("merged rate %+v, threads %d, clients %d", r.Rate, r.Threads, len(mg.Clients))
	}
}

// coordinate reads one client's stream into the merger m (under mu): its intervals, kept
// in ivs and merged into merged as they complete, and its result into results.
func coordinate(r io.Reader, name string, m *IntervalMerger, mu *sync.Mutex, merged *[]Interval, results map[string]*workload.Result, ivs *[]ClientInterval) error {
	d := NewDecoder(r, name, "test")
	if _, err := d.Hello(); err != nil {
		return err
	}
	for {
		rec, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		mu.Lock()
		if rec.Interval != nil {
			*ivs = append(*ivs, *rec.Interval)
			var out []Interval
			if out, err = m.Add(*rec.Interval, time.Now()); err == nil {
				*merged = append(*merged, out...)
			}
		} else {
			results[name] = rec.Result
			*merged = append(*merged, m.Ended(name, time.Now())...)
			if rec.RunErr != "" {
				err = fmt.Errorf("client %s: %s", name, rec.RunErr)
			}
		}
		mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// counted counts the bytes and the writes (records) written through it in n.
type counted struct {
	w io.Writer
	n *[2]int
}

func (c *counted) Write(b []byte) (int, error) {
	c.n[0] += len(b)
	c.n[1]++
	return c.w.Write(b)
}
