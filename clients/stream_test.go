package clients

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/habench/habench/workload"
)

var streamT0 = time.Date(2026, 12, 7, 12, 0, 0, 123456789, time.UTC)

func testHello() Hello {
	return Hello{Version: "0.1.0", Client: "c1", Threads: 4, Start: streamT0, Workload: "oltp_read_write",
		Percentile: 95, ExtraPercentiles: []float64{99.9}}
}

// streamIntervals are three interval reports with every field set: the second with
// transactions in flight (Histogram is not Recorded), all with --rate and error codes.
func streamIntervals(g *rand.Rand) []workload.Interval {
	var ivs []workload.Interval
	for n := 1; n <= 3; n++ {
		lats := []time.Duration{time.Duration(n) * time.Millisecond, 7 * time.Millisecond}
		iv := engineInterval(streamT0, time.Duration(n)*time.Second, lats, 95)
		iv.Rate = &workload.RateInterval{}
		fill(g, "Interval", reflect.ValueOf(&iv).Elem())
		fill(g, "RateInterval", reflect.ValueOf(iv.Rate).Elem())
		iv.ErrorsByCode = map[uint16]int64{1213: 3, 2013: 1}
		iv.PerEndpoint = map[string]workload.EndpointStats{"n1": {Transactions: 5, ErrorsByCode: map[uint16]int64{1213: 3}}, "n2": {}}
		if n == 2 {
			iv.Histogram = iv.Recorded.Clone()
			_ = iv.Histogram.RecordValue(2_500_000)
		}
		ivs = append(ivs, iv)
	}
	return ivs
}

// streamResult is a Result with every field set.
func streamResult(g *rand.Rand) *workload.Result {
	r := engineResult([]time.Duration{time.Millisecond, 3 * time.Millisecond, time.Second}, 4, 95, []float64{99.9})
	fill(g, "Result", reflect.ValueOf(r).Elem())
	r.StartedAt, r.TailFrom, r.TotalTime = streamT0, 9*time.Second, 10*time.Second
	r.Tail = workload.NewHistogram()
	_ = r.Tail.RecordValue(1500)
	r.Rate = &workload.RateResult{Met: true, Behind: time.Second, BehindAt: 2 * time.Second, ServiceHistogram: r.Histogram.Clone()}
	fill(g, "RateResult", reflect.ValueOf(r.Rate).Elem())
	r.PerEndpoint = map[string]workload.EndpointStats{"n1": {Transactions: 3, ReadChecks: 2, StaleReads: 1}}
	r.ErrorsByCode = map[uint16]int64{2013: 2}
	r.Outages = []workload.Outage{{Endpoint: "n1", Start: time.Second, End: 3 * time.Second, StartedAt: streamT0.Add(time.Second),
		Open: true, Failures: 2, Codes: map[uint16]int64{2013: 2}}}
	r.Waits = []workload.Wait{{Endpoint: "n1", Worker: 2, Start: streamT0.Add(time.Second), At: time.Second, Waited: 2 * time.Second, Abandoned: true}}
	r.WriterMoves = []workload.WriterMove{{From: "n1", To: "n2", At: streamT0.Add(2 * time.Second), FirstCommit: streamT0.Add(3 * time.Second),
		Workers: 4, Abandoned: 1, Left: 3, Settled: streamT0.Add(4 * time.Second)}}
	r.PSFallback, r.ReadNodes, r.ClientCPUs, r.ClientCPUCores = "note", []string{"n2"}, 4, 1.25
	return r
}

// writeStream is a client's whole stream: hello, ivs, res and runErr.
func writeStream(t *testing.T, h Hello, ivs []workload.Interval, res *workload.Result, runErr error) []byte {
	t.Helper()
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range ivs {
		e.Interval(iv)
	}
	if err := e.Result(res, runErr); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sameHist reports whether a and b hold the same counts (both nil: the same).
func sameHist(a, b *hdrhistogram.Histogram) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equals(b)
}

