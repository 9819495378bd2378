package experiment

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// TestFaultActionsRegistered: every action file's registration was accepted, the seven
// actions habench has had since the start are there, each with its pieces, and
// docs/faults.md's table has a row for every registered action.
func TestFaultActionsRegistered(t *testing.T) {
	if errs := FaultActionRegistrationErrors(); len(errs) > 0 {
		t.Fatalf("refused registrations: %q", errs)
	}
	names := FaultActionNames()
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
		if !strings.Contains(FaultHelp(), "  "+n+" ") {
			t.Errorf("habench fault --help does not describe %s", n)
		}
	}
	// Every action's help starts in one column, also after the longest name.
	col := -1
	for _, n := range names {
		first, _, _ := strings.Cut(FaultActionOf(n).Help, "\n")
		i := strings.Index(FaultHelp(), "  "+n+" ")
		j := strings.Index(FaultHelp()[i:], first)
		if j < 0 {
			t.Fatalf("help of %s not found after its name", n)
		}
		if col < 0 {
			col = j
		} else if j != col {
			t.Errorf("habench fault --help: %s's help starts in column %d, the others' in %d:\n%s", n, j, col, FaultHelp())
		}
	}
}

// TestFaultActionRegistryRefuses: a name registered twice, an action without help, past
// participle or Inject, and a parameter without its check are refused, naming the
// action and what it lacks.
func TestFaultActionRegistryRefuses(t *testing.T) {
	inject := func(context.Context, *Injector, *cluster.Cluster, *cluster.Node, FaultArgs, *FaultRecord) (string, error) {
		return "", nil
	}
	reg := map[string]*FaultAction{}
	ok := FaultAction{FaultSpec: FaultSpec{Name: "x", Help: "does x", Past: "xed"}, Inject: inject}
	if err := addFaultAction(reg, ok); err != nil {
		t.Fatalf("a whole action was refused: %v", err)
	}
	for _, c := range []struct {
		a    FaultAction
		want string
	}{
		{ok, `fault action "x" registered twice`},
		{FaultAction{FaultSpec: FaultSpec{Name: "y", Past: "yed"}, Inject: inject}, `fault action "y" lacks Help`},
		{FaultAction{FaultSpec: FaultSpec{Name: "y", Help: "h"}, Inject: inject}, `fault action "y" lacks Past`},
		{FaultAction{FaultSpec: FaultSpec{Name: "y", Help: "h", Past: "p"}}, `fault action "y" lacks Inject`},
		{FaultAction{FaultSpec: FaultSpec{Help: "h", Past: "p"}, Inject: inject}, `fault action "" lacks Name`},
		{FaultAction{FaultSpec: FaultSpec{Name: "y", Help: "h", Past: "p", Params: []FaultParam{{Name: "d", Help: "h"}}}, Inject: inject}, `fault action "y" lacks Params[0]`},
		{FaultAction{FaultSpec: FaultSpec{Name: "y", Help: "h", Past: "p", Params: []FaultParam{DurationParam("node", "h")}}, Inject: inject}, `fault action "y" lacks Params[0]`},
	} {
		err := addFaultAction(reg, c.a)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("registering %+v: %v, want %q", c.a.Name, err, c.want)
		}
	}
	if len(reg) != 1 {
		t.Errorf("registry has %d actions after the refusals, want 1", len(reg))
	}
}

// TestFaultArgs: parameters are checked against the action's declaration, each error one
// line naming the parameter and its value.
func TestFaultArgs(t *testing.T) {
	for _, c := range []struct {
		action string
		kvs    []string
		want   string
	}{
		{"kill", nil, ""},
		{"kill", []string{"duration=2s"}, `duration "2s": kill takes no parameters`},
		{"kill", []string{"duration"}, `parameter "duration": want KEY=VALUE`},
		{"nope", nil, `action "nope": want one of kill, stop, start, restart, partition, heal, promote`[:36]},
	} {
		_, err := ParseFaultArgs(c.action, c.kvs)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("ParseFaultArgs(%s, %q) = %q, want %q", c.action, c.kvs, got, c.want)
		}
	}
	a := &FaultAction{FaultSpec: FaultSpec{Name: "z", Params: []FaultParam{DurationParam("duration", "how long")}}}
	field := func(k string) string { return "faults[0]." + k }
	if _, err := checkFaultArgs(a, FaultArgs{"duration": "2s"}, field); err != nil {
		t.Errorf("duration 2s: %v", err)
	}
	for _, bad := range []FaultArgs{{"duration": "0s"}, {"duration": "soon"}, {"for": "2s"}} {
		var fe *topology.FieldError
		_, err := checkFaultArgs(a, bad, field)
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "faults[0].") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line naming faults[0].KEY", bad, err)
		}
	}
}

// TestScenarioFaultParams: a scenario's fault entry with a key its action does not take
// is refused when the file is read, naming faults[i].KEY; the registry's checks of the
// kind (promote on a Galera cluster) run there too.
func TestScenarioFaultParams(t *testing.T) {
	base := `name: fp
topologies:
  - {name: a, kind: async, nodes: 2, flavor: mariadb}
workload:
  test: oltp_write_only
  options: {time: 8}
faults:
`
	if _, err := ParseScenario([]byte(base + "  - {at: 3s, action: kill, node: writer}\n")); err != nil {
		t.Fatalf("a plain kill: %v", err)
	}
	_, err := ParseScenario([]byte(base + "  - {at: 3s, action: kill, node: writer, duration: 2s}\n"))
	if err == nil || !strings.Contains(err.Error(), `faults[0].duration "2s": kill takes no parameters`) {
		t.Errorf("kill with a duration: %v", err)
	}
	g := strings.Replace(base, "kind: async, nodes: 2", "kind: galera, nodes: 3", 1)
	_, err = ParseScenario([]byte(g + "  - {at: 3s, action: promote, node: n2}\n"))
	if err == nil || !strings.Contains(err.Error(), `faults[0].action "promote": topology a is galera: promote is for kinds`) {
		t.Errorf("promote on galera: %v", err)
	}
}
