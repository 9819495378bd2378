package experiment

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/workload"
)

// Results writes one run's directory. intervals.csv and samples.csv are streamed as the
// run goes (flushed every row), so an interrupted run still leaves its data.
type Results struct {
	Dir string

	mu        sync.Mutex
	intervals *csvFile
	samples   *csvFile
}

type csvFile struct {
	f *os.File
	w *csv.Writer
}

func newCSV(path string, header []string) (*csvFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c := &csvFile{f: f, w: csv.NewWriter(f)}
	c.w.Write(header)
	c.w.Flush()
	return c, c.w.Error()
}

func (c *csvFile) row(r []string) {
	c.w.Write(r)
	c.w.Flush()
}

func (c *csvFile) close() error {
	c.w.Flush()
	return c.f.Close()
}

// IntervalColumns is the header of intervals.csv: one row per report interval. Rates are
// per second, latencies in milliseconds, counts within the interval.
var IntervalColumns = []string{"elapsed_s", "threads", "tps", "qps", "reads_ps", "writes_ps", "others_ps",
	"lat_avg_ms", "lat_p50_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms", "err_ps", "reconn_ps",
	"transactions", "reads", "writes", "others", "errors", "reconnects"}

// SampleColumns is the header of samples.csv, long form: one row per node, metric and tick.
var SampleColumns = []string{"elapsed_s", "node", "metric", "value"}

// NewResults creates dir (and parents) with empty intervals.csv and samples.csv.
func NewResults(dir string) (*Results, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &Results{Dir: dir}
	var err error
	if r.intervals, err = newCSV(filepath.Join(dir, "intervals.csv"), IntervalColumns); err != nil {
		return nil, err
	}
	if r.samples, err = newCSV(filepath.Join(dir, "samples.csv"), SampleColumns); err != nil {
		return nil, err
	}
	return r, nil
}

// RunDirName is "<UTC time>-<label>", e.g. 20261129-204401-t1-oltp_read_write.
func RunDirName(label string, t time.Time) string {
	return t.UTC().Format("20060102-150405") + "-" + label
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// Interval appends one row to intervals.csv.
func (r *Results) Interval(iv workload.Interval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.intervals.row([]string{f3(iv.Elapsed.Seconds()), strconv.Itoa(iv.Threads), f3(iv.TPS), f3(iv.QPS),
		f3(iv.ReadsPerSec), f3(iv.WritesPerSec), f3(iv.OthersPerSec),
		f3(iv.LatencyAvg), f3(iv.LatencyP50), f3(iv.LatencyP95), f3(iv.LatencyP99), f3(iv.LatencyMax),
		f3(iv.ErrPerSec), f3(iv.ReconnPerSec),
		strconv.FormatInt(iv.Transactions, 10), strconv.FormatInt(iv.Reads, 10), strconv.FormatInt(iv.Writes, 10),
		strconv.FormatInt(iv.Others, 10), strconv.FormatInt(iv.Errors, 10), strconv.FormatInt(iv.Reconnects, 10)})
}

// Samples appends sampler rows to samples.csv.
func (r *Results) Samples(ss []sampler.Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range ss {
		r.samples.w.Write([]string{f3(s.Elapsed.Seconds()), s.Node, s.Metric, strconv.FormatFloat(s.Value, 'g', -1, 64)})
	}
	r.samples.w.Flush()
}

// WriteJSON writes v as indented JSON to name inside the run directory.
func (r *Results) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return os.WriteFile(filepath.Join(r.Dir, name), append(b, '\n'), 0o644)
}

// WriteFile writes a text file inside the run directory.
func (r *Results) WriteFile(name, text string) error {
	return os.WriteFile(filepath.Join(r.Dir, name), []byte(text), 0o644)
}

// Close flushes and closes the CSV files.
func (r *Results) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e1 := r.intervals.close()
	e2 := r.samples.close()
	if e1 != nil {
		return e1
	}
	return e2
}
