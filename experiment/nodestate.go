package experiment

import (
	"fmt"
	"sort"
	"strings"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
)

// NodeState is one node's state over the run, from the samples (samples.csv's clock).
type NodeState struct {
	Node string `json:"node"`
	// Down are the windows in which no sampler reached the node (node_up 0), [start, end]
	// seconds; End is the last sample's time when it was still down then.
	Down []Window `json:"down,omitempty"`
	// Changes are the role changes in the cluster's record (role: "4.0s replica -> source"
	// after a promote, at the first sample that saw it), those a group member reported
	// (gr_member_role: "12.0s SECONDARY -> PRIMARY") and a Galera node's Primary component
	// membership (galera_primary).
	Changes []string `json:"changes,omitempty"`
}

// Window is a time window on samples.csv's clock, in seconds.
type Window struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Open   bool    `json:"open,omitempty"`
}

var roleNames = map[float64]string{0: "none", 1: "PRIMARY", 2: "SECONDARY"}

// nodeStates derives every node's down windows and role changes from the samples.
func nodeStates(samples []sampler.Sample) []NodeState {
	byNode := map[string][]sampler.Sample{}
	for _, s := range samples {
		switch s.Metric {
		case sampler.MetricNodeUp, sampler.MetricRole, "gr_member_role", "galera_primary":
			byNode[s.Node] = append(byNode[s.Node], s)
		}
	}
	var names []string
	for n := range byNode {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []NodeState
	for _, n := range names {
		ss := byNode[n]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Elapsed < ss[j].Elapsed })
		st := NodeState{Node: n}
		var down *Window
		last := map[string]float64{}
		seen := map[string]bool{}
		for _, s := range ss {
			t := s.Elapsed.Seconds()
			switch s.Metric {
			case sampler.MetricNodeUp:
				if s.Value == 0 && down == nil {
					down = &Window{StartS: t, EndS: t}
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
			case "gr_member_role", "galera_primary":
				if seen[s.Metric] && last[s.Metric] != s.Value {
					if s.Metric == "gr_member_role" {
						st.Changes = append(st.Changes, fmt.Sprintf("%.1fs %s -> %s", t, roleNames[last[s.Metric]], roleNames[s.Value]))
					} else {
						st.Changes = append(st.Changes, fmt.Sprintf("%.1fs %s", t, map[float64]string{0: "left the Primary component", 1: "back in the Primary component"}[s.Value]))
					}
				}
				seen[s.Metric], last[s.Metric] = true, s.Value
			}
		}
		if down != nil {
			down.Open = true
			st.Down = append(st.Down, *down)
		}
		if len(st.Down) > 0 || len(st.Changes) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// NodeStateTable renders the nodes that were down or changed role ("" when none).
func NodeStateTable(ns []NodeState) string {
	if len(ns) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| node | down (samples clock) | role and membership changes |\n|---|---|---|\n")
	for _, n := range ns {
		var ws []string
		for _, w := range n.Down {
			s := fmt.Sprintf("%.1f-%.1f s", w.StartS, w.EndS)
			if w.Open {
				s = fmt.Sprintf("from %.1f s to the end", w.StartS)
			}
			ws = append(ws, s)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", n.Node, orDash(strings.Join(ws, ", ")), orDash(strings.Join(n.Changes, "; ")))
	}
	return b.String()
}

// setDownAtEnd marks the nodes whose last down window in states was still open.
func setDownAtEnd(nodes []NodeLag, states []NodeState) {
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
func setRolesAtEnd(nodes []NodeLag, now *cluster.Cluster) {
	for i := range nodes {
		if n := now.Node(nodes[i].Node); n != nil && string(n.Role) != nodes[i].Role && nodes[i].Role != "" {
			nodes[i].RoleEnd = string(n.Role)
		}
	}
}
