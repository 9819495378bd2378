package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/sampler"
)

func TestNodeStates(t *testing.T) {
	var ss []sampler.Sample
	add := func(sec int, node, metric string, v float64) {
		ss = append(ss, sampler.Sample{Elapsed: time.Duration(sec) * time.Second, Node: node, Metric: metric, Value: v})
	}
	for i := 0; i <= 10; i++ {
		up := 1.0
		if i >= 3 && i <= 5 {
			up = 0
		}
		add(i, "n1", sampler.MetricNodeUp, up)
		add(i, "n2", sampler.MetricNodeUp, 1)
		role := 2.0
		if i >= 7 {
			role = 1
		}
		add(i, "n2", "gr_member_role", role)
		add(i, "n3", sampler.MetricNodeUp, map[bool]float64{true: 0, false: 1}[i >= 8])
	}
	ns := nodeStates(ss)
	if len(ns) != 3 {
		t.Fatalf("node states %+v, want n1 (down 3-6), n2 (became PRIMARY), n3 (down at the end)", ns)
	}
	if d := ns[0].Down; ns[0].Node != "n1" || len(d) != 1 || d[0].StartS != 3 || d[0].EndS != 6 || d[0].Open {
		t.Errorf("n1: %+v", ns[0])
	}
	if ns[1].Node != "n2" || len(ns[1].Down) != 0 || len(ns[1].Changes) != 1 || ns[1].Changes[0] != "7.0s SECONDARY -> PRIMARY" {
		t.Errorf("n2: %+v", ns[1])
	}
	if d := ns[2].Down; len(d) != 1 || !d[0].Open || d[0].StartS != 8 {
		t.Errorf("n3: %+v", ns[2])
	}
	tb := NodeStateTable(ns)
	for _, w := range []string{"| n1 | 3.0-6.0 s | - |", "| n3 | from 8.0 s to the end | - |", "SECONDARY -> PRIMARY"} {
		if !strings.Contains(tb, w) {
			t.Errorf("table lacks %q:\n%s", w, tb)
		}
	}
}
