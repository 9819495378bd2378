package schema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Names of a run's CSV files in its results directory.
const (
	IntervalsFile = "intervals.csv"
	SamplesFile   = "samples.csv"
)

// IntervalColumns is the header of intervals.csv: one row per report interval. Rates are
// per second, latencies in milliseconds, counts within the interval.
var IntervalColumns = []string{"elapsed_s", "threads", "tps", "qps", "reads_ps", "writes_ps", "others_ps",
	"lat_avg_ms", "lat_p50_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms", "err_ps", "reconn_ps",
	"transactions", "reads", "writes", "others", "errors", "reconnects",
	"queue_length", "concurrency", "rate_arrivals", "rate_backlog_age_s", "svc_avg_ms", "svc_p95_ms", "svc_p99_ms"}

// SampleColumns is the header of samples.csv, long form: one row per node, metric and tick.
var SampleColumns = []string{"elapsed_s", "node", "metric", "value"}

// Interval is one row of intervals.csv, in IntervalColumns' order: ElapsedS is the end of
// the interval on the workload's clock (Manifest.IntervalsOffsetS moves it onto the
// samples' clock); rates per second (PS), latencies in milliseconds, counts within the
// interval. The rate columns are those of a --rate run (zero otherwise): the event queue's
// length, the workers busy, the arrivals, the age of the oldest queued arrival and the
// service time (start to end of an event) in ms.
type Interval struct {
	ElapsedS                                         float64
	Threads                                          int
	TPS, QPS, ReadsPS, WritesPS, OthersPS            float64
	LatAvgMs, LatP50Ms, LatP95Ms, LatP99Ms, LatMaxMs float64
	ErrPS, ReconnPS                                  float64
	Transactions, Reads, Writes, Others              int64
	Errors, Reconnects                               int64
	QueueLength, Concurrency                         int
	RateArrivals                                     int64
	RateBacklogAgeS, SvcAvgMs, SvcP95Ms, SvcP99Ms    float64
}

// Record is iv as intervals.csv's row: numbers with 3 decimals, counts as integers.
func (iv Interval) Record() []string {
	i, n := strconv.Itoa, func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{f3(iv.ElapsedS), i(iv.Threads), f3(iv.TPS), f3(iv.QPS),
		f3(iv.ReadsPS), f3(iv.WritesPS), f3(iv.OthersPS),
		f3(iv.LatAvgMs), f3(iv.LatP50Ms), f3(iv.LatP95Ms), f3(iv.LatP99Ms), f3(iv.LatMaxMs),
		f3(iv.ErrPS), f3(iv.ReconnPS),
		n(iv.Transactions), n(iv.Reads), n(iv.Writes), n(iv.Others), n(iv.Errors), n(iv.Reconnects),
		i(iv.QueueLength), i(iv.Concurrency), n(iv.RateArrivals), f3(iv.RateBacklogAgeS),
		f3(iv.SvcAvgMs), f3(iv.SvcP95Ms), f3(iv.SvcP99Ms)}
}

// f3 is v with 3 decimals, as the CSV files write their numbers.
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// ParseIntervals reads intervals.csv's rows by its header's column names (a column an
// older file lacks stays zero). Error: a header without elapsed_s, or a cell that is not
// a number, naming the row (counting the header as row 1) and the column.
func ParseIntervals(header []string, rows [][]string) ([]Interval, error) {
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	if _, ok := col["elapsed_s"]; !ok {
		return nil, errors.New("no elapsed_s column")
	}
	out := make([]Interval, 0, len(rows))
	for n, rec := range rows {
		var iv Interval
		var perr error
		num := func(name string, set func(float64)) {
			i, ok := col[name]
			if !ok || perr != nil || i >= len(rec) {
				return
			}
			v, err := strconv.ParseFloat(rec[i], 64)
			if err != nil {
				perr = fmt.Errorf("row %d, %s %q: not a number", n+2, name, rec[i])
				return
			}
			set(v)
		}
		for _, f := range iv.fields() {
			num(f.col, f.set)
		}
		if perr != nil {
			return nil, perr
		}
		out = append(out, iv)
	}
	return out, nil
}

