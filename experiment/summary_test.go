package experiment

import (
	"github.com/habench/habench/schema"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

func smp(sec int, node, metric string, v float64) sampler.Sample {
	return sampler.Sample{Elapsed: time.Duration(sec) * time.Second, Node: node, Metric: metric, Value: v}
}

// TestSummaryFromSamples: per-node lag and backlog maxima and averages, n/a (nil) without
// samples, sampler errors, and the semi-sync totals, from synthetic samples.
func TestSummaryFromSamples(t *testing.T) {
	wl, _ := workload.Lookup("oltp_read_write")
	b := &Bench{Workload: wl, Options: workload.DefaultOptions()}
	nodes := []sampler.Node{{Name: "n1", Role: topology.RoleSource}, {Name: "n2", Role: topology.RoleReplica}, {Name: "n3", Role: topology.RoleReplica}}
	samples := []sampler.Sample{
		smp(1, "n1", "lag_s", 0), smp(2, "n1", "lag_s", 0),
		smp(1, "n2", "lag_s", 0.5), smp(2, "n2", "lag_s", 2.5), smp(3, "n2", "lag_s", 0),
		smp(1, "n2", "backlog_trx", 40), smp(2, "n2", "backlog_trx", 300), smp(3, "n2", "backlog_trx", 0),
		smp(3, "n3", "sampler_errors", 3), // n3 never produced a lag sample
		smp(1, "n1", "semisync_on", 1), smp(2, "n1", "semisync_on", 0), smp(3, "n1", "semisync_on", 0),
		smp(1, "n1", "semisync_yes_tx", 100), smp(2, "n1", "semisync_yes_tx", 300), smp(3, "n1", "semisync_yes_tx", 0),
		smp(1, "n1", "semisync_no_tx", 0), smp(2, "n1", "semisync_no_tx", 20), smp(3, "n1", "semisync_no_tx", 50),
		smp(1, "n1", "semisync_interval_avg_wait_us", 1000), smp(2, "n1", "semisync_interval_avg_wait_us", 2000), smp(3, "n1", "semisync_interval_avg_wait_us", 0),
	}
	s := b.summary(nil, nil, nodes, samples, map[string]string{"n1": "x:1-5", "n2": "x:1-5"})
	by := map[string]schema.NodeLag{}
	for _, n := range s.Nodes {
		by[n.Node] = n
	}
	n2 := by["n2"]
	if n2.LagMaxS == nil || *n2.LagMaxS != 2.5 || n2.LagAvgS == nil || *n2.LagAvgS != 1.0 || n2.Samples != 3 {
		t.Errorf("n2 lag: %+v", n2)
	}
	if n2.BacklogMaxTrx == nil || *n2.BacklogMaxTrx != 300 {
		t.Errorf("n2 backlog max: %v", n2.BacklogMaxTrx)
	}
	if n3 := by["n3"]; n3.LagMaxS != nil || n3.SamplerErrors != 3 {
		t.Errorf("n3 without lag samples must be n/a with its errors: %+v", n3)
	}
	if by["n1"].BacklogMaxTrx != nil {
		t.Errorf("source backlog must be n/a")
	}
	ss := s.SemiSync
	if ss == nil || ss.Node != "n1" || ss.YesTx != 400 || ss.NoTx != 70 || ss.SecondsOff != 2 {
		t.Fatalf("semi-sync summary: %+v", ss)
	}
	// (1000*100 + 2000*300) / 400
	if ss.AvgWaitUs != 1750 {
		t.Errorf("weighted wait %v, want 1750", ss.AvgWaitUs)
	}
	if s2 := b.summary(nil, nil, nodes, samples[:8], nil); s2.SemiSync != nil {
		t.Error("semi-sync summary without semi-sync samples")
	}
}

func TestReportAndComparison(t *testing.T) {
	lag := 2.5
	m := &schema.Manifest{Habench: map[string]string{"version": "t"}, Workload: schema.ManifestWorkload{Name: "oltp_read_write",
		Options: map[string]string{"tables": "2", "table-size": "1000", "time": "5"}},
		Topology: &topology.Spec{Name: "a", Kind: topology.SemiSync, Nodes: 1, Flavor: topology.MariaDB},
		Nodes:    []schema.NodeInfo{{Name: "n1", Version: "10.11", Variables: map[string]string{"sync_binlog": "0"}}}}
	ok := true
	s := &schema.Summary{Threads: 4, TPS: 100, Transactions: 10, Reads: 140, Writes: 40, Others: 20, LatencyMs: map[string]float64{"avg": 10},
		Nodes:    []schema.NodeLag{{Node: "n1", Role: "source"}, {Node: "n2", Role: "replica", LagMaxS: &lag}},
		SemiSync: &schema.SemiSyncSummary{Node: "n1", YesTx: 9, NoTx: 1, SecondsOff: 1}, ReplicasCaught: &ok, DataCheck: "mismatch here"}
	r := Report(m, s)
	for _, w := range []string{"(semisync, 1 node, mariadb)", "2 tables x 1000 rows", "14.00 reads / 4.00 writes / 2.00 other",
		"| n1 | source | 10.11 | n/a |", "| 2.500 |", "## Semi-sync on n1", "| 9 | 1 | 1 |", "every node's executed GTID set equals the writer's", "**warning:** mismatch here", "| sync_binlog | 0 |"} {
		if !strings.Contains(r, w) {
			t.Errorf("report lacks %q:\n%s", w, r)
		}
	}
	rows := []schema.ComparisonRow{{Topology: "a", Kind: "single", Summary: &schema.Summary{TPS: 200, LatencyMs: map[string]float64{"avg": 5}}, TPSvsBase: 100, LatVsBase: 100},
		{Topology: "b", Kind: "async", Summary: &schema.Summary{TPS: 100, LatencyMs: map[string]float64{"avg": 10}}, TPSvsBase: 50, LatVsBase: 200, MaxLagS: &lag, Error: "context canceled"}}
	// Rows without a point (Stats) are their own, without percentages.
	c := report.ComparisonTable(rows)
	if !strings.Contains(c, "| a | single |") || !strings.Contains(c, "| n/a |") || !strings.Contains(c, "| b (1 of 1 runs incomplete, left out) | async |") || !strings.Contains(c, "| n/a | n/a | 2.500 |") {
		t.Errorf("comparison:\n%s", c)
	}
}

// TestSummaryExcludesWarmup: the lag and backlog figures (and the semi-sync, group and
// Galera summaries, from the same samples) cover the samples from
// the start of measurement on (warm-up excluded, as TPS); without a start, every sample.
func TestSummaryExcludesWarmup(t *testing.T) {
	wl, _ := workload.Lookup("oltp_read_write")
	b := &Bench{Workload: wl, Options: workload.DefaultOptions()}
	nodes := []sampler.Node{{Name: "n1", Role: topology.RoleSource}, {Name: "n2", Role: topology.RoleReplica}}
	samples := []sampler.Sample{
		smp(1, "n2", "lag_s", 9), smp(1, "n2", "backlog_trx", 5000), // warm-up
		smp(3, "n2", "lag_s", 1), smp(4, "n2", "lag_s", 2), smp(3, "n2", "backlog_trx", 30),
	}
	s := b.summary(nil, nil, nodes, measuredSamples(samples, 2.5), nil)
	n2 := s.Nodes[1]
	if n2.LagMaxS == nil || *n2.LagMaxS != 2 || *n2.LagAvgS != 1.5 || n2.Samples != 2 || *n2.BacklogMaxTrx != 30 {
		t.Errorf("measured window: %+v", n2)
	}
	if all := measuredSamples(samples, 0); len(all) != len(samples) {
		t.Errorf("no start of measurement: %d samples, want all %d", len(all), len(samples))
	}
}
