package experiment

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestLiveNodes: with LiveNodes attached, each interval is followed by one line with the
// nodes' newest lag, backlog, queue and flow-control samples; hooks already set still
// run; nothing is attached for a single node or without a report interval.
func TestLiveNodes(t *testing.T) {
	c := &cluster.Cluster{Nodes: []*cluster.Node{{Name: "n1", Role: topology.RolePrimary}, {Name: "n2", Role: topology.RolePrimary}, {Name: "n3", Role: topology.RolePrimary}}}
	o := workload.DefaultOptions()
	o.ReportInterval = time.Second
	intervals := 0
	b := &Bench{Cluster: c, Options: o, OnInterval: func(workload.Interval) { intervals++ }}
	var out bytes.Buffer
	(&LiveNodes{W: &out}).Attach(b)
	b.OnSamples([]sampler.Sample{smp(1, "n2", "lag_s", 0.12), smp(1, "n2", "backlog_trx", 35), smp(1, "n3", "galera_recv_queue", 3),
		smp(1, "n3", "galera_fc_paused_fraction", 0.05), smp(1, "n3", "galera_cert_failures", 9), smp(1, "n1", "lag_s", 0),
		smp(1, "n1", "sampler_errors", 0), smp(1, "n2", "sampler_errors", 0)})
	b.OnInterval(workload.Interval{Elapsed: 5 * time.Second})
	want := "[ 5s ] nodes: n1 (writer) | n2 lag 0.120 s, backlog 35 | n3 galera_fc_paused_fraction 0.05, galera_recv_queue 3\n"
	if out.String() != want || intervals != 1 {
		t.Errorf("got %q (previous hook ran %d times), want %q", out.String(), intervals, want)
	}
	// n2 cannot be read at 2 s and 3 s: its lag is unknown, not its last value; n3 is
	// outside the Primary component. At 4 s n2 is back, 3.4 s behind.
	out.Reset()
	for sec := 2; sec <= 4; sec++ {
		ss := []sampler.Sample{smp(sec, "n1", "sampler_errors", 0), smp(sec, "n1", "lag_s", 0), smp(sec, "n2", "sampler_errors", 1),
			smp(sec, "n3", "sampler_errors", 0), smp(sec, "n3", "galera_primary", 0)}
		if sec == 4 {
			ss = append(ss, smp(sec, "n2", "lag_s", 3.4))
		}
		b.OnSamples(ss)
		b.OnInterval(workload.Interval{Elapsed: time.Duration(sec) * time.Second})
	}
	for _, w := range []string{"[ 3s ] nodes: n1 (writer) | n2 lag unknown for 2 s, backlog 35 | n3 lag unknown for 3 s,",
		"[ 4s ] nodes: n1 (writer) | n2 lag 3.400 s, backlog 35 | n3 lag unknown for 4 s,"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("lines lack %q:\n%s", w, out.String())
		}
	}
	// n2 becomes the group's primary as the majority says: "(writer)" moves to it.
	out.Reset()
	b.OnSamples([]sampler.Sample{smp(5, "n2", "gr_majority_role", 1), smp(5, "n1", "gr_majority_role", 0), smp(5, "n1", "gr_majority_state", 3)})
	b.OnInterval(workload.Interval{Elapsed: 5 * time.Second})
	if !strings.HasPrefix(out.String(), "[ 5s ] nodes: n1 lag 0.000 s | n2 (writer) lag 3.400 s |") {
		t.Errorf("writer did not follow the majority's primary: %q", out.String())
	}
	printed := out.Len()
	one := &Bench{Cluster: &cluster.Cluster{Nodes: c.Nodes[:1]}, Options: o}
	(&LiveNodes{W: &out}).Attach(one)
	o.ReportInterval = 0
	quiet := &Bench{Cluster: c, Options: o}
	(&LiveNodes{W: &out}).Attach(quiet)
	if one.OnInterval != nil || quiet.OnInterval != nil || out.Len() != printed {
		t.Error("attached to a single node or without a report interval")
	}
}
