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

// TestConfirmedPrimary: after the heal of a partition of the primary, the old primary,
// expelled without having learnt it, sees its old group all ONLINE and still calls itself
// PRIMARY; the new primary's claim is the one the others confirm (measured: a 3-member
// MySQL 9.7 group, n1 partitioned at 10 s and healed at 30 s, named the writer again at
// 38 s before this check). A cut-off primary without a majority never counts; a healthy
// group's primary does.
func TestConfirmedPrimary(t *testing.T) {
	row := func(id, state, role string) GroupViewMember {
		return GroupViewMember{Node: "n" + id, MemberID: "uuid-" + id, State: state, Role: role}
	}
	claim := func(id string, primary bool, rows ...GroupViewMember) primaryClaim {
		return primaryClaim{read: true, self: "uuid-" + id, claims: primary, view: GroupView(rows)}
	}
	oldPrimary := claim("1", true, row("1", "ONLINE", "PRIMARY"), row("2", "ONLINE", "SECONDARY"), row("3", "ONLINE", "SECONDARY"))
	n2 := claim("2", false, row("2", "ONLINE", "SECONDARY"), row("3", "ONLINE", "PRIMARY"))
	n3 := claim("3", true, row("2", "ONLINE", "SECONDARY"), row("3", "ONLINE", "PRIMARY"))
	if got := confirmedPrimary([]primaryClaim{oldPrimary, n2, n3}); got != 2 {
		t.Errorf("after the heal: primary index %d, want 2 (n3, the majority's; not the expelled n1)", got)
	}
	cut := claim("1", true, row("1", "ONLINE", "PRIMARY"), row("2", "UNREACHABLE", "SECONDARY"), row("3", "UNREACHABLE", "SECONDARY"))
	if got := confirmedPrimary([]primaryClaim{cut, n2, {}}); got != -1 {
		t.Errorf("cut-off primary, no election yet: %d, want -1", got)
	}
	all := []GroupViewMember{row("1", "ONLINE", "PRIMARY"), row("2", "ONLINE", "SECONDARY"), row("3", "ONLINE", "SECONDARY")}
	healthy := []primaryClaim{claim("1", true, all...), claim("2", false, all...), {}}
	if got := confirmedPrimary(healthy); got != 0 {
		t.Errorf("healthy group (n3 unreadable): %d, want 0", got)
	}
}
