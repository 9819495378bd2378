package experiment

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// TestFaultActionsRegistered: every action file's registration was accepted, the seven
// actions habench has had since the start are there, each with its pieces, and
// docs/faults.md's table has a row for every registered action.
func TestFaultActionsRegistered(t *testing.T) {
	if errs := FaultActionRegistrationErrors(); len(errs) > 0 {
		t.Fatalf("refused registrations: %q", errs)
	}
	names := FaultActionNames()
	// The scenario package checks exactly the actions that can be injected.
	if specs := scenario.FaultNames(); !slices.Equal(specs, names) {
		t.Errorf("scenario's fault specs %v, experiment's actions %v: want the same", specs, names)
	}
	for _, want := range []string{"kill", "stop", "start", "restart", "partition", "heal", "promote"} {
		if FaultActionOf(want) == nil {
			t.Errorf("action %s not registered (have %v)", want, names)
		}
	}
	if len(names) < 7 || names[0] != "kill" {
		t.Errorf("actions in help order %v, want kill first and at least seven", names)
	}
	doc, err := os.ReadFile("../docs/faults.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		a := FaultActionOf(n)
		if a.Help == "" || a.Past == "" || a.Inject == nil {
			t.Errorf("action %s lacks help, past participle or Inject", n)
		}
		if !strings.Contains(string(doc), "| `"+n+"`") && !strings.Contains(string(doc), "`"+n+"` |") && !strings.Contains(string(doc), ", `"+n+"`") {
			t.Errorf("docs/faults.md's actions table has no row for %s", n)
		}
		if !strings.Contains(scenario.FaultHelp(), "  "+n+" ") {
			t.Errorf("habench fault --help does not describe %s", n)
		}
	}
	// Every action's help starts in one column, also after the longest name.
	col := -1
	for _, n := range names {
		first, _, _ := strings.Cut(FaultActionOf(n).Help, "\n")
		i := strings.Index(scenario.FaultHelp(), "  "+n+" ")
		j := strings.Index(scenario.FaultHelp()[i:], first)
		if j < 0 {
			t.Fatalf("help of %s not found after its name", n)
		}
		if col < 0 {
			col = j
		} else if j != col {
			t.Errorf("habench fault --help: %s's help starts in column %d, the others' in %d:\n%s", n, j, col, scenario.FaultHelp())
		}
	}
}

// TestFaultActionRegistryRefuses: a name registered twice, an action without help, past
// participle or Inject, and a parameter without its check are refused, naming the
// action and what it lacks.
func TestFaultActionRegistryRefuses(t *testing.T) {
	inject := func(context.Context, *Injector, *cluster.Cluster, *cluster.Node, scenario.FaultArgs, *schema.FaultRecord) (string, error) {
		return "", nil
	}
	reg := map[string]*FaultAction{}
	ok := FaultAction{FaultSpec: scenario.FaultSpec{Name: "x", Help: "does x", Past: "xed"}, Inject: inject}
	if err := addFaultAction(reg, ok, nil); err != nil {
		t.Fatalf("a whole action was refused: %v", err)
	}
	for _, c := range []struct {
		a    FaultAction
		want string
	}{
		{ok, `fault action "x" registered twice`},
		{FaultAction{FaultSpec: scenario.FaultSpec{Name: "y", Past: "yed"}, Inject: inject}, `fault action "y" lacks Help`},
		{FaultAction{FaultSpec: scenario.FaultSpec{Name: "y", Help: "h"}, Inject: inject}, `fault action "y" lacks Past`},
		{FaultAction{FaultSpec: scenario.FaultSpec{Name: "y", Help: "h", Past: "p"}}, `fault action "y" lacks Inject`},
		{FaultAction{FaultSpec: scenario.FaultSpec{Help: "h", Past: "p"}, Inject: inject}, `fault action "" lacks Name`},
		{FaultAction{FaultSpec: scenario.FaultSpec{Name: "y", Help: "h", Past: "p", Params: []scenario.FaultParam{{Name: "d", Help: "h"}}}, Inject: inject}, `fault action "y" lacks Params[0]`},
		{FaultAction{FaultSpec: scenario.FaultSpec{Name: "y", Help: "h", Past: "p", Params: []scenario.FaultParam{scenario.DurationParam("node", "h")}}, Inject: inject}, `fault action "y" lacks Params[0]`},
	} {
		err := addFaultAction(reg, c.a, nil)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("registering %+v: %v, want %q", c.a.Name, err, c.want)
		}
	}
	if len(reg) != 1 {
		t.Errorf("registry has %d actions after the refusals, want 1", len(reg))
	}
}
