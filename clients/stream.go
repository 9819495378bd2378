package clients

import (
	"errors"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/habench/habench/workload"
)

// The stream is what a client sends its coordinator over its connection (an SSH
// session's standard output): newline-delimited JSON, one record a line, each written
// whole. Record 1 is a hello, then one interval record per interval report (numbered 1,
// 2, ... in "n"), then the end record (the Result, the run's error, or both), then nothing.
// Histograms travel as HdrHistogram's V2 compressed encoding (base64 text, as in
// latency.hlog), the rest as encoding/json encodes the workload types (field names,
// durations in ns, times in RFC 3339 with ns), so that every value round-trips exactly.
//
//	{"hello":{"format":1,"version":"0.1.0","client":"c1","threads":8,...}}
//	{"interval":{"n":1,"Elapsed":1000000000,...,"Histogram":"HISTFAAAA..."}}
//	{"result":{"Workload":"oltp_read_write",...,"Histogram":"HISTFAAAA..."},"error":"..."}

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
	// Error is the client's run error, in the end record ("" when none); Statement its
	// fields when it was a *workload.StatementError (a statement failed: the coordinator
	// gets the same error type as from its own engine).
	Error     string         `json:"error,omitempty"`
	Statement *wireStatement `json:"statement_error,omitempty"`
}

// wireStatement is a *workload.StatementError on the stream (its Err as text).
type wireStatement struct {
	Workload  string `json:"workload"`
	Endpoint  string `json:"endpoint"`
	Statement string `json:"statement"`
	Code      uint16 `json:"code"`
	Err       string `json:"err"`
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
