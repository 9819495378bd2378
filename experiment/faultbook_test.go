package experiment

import (
	"fmt"
	"github.com/habench/habench/schema"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/workload"
)

// bookRun is a constructed run: report intervals of 1 s on samples.csv's clock (epoch is
// its zero), 100 TPS without errors except in (from, to], where nothing commits and each
// interval has 20 failed attempts.
func bookRun(epoch time.Time, n int, from, to float64) []FaultInterval {
	var ivs []FaultInterval
	for i := 1; i <= n; i++ {
		iv := FaultInterval{EndS: float64(i), LengthS: 1, TPS: 100, Transactions: 100}
		if float64(i) > from && float64(i)-1 < to {
			iv.TPS, iv.Transactions, iv.Errors = 0, 0, 20
		}
		ivs = append(ivs, iv)
	}
	return ivs
}

func bookFault(epoch time.Time, atS, took float64, action, node string) schema.RunFault {
	at := epoch.Add(time.Duration(atS * float64(time.Second)))
	return schema.RunFault{AtS: atS, FaultRecord: schema.FaultRecord{At: at, Took: took, Action: action, Node: node}}
}

func bookOutage(epoch time.Time, node string, from, to float64, codes map[string]int64) schema.OutageSummary {
	at := epoch.Add(time.Duration(from * float64(time.Second)))
	return schema.OutageSummary{Node: node, StartS: from, EndS: to, DurationS: to - from, StartedAt: at.UTC().Format("2006-01-02T15:04:05.000Z07:00"), ErrorsByCode: codes}
}

// TestFaultErrorsCountedOnce: an outage and the failed attempts of the disturbed
// intervals belong to the fault that began them: the promote that ended a kill's outage
// (async, the writer's workers) and the heal that ended a partition's (Galera n3) repeat
// none of its error codes or failed attempts, yet their recovery is still measured.
func TestFaultErrorsCountedOnce(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name          string
		first, second schema.RunFault
		outage        schema.OutageSummary
	}{
		{"kill then promote", bookFault(epoch, 10.2, 0.01, "kill", "n1"), bookFault(epoch, 13.1, 0.2, "promote", "n2"),
			bookOutage(epoch, workload.WriterLabel, 10.2, 13.5, map[string]int64{"2013": 50, "2003": 12})},
		{"partition then heal", bookFault(epoch, 10.2, 0.3, "partition", "n3"), bookFault(epoch, 20.1, 0.2, "heal", "n3"),
			bookOutage(epoch, "n3", 10.3, 21.5, map[string]int64{"1047": 94, "1180": 1})},
	}
	for _, c := range cases {
		ivs := bookRun(epoch, 30, c.first.AtS, c.outage.EndS)
		fs := faultSummaries([]schema.RunFault{c.first, c.second}, []schema.OutageSummary{c.outage}, nil, ivs)
		a, b := fs[0], fs[1]
		if a.Outage != c.outage.Node || a.ErrorsByCode["1047"]+a.ErrorsByCode["2013"] == 0 || a.Errors == 0 {
			t.Errorf("%s: first fault %+v, want the outage of %s with its codes and errors", c.name, a, c.outage.Node)
		}
		if b.Outage != "" || len(b.ErrorsByCode) != 0 || b.Errors != 0 || b.MinTPS != nil {
			t.Errorf("%s: second fault %+v repeats the first one's outage or failed attempts", c.name, b)
		}
		if b.RecoveryS == nil || *b.RecoveryS <= 0 || *b.RecoveryS > 2 {
			t.Errorf("%s: second fault recovery %v, want the rest of the disturbance (0..2 s)", c.name, fmtOpt(b.RecoveryS, "%.2f"))
		}
		var total int64
		for _, iv := range ivs {
			total += iv.Errors
		}
		if a.Errors+b.Errors != total {
			t.Errorf("%s: failed attempts %d + %d, want the run's %d once", c.name, a.Errors, b.Errors, total)
		}
		tb := report.FaultTable(fs)
		if n := strings.Count(tb, "x94") + strings.Count(tb, "x50"); n != 1 {
			t.Errorf("%s: the outage's codes appear %d times in the table:\n%s", c.name, n, tb)
		}
	}
}

// TestCaughtUpEveryRestartedNode: both replicas killed, started one after the other: each
// start has its node's caught-up time (the other node's start in between does not end the
// search), a restart ignores the samples from before its stop, a node a kill took down
// that came back without a start of its own gets it on the kill's row, and a heal counts
// only samples whose lag is known (not NaN or negative).
func TestCaughtUpEveryRestartedNode(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	faults := []schema.RunFault{
		bookFault(epoch, 10.0, 0.01, "kill", "n2"), bookFault(epoch, 10.1, 0.01, "kill", "n3"),
		bookFault(epoch, 25.0, 0.8, "start", "n2"), bookFault(epoch, 25.1, 0.9, "start", "n3"),
		bookFault(epoch, 30.0, 2.5, "restart", "n2"), bookFault(epoch, 40.0, 0.01, "kill", "n1"),
		bookFault(epoch, 48.0, 0.2, "partition", "n3"), bookFault(epoch, 50.0, 0.1, "heal", "n3"),
	}
	var ss []sampler.Sample
	add := func(t float64, node, metric string, v float64) {
		ss = append(ss, sampler.Sample{Elapsed: time.Duration(t * float64(time.Second)), Node: node, Metric: metric, Value: v})
	}
	for s := 0; s < 60; s++ {
		t := float64(s)
		for _, n := range []string{"n1", "n2", "n3"} {
			up, lag := true, 0.0
			switch {
			case n != "n1" && t > 10 && t < 28: // killed, started at 25 (up at 26)
				up = t >= 26
				lag = 12
				if t >= 27 && n == "n2" || t >= 28 && n == "n3" {
					lag = 0.5
				}
			case n == "n2" && t >= 30 && t < 33: // restart: down from 31 to 32, lagging to 34
				up, lag = t < 31, 0.2
				if t >= 32 {
					up, lag = true, 3
				}
			case n == "n2" && t >= 33 && t < 34:
				lag = 3
			case n == "n1" && t > 40 && t < 45: // killed, back by itself at 45
				up = false
			case n == "n1" && t >= 45 && t < 47:
				lag = 5
			case n == "n3" && t >= 49 && t < 53: // partitioned: lag unknown until 53
				lag = math.NaN()
				if int(t)%2 == 0 {
					lag = -1
				}
			}
			if !up {
				add(t, n, sampler.MetricNodeUp, 0)
				continue
			}
			add(t, n, "lag_s", lag)
			add(t, n, sampler.MetricNodeUp, 1)
		}
	}
	fs := faultSummaries(faults, nil, ss, nil)
	want := []string{"n/a", "n/a", "2.0", "2.9", "4.0", "7.0", "n/a", "3.0"}
	checkCaughtUp(t, faults, fs, want)
}

