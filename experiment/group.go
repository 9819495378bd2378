package experiment

import (
	"fmt"
	"strings"

	"github.com/habench/habench/sampler"
)

// GroupMemberSummary sums one Group Replication member's group samples over the run (see
// sampler.Group for the metrics). Throttle fields are nil where the member lacks the
// flow-control stats component; InferredThrottleTicks is nil where it has it.
type GroupMemberSummary struct {
	Node string `json:"node"`
	// LastState and LastRole are the member's MEMBER_STATE / MEMBER_ROLE codes at the last
	// sample as the group's majority reports them (gr_majority_state and _role; its own
	// view's when no majority was ever sampled): state 1 = ONLINE, 3 = UNREACHABLE, 5 =
	// not in the majority's view; role 1 = PRIMARY, 2 = SECONDARY. Changes counts changes of
	// either in the member's own view during the run.
	LastState float64 `json:"last_state"`
	LastRole  float64 `json:"last_role"`
	Changes   float64 `json:"state_role_changes"`
	// CertifierQueueMax and ApplierQueueMax are the largest queues sampled (transactions).
	CertifierQueueMax float64 `json:"certifier_queue_max_trx"`
	ApplierQueueMax   float64 `json:"applier_queue_max_trx"`
	// Conflicts, LocalRollbacks, Checked and RemoteApplied are transactions during the run.
	Conflicts      float64 `json:"conflicts_trx"`
	LocalRollbacks float64 `json:"local_rollbacks_trx"`
	Checked        float64 `json:"checked_trx"`
	RemoteApplied  float64 `json:"remote_applied_trx"`
	// ThrottledTrx and ThrottleTimeS are flow control's holds on this member's commits
	// (Gr_flow_control_throttle_count / _time_sum deltas, MySQL 9.7+).
	ThrottledTrx  *float64 `json:"throttled_trx,omitempty"`
	ThrottleTimeS *float64 `json:"throttle_time_s,omitempty"`
	// InferredThrottleTicks counts samples in which the member's queues exceeded the
	// flow-control thresholds (inferred, not measured).
	InferredThrottleTicks *float64 `json:"inferred_throttle_ticks,omitempty"`
}

// groupSummary sums the group sampler's samples per member (nil when there are none).
func groupSummary(nodes []sampler.Node, samples []sampler.Sample) []GroupMemberSummary {
	byNode := map[string]*GroupMemberSummary{}
	majority := map[string]bool{}
	add := func(p **float64, v float64) {
		if *p == nil {
			*p = new(float64)
		}
		**p += v
	}
	for _, sm := range samples {
		if !strings.HasPrefix(sm.Metric, "gr_") {
			continue
		}
		g := byNode[sm.Node]
		if g == nil {
			g = &GroupMemberSummary{Node: sm.Node}
			byNode[sm.Node] = g
		}
		switch sm.Metric {
		case "gr_majority_state":
			g.LastState, majority[sm.Node] = sm.Value, true
		case "gr_majority_role":
			g.LastRole = sm.Value
		case "gr_member_state":
			if !majority[sm.Node] {
				g.LastState = sm.Value
			}
		case "gr_member_role":
			if !majority[sm.Node] {
				g.LastRole = sm.Value
			}
		case "gr_member_changes":
			g.Changes = sm.Value
		case "gr_certifier_queue_trx":
			g.CertifierQueueMax = max(g.CertifierQueueMax, sm.Value)
		case "gr_applier_queue_trx":
			g.ApplierQueueMax = max(g.ApplierQueueMax, sm.Value)
		case "gr_conflicts_trx":
			g.Conflicts += sm.Value
		case "gr_local_rollback_trx":
			g.LocalRollbacks += sm.Value
		case "gr_checked_trx":
			g.Checked += sm.Value
		case "gr_remote_applied_trx":
			g.RemoteApplied += sm.Value
		case "gr_fc_throttle_count":
			add(&g.ThrottledTrx, sm.Value)
		case "gr_fc_throttle_time_s":
			add(&g.ThrottleTimeS, sm.Value)
		case "gr_fc_throttle_inferred":
			add(&g.InferredThrottleTicks, sm.Value)
		}
	}
	var out []GroupMemberSummary
	for _, n := range nodes {
		if g := byNode[n.Name]; g != nil {
			out = append(out, *g)
		}
	}
	return out
}

// groupReport is the report.md section of a Group Replication run.
func groupReport(gs []GroupMemberSummary) string {
	var b strings.Builder
	b.WriteString("\n## Group Replication\n\n")
	b.WriteString("| member | state | role | changes | certifier queue max | applier queue max | conflicts | local rollbacks | remote applied | throttled trx | throttle time s | inferred throttle ticks |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	roles := map[float64]string{0: "-", 1: "PRIMARY", 2: "SECONDARY"}
	for _, g := range gs {
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %s |\n", g.Node, memberStates[g.LastState], roles[g.LastRole], g.Changes,
			g.CertifierQueueMax, g.ApplierQueueMax, g.Conflicts, g.LocalRollbacks, g.RemoteApplied,
			fmtOpt(g.ThrottledTrx, "%.0f"), fmtOpt(g.ThrottleTimeS, "%.3f"), fmtOpt(g.InferredThrottleTicks, "%.0f"))
	}
	b.WriteString("\nstate and role = at the end, as the members that see a majority ONLINE report them (a member cut off in a minority calls itself ONLINE); ")
	b.WriteString("conflicts = transactions that failed certification (every member counts all of them); local rollbacks = this member's own transactions rolled back by certification; throttled = flow control held this member's commits (Gr_flow_control_throttle_*, MySQL 9.7+; throttle time is summed over transactions); inferred = samples in which the member's queues exceeded the flow-control thresholds (where the component is absent). n/a = not measured here.\n")
	return b.String()
}
