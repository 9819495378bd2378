package metrics

import (
	"strconv"
	"sync"

	"github.com/habench/habench/workload"
	"github.com/prometheus/client_golang/prometheus"
)

// runCounters is the collector behind habench_transactions_total, habench_queries_total,
// habench_errors_total and habench_reconnects_total. With a run's workload.Live attached
// (AttachLive) a scrape sums the workers' own cumulative counters at that moment, so the
// counters move as transactions complete, whatever the report interval; the counts of
// earlier runs are kept in base, so the counters never go down. Without a Live (a feed
// of intervals only) ObserveInterval adds each interval's counts to base.
type runCounters struct {
	tx, queries, errors, reconnects *prometheus.Desc

	mu   sync.Mutex
	base workload.Totals
	live *workload.Live
}

func newRunCounters() *runCounters {
	return &runCounters{
		tx: prometheus.NewDesc(Transactions,
			"Transactions (sysbench events) completed in the measured part of the runs (after any warm-up), counted as each one completes.", nil, nil),
		queries: prometheus.NewDesc(Queries,
			"Statements executed, by sysbench class: read (returned rows), write (changed rows), other (BEGIN, COMMIT, no-op DML).", []string{"type"}, nil),
		errors: prometheus.NewDesc(Errors,
			"Ignored errors (transaction rolled back and retried, --mysql-ignore-errors) by MySQL error code.", []string{"code"}, nil),
		reconnects: prometheus.NewDesc(Reconnects, "Connections re-established by the workload after a lost connection.", nil, nil),
	}
}

func addTotals(dst *workload.Totals, t workload.Totals) {
	dst.Transactions += t.Transactions
	dst.Reads += t.Reads
	dst.Writes += t.Writes
	dst.Others += t.Others
	dst.Errors += t.Errors
	dst.Reconnects += t.Reconnects
	for code, n := range t.ErrorsByCode {
		if dst.ErrorsByCode == nil {
			dst.ErrorsByCode = map[uint16]int64{}
		}
		dst.ErrorsByCode[code] += n
	}
}

// attach makes l the live source (nil: none), folding the previous one's final counts
// into base.
func (c *runCounters) attach(l *workload.Live) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live != nil {
		addTotals(&c.base, c.live.Totals())
	}
	c.live = l
}

// observe adds an interval's counts when no live source is attached.
func (c *runCounters) observe(iv workload.Interval) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live != nil {
		return
	}
	addTotals(&c.base, workload.Totals{Transactions: iv.Transactions, Reads: iv.Reads, Writes: iv.Writes,
		Others: iv.Others, Errors: iv.Errors, Reconnects: iv.Reconnects, ErrorsByCode: iv.ErrorsByCode})
}

func (c *runCounters) totals() workload.Totals {
	c.mu.Lock()
	t := workload.Totals{}
	addTotals(&t, c.base)
	live := c.live
	c.mu.Unlock()
	if live != nil {
		addTotals(&t, live.Totals())
	}
	return t
}

// Describe implements prometheus.Collector.
func (c *runCounters) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.tx
	ch <- c.queries
	ch <- c.errors
	ch <- c.reconnects
}

// Collect implements prometheus.Collector.
func (c *runCounters) Collect(ch chan<- prometheus.Metric) {
	t := c.totals()
	ch <- prometheus.MustNewConstMetric(c.tx, prometheus.CounterValue, float64(t.Transactions))
	ch <- prometheus.MustNewConstMetric(c.reconnects, prometheus.CounterValue, float64(t.Reconnects))
	for _, q := range []struct {
		typ string
		n   int64
	}{{"read", t.Reads}, {"write", t.Writes}, {"other", t.Others}} {
		ch <- prometheus.MustNewConstMetric(c.queries, prometheus.CounterValue, float64(q.n), q.typ)
	}
	for code, n := range t.ErrorsByCode {
		ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(n), strconv.Itoa(int(code)))
	}
}

// AttachLive makes the run's live counters the source of habench_transactions_total,
// habench_queries_total, habench_errors_total and habench_reconnects_total (Bench.OnLive
// calls it when the workers are about to start); the previous run's counts stay in the
// counters. Until EndRun, ObserveInterval no longer adds interval counts to them.
func (m *Metrics) AttachLive(l *workload.Live) { m.counters.attach(l) }
