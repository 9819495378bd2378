package experiment

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/workload"
)

// Results writes one run's directory. intervals.csv and samples.csv are streamed as the
// run goes (flushed every row), so an interrupted run still leaves its data.
type Results struct {
	Dir string

	mu        sync.Mutex
	intervals *csvFile
	samples   *csvFile
	latency   *latencyLog
}

// streamFile is a results file written as the run goes (intervals.csv, samples.csv,
// latency.hlog). The first write error (a full disk) is kept: later writes are dropped,
// close returns the error naming the file and renames the file to NAME.incomplete, so that
// no truncated file looks whole.
type streamFile struct {
	path   string
	f      *os.File
	err    error
	closed bool
}

// createStream creates (or truncates) path, mode 0640.
func createStream(path string) (*streamFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return nil, err
	}
	return &streamFile{path: path, f: f}, nil
}

// Write writes p unless an earlier write failed or the file is closed; the first error
// is kept, naming the file.
func (s *streamFile) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.closed {
		return 0, os.ErrClosed
	}
	n, err := s.f.Write(p)
	s.fail(err)
	return n, err
}

// fail keeps err (when it is the first) as the file's error, naming the file.
func (s *streamFile) fail(err error) {
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("writing %s: %w", filepath.Base(s.path), err)
	}
}

// close closes the file; on an error (kept or of the close) the file is renamed
// NAME.incomplete and the error says so.
func (s *streamFile) close() error {
	if s.closed {
		return s.err
	}
	s.closed = true
	s.fail(s.f.Close())
	if s.err != nil {
		if rerr := os.Rename(s.path, s.path+".incomplete"); rerr == nil {
			s.err = fmt.Errorf("%w (kept as %s.incomplete)", s.err, filepath.Base(s.path))
		}
	}
	return s.err
}

// csvFile is one CSV file of a run, streamed (see streamFile).
type csvFile struct {
	*streamFile
	w *csv.Writer
}

func newCSV(path string, header []string) (*csvFile, error) {
	s, err := createStream(path)
	if err != nil {
		return nil, err
	}
	c := &csvFile{streamFile: s, w: csv.NewWriter(s)}
	c.row(header)
	return c, c.err
}

func (c *csvFile) row(r []string) {
	if c.err != nil || c.closed {
		return
	}
	c.w.Write(r)
	c.flush()
}

func (c *csvFile) flush() {
	if c.err != nil || c.closed {
		return
	}
	c.w.Flush()
	c.fail(c.w.Error())
}

func (c *csvFile) close() error {
	c.flush()
	return c.streamFile.close()
}

// NewResults creates dir (and parents) with empty intervals.csv, samples.csv and
// latency.hlog.
func NewResults(dir string) (*Results, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	r := &Results{Dir: dir}
	var err error
	if r.intervals, err = newCSV(filepath.Join(dir, schema.IntervalsFile), schema.IntervalColumns); err != nil {
		return nil, err
	}
	if r.samples, err = newCSV(filepath.Join(dir, schema.SamplesFile), schema.SampleColumns); err != nil {
		return nil, err
	}
	if r.latency, err = newLatencyLog(filepath.Join(dir, schema.LatencyLogFile)); err != nil {
		return nil, err
	}
	return r, nil
}

// RunDirName is "<UTC time>-<label>", e.g. 20261129-204401-t1-oltp_read_write.
func RunDirName(label string, t time.Time) string {
	return t.UTC().Format("20060102-150405") + "-" + label
}

// Interval appends one row to intervals.csv and iv's Recorded histogram to latency.hlog.
func (r *Results) Interval(iv workload.Interval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if iv.Recorded != nil {
		r.latency.interval(iv.Started, iv.Elapsed-iv.Length, iv.Length, iv.Recorded)
	}
	r.intervals.row(intervalRow(iv).Record())
}

// intervalRow is iv as intervals.csv records it; the --rate columns are zeros without
// --rate.
func intervalRow(iv workload.Interval) schema.Interval {
	row := schema.Interval{ElapsedS: iv.Elapsed.Seconds(), Threads: iv.Threads, TPS: iv.TPS, QPS: iv.QPS,
		ReadsPS: iv.ReadsPerSec, WritesPS: iv.WritesPerSec, OthersPS: iv.OthersPerSec,
		LatAvgMs: iv.LatencyAvg, LatP50Ms: iv.LatencyP50, LatP95Ms: iv.LatencyP95, LatP99Ms: iv.LatencyP99, LatMaxMs: iv.LatencyMax,
		ErrPS: iv.ErrPerSec, ReconnPS: iv.ReconnPerSec,
		Transactions: iv.Transactions, Reads: iv.Reads, Writes: iv.Writes, Others: iv.Others, Errors: iv.Errors, Reconnects: iv.Reconnects,
		QueueLength: iv.QueueLength, Concurrency: iv.Concurrency}
	if ri := iv.Rate; ri != nil {
		row.RateArrivals, row.RateBacklogAgeS = ri.Arrivals, ri.BacklogAge.Seconds()
		row.SvcAvgMs, row.SvcP95Ms, row.SvcP99Ms = ri.ServiceAvg, ri.ServiceP95, ri.ServiceP99
	}
	return row
}

// Samples appends sampler rows to samples.csv.
func (r *Results) Samples(ss []sampler.Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.samples.err != nil || r.samples.closed {
		return
	}
	for _, s := range ss {
		r.samples.w.Write(schema.Sample{ElapsedS: s.Elapsed.Seconds(), Node: s.Node, Metric: s.Metric, Value: s.Value}.Record())
	}
	r.samples.flush()
}

// Err is the first write error of the CSV files so far (naming the file), nil if none.
func (r *Results) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.intervals.err, r.samples.err, r.latency.err)
}

// LatencyTail appends to latency.hlog what res's histogram counted after the last report
// interval (Result.Tail; nothing when res is nil or measured nothing).
func (r *Results) LatencyTail(res *workload.Result) {
	if res == nil || res.Tail == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latency.tail(res)
}

// WriteJSON writes v as indented JSON to name inside the run directory (see WriteFile).
func (r *Results) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return r.WriteFile(name, string(append(b, '\n')))
}

// WriteFile writes a text file inside the run directory, whole or not at all: it is
// written to a temporary file and renamed, so a failed write (a full disk) leaves the previous
// version, never a truncated one. The error names the file.
func (r *Results) WriteFile(name, text string) error {
	return atomicfile.WriteFile(filepath.Join(r.Dir, name), []byte(text), 0o640)
}

// Close flushes and closes the CSV files.
func (r *Results) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.intervals.close(), r.samples.close(), r.latency.close())
}
