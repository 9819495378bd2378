package experiment

import (
	"bytes"
	"github.com/habench/habench/schema"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestFailoverPlan: the workers fail over on a topology where every node takes writes
// when the scenario's faults take away a node they write to, or when asked (--failover);
// not without faults (sysbench's semantics), not for faults on other nodes or that take
// nothing away, never on a single writer or one node, where asking is an error naming why.
func TestFailoverPlan(t *testing.T) {
	nodes := []*cluster.Node{{Name: "n1", Role: topology.RolePrimary}, {Name: "n2", Role: topology.RolePrimary}, {Name: "n3", Role: topology.RolePrimary}}
	galera := &cluster.Cluster{Name: "g1", Spec: topology.Spec{Kind: topology.Galera, Nodes: 3}, Nodes: nodes}
	multi := &cluster.Cluster{Name: "m1", Spec: topology.Spec{Kind: topology.Group, Nodes: 3, Group: topology.GroupOptions{Mode: topology.GroupMultiPrimary}}, Nodes: nodes}
	single := &cluster.Cluster{Name: "s1", Spec: topology.Spec{Kind: topology.Group, Nodes: 3}, Nodes: nodes}
	eps := func(names ...string) workload.Target {
		var t workload.Target
		for _, n := range names {
			t.Endpoints = append(t.Endpoints, workload.Endpoint{Name: n, Host: "127.0.0.1", Port: 3306})
		}
		return t
	}
	ev := func(action, node string) scenario.FaultEvent {
		return scenario.FaultEvent{At: schema.Duration(4 * time.Second), Action: action, Node: node}
	}
	for _, c := range []struct {
		name   string
		c      *cluster.Cluster
		target workload.Target
		faults []scenario.FaultEvent
		asked  bool
		off    bool   // workload.failover: off
		want   string // substring of the reason; "" = off
		err    string // substring of the error
	}{
		{"no faults: as sysbench", galera, eps("n1", "n2", "n3"), nil, false, false, "", ""},
		{"kill of a node written to", galera, eps("n1", "n2", "n3"), []scenario.FaultEvent{ev("kill", "n3")}, false, false, "kill n3 at 4s", ""},
		{"kill of the writer alias", multi, eps("n1", "n2", "n3"), []scenario.FaultEvent{ev("kill", "writer")}, false, false, "kill writer at 4s", ""},
		{"rolling restart touches every node", galera, eps("n1", "n2"), []scenario.FaultEvent{ev("rolling-restart", "n3")}, false, false, "rolling-restart n3", ""},
		{"a node nobody writes to", galera, eps("n1", "n2"), []scenario.FaultEvent{ev("kill", "n3")}, false, false, "", ""},
		{"nothing taken away", galera, eps("n1", "n2", "n3"), []scenario.FaultEvent{ev("start", "n3")}, false, false, "", ""},
		{"pinned to one node", galera, eps("n3"), []scenario.FaultEvent{ev("kill", "n3")}, false, false, "", ""},
		{"single writer: they follow it", single, eps("n1"), []scenario.FaultEvent{ev("kill", "n1")}, false, false, "", ""},
		{"asked", multi, eps("n1", "n2", "n3"), nil, true, false, "--failover", ""},
		{"asked on a single writer", single, eps("n1"), nil, true, false, "", "has a single writer"},
		{"asked for one node", galera, eps("n2"), nil, true, false, "", "one node only"},
		{"off: the application has no host list", galera, eps("n1", "n2", "n3"), []scenario.FaultEvent{ev("kill", "n3")}, false, true, "", ""},
		{"a node twice is one node", galera, eps("n2", "n2"), []scenario.FaultEvent{ev("kill", "n2")}, false, false, "", ""},
	} {
		b := &Bench{Cluster: c.c, Target: c.target, Faults: c.faults, Failover: c.asked, FailoverOff: c.off}
		why, err := b.failoverPlan()
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: error %v", c.name, err)
		case c.want == "" && why != "":
			t.Errorf("%s: on (%s), want off", c.name, why)
		case c.want != "" && !strings.Contains(why, c.want):
			t.Errorf("%s: %q, want on with %q", c.name, why, c.want)
		}
	}
}

