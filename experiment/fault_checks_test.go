package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/topology"
)

// TestLargeTransactionAndRebuildRefused: bad parameters of large-transaction, and a rebuild
// where it cannot run (a kind without a rebuild, Galera on a provider that cannot empty a
// datadir), are refused in one line naming the field and the value when the faults are
// read; a group member's rebuild (by clone) is accepted, on hosts too.
func TestLargeTransactionAndRebuildRefused(t *testing.T) {
	galera := topology.Spec{Name: "g", Kind: topology.Galera, Nodes: 3, Flavor: topology.MariaDB}
	group := topology.Spec{Name: "gr", Kind: topology.Group, Nodes: 3, Flavor: topology.MySQL}
	async := topology.Spec{Name: "a", Kind: topology.Async, Nodes: 3, Flavor: topology.MariaDB}
	hosts := galera
	hosts.Provider = topology.ProviderHosts
	groupHosts := group
	groupHosts.Provider = topology.ProviderHosts
	for _, tc := range []struct {
		ev   FaultEvent
		tops []topology.Spec
		want string
	}{
		{FaultEvent{Action: "large-transaction", Node: "writer", Args: FaultArgs{"rows": "0"}}, []topology.Spec{galera}, "faults[0].rows \"0\": want a whole number of rows"},
		{FaultEvent{Action: "large-transaction", Node: "writer", Args: FaultArgs{"statement": "delete"}}, []topology.Spec{galera}, "faults[0].statement \"delete\": want insert-select or update"},
		{FaultEvent{Action: "large-transaction", Node: "writer", Args: FaultArgs{"table": "sbtest1"}}, []topology.Spec{galera}, "faults[0].table \"sbtest1\": want DB.TABLE"},
		{FaultEvent{Action: "large-transaction", Node: "writer", Args: FaultArgs{"rows": "1000", "statement": "update"}}, []topology.Spec{galera}, "faults[0].rows \"1000\": rows is for statement=insert-select"},
		{FaultEvent{Action: "rebuild", Node: "n3"}, []topology.Spec{async}, "faults[0].action \"rebuild\": cannot rebuild a node: kind async: only Galera nodes (by SST) and group members (by clone) can be rebuilt"},
		{FaultEvent{Action: "rebuild", Node: "n3"}, []topology.Spec{hosts}, "cannot rebuild a node: provider hosts cannot empty a node's datadir"},
	} {
		err := validateFaults([]FaultEvent{tc.ev}, tc.tops, "", 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %v on %s: %v, want one line with %q", tc.ev.Action, tc.ev.Args, tc.tops[0].Kind, err, tc.want)
		}
	}
	if err := validateFaults([]FaultEvent{{Action: "rebuild", Node: "n3"}, {Action: "large-transaction", Node: "writer", Args: FaultArgs{"rows": "1000", "statement": "insert-select", "table": "sbtest.big"}}},
		[]topology.Spec{galera}, "", 0); err != nil {
		t.Errorf("rebuild and large-transaction on a Galera sandbox: %v", err)
	}
	for _, g := range []topology.Spec{group, groupHosts} {
		if err := validateFaults([]FaultEvent{{Action: "rebuild", Node: "n3"}}, []topology.Spec{g}, "", 0); err != nil {
			t.Errorf("rebuild of a group member (%s provider): %v", g.Provider, err)
		}
	}
}

// TestPauseWithoutDurationNeedsResume: a scheduled pause without duration is refused on
// faults[i].duration unless a later resume of the same node follows (the run would leave
// the server stopped); with a duration, or with its resume, it is accepted.
func TestPauseWithoutDurationNeedsResume(t *testing.T) {
	async := topology.Spec{Name: "a", Kind: topology.Async, Nodes: 2, Flavor: topology.MariaDB}
	pause := func(at int, node string, args FaultArgs) FaultEvent {
		return FaultEvent{At: Duration(time.Duration(at) * time.Second), Action: "pause", Node: node, Args: args}
	}
	resume := func(at int, node string) FaultEvent {
		return FaultEvent{At: Duration(time.Duration(at) * time.Second), Action: "resume", Node: node}
	}
	for _, tc := range []struct {
		evs  []FaultEvent
		want string // "" for accepted
	}{
		{[]FaultEvent{pause(1, "n1", nil)}, `faults[0].duration "": a pause of n1 without duration needs a later resume of n1`},
		{[]FaultEvent{pause(1, "n1", nil), resume(2, "n2")}, `faults[0].duration`},
		{[]FaultEvent{resume(1, "n1"), pause(2, "n1", nil)}, `faults[1].duration`},
		{[]FaultEvent{pause(1, "n1", nil), resume(2, "n1")}, ""},
		{[]FaultEvent{pause(1, "n1", FaultArgs{"duration": "2s"})}, ""},
	} {
		err := validateFaults(tc.evs, []topology.Spec{async}, "", 0)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.evs, err, tc.want)
		}
	}
}

// TestAuxActionsRefused: actions that need a database server (large-transaction, rebuild,
// rolling-restart, promote) are refused on a Galera arbitrator when the faults are read,
// naming faults[i].node; kill, stop, start, restart, pause, resume, partition, heal are not.
func TestAuxActionsRefused(t *testing.T) {
	arb := topology.Spec{Name: "ga", Kind: topology.GaleraArbitrator, Nodes: 2, Flavor: topology.MariaDB}
	for _, action := range []string{"large-transaction", "rebuild", "rolling-restart", "promote"} {
		err := validateFaults([]FaultEvent{{Action: action, Node: "arb"}}, []topology.Spec{arb}, "", 0)
		want := `faults[0].node "arb": arb is topology ga's arbitrator (garbd): it can be `
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), action+" needs a database server") {
			t.Errorf("%s on arb: %v, want %q", action, err, want)
		}
	}
	for _, action := range []string{"kill", "stop", "start", "restart", "pause"} {
		if !FaultActionOf(action).Aux {
			t.Errorf("%s: Aux false, want true", action)
		}
	}
	if err := validateFaults([]FaultEvent{{Action: "kill", Node: "arb"}, {At: Duration(time.Second), Action: "pause", Node: "arb", Args: FaultArgs{"duration": "1s"}}}, []topology.Spec{arb}, "", 0); err != nil {
		t.Errorf("kill and pause of arb: %v", err)
	}
}
