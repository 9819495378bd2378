package clients

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/habench/habench/workload"
)

// The stream is what a client sends its coordinator over its connection (an SSH
// session's standard output): newline-delimited JSON, one record a line, each written
// whole. Record 1 is a hello, then one interval record per interval report (numbered 1,
// 2, ... in "n"), then one result record (the Result and the run's error), then nothing.
// Histograms travel as HdrHistogram's V2 compressed encoding (base64 text, as in
// latency.hlog), the rest as encoding/json encodes the workload types (field names,
// durations in ns, times in RFC 3339 with ns), so that every value round-trips exactly.
//
//	{"hello":{"format":1,"version":"0.1.0","client":"c1","threads":8,...}}
//	{"interval":{"n":1,"Elapsed":1000000000,...,"Histogram":"HISTFAAAA..."}}
//	{"result":{"Workload":"oltp_read_write",...,"Histogram":"HISTFAAAA..."},"error":""}

// Format is the stream's format version; a coordinator refuses a stream of another.
const Format = 1

// maxRecord is the longest record a Decoder reads (bytes).
const maxRecord = 64 << 20

// ErrLost is wrapped by the Decoder's error when the stream ended or was cut before the
// client's result: the client (or its connection) was lost.
var ErrLost = errors.New("client lost")

// Hello is a stream's first record: who the client is and what it runs.
type Hello struct {
	// Format is the stream's format (Format); Version is the client's habench version.
	Format  int    `json:"format"`
	Version string `json:"version"`
	// Client is the client's name; Threads its workers.
	Client  string `json:"client"`
	Threads int    `json:"threads"`
	// Start is the client's clock when it sent the hello (its run about to start): set
	// beside the coordinator's clock, it bounds the clients' clock skew.
	Start time.Time `json:"start"`
	// Workload, Percentile and ExtraPercentiles are the run's test and its
	// Options.Percentile and Options.ExtraPercentiles (which a merge needs).
	Workload         string    `json:"workload"`
	Percentile       float64   `json:"percentile"`
	ExtraPercentiles []float64 `json:"extra_percentiles,omitempty"`
}

// record is one line of the stream: a hello, an interval, or the end (the result, the
// run's error, or both).
type record struct {
	Hello    *Hello        `json:"hello,omitempty"`
	Interval *wireInterval `json:"interval,omitempty"`
	Result   *wireResult   `json:"result,omitempty"`
	// Error is the client's run error, in the end record ("" when none).
	Error string `json:"error,omitempty"`
}

// wireInterval is a workload.Interval on the stream: its histograms encoded (Recorded
// left out when it is Histogram).
type wireInterval struct {
	N int `json:"n"`
	workload.Interval
	Histogram string `json:"Histogram,omitempty"`
	Recorded  string `json:"Recorded,omitempty"`
}

// wireResult is a workload.Result on the stream: its histograms encoded.
type wireResult struct {
	workload.Result
	Histogram string    `json:"Histogram,omitempty"`
	Tail      string    `json:"Tail,omitempty"`
	Rate      *wireRate `json:"Rate,omitempty"`
}

// wireRate is a workload.RateResult on the stream: its histogram encoded.
type wireRate struct {
	workload.RateResult
	ServiceHistogram string `json:"ServiceHistogram,omitempty"`
}

// encodeHist is h's V2 compressed encoding ("" for nil).
func encodeHist(h *hdrhistogram.Histogram) (string, error) {
	if h == nil {
		return "", nil
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	return string(b), err
}

// decodeHist decodes encodeHist's text (nil for "").
func decodeHist(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return nil, nil
	}
	return hdrhistogram.Decode([]byte(s))
}

// Encoder writes a client's stream. Its Interval makes it the workload.Reporter of the
// client's run. Safe for concurrent use.
type Encoder struct {
	mu     sync.Mutex
	w      io.Writer
	n      int // interval reports written
	err    error
	broken chan struct{}
	buf    []byte
}

// NewEncoder writes h (with Format set) as the stream's first record to w. An error when
// h has no Client, or the write fails.
func NewEncoder(w io.Writer, h Hello) (*Encoder, error) {
	if h.Client == "" {
		return nil, fmt.Errorf("stream: the hello names no client")
	}
	h.Format = Format
	e := &Encoder{w: w, broken: make(chan struct{})}
	if err := e.write(record{Hello: &h}); err != nil {
		return nil, err
	}
	return e, nil
}

// Interval writes iv as the next interval record (workload.Reporter). A failed write is
// kept (Err) and closes Broken; later records are not written.
func (e *Encoder) Interval(iv workload.Interval) {
	e.mu.Lock()
	defer e.mu.Unlock()
	wi := &wireInterval{N: e.n + 1, Interval: iv}
	var err error
	if wi.Histogram, err = encodeHist(iv.Histogram); err == nil && iv.Recorded != iv.Histogram {
		wi.Recorded, err = encodeHist(iv.Recorded)
	}
	if err != nil {
		e.fail(fmt.Errorf("stream: interval %d: %w", wi.N, err))
		return
	}
	e.n++
	_ = e.writeLocked(record{Interval: wi})
}

// Result writes the end record: res (nil when the run had none) and runErr, the run's
// error (nil when none); an error when both are nil. It returns the encoder's first error.
func (e *Encoder) Result(res *workload.Result, runErr error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if res == nil && runErr == nil {
		return fmt.Errorf("stream: a result record needs a result or an error")
	}
	var rec record
	if runErr != nil {
		rec.Error = runErr.Error()
	}
	if res != nil {
		wr, err := encodeResult(res)
		if err != nil {
			e.fail(fmt.Errorf("stream: result: %w", err))
			return e.err
		}
		rec.Result = wr
	}
	return e.writeLocked(rec)
}

// encodeResult is res on the stream.
func encodeResult(res *workload.Result) (*wireResult, error) {
	wr := &wireResult{Result: *res}
	var err error
	if wr.Histogram, err = encodeHist(res.Histogram); err != nil {
		return nil, err
	}
	if wr.Tail, err = encodeHist(res.Tail); err != nil {
		return nil, err
	}
	if res.Rate != nil {
		wr.Rate = &wireRate{RateResult: *res.Rate}
		if wr.Rate.ServiceHistogram, err = encodeHist(res.Rate.ServiceHistogram); err != nil {
			return nil, err
		}
	}
	return wr, nil
}

// Err returns the encoder's first error (a failed write: the coordinator is gone).
func (e *Encoder) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Broken is closed at the encoder's first error: a client stops its run on it.
func (e *Encoder) Broken() <-chan struct{} { return e.broken }

func (e *Encoder) write(rec record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.writeLocked(rec)
}

// writeLocked writes rec as one line with a single Write (mu held); nothing after an error.
func (e *Encoder) writeLocked(rec record) error {
	if e.err != nil {
		return e.err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		e.fail(fmt.Errorf("stream: %w", err))
		return e.err
	}
	e.buf = append(append(e.buf[:0], b...), '\n')
	if _, err := e.w.Write(e.buf); err != nil {
		e.fail(fmt.Errorf("stream: write: %w", err))
	}
	return e.err
}

// fail keeps the first error and closes broken (mu held).
func (e *Encoder) fail(err error) {
	if e.err == nil {
		e.err = err
		close(e.broken)
	}
}
