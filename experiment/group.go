package experiment

import (
	"fmt"
	"strings"

	"github.com/habench/habench/sampler"
)

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
		case sampler.MetricGRMajorityState:
			g.LastState, majority[sm.Node] = sm.Value, true
		case sampler.MetricGRMajorityRole:
			g.LastRole = sm.Value
		case sampler.MetricGRMemberState:
			if !majority[sm.Node] {
				g.LastState = sm.Value
			}
		case sampler.MetricGRMemberRole:
			if !majority[sm.Node] {
				g.LastRole = sm.Value
			}
		case sampler.MetricGRMemberChanges:
			g.Changes = sm.Value
		case sampler.MetricGRCertifierQueue:
			g.CertifierQueueMax = max(g.CertifierQueueMax, sm.Value)
		case sampler.MetricGRApplierQueue:
			g.ApplierQueueMax = max(g.ApplierQueueMax, sm.Value)
		case sampler.MetricGRConflicts:
			g.Conflicts += sm.Value
		case sampler.MetricGRLocalRollback:
			g.LocalRollbacks += sm.Value
		case sampler.MetricGRChecked:
			g.Checked += sm.Value
		case sampler.MetricGRRemoteApplied:
			g.RemoteApplied += sm.Value
		case sampler.MetricGRFCThrottleCount:
			add(&g.ThrottledTrx, sm.Value)
		case sampler.MetricGRFCThrottleTime:
			add(&g.ThrottleTimeS, sm.Value)
		case sampler.MetricGRFCThrottleInferred:
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
