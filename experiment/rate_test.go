package experiment

import (
	"encoding/json"
	"github.com/habench/habench/schema"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/workload"
)

// TestRateSummaryAndColumns: summary.json's rate section, the --percentile keys of
// latency_ms and intervals.csv's --rate columns come from the Result and Interval.
func TestRateSummaryAndColumns(t *testing.T) {
	r := &workload.Result{Transactions: 100, TotalTime: 10 * time.Second, Percentile: 95, LatencyPct: 7000,
		ExtraLatencyPct: []float64{7900, 8000},
		Rate: &workload.RateResult{Target: 50, Arrivals: 600, Backlog: 500, BacklogAge: 9 * time.Second,
			MaxBacklogAge: 9 * time.Second, WarmupDropped: 3, Met: false, ServiceP95: 2.5, ServicePct: 2.5,
			Behind: 3300 * time.Millisecond, BehindAt: 10 * time.Second, MaxBacklog: 298}}
	s := rateSummary(r)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"target":50`, `"arrivals":600`, `"backlog":500`, `"backlog_age_s":9`, `"warmup_dropped":3`,
		`"met":false`, `"warning":"the target rate was not met`,
		`"behind_s":3.3`, `"behind_from_s":10`, `"max_backlog":298`, `behind for 3.30 s (from 10.00 s to 13.30 s`, `"p95":2.5`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("rate section %s lacks %s", b, want)
		}
	}
	if rateSummary(&workload.Result{}) != nil {
		t.Error("a run without --rate got a rate section")
	}
	o := workload.DefaultOptions()
	o.ExtraPercentiles = []float64{99, 99.9}
	m := map[string]float64{}
	addPercentiles(m, o, r)
	if m["p95"] != 7000 || m["p99"] != 7900 || m["p99.9"] != 8000 {
		t.Errorf("latency_ms percentiles %v", m)
	}
	c := intervalRow(workload.Interval{QueueLength: 7, Concurrency: 2, Rate: &workload.RateInterval{Arrivals: 50, BacklogAge: 1500 * time.Millisecond, ServiceP99: 3}}).Record()
	if strings.Join(c[20:], ",") != "7,2,50,1.500,0.000,0.000,3.000" || len(c) != len(schema.IntervalColumns) {
		t.Errorf("rate columns %v", c)
	}
	if len(schema.IntervalColumns) != 27 || schema.IntervalColumns[20] != "queue_length" {
		t.Errorf("intervals.csv columns %v", schema.IntervalColumns)
	}
}
