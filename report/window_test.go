package report

import (
	"strings"
	"testing"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
)

// TestNodeTableMeasuredWindow: queue maxima and flow-control averages leave out the
// samples before the start of measurement (the warm-up), and the table says which window
// it covers.
func TestNodeTableMeasuredWindow(t *testing.T) {
	r := &Run{Manifest: schema.Manifest{Nodes: []schema.NodeInfo{{Name: "n1"}}, IntervalsOffsetS: 2.5},
		Summary: &schema.Summary{SamplesWindow: "from the start of measurement (2.5 s on samples.csv's clock, after connecting and the warm-up) to the end of the catch-up"},
		Samples: []schema.Sample{
			{ElapsedS: 1, Node: "n1", Metric: sampler.MetricGaleraRecvQueue, Value: 900}, {ElapsedS: 1, Node: "n1", Metric: sampler.MetricGaleraFCPaused, Value: 1},
			{ElapsedS: 3, Node: "n1", Metric: sampler.MetricGaleraRecvQueue, Value: 7}, {ElapsedS: 3, Node: "n1", Metric: sampler.MetricGaleraFCPaused, Value: 0.2},
			{ElapsedS: 4, Node: "n1", Metric: sampler.MetricGaleraFCPaused, Value: 0.4},
		}}
	ns := nodeTable(r)
	if len(ns) != 1 || ns[0].Queues != "galera_recv_queue max 7" || ns[0].Paused != "galera_fc_paused_fraction avg 0.300, max 0.400" {
		t.Errorf("node table %+v", ns)
	}
	if w := nodeWindow(r); !strings.Contains(w, "from the start of measurement (2.5 s") {
		t.Errorf("window %q", w)
	}
	r.Manifest.IntervalsOffsetS = 0
	if ns := nodeTable(r); ns[0].Queues != "galera_recv_queue max 900" {
		t.Errorf("without a start of measurement every sample counts: %+v", ns)
	}
}
