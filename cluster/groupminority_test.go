package cluster

import "testing"

// TestGroupViewMinority: status names an old primary cut off in a minority for what the
// group makes of it, not by its own row (ONLINE PRIMARY); members with a majority and
// members not ONLINE keep their line.
func TestGroupViewMinority(t *testing.T) {
	row := func(node, state, role string) GroupViewMember {
		return GroupViewMember{Node: node, State: state, Role: role}
	}
	cut := GroupView{row("n1", "ONLINE", "PRIMARY"), row("n2", "UNREACHABLE", "SECONDARY"), row("n3", "UNREACHABLE", "SECONDARY")}
	if got := cut.minority("group ONLINE PRIMARY", "n1"); got != "group PRIMARY (minority, not writable; own view ONLINE)" {
		t.Errorf("cut-off primary: %q", got)
	}
	healthy := GroupView{row("n1", "ONLINE", "PRIMARY"), row("n2", "ONLINE", "SECONDARY"), row("n3", "UNREACHABLE", "SECONDARY")}
	if got := healthy.minority("group ONLINE PRIMARY", "n1"); got != "group ONLINE PRIMARY" {
		t.Errorf("primary with a majority: %q", got)
	}
	if got := (GroupView{row("n3", "ERROR", "")}).minority("group ERROR", "n3"); got != "group ERROR" {
		t.Errorf("member in ERROR: %q", got)
	}
}
