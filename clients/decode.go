package clients

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/habench/habench/workload"
)

// Record is one record of a client's stream after its hello: an interval report or the
// client's result.
type Record struct {
	// Interval is an interval report (nil for the result).
	Interval *ClientInterval
	// Result is the client's Result (nil for an interval, or when the client's run
	// returned none), RunErr its run's error ("" when none). Result or RunErr is set in
	// the result record.
	Result *workload.Result
	RunErr string
	// StatementErr is RunErr as the *workload.StatementError it was on the client (nil
	// when it was another error): a statement that failed there.
	StatementErr *workload.StatementError
}

// Decoder reads one client's stream on the coordinator.
type Decoder struct {
	sc      *bufio.Scanner
	client  string
	version string
	n       int // records read
	hello   *Hello
	last    int  // the last interval's number
	done    bool // the result was read
}

// errCut is the scanner's error for a last line without its newline.
var errCut = errors.New("cut short")

// NewDecoder returns a Decoder of client's stream read from r; version is the
// coordinator's habench version, which the client's must equal.
func NewDecoder(r io.Reader, client, version string) *Decoder {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxRecord)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return 0, nil, errCut
		}
		return 0, nil, nil
	})
	return &Decoder{sc: sc, client: client, version: version}
}

// errorf is an error naming the client and the record.
func (d *Decoder) errorf(format string, a ...any) error {
	return fmt.Errorf("client %s: record %d: %w", d.client, d.n, fmt.Errorf(format, a...))
}

// read reads the next record; at the stream's end or a cut, an error wrapping ErrLost.
func (d *Decoder) read() (*record, error) {
	d.n++
	if !d.sc.Scan() {
		err := d.sc.Err()
		switch {
		case err == nil:
			return nil, fmt.Errorf("client %s: the stream ended after record %d, before the client's result: %w", d.client, d.n-1, ErrLost)
		case errors.Is(err, errCut):
			return nil, d.errorf("the stream was cut mid-record: %w", ErrLost)
		default:
			return nil, d.errorf("%v: %w", err, ErrLost)
		}
	}
	var rec record
	if err := json.Unmarshal(d.sc.Bytes(), &rec); err != nil {
		if d.n == 1 {
			line := string(d.sc.Bytes())
			if len(line) > 100 {
				line = line[:100] + "..."
			}
			return nil, d.errorf("not a habench client's stream: %q", line)
		}
		return nil, d.errorf("%v", err)
	}
	kinds := 0
	for _, set := range []bool{rec.Hello != nil, rec.Interval != nil, rec.Result != nil || rec.Error != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return nil, d.errorf("not one of hello, interval or result")
	}
	return &rec, nil
}

// Hello reads the stream's first record, the client's hello, and checks it: the stream's
// format is Format, the client's habench version the coordinator's, its name the client's.
func (d *Decoder) Hello() (*Hello, error) {
	if d.hello != nil {
		return d.hello, nil
	}
	rec, err := d.read()
	if err != nil {
		return nil, err
	}
	h := rec.Hello
	switch {
	case h == nil:
		return nil, d.errorf("not a hello: not a habench client's stream")
	case h.Version != d.version:
		return nil, d.errorf("habench version %q, the coordinator's is %q: the client must run the coordinator's habench", h.Version, d.version)
	case h.Format != Format:
		return nil, d.errorf("stream format %d, the coordinator's is %d", h.Format, Format)
	case h.Client != d.client:
		return nil, d.errorf("the hello names client %q", h.Client)
	}
	d.hello = h
	return h, nil
}

// Next reads the next record after the hello (Hello first). It returns io.EOF after the
// result record when the stream ends there; an error wrapping ErrLost when it ends or is
// cut before the result (the intervals read until then stand); an error naming the client
// and the record for anything else: a malformed record, a second hello, an interval out of
// order, a record after the result.
func (d *Decoder) Next() (Record, error) {
	if d.hello == nil {
		return Record{}, fmt.Errorf("client %s: Next before Hello", d.client)
	}
	if d.done {
		if d.sc.Scan() {
			d.n++
			return Record{}, d.errorf("a record after the result")
		}
		if err := d.sc.Err(); err != nil && !errors.Is(err, errCut) {
			return Record{}, err
		}
		return Record{}, io.EOF
	}
	rec, err := d.read()
	if err != nil {
		return Record{}, err
	}
	switch {
	case rec.Hello != nil:
		return Record{}, d.errorf("a second hello")
	case rec.Interval != nil:
		return d.interval(rec.Interval)
	}
	d.done = true
	out := Record{RunErr: rec.Error}
	if ws := rec.Statement; ws != nil {
		out.StatementErr = &workload.StatementError{Workload: ws.Workload, Endpoint: ws.Endpoint, Statement: ws.Statement, Code: ws.Code, Err: errors.New(ws.Err)}
	}
	if rec.Result == nil {
		return out, nil
	}
	res, err := decodeResult(rec.Result)
	if err != nil {
		return Record{}, d.errorf("result: %v", err)
	}
	out.Result = res
	return out, nil
}

// interval decodes an interval record, numbered after the previous one.
func (d *Decoder) interval(wi *wireInterval) (Record, error) {
	if wi.N != d.last+1 {
		return Record{}, d.errorf("interval %d after interval %d", wi.N, d.last)
	}
	d.last = wi.N
	iv := wi.Interval
	var err error
	if iv.Histogram, err = decodeHist(wi.Histogram); err != nil {
		return Record{}, d.errorf("interval %d: Histogram: %v", wi.N, err)
	}
	iv.Recorded = iv.Histogram
	if wi.Recorded != "" {
		if iv.Recorded, err = decodeHist(wi.Recorded); err != nil {
			return Record{}, d.errorf("interval %d: Recorded: %v", wi.N, err)
		}
	}
	return Record{Interval: &ClientInterval{Client: d.client, N: wi.N, Interval: iv}}, nil
}

// decodeResult is the Result of a result record.
func decodeResult(wr *wireResult) (*workload.Result, error) {
	res := wr.Result
	var err error
	if res.Histogram, err = decodeHist(wr.Histogram); err != nil {
		return nil, fmt.Errorf("Histogram: %v", err)
	}
	if res.Tail, err = decodeHist(wr.Tail); err != nil {
		return nil, fmt.Errorf("Tail: %v", err)
	}
	res.Rate = nil
	if wr.Rate != nil {
		rr := wr.Rate.RateResult
		if rr.ServiceHistogram, err = decodeHist(wr.Rate.ServiceHistogram); err != nil {
			return nil, fmt.Errorf("Rate.ServiceHistogram: %v", err)
		}
		res.Rate = &rr
	}
	return &res, nil
}
