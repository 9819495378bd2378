package clients

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/habench/habench/workload"
)

// decided says how the merge treats every field of the workload types it merges: "sum",
// "max" and "min" are checked field by field (TestMergeSumsMaxMin); any other text says
// what Merge or MergeInterval does with the field, checked by the other tests. A field
// the workload package gains fails TestEveryFieldDecided until it is decided here (and in
// Merge, MergeInterval and the stream).
var decided = map[string]map[string]string{
	"Result": {
		"Workload": "equal on every client", "Threads": "sum",
		"Reads": "sum", "Writes": "sum", "Others": "sum", "Queries": "sum", "Transactions": "sum",
		"IgnoredErrors": "sum", "Reconnects": "sum", "Unknown": "sum", "WaitCount": "sum", "LatencySum": "sum",
		"TotalTime": "earliest start to latest end", "StartedAt": "earliest",
		"LatencyMin": "min", "LatencyMax": "max", "LatencyAvg": "LatencySum / Transactions",
		"LatencyPct": "from Histogram", "LatencyP50": "from Histogram", "LatencyP95": "from Histogram",
		"LatencyP99": "from Histogram", "ExtraLatencyPct": "from Histogram at Merge's extra",
		"Percentile": "equal on every client",
		"EventsAvg":  "over all threads", "EventsStddev": "over all threads",
		"ExecTimeAvg": "over all threads", "ExecTimeStddev": "over all threads",
		"Histogram": "merged", "Tail": "merged", "TailFrom": "latest, on the run's clock",
		"PerEndpoint": "sum by endpoint", "ErrorsByCode": "sum by code",
		"Outages": "all, on the run's clock, by Start", "Waits": "the longest MaxWaits, renumbered",
		"WriterMoves": "all, by At",
		"PSFallback":  "the first client's that fell back, named", "PSMode": "equal, or the fallen-back client's",
		"RandType": "equal on every client", "ReadNodes": "equal on every client",
		"ClientCPUCores": "the busiest client's", "ClientCPUs": "the busiest client's",
		"Rate": "mergeRate",
	},
	"RateResult": {
		"Target": "sum", "Arrivals": "sum", "Backlog": "sum", "WarmupDropped": "sum", "WarmupUnmeasured": "sum",
		"ServiceSum": "sum", "BacklogAge": "max", "MaxBacklogAge": "max", "ServiceMax": "max", "ServiceMin": "min",
		"Behind": "the longest client's", "BehindAt": "the longest client's, on the run's clock",
		"MaxBacklog": "the longest client's", "Met": "all met",
		"ServiceAvg": "ServiceSum / count", "ServicePct": "from ServiceHistogram", "ServiceP50": "from ServiceHistogram",
		"ServiceP95": "from ServiceHistogram", "ServiceP99": "from ServiceHistogram", "ServiceHistogram": "merged",
	},
	"Interval": {
		"Elapsed": "max", "Length": "max", "Threads": "sum",
		"TPS": "sum", "QPS": "sum", "ReadsPerSec": "sum", "WritesPerSec": "sum", "OthersPerSec": "sum",
		"ErrPerSec": "sum", "ReconnPerSec": "sum",
		"Transactions": "sum", "Reads": "sum", "Writes": "sum", "Others": "sum", "Errors": "sum", "Reconnects": "sum",
		"Unknown": "sum", "QueueLength": "sum", "Concurrency": "sum", "InFlight": "sum",
		"LongestInFlight": "max", "LatencyMax": "max", "LatencyAvg": "weighted by Transactions",
		"LatencyPct": "from Histogram", "LatencyP50": "from Histogram", "LatencyP95": "from Histogram", "LatencyP99": "from Histogram",
		"PerEndpoint": "sum by endpoint", "ErrorsByCode": "sum by code",
		"Histogram": "merged", "Recorded": "merged", "Started": "the run's clock", "Rate": "mergeRateIntervals",
	},
	"RateInterval": {
		"Arrivals": "sum", "BacklogAge": "max", "ServiceMax": "max", "ServiceAvg": "weighted by Transactions",
		// Upper bounds: a RateInterval carries no service histogram.
		"ServicePct": "max", "ServiceP95": "max", "ServiceP99": "max",
	},
	"EndpointStats": {
		"Transactions": "sum", "Queries": "sum", "Errors": "sum", "Reconnects": "sum", "ReadChecks": "sum",
		"StaleReads": "sum", "ErrorsByCode": "sum by code",
	},
}

var decidedTypes = map[string]reflect.Type{
	"Result": reflect.TypeFor[workload.Result](), "RateResult": reflect.TypeFor[workload.RateResult](),
	"Interval": reflect.TypeFor[workload.Interval](), "RateInterval": reflect.TypeFor[workload.RateInterval](),
	"EndpointStats": reflect.TypeFor[workload.EndpointStats](),
}