// intervalField is one column of intervals.csv and how a parsed value sets it.
type intervalField struct {
	col string
	set func(float64)
}

// fields are iv's columns by name, each setting iv's field.
func (iv *Interval) fields() []intervalField {
	f := func(p *float64) func(float64) { return func(v float64) { *p = v } }
	i := func(p *int) func(float64) { return func(v float64) { *p = int(v) } }
	n := func(p *int64) func(float64) { return func(v float64) { *p = int64(v) } }
	return []intervalField{{"elapsed_s", f(&iv.ElapsedS)}, {"threads", i(&iv.Threads)}, {"tps", f(&iv.TPS)}, {"qps", f(&iv.QPS)},
		{"reads_ps", f(&iv.ReadsPS)}, {"writes_ps", f(&iv.WritesPS)}, {"others_ps", f(&iv.OthersPS)},
		{"lat_avg_ms", f(&iv.LatAvgMs)}, {"lat_p50_ms", f(&iv.LatP50Ms)}, {"lat_p95_ms", f(&iv.LatP95Ms)},
		{"lat_p99_ms", f(&iv.LatP99Ms)}, {"lat_max_ms", f(&iv.LatMaxMs)}, {"err_ps", f(&iv.ErrPS)}, {"reconn_ps", f(&iv.ReconnPS)},
		{"transactions", n(&iv.Transactions)}, {"reads", n(&iv.Reads)}, {"writes", n(&iv.Writes)}, {"others", n(&iv.Others)},
		{"errors", n(&iv.Errors)}, {"reconnects", n(&iv.Reconnects)}, {"queue_length", i(&iv.QueueLength)},
		{"concurrency", i(&iv.Concurrency)}, {"rate_arrivals", n(&iv.RateArrivals)}, {"rate_backlog_age_s", f(&iv.RateBacklogAgeS)},
		{"svc_avg_ms", f(&iv.SvcAvgMs)}, {"svc_p95_ms", f(&iv.SvcP95Ms)}, {"svc_p99_ms", f(&iv.SvcP99Ms)}}
}

// Sample is one row of samples.csv (SampleColumns): the value of a node's metric at
// ElapsedS on the samples' clock, in the metric's unit (the sampler package's metrics).
type Sample struct {
	ElapsedS float64
	Node     string
	Metric   string
	Value    float64
}

// Record is s as samples.csv's row: the time with 3 decimals, the value as short as it
// reads back exactly.
func (s Sample) Record() []string {
	return []string{f3(s.ElapsedS), s.Node, s.Metric, strconv.FormatFloat(s.Value, 'g', -1, 64)}
}

// ParseSamples reads samples.csv's rows. Error: a header other than SampleColumns, or a
// row whose time or value is not a number, naming the row (the header is row 1).
func ParseSamples(header []string, rows [][]string) ([]Sample, error) {
	if want := strings.Join(SampleColumns, ","); strings.Join(header, ",") != want {
		return nil, fmt.Errorf("header %q, want %s", strings.Join(header, ","), want)
	}
	out := make([]Sample, 0, len(rows))
	for n, rec := range rows {
		if len(rec) != len(SampleColumns) {
			return nil, fmt.Errorf("row %d: %q: want %d columns", n+2, strings.Join(rec, ","), len(SampleColumns))
		}
		e, err1 := strconv.ParseFloat(rec[0], 64)
		v, err2 := strconv.ParseFloat(rec[3], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("row %d: %q: not numbers", n+2, strings.Join(rec, ","))
		}
		out = append(out, Sample{ElapsedS: e, Node: rec[1], Metric: rec[2], Value: v})
	}
	return out, nil
}
