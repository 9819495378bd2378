package experiment

import (
	"testing"
	"time"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
)

// A node that says it cannot catch up is settling (waited for) until it has said so for
// stuckGrace without a break, then Behind with that reason; a break starts the grace
// again; the writer is never Behind; a wait that ends inside the grace gives the reason.
func TestConvergenceStuckGrace(t *testing.T) {
	cr := &convergenceRun{writer: "n1", settling: map[string]bool{}, stuckSince: map[string]time.Time{}, lastStuck: map[string]string{},
		state: map[string]*schema.NodeConvergence{"n1": {Node: "n1"}, "n2": {Node: "n2"}}}
	n2 := cr.state["n2"]
	why := "not in the Primary component (wsrep_cluster_status non-Primary)"
	cr.stuck("n2", n2, why)
	if settled(n2) || !cr.settling["n2"] {
		t.Fatalf("n2 stuck for a moment: %+v, settling %v; want waited for", n2, cr.settling["n2"])
	}
	cr.stuck("n2", n2, "") // it merged again
	cr.settling["n2"] = false
	if _, ok := cr.stuckSince["n2"]; ok {
		t.Error("a node that can catch up again keeps its stuck time")
	}
	cr.stuck("n2", n2, why)
	cr.stuckSince["n2"] = time.Now().Add(-stuckGrace)
	cr.stuck("n2", n2, why)
	if n2.State != schema.Behind || n2.Reason != why {
		t.Errorf("n2 stuck for %v: %+v, want Behind: %s", stuckGrace, n2, why)
	}
	cr.stuckSince["n1"] = time.Now().Add(-time.Hour)
	cr.stuck("n1", cr.state["n1"], why)
	if settled(cr.state["n1"]) {
		t.Errorf("the writer: %+v, want never Behind", cr.state["n1"])
	}
	n3 := &schema.NodeConvergence{Node: "n3"}
	cr.nodes = []sampler.Node{{Name: "n3"}}
	cr.state["n3"] = n3
	cr.stuck("n3", n3, why)
	cr.settleLeftBehind()
	if n3.State != schema.Behind || n3.Reason != why {
		t.Errorf("a wait that ended inside the grace: %+v, want Behind: %s", n3, why)
	}
}