// TestStreamRoundTrip: intervals and a result with every field set come out of the
// Decoder as they went into the Encoder, histograms included (Recorded shared with
// Histogram when it was), then io.EOF.
func TestStreamRoundTrip(t *testing.T) {
	g := rand.New(rand.NewPCG(1, 34))
	ivs, res := streamIntervals(g), streamResult(g)
	b := writeStream(t, testHello(), ivs, res, errors.New("endpoint n1 lost"))
	if n := strings.Count(string(b), "\n"); n != 5 {
		t.Fatalf("%d lines, want 5 (hello, 3 intervals, result):\n%s", n, b)
	}
	d := NewDecoder(bytes.NewReader(b), "c1", "0.1.0")
	h, err := d.Hello()
	if err != nil {
		t.Fatal(err)
	}
	if want := testHello(); h.Format != Format || h.Client != "c1" || h.Threads != 4 || !h.Start.Equal(want.Start) || !reflect.DeepEqual(h.ExtraPercentiles, want.ExtraPercentiles) {
		t.Errorf("hello %+v", h)
	}
	for i, want := range ivs {
		rec, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		got := rec.Interval
		if got == nil || got.N != i+1 || got.Client != "c1" {
			t.Fatalf("record %d: %+v, want interval %d of c1", i+2, rec, i+1)
		}
		if !sameHist(got.Histogram, want.Histogram) || !sameHist(got.Recorded, want.Recorded) || (got.Recorded == got.Histogram) != (want.Recorded == want.Histogram) {
			t.Errorf("interval %d: histograms differ (recorded is histogram: %v, sent %v)", i+1, got.Recorded == got.Histogram, want.Recorded == want.Histogram)
		}
		gi, wi := got.Interval, want
		gi.Histogram, gi.Recorded, wi.Histogram, wi.Recorded = nil, nil, nil, nil
		if !reflect.DeepEqual(gi, wi) {
			t.Errorf("interval %d:\n got %+v\nwant %+v", i+1, gi, wi)
		}
	}
	rec, err := d.Next()
	if err != nil {
		t.Fatal(err)
	}
	if rec.RunErr != "endpoint n1 lost" || rec.Result == nil {
		t.Fatalf("result record %+v", rec)
	}
	got := *rec.Result
	if !sameHist(got.Histogram, res.Histogram) || !sameHist(got.Tail, res.Tail) || !sameHist(got.Rate.ServiceHistogram, res.Rate.ServiceHistogram) {
		t.Error("result histograms differ")
	}
	want := *res
	gr, wr := *got.Rate, *want.Rate
	gr.ServiceHistogram, wr.ServiceHistogram = nil, nil
	got.Histogram, got.Tail, got.Rate, want.Histogram, want.Tail, want.Rate = nil, nil, nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gr, wr) {
		t.Errorf("result:\n got %+v %+v\nwant %+v %+v", got, gr, want, wr)
	}
	if _, err := d.Next(); err != io.EOF {
		t.Errorf("after the result: %v, want io.EOF", err)
	}
}

// TestStreamLost: a stream cut mid-record, or ending between records, gives the intervals
// up to the cut and then an error naming the client and the record, wrapping ErrLost.
func TestStreamLost(t *testing.T) {
	g := rand.New(rand.NewPCG(2, 34))
	b := writeStream(t, testHello(), streamIntervals(g), streamResult(g), nil)
	lines := bytes.SplitAfter(b, []byte("\n"))
	upTo3 := bytes.Join(lines[:3], nil) // hello, intervals 1 and 2
	for _, c := range []struct {
		name   string
		stream []byte
		want   string
	}{
		{"cut mid-record", append(upTo3, lines[3][:len(lines[3])/2]...), "client c1: record 4: the stream was cut mid-record: client lost"},
		{"ended between records", upTo3, "client c1: the stream ended after record 3, before the client's result: client lost"},
	} {
		d := NewDecoder(bytes.NewReader(c.stream), "c1", "0.1.0")
		if _, err := d.Hello(); err != nil {
			t.Fatal(err)
		}
		var got []int
		var err error
		for {
			var rec Record
			if rec, err = d.Next(); err != nil {
				break
			}
			got = append(got, rec.Interval.N)
		}
		if !reflect.DeepEqual(got, []int{1, 2}) || err == nil || err.Error() != c.want || !errors.Is(err, ErrLost) {
			t.Errorf("%s: intervals %v, error %v; want [1 2], %q (ErrLost)", c.name, got, err, c.want)
		}
	}
}

