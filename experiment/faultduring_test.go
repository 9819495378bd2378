package experiment

import (
	"github.com/habench/habench/schema"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
)

// TestFaultDuring: a lasting fault at 10 s taking 3 s is measured against the intervals
// that ended in the 30 s before it (TPS from their transactions, p99 their median) and
// those that overlapped it (p99 the worst); flow control, queues and membership from the
// samples in its window (membership: the biggest component each second, at its lowest:
// the node the action took out, seeing 0 members, does not count); the table shows the
// outcome.
func TestFaultDuring(t *testing.T) {
	var ivs []FaultInterval
	for i := 1; i <= 16; i++ {
		iv := FaultInterval{EndS: float64(i), LengthS: 1, Transactions: 100, P99Ms: 10 + float64(i%2)}
		if i >= 11 && i <= 13 {
			iv.Transactions, iv.P99Ms = 20, 200+float64(i)
		}
		ivs = append(ivs, iv)
	}
	s := func(at float64, node, metric string, v float64) sampler.Sample {
		return sampler.Sample{Elapsed: time.Duration(at * float64(time.Second)), Node: node, Metric: metric, Value: v}
	}
	samples := []sampler.Sample{
		s(5, "n1", sampler.MetricGaleraClusterSize, 3), s(11, "n3", sampler.MetricGaleraClusterSize, 2),
		s(12.02, "n1", sampler.MetricGRMembersOnline, 2), s(11.98, "n3", sampler.MetricGRMembersOnline, 0),
		s(11, "n2", sampler.MetricGaleraFCPaused, 0.4), s(12, "n3", sampler.MetricGaleraRecvQueue, 900),
		s(5, "n3", sampler.MetricGaleraRecvQueue, 5000), s(20, "n3", sampler.MetricGaleraFCPaused, 1),
	}
	f := schema.RunFault{AtS: 10, FaultRecord: schema.FaultRecord{Action: "x", Node: "n1", Took: 3, Outcome: "ok", Rows: 1000}}
	d := faultDuring(f, samples, ivs)
	if d.BeforeIntervals != 10 || d.DuringIntervals != 3 || d.TPSBefore != 100 || d.TPSDuring != 20 || d.P99BeforeMs != 11 || d.P99DuringMs != 213 {
		t.Errorf("workload %+v, want 10 intervals before at 100 TPS p99 11, 3 during at 20 TPS p99 213", d)
	}
	if d.FCPausedMax == nil || *d.FCPausedMax != 0.4 || d.QueuePeak != 900 || d.QueuePeakOn != "n3 galera_recv_queue" ||
		d.MembersBefore == nil || *d.MembersBefore != 3 || d.MembersMin == nil || *d.MembersMin != 2 {
		t.Errorf("cluster %+v, want paused 0.4, queue 900 on n3, members 3 -> 2", d)
	}
	tab := report.DuringTable([]schema.FaultSummary{{AtS: 10, Action: "x", Node: "n1", Outcome: "ok", Rows: 1000, During: d}})
	if !strings.Contains(tab, "| 10.00 | x | n1 | ok (1000 rows) | 3.00 | 100 → 20 | 11.0 → 213.0 | paused ≤ 40% | 900 (n3 galera_recv_queue) | 3 → 2 |") {
		t.Errorf("table:\n%s", tab)
	}
	if report.DuringTable([]schema.FaultSummary{{Action: "kill"}}) != "" {
		t.Error("a table for faults without During")
	}
}
