package sampler

import (
	"math"
	"testing"
	"time"

	"github.com/habench/habench/topology"
)

func galeraStatusMap(pausedNs, sent, recv, cert, bf string) map[string]string {
	return map[string]string{
		"wsrep_flow_control_paused_ns": pausedNs, "wsrep_flow_control_sent": sent, "wsrep_flow_control_recv": recv,
		"wsrep_local_cert_failures": cert, "wsrep_local_bf_aborts": bf,
		"wsrep_local_recv_queue": "7", "wsrep_local_send_queue": "1", "wsrep_cluster_size": "3",
		"wsrep_local_state": "4", "wsrep_cluster_status": "Primary", "wsrep_ready": "ON",
	}
}

func byMetric(ss []Sample) map[string]float64 {
	m := map[string]float64{}
	for _, s := range ss {
		m[s.Metric] = s.Value
	}
	return m
}

// TestGaleraSamples: the paused fraction is the paused-ns delta over the wall time between
// two reads, clamped to 0..1; counters are deltas (0 on a first read, the new value after a
// restart); gauges pass through.
func TestGaleraSamples(t *testing.T) {
	g := NewGalera()
	t0 := time.Unix(1000, 0)
	first, err := g.samples("n1", galeraStatusMap("1000000000", "5", "9", "2", "1"), t0)
	if err != nil {
		t.Fatal(err)
	}
	m := byMetric(first)
	if _, ok := m["galera_fc_paused_fraction"]; ok {
		t.Error("paused fraction on a first read without baseline")
	}
	if m["galera_fc_sent"] != 0 || m["galera_recv_queue"] != 7 || m["galera_send_queue"] != 1 || m["galera_cluster_size"] != 3 ||
		m["galera_local_state"] != 4 || m["galera_primary"] != 1 || m["galera_ready"] != 1 {
		t.Errorf("first read: %v", m)
	}
	// 2 s later: 500 ms more paused = 0.25; 3 sent, 4 received, 1 cert failure, 2 BF aborts.
	second, _ := g.samples("n1", galeraStatusMap("1500000000", "8", "13", "3", "3"), t0.Add(2*time.Second))
	m = byMetric(second)
	want := map[string]float64{"galera_fc_paused_fraction": 0.25, "galera_fc_sent": 3, "galera_fc_recv": 4, "galera_cert_failures": 1, "galera_bf_aborts": 2}
	for k, v := range want {
		if math.Abs(m[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	// Other nodes keep their own baseline.
	if m := byMetric(must(g.samples("n2", galeraStatusMap("0", "0", "0", "0", "0"), t0))); m["galera_fc_sent"] != 0 {
		t.Errorf("n2 first read %v", m)
	}
	// Restart (counters went down): deltas count from 0; more paused than wall time clamps to 1.
	st := galeraStatusMap("9000000000", "2", "1", "0", "0")
	st["wsrep_cluster_status"], st["wsrep_ready"], st["wsrep_local_state"] = "Non-Primary", "OFF", "1"
	m = byMetric(must(g.samples("n1", st, t0.Add(3*time.Second))))
	if m["galera_fc_paused_fraction"] != 1 || m["galera_fc_sent"] != 2 || m["galera_primary"] != 0 || m["galera_ready"] != 0 || m["galera_local_state"] != 1 {
		t.Errorf("after restart: %v", m)
	}
	// A server without a provider has no wsrep counters.
	if _, err := g.samples("n3", map[string]string{"wsrep_ready": "OFF"}, t0); err == nil {
		t.Error("missing wsrep status accepted")
	}
	if g.Supports(Node{Role: topology.RoleSource}) || !g.Supports(Node{Role: topology.RoleNode}) {
		t.Error("Supports: want Galera nodes only")
	}
}

func must(s []Sample, err error) []Sample {
	if err != nil {
		panic(err)
	}
	return s
}