// TestStreamRefused: a client of another habench version is refused in one line at its
// hello, as are another format, another client's name, something that is not a stream,
// and records out of order.
func TestStreamRefused(t *testing.T) {
	hello := func(f func(*Hello)) []byte {
		h := testHello()
		f(&h)
		var buf bytes.Buffer
		e, err := NewEncoder(&buf, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Result(nil, errors.New("end")); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, c := range []struct {
		name   string
		stream []byte
		want   string
	}{
		{"version", hello(func(h *Hello) { h.Version = "0.0.9" }),
			`client c1: record 1: habench version "0.0.9", the coordinator's is "0.1.0": the client must run the coordinator's habench`},
		{"format", bytes.Replace(hello(func(*Hello) {}), []byte(`"format":1`), []byte(`"format":2`), 1),
			"client c1: record 1: stream format 2, the coordinator's is 1"},
		{"name", hello(func(h *Hello) { h.Client = "c2" }), `client c1: record 1: the hello names client "c2"`},
		{"not a stream", []byte("bash: habench: command not found\n"), `client c1: record 1: not a habench client's stream: "bash: habench: command not found"`},
		{"empty", nil, "client c1: the stream ended after record 0, before the client's result: client lost"},
	} {
		_, err := NewDecoder(bytes.NewReader(c.stream), "c1", "0.1.0").Hello()
		if err == nil || err.Error() != c.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	g := rand.New(rand.NewPCG(3, 34))
	ivs := streamIntervals(g)
	full := writeStream(t, testHello(), ivs, streamResult(g), nil)
	lines := bytes.SplitAfter(full, []byte("\n"))
	for _, c := range []struct {
		name   string
		lines  [][]byte
		want   string
		atNext int
	}{
		{"interval skipped", [][]byte{lines[0], lines[1], lines[3]}, "client c1: record 3: interval 3 after interval 1", 2},
		{"second hello", [][]byte{lines[0], lines[0]}, "client c1: record 2: a second hello", 1},
		{"after the result", [][]byte{lines[0], lines[4], lines[1]}, "client c1: record 3: a record after the result", 2},
		{"no kind", [][]byte{lines[0], []byte("{}\n")}, "client c1: record 2: not one of hello, interval or result", 1},
	} {
		d := NewDecoder(bytes.NewReader(bytes.Join(c.lines, nil)), "c1", "0.1.0")
		if _, err := d.Hello(); err != nil {
			t.Fatal(err)
		}
		var err error
		for range c.atNext {
			if _, err = d.Next(); err != nil {
				break
			}
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// failWriter fails every write after the first n; stuck, when set, blocks every write
// until it is closed.
type failWriter struct {
	mu     sync.Mutex
	n      int
	writes int
	stuck  chan struct{}
}

func (w *failWriter) Write(b []byte) (int, error) {
	if w.stuck != nil {
		<-w.stuck
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return 0, fmt.Errorf("broken pipe")
	}
	w.n--
	w.writes++
	return len(b), nil
}

// TestEncoderBroken: the first failed write (the coordinator gone), or a write that takes
// longer than the stall limit (the coordinator not reading), closes Broken and is kept;
// nothing is written after it, and Interval never waits longer than the stall limit.
func TestEncoderBroken(t *testing.T) {
	ivs := streamIntervals(rand.New(rand.NewPCG(4, 34)))
	w := &failWriter{n: 2} // the hello and interval 1
	e, err := NewEncoder(w, testHello())
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range ivs {
		e.Interval(iv)
	}
	select {
	case <-e.Broken():
	case <-time.After(5 * time.Second):
		t.Fatal("not broken 5 s after a failed write")
	}
	if err := e.Result(nil, errors.New("x")); err == nil || err.Error() != "stream: write: broken pipe" || w.writes != 2 {
		t.Errorf("after the failure: %v, %d writes; want the broken pipe, 2 writes", err, w.writes)
	}

	defer func(d time.Duration) { stallLimit = d }(stallLimit)
	stallLimit = 200 * time.Millisecond
	stuck := &failWriter{n: 100, stuck: make(chan struct{})}
	defer close(stuck.stuck)
	e, err = NewEncoder(stuck, testHello())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	done := make(chan error, 1)
	go func() {
		for range queueLen + 5 {
			e.Interval(ivs[0])
		}
		done <- e.Result(nil, errors.New("x"))
	}()
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a stuck coordinator: the intervals and the result still waiting after 5 s")
	}
	if d := time.Since(t0); d > 2*time.Second || err == nil || !strings.Contains(err.Error(), "the coordinator is not reading") {
		t.Errorf("a stuck coordinator: %v after %v; want the stall named within about 0.2 s", err, d)
	}
	if _, err := NewEncoder(io.Discard, Hello{}); err == nil {
		t.Error("a hello without a client accepted")
	}
}
