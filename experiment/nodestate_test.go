package experiment

import (
	"github.com/habench/habench/schema"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
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
	tb := report.NodeStateTable(ns)
	for _, w := range []string{"| n1 | 3.0-6.0 s | - |", "| n3 | from 8.0 s to the end | - |", "SECONDARY -> PRIMARY"} {
		if !strings.Contains(tb, w) {
			t.Errorf("table lacks %q:\n%s", w, tb)
		}
	}
}

// TestNodeStatesPromote: durability-failover's async run, with the role samples a promote
// leaves in samples.csv: n1 down from 4.0 s, n2 replica -> source.
func TestNodeStatesPromote(t *testing.T) {
	_, ss, _ := durabilityFailoverRun(t)
	for _, sec := range []float64{1.02, 4.02} {
		for _, n := range []string{"n1", "n2", "n3"} {
			role := sampler.RoleCodes[topology.RoleReplica]
			if (n == "n1") == (sec < 4) {
				role = sampler.RoleCodes[topology.RoleSource]
			}
			ss = append(ss, sampler.Sample{Elapsed: time.Duration(sec * float64(time.Second)), Node: n, Metric: sampler.MetricRole, Value: role})
		}
	}
	tb := report.NodeStateTable(nodeStates(ss))
	for _, want := range []string{"| n1 | from 4.0 s to the end | 4.0s source -> replica |", "| n2 | - | 4.0s replica -> source |"} {
		if !strings.Contains(tb, want) {
			t.Errorf("node states lack %q:\n%s", want, tb)
		}
	}
}

// TestConvergenceOldSourceKilled: the old source the run's own fault killed is named so.
func TestConvergenceOldSourceKilled(t *testing.T) {
	faults, _, _ := durabilityFailoverRun(t)
	cv := &schema.Convergence{Writer: "n2", Nodes: []schema.NodeConvergence{{Node: "n1", State: schema.Down, Reason: "connection refused"}, {Node: "n2", State: schema.Converged}, {Node: "n3", State: schema.Converged}}}
	got := convergenceProblemsAfter(cv, topology.Async, nil, faults, map[string]string{"n1": "source", "n2": "replica", "n3": "replica"})
	if want := "old source n1 is down (killed by the run's fault at 3.0 s)"; got != want {
		t.Errorf("problems %q, want %q", got, want)
	}
	if got := convergenceProblems(cv, topology.Async, nil); got != "replica n1 is down (connection refused)" {
		t.Errorf("without faults: %q", got)
	}
}

// TestNodeStatesMinorityPrimary: the primary n1 is cut off at 10 s; it keeps calling itself
// ONLINE/PRIMARY (its own view) until 69 s, the majority sees it UNREACHABLE from 15 s,
// expels it at 40 s and elects n3 at 32 s. node_states and the group summary give the
// majority's word, from the moment it said so, with n1's stale own view beside it.
func TestNodeStatesMinorityPrimary(t *testing.T) {
	var ss []sampler.Sample
	add := func(sec int, node, metric string, v float64) {
		ss = append(ss, sampler.Sample{Elapsed: time.Duration(sec) * time.Second, Node: node, Metric: metric, Value: v})
	}
	for i := 1; i <= 75; i++ {
		n1Own := 1.0 // PRIMARY in its own view until it learns it was expelled
		if i >= 69 {
			n1Own = 0
		}
		add(i, "n1", "gr_member_state", map[bool]float64{true: 4, false: 1}[i >= 69])
		add(i, "n1", "gr_member_role", n1Own)
		majState, majRole := 1.0, 1.0
		switch {
		case i >= 40:
			majState, majRole = 5, 0
		case i >= 15:
			majState, majRole = 3, 0
		}
		add(i, "n1", "gr_majority_state", majState)
		add(i, "n1", "gr_majority_role", majRole)
		n3 := 2.0
		if i >= 32 {
			n3 = 1
		}
		add(i, "n3", "gr_member_state", 1)
		add(i, "n3", "gr_member_role", n3)
		add(i, "n3", "gr_majority_state", 1)
		add(i, "n3", "gr_majority_role", n3)
	}
	ns := nodeStates(ss)
	want := map[string][]string{
		"n1": {"15.0s PRIMARY -> UNREACHABLE (own view PRIMARY)", "40.0s UNREACHABLE (own view PRIMARY) -> not in the group (own view PRIMARY)",
			"69.0s not in the group (own view PRIMARY) -> not in the group (own view ERROR)"},
		"n3": {"32.0s SECONDARY -> PRIMARY"},
	}
	if len(ns) != 2 {
		t.Fatalf("node states %+v", ns)
	}
	for _, st := range ns {
		if strings.Join(st.Changes, "; ") != strings.Join(want[st.Node], "; ") {
			t.Errorf("%s changes:\n %q\nwant\n %q", st.Node, st.Changes, want[st.Node])
		}
	}
	gs := summarize(t, []sampler.Node{{Name: "n1"}, {Name: "n3"}}, ss).Group
	if gs[0].LastState != 5 || gs[0].LastRole != 0 || gs[1].LastRole != 1 {
		t.Errorf("group summary %+v, want n1 not in the group (5), n3 PRIMARY", gs)
	}
	if md := Report(&schema.Manifest{}, &schema.Summary{Group: gs}); !strings.Contains(md, "| n1 | not in the group | - |") || !strings.Contains(md, "| n3 | ONLINE | PRIMARY |") {
		t.Errorf("group report:\n%s", md)
	}
}
