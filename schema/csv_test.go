package schema

import (
	"reflect"
	"strings"
	"testing"
)

// TestIntervalsRoundTrip: a row written by Interval.Record reads back equal (3 decimals),
// in IntervalColumns' order; a file of an older habench without the rate columns reads
// them as zeros; a cell that is not a number is an error naming its row and column.
func TestIntervalsRoundTrip(t *testing.T) {
	iv := Interval{ElapsedS: 1.5, Threads: 8, TPS: 101.25, QPS: 2025, ReadsPS: 1417.5, WritesPS: 405, OthersPS: 202.5,
		LatAvgMs: 3.125, LatP50Ms: 2.5, LatP95Ms: 7.75, LatP99Ms: 9.5, LatMaxMs: 21.375, ErrPS: 0.5, ReconnPS: 0.25,
		Transactions: 101, Reads: 1417, Writes: 405, Others: 202, Errors: 1, Reconnects: 2,
		QueueLength: 3, Concurrency: 4, RateArrivals: 99, RateBacklogAgeS: 0.125, SvcAvgMs: 1.5, SvcP95Ms: 2.5, SvcP99Ms: 3.5}
	rec := iv.Record()
	if len(rec) != len(IntervalColumns) {
		t.Fatalf("%d cells for %d columns", len(rec), len(IntervalColumns))
	}
	got, err := ParseIntervals(IntervalColumns, [][]string{rec})
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], iv) {
		t.Fatalf("read back %+v, %v; want %+v", got, err, iv)
	}
	old := IntervalColumns[:20]
	got, err = ParseIntervals(old, [][]string{rec[:20]})
	if err != nil || got[0].TPS != iv.TPS || got[0].QueueLength != 0 || got[0].SvcP99Ms != 0 {
		t.Errorf("an older file read back %+v, %v", got, err)
	}
	bad := append([]string(nil), rec...)
	bad[2] = "fast"
	if _, err := ParseIntervals(IntervalColumns, [][]string{rec, bad}); err == nil || !strings.Contains(err.Error(), `row 3, tps "fast"`) {
		t.Errorf("a bad cell: %v", err)
	}
	if _, err := ParseIntervals([]string{"tps"}, nil); err == nil {
		t.Error("a header without elapsed_s read")
	}
}

// TestSamplesRoundTrip: a sample written by Sample.Record reads back equal; another
// header or a value that is not a number is an error.
func TestSamplesRoundTrip(t *testing.T) {
	s := Sample{ElapsedS: 2.25, Node: "n2", Metric: "lag_s", Value: 0.1234567}
	got, err := ParseSamples(SampleColumns, [][]string{s.Record()})
	if err != nil || len(got) != 1 || got[0] != s {
		t.Fatalf("read back %+v, %v; want %+v", got, err, s)
	}
	if _, err := ParseSamples([]string{"t", "node", "metric", "value"}, nil); err == nil {
		t.Error("another header read")
	}
	if _, err := ParseSamples(SampleColumns, [][]string{{"1", "n1", "m", "x"}}); err == nil || !strings.Contains(err.Error(), "row 2") {
		t.Errorf("a bad value: %v", err)
	}
}