// TestEveryFieldDecided fails when a workload type the merge handles has an exported
// field decided does not list, or decided lists one it no longer has.
func TestEveryFieldDecided(t *testing.T) {
	for name, typ := range decidedTypes {
		have := map[string]bool{}
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			have[f.Name] = true
			if decided[name][f.Name] == "" {
				t.Errorf("workload.%s.%s: not decided: how do Merge/MergeInterval merge it? (clients/fields_test.go's decided)", name, f.Name)
			}
		}
		for f := range decided[name] {
			if !have[f] {
				t.Errorf("decided lists workload.%s.%s, which it does not have", name, f)
			}
		}
	}
}

// fill sets v's fields decided sum, max or min (numbers) to random values 1..1000.
func fill(g *rand.Rand, typ string, v reflect.Value) {
	for name, how := range decided[typ] {
		if how != "sum" && how != "max" && how != "min" {
			continue
		}
		f := v.FieldByName(name)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(1 + g.Int64N(1000))
		case reflect.Float64:
			f.SetFloat(1 + g.Float64()*999)
		}
	}
}

// checkSumMaxMin checks got's fields decided sum, max or min against parts'.
func checkSumMaxMin(t *testing.T, typ string, got reflect.Value, parts []reflect.Value) {
	t.Helper()
	for name, how := range decided[typ] {
		if how != "sum" && how != "max" && how != "min" {
			continue
		}
		var want float64
		for i, p := range parts {
			x := num(p.FieldByName(name))
			switch {
			case how == "sum":
				want += x
			case i == 0, how == "max" && x > want, how == "min" && x < want:
				want = x
			}
		}
		if g := num(got.FieldByName(name)); !near(g, want) {
			t.Errorf("%s.%s = %v, want the %s %v", typ, name, g, how, want)
		}
	}
}

func num(v reflect.Value) float64 {
	if v.CanInt() {
		return float64(v.Int())
	}
	return v.Float()
}

// TestMergeSumsMaxMin: every field decided sum, max or min is merged so, in Merge (Result,
// RateResult, EndpointStats) and MergeInterval (Interval, RateInterval).
func TestMergeSumsMaxMin(t *testing.T) {
	g := rand.New(rand.NewPCG(7, 34))
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var parts []Part
	var res, rates, eps []reflect.Value
	var ivs []ClientInterval
	for c := range 3 {
		r := engineResult([]time.Duration{time.Millisecond, 5 * time.Millisecond}, 2, 95, nil)
		r.StartedAt = t0
		fill(g, "Result", reflect.ValueOf(r).Elem())
		r.Rate = &workload.RateResult{ServiceHistogram: workload.NewHistogram()}
		fill(g, "RateResult", reflect.ValueOf(r.Rate).Elem())
		var ep workload.EndpointStats
		fill(g, "EndpointStats", reflect.ValueOf(&ep).Elem())
		r.PerEndpoint = map[string]workload.EndpointStats{"n1": ep}
		parts = append(parts, Part{Client: string(rune('a' + c)), Result: r})
		res, rates, eps = append(res, reflect.ValueOf(*r)), append(rates, reflect.ValueOf(*r.Rate)), append(eps, reflect.ValueOf(ep))

		iv := workload.Interval{Started: t0, Histogram: workload.NewHistogram(), Rate: &workload.RateInterval{}}
		iv.Recorded = iv.Histogram
		fill(g, "Interval", reflect.ValueOf(&iv).Elem())
		fill(g, "RateInterval", reflect.ValueOf(iv.Rate).Elem())
		ivs = append(ivs, ClientInterval{Client: parts[c].Client, N: 1, Interval: iv})
	}
	m, err := Merge(parts, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSumMaxMin(t, "Result", reflect.ValueOf(*m.Result), res)
	checkSumMaxMin(t, "RateResult", reflect.ValueOf(*m.Result.Rate), rates)
	checkSumMaxMin(t, "EndpointStats", reflect.ValueOf(m.Result.PerEndpoint["n1"]), eps)

	iv := MergeInterval(ivs, t0, 95)
	var ivv, rvv []reflect.Value
	for _, ci := range ivs {
		ivv, rvv = append(ivv, reflect.ValueOf(ci.Interval)), append(rvv, reflect.ValueOf(*ci.Rate))
	}
	checkSumMaxMin(t, "Interval", reflect.ValueOf(iv), ivv)
	checkSumMaxMin(t, "RateInterval", reflect.ValueOf(*iv.Rate), rvv)
}
