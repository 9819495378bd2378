package experiment

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/workload"
)

// latencyLog is a run's latency.hlog (schema.LatencyLogFile), streamed like the CSV
// files: its header at the first line, then one line per report interval, each written
// whole and at once, and the tail after the run. The histograms are encoded here, on the
// reporting side, once per interval: the workers never wait for it.
type latencyLog struct {
	*streamFile
	header bool
	buf    []byte
}

func newLatencyLog(path string) (*latencyLog, error) {
	s, err := createStream(path)
	if err != nil {
		return nil, err
	}
	return &latencyLog{streamFile: s}, nil
}

// interval writes the line of the interval from..from+length of the measured part that
// began at started (wall clock), h in microseconds; the header before the first line.
func (l *latencyLog) interval(started time.Time, from, length time.Duration, h *hdrhistogram.Histogram) {
	if l.err != nil || l.closed {
		return
	}
	if !l.header {
		l.header = true
		if l.fail(schema.WriteLatencyLogHeader(l, started)); l.err != nil {
			return
		}
	}
	var err error
	if l.buf, err = schema.AppendLatencyLogLine(l.buf[:0], from, length, h); err != nil {
		l.fail(err)
		return
	}
	l.Write(l.buf)
}

// tail writes res.Tail from res.TailFrom to the end of the measured part: left out when it
// is empty and shorter than a millisecond (the last interval ended with the run).
func (l *latencyLog) tail(res *workload.Result) {
	from := min(res.TailFrom, res.TotalTime)
	length := res.TotalTime - from
	if res.Tail.TotalCount() == 0 && length < time.Millisecond {
		return
	}
	l.interval(res.StartedAt, from, length, res.Tail)
}
