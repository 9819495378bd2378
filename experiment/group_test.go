package experiment

import (
	"github.com/habench/habench/schema"
	"strings"
	"testing"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
)

// TestGroupSummaryFromSamples: per-member sums and maxima of the group sampler's metrics,
// throttle fields only where measured, inferred ticks only where inferred, and the report
// section.
func TestGroupSummaryFromSamples(t *testing.T) {
	nodes := []sampler.Node{{Name: "n1", Role: topology.RolePrimary}, {Name: "n2", Role: topology.RoleSecondary}, {Name: "x", Role: topology.RoleReplica}}
	var ss []sampler.Sample
	for sec, v := range []float64{3, 0, 5} {
		ss = append(ss,
			smp(sec, "n1", "gr_member_state", 1), smp(sec, "n1", "gr_member_role", 1), smp(sec, "n1", "gr_member_changes", 0),
			smp(sec, "n1", "gr_local_rollback_trx", v), smp(sec, "n1", "gr_conflicts_trx", v),
			smp(sec, "n1", "gr_fc_throttle_count", 2*v), smp(sec, "n1", "gr_fc_throttle_time_s", v/10),
			smp(sec, "n2", "gr_member_state", 1), smp(sec, "n2", "gr_member_role", 2), smp(sec, "n2", "gr_member_changes", float64(sec)),
			smp(sec, "n2", "gr_applier_queue_trx", 10*v), smp(sec, "n2", "gr_conflicts_trx", v),
			smp(sec, "n2", "gr_fc_throttle_inferred", min(v, 1)), smp(sec, "x", "lag_s", 1),
		)
	}
	gs := summarize(t, nodes, ss).Group
	if len(gs) != 2 || gs[0].Node != "n1" || gs[1].Node != "n2" {
		t.Fatalf("members %+v", gs)
	}
	n1, n2 := gs[0], gs[1]
	if n1.LocalRollbacks != 8 || n1.Conflicts != 8 || n1.ThrottledTrx == nil || *n1.ThrottledTrx != 16 || *n1.ThrottleTimeS != 0.8 || n1.InferredThrottleTicks != nil {
		t.Errorf("n1 %+v", n1)
	}
	if n2.ApplierQueueMax != 50 || n2.Changes != 2 || n2.LastRole != 2 || n2.ThrottledTrx != nil || n2.InferredThrottleTicks == nil || *n2.InferredThrottleTicks != 2 {
		t.Errorf("n2 %+v", n2)
	}
	if summarize(t, nodes[2:], ss).Group != nil {
		t.Error("summary for a node without group samples")
	}
	r := Report(&schema.Manifest{}, &schema.Summary{Group: gs})
	for _, want := range []string{"| n1 | ONLINE | PRIMARY | 0 |", "| 16 | 0.800 | n/a |", "| n2 | ONLINE | SECONDARY | 2 | 0 | 50 |"} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q:\n%s", want, r)
		}
	}
}
