package experiment

import (
	"fmt"
	"github.com/habench/habench/schema"
	"sort"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
)

var roleNames = map[float64]string{0: "none", 1: "PRIMARY", 2: "SECONDARY"}

// memberStates are gr_member_state's and gr_majority_state's codes as shown.
var memberStates = sampler.MemberStates

// memberLabel is a member's role when ONLINE, else its state ("" when the state is unknown).
func memberLabel(state, role float64, ok bool) string {
	switch {
	case !ok:
		return ""
	case state == 1:
		return roleNames[role]
	}
	return memberStates[state]
}

// groupRole is a group member's role in one tick (its gr_* samples: metric -> value) as
// the majority reports it, with its own view when that differs: "PRIMARY", "UNREACHABLE
// (own view PRIMARY)" for an old primary cut off in a minority, "not in the group" once
// expelled, "no majority (own view PRIMARY)" when no readable member saw a majority.
// Without majority samples in the run (majority false: samples.csv of an older habench)
// its own gr_member_role. "" when the tick says nothing of it.
func groupRole(m map[string]float64, majority bool) string {
	ownState, hasOwn := m[sampler.MetricGRMemberState]
	own := memberLabel(ownState, m[sampler.MetricGRMemberRole], hasOwn)
	if !majority {
		if r, ok := m[sampler.MetricGRMemberRole]; ok {
			return roleNames[r]
		}
		return ""
	}
	majState, hasMaj := m[sampler.MetricGRMajorityState]
	maj := memberLabel(majState, m[sampler.MetricGRMajorityRole], hasMaj)
	switch {
	case !hasMaj && own == "":
		return ""
	case !hasMaj:
		maj = "no majority"
	}
	if own != "" && own != maj {
		return maj + " (own view " + own + ")"
	}
	return maj
}

// nodeStates derives every node's down windows and role changes from the samples.
func nodeStates(samples []sampler.Sample) []schema.NodeState {
	byNode := map[string][]sampler.Sample{}
	majority := false
	for _, s := range samples {
		switch s.Metric {
		case sampler.MetricNodeUp, sampler.MetricRole, sampler.MetricGRMemberRole, sampler.MetricGRMemberState, sampler.MetricGaleraPrimary:
			byNode[s.Node] = append(byNode[s.Node], s)
		case sampler.MetricGRMajorityState, sampler.MetricGRMajorityRole:
			byNode[s.Node] = append(byNode[s.Node], s)
			majority = true
		}
	}
	var names []string
	for n := range byNode {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []schema.NodeState
	for _, n := range names {
		ss := byNode[n]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Elapsed < ss[j].Elapsed })
		st := schema.NodeState{Node: n, Changes: groupRoleChanges(ss, majority)}
		var down *schema.Window
		last := map[string]float64{}
		seen := map[string]bool{}
		for _, s := range ss {
			t := s.Elapsed.Seconds()
			switch s.Metric {
			case sampler.MetricNodeUp:
				if s.Value == 0 && down == nil {
					down = &schema.Window{StartS: t, EndS: t}
				} else if s.Value == 0 {
					down.EndS = t
				} else if down != nil {
					down.EndS = t
					st.Down = append(st.Down, *down)
					down = nil
				}
			case sampler.MetricRole:
				if seen[s.Metric] && last[s.Metric] != s.Value {
					st.Changes = append(st.Changes, fmt.Sprintf("%.1fs %s -> %s", t, sampler.RoleOfCode(last[s.Metric]), sampler.RoleOfCode(s.Value)))
				}
				seen[s.Metric], last[s.Metric] = true, s.Value
			case sampler.MetricGaleraPrimary:
				if seen[s.Metric] && last[s.Metric] != s.Value {
					st.Changes = append(st.Changes, fmt.Sprintf("%.1fs %s", t, map[float64]string{0: "left the Primary component (non-Primary)", 1: "back in the Primary component"}[s.Value]))
				}
				seen[s.Metric], last[s.Metric] = true, s.Value
			}
		}
		if down != nil {
			down.Open = true
			st.Down = append(st.Down, *down)
		}
		sort.SliceStable(st.Changes, func(i, j int) bool { return changeAt(st.Changes[i]) < changeAt(st.Changes[j]) })
		if len(st.Down) > 0 || len(st.Changes) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// changeAt is the time a change line starts with ("12.0s ...").
func changeAt(c string) float64 {
	var t float64
	fmt.Sscanf(c, "%fs", &t)
	return t
}

// groupRoleChanges are a member's role changes (groupRole) in its time-sorted samples ss.
func groupRoleChanges(ss []sampler.Sample, majority bool) []string {
	var out []string
	last := ""
	for i := 0; i < len(ss); {
		j, m := i, map[string]float64{}
		for ; j < len(ss) && ss[j].Elapsed == ss[i].Elapsed; j++ {
			m[ss[j].Metric] = ss[j].Value
		}
		if r := groupRole(m, majority); r != "" {
			if last != "" && r != last {
				out = append(out, fmt.Sprintf("%.1fs %s -> %s", ss[i].Elapsed.Seconds(), last, r))
			}
			last = r
		}
		i = j
	}
	return out
}

// setDownAtEnd marks the nodes whose last down window in states was still open.
func setDownAtEnd(nodes []schema.NodeLag, states []schema.NodeState) {
	for _, st := range states {
		if len(st.Down) == 0 || !st.Down[len(st.Down)-1].Open {
			continue
		}
		for i := range nodes {
			if nodes[i].Node == st.Node {
				nodes[i].DownAtEnd = true
			}
		}
	}
}

// setRolesAtEnd sets RoleEnd of the nodes whose role in now (the cluster's record after
// the run) differs from the one they started with.
func setRolesAtEnd(nodes []schema.NodeLag, now *cluster.Cluster) {
	for i := range nodes {
		if n := now.Node(nodes[i].Node); n != nil && string(n.Role) != nodes[i].Role && nodes[i].Role != "" {
			nodes[i].RoleEnd = string(n.Role)
		}
	}
}
