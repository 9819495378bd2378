package sampler

import "testing"

// TestMajorityOf: n1, the old primary, cut off in a minority, calls itself ONLINE and
// PRIMARY; the majority (n2, n3) sees it UNREACHABLE, then expels it. Its state and role are
// the majority's, whichever member is read first; without a majority there is nothing.
func TestMajorityOf(t *testing.T) {
	uuids := map[string]string{"n1": "u1", "n2": "u2", "n3": "u3"}
	minority := memberView{self: "u1", rows: map[string]viewState{"u1": {"ONLINE", "PRIMARY"}, "u2": {"UNREACHABLE", "SECONDARY"}, "u3": {"UNREACHABLE", "SECONDARY"}}}
	suspect := memberView{self: "u2", rows: map[string]viewState{"u1": {"UNREACHABLE", "PRIMARY"}, "u2": {"ONLINE", "SECONDARY"}, "u3": {"ONLINE", "PRIMARY"}}}
	expelled := memberView{self: "u3", rows: map[string]viewState{"u2": {"ONLINE", "SECONDARY"}, "u3": {"ONLINE", "PRIMARY"}}}
	order := []string{"n1", "n2", "n3"}

	got := majorityOf(map[string]memberView{"n1": minority, "n2": suspect}, order, uuids)
	if got["n1"] != (viewState{state: "UNREACHABLE"}) || got["n3"] != (viewState{"ONLINE", "PRIMARY"}) || got["n2"] != (viewState{"ONLINE", "SECONDARY"}) {
		t.Errorf("suspected: %+v, want n1 UNREACHABLE without a role, n3 PRIMARY", got)
	}
	got = majorityOf(map[string]memberView{"n1": minority, "n3": expelled}, order, uuids)
	if got["n1"] != (viewState{state: notInGroup}) || got["n3"].role != "PRIMARY" {
		t.Errorf("expelled: %+v, want n1 not in the group, n3 PRIMARY", got)
	}
	// After the heal n1, expelled without knowing it yet, sees its old group all ONLINE;
	// n2's and n3's view (without n1) is the group's.
	stale := memberView{self: "u1", rows: map[string]viewState{"u1": {"ONLINE", "PRIMARY"}, "u2": {"ONLINE", "SECONDARY"}, "u3": {"ONLINE", "SECONDARY"}}}
	got = majorityOf(map[string]memberView{"n1": stale, "n3": expelled}, order, uuids)
	if got["n1"] != (viewState{state: notInGroup}) || got["n3"].role != "PRIMARY" {
		t.Errorf("healed, n1 stale: %+v, want n1 not in the group, n3 PRIMARY", got)
	}
	// Only the minority (or a member in ERROR, listing only itself) answers: no majority.
	errView := memberView{self: "u2", rows: map[string]viewState{"u2": {"ERROR", ""}}}
	if got := majorityOf(map[string]memberView{"n1": minority, "n2": errView}, order, uuids); got != nil {
		t.Errorf("no majority readable: %+v, want nothing", got)
	}
	// A healthy group: every member's own view.
	healthy := memberView{self: "u1", rows: map[string]viewState{"u1": {"ONLINE", "PRIMARY"}, "u2": {"ONLINE", "SECONDARY"}, "u3": {"ONLINE", "SECONDARY"}}}
	if got := majorityOf(map[string]memberView{"n1": healthy}, order, uuids); got["n1"].role != "PRIMARY" || got["n2"].role != "SECONDARY" {
		t.Errorf("healthy: %+v", got)
	}
}