// TestPlanFailover: the dry run says, per topology where every node takes writes, whether
// the workers will fail over and why (the faults that take away their nodes), off with
// workload.failover: off, off when no fault touches their nodes; nothing for a topology
// with a single writer, nothing without faults; the lines come after the fault schedule.
func TestPlanFailover(t *testing.T) {
	y := `name: pf
topologies:
  - {name: g1, kind: galera, nodes: 3, flavor: mariadb}
  - {name: m1, kind: group, nodes: 3, flavor: mysql, group: {mode: multi-primary}}
  - {name: a1, kind: async, nodes: 3, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {time: 30}
  nodes: {m1: [n1, n2]}
faults:
  - {at: 4s, action: kill, node: n3}
  - {at: 9s, action: start, node: n3}
`
	dry := func(y string) string {
		s, err := scenario.ParseScenario([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := ResumePlan(s, "", "")
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		p.Print(&out, nil)
		return out.String()
	}
	txt := dry(y)
	on := "client failover in g1: on, the scenario's faults take away nodes the workers write to (kill n3 at 4s): a worker whose node fails moves to another live node"
	for _, want := range []string{on, "client failover in m1: off (no fault takes away a node its workers write to"} {
		if !strings.Contains(txt, want) {
			t.Errorf("dry run lacks %q:\n%s", want, txt)
		}
	}
	if strings.Contains(txt, "client failover in a1") || strings.Index(txt, "client failover") < strings.Index(txt, "  at 9s  start n3") {
		t.Errorf("a line for the single writer, or before the faults:\n%s", txt)
	}
	off := strings.Replace(y, "  nodes: {m1: [n1, n2]}\n", "  failover: off\n", 1)
	if txt := dry(off); !strings.Contains(txt, "client failover in g1: off (workload.failover: off), though the scenario's faults take away nodes the workers write to (kill n3 at 4s)") ||
		!strings.Contains(txt, "client failover in m1: off (workload.failover: off)") {
		t.Errorf("workload.failover: off:\n%s", txt)
	}
	if txt := dry(strings.Split(y, "faults:")[0]); strings.Contains(txt, "client failover") {
		t.Errorf("without faults:\n%s", txt)
	}
}

// TestFailoverMeasures: a kill is measured by when the other nodes' view lost the node and
// by when the last worker that left it committed elsewhere; a fault no worker left shows
// none; a move that never settled is "never"; the Faults table has both columns only when
// a fault has them.
func TestFailoverMeasures(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }
	faults := []schema.RunFault{bookFault(epoch, 4.1, 0.01, "kill", "n3"), bookFault(epoch, 9.1, 3, "start", "n3"), bookFault(epoch, 20.2, 5, "restart", "n2")}
	var samples []sampler.Sample
	for sec := 1; sec <= 30; sec++ {
		for _, n := range []string{"n1", "n2", "n3"} {
			size := 3.0
			switch {
			case n == "n3" && sec >= 5 && sec < 12: // down: not sampled
				continue
			case sec >= 10 && sec < 12, sec >= 21 && sec < 25 && n != "n2":
				size = 2 // n3 evicted at 10 s; n2 left at 21 s
			}
			samples = append(samples, sampler.Sample{Elapsed: time.Duration(sec) * time.Second, Node: n, Metric: sampler.MetricGaleraClusterSize, Value: size})
		}
	}
	moves := []workload.WriterMove{
		{From: "n3", To: "n1", At: at(4.12), FirstCommit: at(9.6), Settled: at(10.05), Workers: 2, Left: 2},
		{From: "n1", To: "n3", At: at(13), FirstCommit: at(13.01), Settled: at(13.01), Workers: 2, Left: 2}, // back: no fault's
		{From: "n2", To: "n1", At: at(20.3), FirstCommit: at(20.5), Workers: 1, Left: 1},                    // never settled
	}
	fs := make([]schema.FaultSummary, len(faults))
	nodesOf := func(f schema.RunFault) []string { return faultNodes(&cluster.Cluster{}, f.Action, f.Node) }
	setViewChanges(fs, faults, samples, nodesOf)
	back := func(node string, from time.Time) time.Time { // n3 live again at 12.5 s, n2 never
		if node == "n3" && from.Before(at(12.5)) {
			return at(12.5)
		}
		return time.Time{}
	}
	setClientFailover(fs, faults, moves, nodesOf, back)
	kill, start, restart := fs[0], fs[1], fs[2]
	near := func(v *float64, want float64) bool { return v != nil && *v > want-0.001 && *v < want+0.001 }
	if !near(kill.ViewChangeS, 5.9) {
		t.Errorf("kill: view change %v, want 5.9 (n1 and n2 at size 2 from 10 s)", fmtOpt(kill.ViewChangeS, "%.2f"))
	}
	if kill.FailoverWorkers != 2 || kill.ClientFailoverS == nil || *kill.ClientFailoverS < 5.94 || *kill.ClientFailoverS > 5.96 {
		t.Errorf("kill: %d workers elsewhere after %v, want 2 after 5.95 s", kill.FailoverWorkers, fmtOpt(kill.ClientFailoverS, "%.2f"))
	}
	if start.ViewChangeS != nil || start.FailoverWorkers != 0 {
		t.Errorf("start: %+v, want no view change and no failover (it takes nothing away)", start)
	}
	if !near(restart.ViewChangeS, 0.8) || restart.FailoverWorkers != 1 || restart.ClientFailoverS != nil {
		t.Errorf("restart: view change %v, %d workers, failover %v; want 0.8, 1, never", fmtOpt(restart.ViewChangeS, "%.2f"), restart.FailoverWorkers, fmtOpt(restart.ClientFailoverS, "%.2f"))
	}
	tb := report.FaultTable(fs)
	for _, want := range []string{"| cluster view changed after s | workers elsewhere after s |", "| 5.9 | 5.95 (2 workers) |", "| - | - |\n", "| 0.8 | never (1 worker) |"} {
		if !strings.Contains(tb, want) {
			t.Errorf("table lacks %q:\n%s", want, tb)
		}
	}
	// A group: a member that left is no row of the others' views, one that died is
	// UNREACHABLE; one RECOVERING before the fault still counts.
	var gs []sampler.Sample
	for sec := 1; sec <= 10; sec++ {
		for _, n := range []string{"n1", "n3"} {
			total, unreach := 3.0, 0.0
			switch {
			case sec >= 6 && sec < 8:
				unreach = 1 // n2 killed: UNREACHABLE from 6 s
			case sec >= 8:
				total = 2 // expelled
			}
			e := time.Duration(sec) * time.Second
			gs = append(gs, sampler.Sample{Elapsed: e, Node: n, Metric: sampler.MetricGRMembersTotal, Value: total},
				sampler.Sample{Elapsed: e, Node: n, Metric: sampler.MetricGRMembersUnreachable, Value: unreach},
				sampler.Sample{Elapsed: e, Node: n, Metric: sampler.MetricGRMembersOnline, Value: 2}) // n3 RECOVERING throughout
		}
	}
	gfs := make([]schema.FaultSummary, 1)
	setViewChanges(gfs, []schema.RunFault{bookFault(epoch, 4.5, 0.01, "kill", "n2")}, gs, nodesOf)
	if !near(gfs[0].ViewChangeS, 1.5) {
		t.Errorf("group: view change %v, want 1.5 (n2 UNREACHABLE at 6 s, though n3 was RECOVERING before)", fmtOpt(gfs[0].ViewChangeS, "%.2f"))
	}
	if tb := report.FaultTable(fs[1:2]); strings.Contains(tb, "view changed") {
		t.Errorf("a table without failover measures has their columns:\n%s", tb)
	}
}

// TestLiveWatchView: the view lists the nodes live in their latest answers (given after a
// time when asked), known once every node answered (none live is not "not known"), and
// says when a node that went down was live again.
func TestLiveWatchView(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	w := &liveWatch{order: []string{"n1", "n2", "n3"}, last: map[string]liveState{}, changes: map[string][]liveState{}, answered: make(chan struct{})}
	if live, known := w.live(time.Time{}); live != nil || known {
		t.Errorf("before any answer: %v, known %v; want none, not known", live, known)
	}
	for _, a := range []struct {
		node string
		s    float64
		live bool
	}{{"n1", 0, true}, {"n2", 0, true}, {"n3", 0, true}, {"n3", 4.2, false}, {"n3", 4.5, false}, {"n1", 5, true}, {"n3", 12.25, true}, {"n2", 12.5, true}} {
		w.set(a.node, liveState{At: at(a.s), Live: a.live})
	}
	select {
	case <-w.answered:
	default:
		t.Error("every node answered: answered still open")
	}
	if live, known := w.live(time.Time{}); strings.Join(live, ",") != "n1,n2,n3" || !known {
		t.Errorf("live %q, known %v; want n1,n2,n3 known", live, known)
	}
	if live, _ := w.live(at(10)); strings.Join(live, ",") != "n2,n3" {
		t.Errorf("live in answers after 10 s %q, want n2,n3 (n1's latest is from 5 s)", live)
	}
	if b := w.back("n3", at(4.1)); !b.Equal(at(12.25)) {
		t.Errorf("n3 back after 4.1 s: %v, want 12.25 s", b.Sub(t0))
	}
	if b := w.back("n3", at(4.4)); !b.Equal(at(12.25)) {
		t.Errorf("n3 (down at 4.4 s) back: %v, want 12.25 s", b.Sub(t0))
	}
	if b := w.back("n1", at(4.1)); !b.Equal(at(4.1)) {
		t.Errorf("n1 never down: back %v, want the time asked", b.Sub(t0))
	}
	w.set("n2", liveState{At: at(20), Live: false})
	if b := w.back("n2", at(19)); !b.IsZero() {
		t.Errorf("n2 down at 20 s for good: back %v, want never", b.Sub(t0))
	}
	// Every node not live (the cluster lost its quorum): known, none listed, which the
	// workers read as "stay and retry" (not as "not known: try every node").
	w.set("n1", liveState{At: at(20), Live: false})
	w.set("n3", liveState{At: at(20), Live: false})
	if live, known := w.live(time.Time{}); len(live) != 0 || !known {
		t.Errorf("no node live: %v, known %v; want none, known", live, known)
	}
}