// checkCaughtUp fails unless fs has one row per fault, in order, and row i's caught-up
// time (fmtOpt "%.1f", "n/a" for none) is want[i].
func checkCaughtUp(t *testing.T, faults []schema.RunFault, fs []schema.FaultSummary, want []string) {
	t.Helper()
	if len(fs) != len(faults) {
		t.Fatalf("%d fault rows for %d faults, want one per fault", len(fs), len(faults))
	}
	for i, f := range fs {
		if f.Action != faults[i].Action || f.Node != faults[i].Node || f.AtS != faults[i].AtS {
			t.Errorf("row %d is %s %s at %.1f, want %s %s at %.1f", i, f.Action, f.Node, f.AtS, faults[i].Action, faults[i].Node, faults[i].AtS)
		}
		if got := fmtOpt(f.CaughtUpS, "%.1f"); got != want[i] {
			t.Errorf("%s %s at %.1f: caught up after %s, want %s", f.Action, f.Node, f.AtS, got, want[i])
		}
	}
}

// TestCaughtUpNeedsTheMajority: the old primary of a group, partitioned and healed, reads
// lag 0 against its own hung heartbeat while the majority has it UNREACHABLE, then not in
// the group, RECOVERING: it has caught up only once the majority sees it ONLINE with a lag
// at or under 1 s (measured: caught up 0.9 s after the heal without this, ONLINE 20 s
// later); a Galera node outside the Primary component likewise.
func TestCaughtUpNeedsTheMajority(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	faults := []schema.RunFault{bookFault(epoch, 10.0, 0.2, "partition", "n1"), bookFault(epoch, 30.0, 0.1, "heal", "n1"),
		bookFault(epoch, 10.0, 0.2, "partition", "n3"), bookFault(epoch, 20.0, 0.1, "heal", "n3")}
	var ss []sampler.Sample
	add := func(t float64, node, metric string, v float64) {
		ss = append(ss, sampler.Sample{Elapsed: time.Duration(t * float64(time.Second)), Node: node, Metric: metric, Value: v})
	}
	for s := 0; s < 60; s++ {
		t := float64(s)
		state, lag := 1.0, 0.0
		switch {
		case t >= 16 && t < 33:
			state = 3 // UNREACHABLE for the majority, own heartbeat hung: lag 0
		case t >= 33 && t < 46:
			state, lag = 5, t-33
		case t >= 46 && t < 50:
			state, lag = 2, 3
		}
		add(t, "n1", "lag_s", lag)
		add(t, "n1", "gr_majority_state", state)
		primary := 1.0
		if t >= 16 && t < 24 {
			primary = 0
		}
		add(t, "n3", "lag_s", 0)
		add(t, "n3", "galera_primary", primary)
	}
	fs := faultSummaries(faults, nil, ss, nil)
	// The partitions: n1 and n3 never inside with a low lag before their heals.
	checkCaughtUp(t, faults, fs, []string{"n/a", "20.0", "n/a", "4.0"})
}

// TestFaultAlsoOutages: a Galera node partitioned under load stalls the whole cluster
// until it is evicted (measured: n3 partitioned at 10.05 s, n1 and n2 could not commit for
// 6.2 s from 10.12 s, n3 until 27.6 s; at the heal n1 and n2 hung 1 s again). The
// partition's row names n3 and the other two; the heal's names its own stall once; no
// outage is on two rows, and the codes stay with the owner.
func TestFaultAlsoOutages(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	faults := []schema.RunFault{bookFault(epoch, 10.05, 3.8, "partition", "n3"), bookFault(epoch, 20.05, 0.1, "heal", "n3")}
	outages := []schema.OutageSummary{
		bookOutage(epoch, "n3", 10.12, 27.62, map[string]int64{"1047": 116, "1180": 1}),
		bookOutage(epoch, "n2", 10.12, 16.36, nil), bookOutage(epoch, "n1", 10.13, 16.36, nil),
		bookOutage(epoch, "n1", 20.99, 22.03, nil), bookOutage(epoch, "n2", 20.99, 22.02, nil),
	}
	fs := faultSummaries(faults, outages, nil, bookRun(epoch, 40, 10, 28))
	tb := report.FaultTable(fs)
	for _, want := range []string{"| n3 (also n2, n1) | 1047 x116, 1180 x1 |", "| n1 (also n2) | - |"} {
		if !strings.Contains(tb, want) {
			t.Errorf("table lacks %q:\n%s", want, tb)
		}
	}
}

// fmtOpt formats *v with format, or "n/a" when v is nil.
func fmtOpt(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}
