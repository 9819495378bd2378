package cluster_test

import (
	"testing"

	"github.com/habench/habench/cluster"
)

// TestGroupViewNote: what status adds to a member's health for the views a partition
// produces (pure; the real views are checked in cmd/habench's TestPartitionGroup).
func TestGroupViewNote(t *testing.T) {
	c := &cluster.Cluster{Name: "g"}
	for i, n := range []string{"n1", "n2", "n3"} {
		c.Nodes = append(c.Nodes, &cluster.Node{Name: n, Host: "10.233.1." + string(rune('1'+i)), Port: 3306})
	}
	row := func(node, state string) cluster.GroupViewMember {
		return cluster.GroupViewMember{Node: node, State: state}
	}
	for _, tc := range []struct {
		name     string
		self     string
		view     cluster.GroupView
		want     string
		majority bool
	}{
		{"healthy", "n1", cluster.GroupView{row("n1", "ONLINE"), row("n2", "ONLINE"), row("n3", "ONLINE")}, "", true},
		{"majority sees n3 unreachable", "n1", cluster.GroupView{row("n1", "ONLINE"), row("n2", "ONLINE"), row("n3", "UNREACHABLE")}, "sees n3 UNREACHABLE", true},
		{"cut-off member", "n3", cluster.GroupView{row("n1", "UNREACHABLE"), row("n2", "UNREACHABLE"), row("n3", "ONLINE")},
			"sees n1,n2 UNREACHABLE; no majority: updates blocked", false},
		{"expelled", "n1", cluster.GroupView{row("n1", "ONLINE"), row("n2", "ONLINE")}, "n3 not in its view", true},
		{"rejoining", "n2", cluster.GroupView{row("n1", "ONLINE"), row("n2", "ONLINE"), row("n3", "RECOVERING")}, "sees n3 RECOVERING", true},
		{"self in ERROR lists only itself", "n3", cluster.GroupView{row("n3", "ERROR")}, "", true},
	} {
		if got := tc.view.Note(c, tc.self); got != tc.want {
			t.Errorf("%s: note %q, want %q", tc.name, got, tc.want)
		}
		if got := tc.view.HasMajority(); got != tc.majority {
			t.Errorf("%s: majority %v, want %v", tc.name, got, tc.majority)
		}
	}
}
