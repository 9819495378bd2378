package schema

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// LatencyLogFile is the run's latency histograms per report interval, in the HdrHistogram
// interval log format (what HdrHistogram's HistogramLogWriter writes and its log readers
// read: Java's, hdrhistogram-go's, hdr-histogram-js's).
//
// The file, line by line:
//
//	#habench latency log: ... (what the values are, a comment readers skip)
//	#[Histogram log format version 1.3]
//	#[StartTime: 1733468619.123 (seconds since epoch), 2024-12-06T07:03:39.123Z]
//	#[BaseTime: 1733468619.123 (seconds since epoch)]
//	"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//	0.000,1.000,12.345,HISTFAAAA...
//
// StartTime and BaseTime are when the measured part began (after the warm-up: elapsed_s 0
// of intervals.csv) on the wall clock; each line is one report interval: its start in
// seconds from BaseTime, its length in seconds, its largest latency in milliseconds, and
// its histogram (V2 encoding, zlib-compressed, base64) of transaction latencies in
// MICROSECONDS (1 us to 1 h, 3 significant digits), each transaction once: those that
// completed in the interval and the waits of those given up in it (lower bounds). The
// last line is the part after the last report interval, with the waits of the
// transactions still in flight at the end. The histograms of all lines add up to the
// run's (summary.json's latency_ms percentiles, before their clamp to the exact max); an
// interval's in-flight waits, which intervals.csv's percentiles include, are not in its
// line. Merging the lines of several runs or clients gives their combined distribution
// (their BaseTimes place them on one clock).
const LatencyLogFile = "latency.hlog"

// LatencyLogValueUnit is what the histograms of LatencyLogFile count in.
const LatencyLogValueUnit = time.Microsecond

// WriteLatencyLogHeader writes LatencyLogFile's header for a measured part that began at
// start (wall clock): the comment, format version, StartTime, BaseTime and legend lines,
// in the order HdrHistogram's writer uses.
func WriteLatencyLogHeader(w io.Writer, start time.Time) error {
	ms := start.UnixMilli()
	secs := strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
	_, err := fmt.Fprintf(w, "#habench latency log: transaction latencies in microseconds per report interval; "+
		"timestamps in seconds from BaseTime (the start of the measured part); Interval_Max in milliseconds\n"+
		"#[Histogram log format version 1.3]\n"+
		"#[StartTime: %s (seconds since epoch), %s]\n"+
		"#[BaseTime: %s (seconds since epoch)]\n"+
		"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
		secs, time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00"), secs)
	return err
}

// AppendLatencyLogLine appends the line of the interval that began from after BaseTime and
// lasted length, with h (microseconds), to buf: "start,length,max_ms,histogram\n" (seconds
// with 3 decimals, as HdrHistogram's writer prints them). Error when h cannot be encoded.
func AppendLatencyLogLine(buf []byte, from, length time.Duration, h *hdrhistogram.Histogram) ([]byte, error) {
	enc, err := h.EncodeV2()
	if err != nil {
		return buf, err
	}
	buf = strconv.AppendFloat(buf, from.Seconds(), 'f', 3, 64)
	buf = append(buf, ',')
	buf = strconv.AppendFloat(buf, length.Seconds(), 'f', 3, 64)
	buf = append(buf, ',')
	buf = strconv.AppendFloat(buf, float64(h.Max())/1000, 'f', 3, 64)
	buf = append(buf, ',')
	buf = append(buf, enc...)
	return append(buf, '\n'), nil
}

// LatencyInterval is one line of LatencyLogFile: From and Length on the measured part's
// clock, Histogram in microseconds.
type LatencyInterval struct {
	From, Length time.Duration
	Histogram    *hdrhistogram.Histogram
}

// LatencyLog is LatencyLogFile, read: Start is its BaseTime (zero when it has none),
// Intervals its lines in order.
type LatencyLog struct {
	Start     time.Time
	Intervals []LatencyInterval
}

var baseTimeLine = regexp.MustCompile(`(?m)^#\[BaseTime: ([0-9.]+)`)

// ReadLatencyLog reads a LatencyLogFile's content with hdrhistogram-go's log reader. A
// last line without its newline (a run killed while writing it) is left out. Error when
// a line does not decode, naming its interval.
func ReadLatencyLog(content []byte) (*LatencyLog, error) {
	if i := bytes.LastIndexByte(content, '\n'); i+1 < len(content) {
		content = content[:i+1]
	}
	out := &LatencyLog{}
	var baseMs int64
	if m := baseTimeLine.FindSubmatch(content); m != nil {
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			return nil, fmt.Errorf("BaseTime %q: %v", m[1], err)
		}
		baseMs = int64(math.Round(v * 1000))
		out.Start = time.UnixMilli(baseMs)
	}
	rd := hdrhistogram.NewHistogramLogReader(bytes.NewReader(content))
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			return nil, fmt.Errorf("interval %d: %v", len(out.Intervals)+1, strings.TrimSpace(err.Error()))
		}
		if h == nil {
			return out, nil
		}
		out.Intervals = append(out.Intervals, LatencyInterval{
			From:      time.Duration(h.StartTimeMs()-baseMs) * time.Millisecond,
			Length:    time.Duration(h.EndTimeMs()-h.StartTimeMs()) * time.Millisecond,
			Histogram: h,
		})
	}
}
