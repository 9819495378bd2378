package clients

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/habench/habench/workload"
)

// stallLimit is how long one write to the coordinator may take before the Encoder gives
// up (Broken): the coordinator has stopped reading. A variable for tests.
var stallLimit = 5 * time.Second

// queueLen is how many records may wait for the writer before Interval waits for it.
const queueLen = 16

// Encoder writes a client's stream. Its Interval makes it the workload.Reporter of the
// client's run: it encodes the report and queues it for a writer goroutine, so a slow
// coordinator never holds the engine up longer than stallLimit (5 s); a write that takes
// longer, or fails, breaks the encoder (Broken, Err) and nothing more is written. Safe for
// concurrent use.
type Encoder struct {
	w      io.Writer
	stall  time.Duration
	queue  chan []byte
	wrote  chan struct{} // closed when the writer has written (or dropped) every record
	broken chan struct{}

	send sync.Mutex // held while a record is numbered and queued (and the queue closed)

	mu    sync.Mutex
	n     int       // interval reports queued
	since time.Time // when the write in progress began (zero: none)
	ended bool      // the end record was queued: the queue is closed
	err   error
}

// NewEncoder starts the stream to w with h (Format set) as its first record. An error when
// h names no client.
func NewEncoder(w io.Writer, h Hello) (*Encoder, error) {
	if h.Client == "" {
		return nil, fmt.Errorf("stream: the hello names no client")
	}
	h.Format = Format
	e := &Encoder{w: w, stall: stallLimit, queue: make(chan []byte, queueLen), wrote: make(chan struct{}), broken: make(chan struct{})}
	go e.write()
	go e.watch()
	e.push(e.encode(record{Hello: &h}))
	return e, nil
}

// Interval queues iv as the next interval record (workload.Reporter). It waits only when
// queueLen records wait already, and never after the encoder broke.
func (e *Encoder) Interval(iv workload.Interval) {
	e.send.Lock()
	defer e.send.Unlock()
	e.mu.Lock()
	n, ended := e.n+1, e.ended
	e.mu.Unlock()
	if ended {
		e.breakWith(fmt.Errorf("stream: an interval after the result"))
		return
	}
	wi := &wireInterval{N: n, Interval: iv}
	var err error
	if wi.Histogram, err = encodeHist(iv.Histogram); err == nil && iv.Recorded != iv.Histogram {
		wi.Recorded, err = encodeHist(iv.Recorded)
	}
	if err != nil {
		e.breakWith(fmt.Errorf("stream: interval %d: %w", n, err))
		return
	}
	e.mu.Lock()
	e.n = n
	e.mu.Unlock()
	e.push(e.encode(record{Interval: wi}))
}

// Result queues the end record, res (nil when the run had none) and runErr, the run's error
// (nil when none), and waits until every record is written or the encoder broke. It
// returns the encoder's first error; an error when both res and runErr are nil or the end
// record was queued already.
func (e *Encoder) Result(res *workload.Result, runErr error) error {
	e.send.Lock()
	e.mu.Lock()
	ended := e.ended
	e.mu.Unlock()
	if ended || (res == nil && runErr == nil) {
		e.send.Unlock()
		return fmt.Errorf("stream: a second result, or one with neither a result nor an error")
	}
	rec := record{}
	if runErr != nil {
		rec.Error = runErr.Error()
		var se *workload.StatementError
		if errors.As(runErr, &se) {
			rec.Statement = &wireStatement{Workload: se.Workload, Endpoint: se.Endpoint, Statement: se.Statement, Code: se.Code}
			if se.Err != nil {
				rec.Statement.Err = se.Err.Error()
			}
		}
	}
	if res != nil {
		wr, err := encodeResult(res)
		if err != nil {
			e.breakWith(fmt.Errorf("stream: result: %w", err))
		}
		rec.Result = wr
	}
	e.push(e.encode(rec))
	e.mu.Lock()
	e.ended = true
	e.mu.Unlock()
	close(e.queue)
	e.send.Unlock()
	select {
	case <-e.wrote:
	case <-e.broken:
	}
	return e.Err()
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

// Err returns the encoder's first error: a failed or stalled write (the coordinator is
// gone), or a record that could not be encoded.
func (e *Encoder) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Broken is closed at the encoder's first error: a client stops its run on it.
func (e *Encoder) Broken() <-chan struct{} { return e.broken }

// encode is rec as one line (nil after an error, or when it cannot be encoded).
func (e *Encoder) encode(rec record) []byte {
	if e.Err() != nil {
		return nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		e.breakWith(fmt.Errorf("stream: %w", err))
		return nil
	}
	return append(b, '\n')
}

// push queues line b (send held; nil: nothing), waiting while the queue is full until the
// writer takes a record or the encoder breaks.
func (e *Encoder) push(b []byte) {
	if b == nil {
		return
	}
	select {
	case e.queue <- b:
	case <-e.broken:
	}
}

// write writes the queued records in order, each with a single Write; after an error it
// drops them.
func (e *Encoder) write() {
	defer close(e.wrote)
	for b := range e.queue {
		e.mu.Lock()
		if e.err != nil {
			e.mu.Unlock()
			continue
		}
		e.since = time.Now()
		e.mu.Unlock()
		_, err := e.w.Write(b)
		e.mu.Lock()
		e.since = time.Time{}
		if err != nil {
			e.fail(fmt.Errorf("stream: write: %w", err))
		}
		e.mu.Unlock()
	}
}

// watch breaks the encoder when a write has taken longer than its stall; it ends with
// the writer, or when the encoder broke.
func (e *Encoder) watch() {
	tick := time.NewTicker(e.stall / 10)
	defer tick.Stop()
	for {
		select {
		case <-e.wrote:
			return
		case <-e.broken:
			return
		case <-tick.C:
		}
		e.mu.Lock()
		if !e.since.IsZero() && time.Since(e.since) > e.stall {
			e.fail(fmt.Errorf("stream: a write has taken longer than %v: the coordinator is not reading", e.stall))
		}
		e.mu.Unlock()
	}
}

// breakWith is fail with mu taken.
func (e *Encoder) breakWith(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fail(err)
}

// fail keeps the first error and closes broken (mu held).
func (e *Encoder) fail(err error) {
	if e.err == nil {
		e.err = err
		close(e.broken)
	}
}
