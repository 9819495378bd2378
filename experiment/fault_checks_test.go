package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// TestAuxActionsRefused: actions that need a database server (large-transaction, rebuild,
// rolling-restart, promote) are refused on a Galera arbitrator when the faults are read,
// naming faults[i].node; kill, stop, start, restart, pause, resume, partition, heal are not.
func TestAuxActionsRefused(t *testing.T) {
	arb := topology.Spec{Name: "ga", Kind: topology.GaleraArbitrator, Nodes: 2, Flavor: topology.MariaDB}
	for _, action := range []string{"large-transaction", "rebuild", "rolling-restart", "promote"} {
		err := scenario.ValidateFaults([]scenario.FaultEvent{{Action: action, Node: "arb"}}, []topology.Spec{arb}, "", 0)
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
	if err := scenario.ValidateFaults([]scenario.FaultEvent{{Action: "kill", Node: "arb"}, {At: schema.Duration(time.Second), Action: "pause", Node: "arb", Args: scenario.FaultArgs{"duration": "1s"}}}, []topology.Spec{arb}, "", 0); err != nil {
		t.Errorf("kill and pause of arb: %v", err)
	}
}
