package experiment

import (
	"github.com/habench/habench/schema"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
)

// hostSummary counts a host once whatever the number of its nodes, only over the measured
// window, and the CPU-saturation warning follows sampler.CPUSaturated.
func TestHostSummaryWindowAndSaturation(t *testing.T) {
	hosts := []schema.HostInfo{{Name: "local", Nodes: []string{"n1", "n2", "n3"}}}
	var ss []sampler.Sample
	add := func(sec int, node, metric string, v float64) {
		ss = append(ss, sampler.Sample{Elapsed: time.Duration(sec) * time.Second, Node: node, Metric: metric, Value: v})
	}
	for sec := 1; sec <= 10; sec++ {
		busy := 0.2 // before and after the measurement (warmup, catch-up): quiet
		if sec > 2 && sec <= 8 {
			busy = 0.95
		}
		if sec == 5 {
			busy = 0.5
		}
		add(sec, "host:local", sampler.MetricHostCPUBusy, busy)
		add(sec, "host:local", sampler.MetricHostCPUs, 2)
		for _, n := range []string{"n1", "n2", "n3"} {
			add(sec, n, sampler.MetricServerCPU, 0.5)
		}
		add(sec, "other", sampler.MetricServerCPU, 9) // not on this host
	}
	hs := hostSummary(hosts, ss, 2*time.Second, 8*time.Second)
	if len(hs) != 1 {
		t.Fatalf("%d hosts", len(hs))
	}
	h := hs[0]
	wantMean := (5*0.95 + 0.5) / 6
	if h.Samples != 6 || h.CPUs != 2 || *h.CPUBusyMax != 0.95 || abs(*h.CPUBusyMean-wantMean) > 1e-9 {
		t.Errorf("summary %+v mean %v max %v, want 6 samples, mean %v, max 0.95", h, *h.CPUBusyMean, *h.CPUBusyMax, wantMean)
	}
	if !h.CPUSaturated || abs(h.SaturatedShare-5.0/6) > 1e-9 {
		t.Errorf("saturated %v share %v, want true 5/6", h.CPUSaturated, h.SaturatedShare)
	}
	if len(h.ServerCPU) != 3 || h.ServerCPU["n1"] != 0.5 {
		t.Errorf("server CPU %v", h.ServerCPU)
	}
	w := cpuSaturationWarnings(hs)
	if len(w) != 1 || !strings.Contains(w[0], "host local (nodes n1, n2, n3) was CPU-saturated") || !strings.Contains(w[0], "83% of the 6 measured seconds") {
		t.Errorf("warnings %q", w)
	}
	if md := Report(&schema.Manifest{}, &schema.Summary{Hosts: hs}); !strings.Contains(md, "| local | n1, n2, n3 | 2 | 88% | 95% |") || !strings.Contains(md, "**yes**") {
		t.Errorf("report.md section:\n%s", md)
	}
	// The whole run (quiet warmup and catch-up included) is not saturated: 5 of 10.
	if hs := hostSummary(hosts, ss, 0, 0); hs[0].Samples != 10 || !hs[0].CPUSaturated {
		t.Errorf("whole run: %+v (5 of 10 at >= 0.9 is half: saturated)", hs[0])
	}
	// Quiet: no warning, "no" in the table; no samples: n/a, never 0%.
	quiet := hostSummary(hosts, ss, 8*time.Second, 10*time.Second)
	if quiet[0].CPUSaturated || len(cpuSaturationWarnings(quiet)) != 0 || !strings.Contains(Report(&schema.Manifest{}, &schema.Summary{Hosts: quiet}), "| no |") {
		t.Errorf("quiet: %+v", quiet[0])
	}
	none := hostSummary(hosts, nil, 0, 0)
	if none[0].CPUBusyMean != nil || none[0].CPUSaturated || !strings.Contains(Report(&schema.Manifest{}, &schema.Summary{Hosts: none}), "n/a") {
		t.Errorf("no samples: %+v", none[0])
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The comparison table shows each row's busiest host and says which rows were CPU-bound.
func TestComparisonTableBusiestHost(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	bound := &schema.Summary{TPS: 100, LatencyMs: map[string]float64{}, Hosts: []schema.HostSummary{
		{Host: "db2", CPUBusyMean: f(0.40), CPUBusyMax: f(0.5)},
		{Host: "db1", CPUBusyMean: f(0.97), CPUBusyMax: f(1), CPUSaturated: true, SaturatedShare: 0.9},
	}}
	quiet := &schema.Summary{TPS: 200, LatencyMs: map[string]float64{}, Hosts: []schema.HostSummary{{Host: "local", CPUBusyMean: f(0.3), CPUBusyMax: f(0.6)}}}
	none := &schema.Summary{TPS: 50, LatencyMs: map[string]float64{}}
	md := report.ComparisonTable([]schema.ComparisonRow{{Topology: "gr", Summary: bound}, {Topology: "async", Summary: quiet}, {Topology: "ext", Summary: none}})
	for _, want := range []string{"| busiest host CPU mean / max |", "| db1 97% / 100% CPU-bound |", "| local 30% / 60% |", "| n/a |",
		"**CPU-bound:** gr: the run's busiest host"} {
		if !strings.Contains(md, want) {
			t.Errorf("comparison table lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "async: the run") || strings.Contains(md, "local 30% / 60% CPU-bound") {
		t.Errorf("quiet row called CPU-bound:\n%s", md)
	}
}
