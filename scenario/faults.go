package scenario

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"go.yaml.in/yaml/v3"
)

// The fault actions as a scenario knows them: each action's FaultSpec, registered by the
// file that implements it (experiment/fault_<name>.go, through
// experiment.RegisterFaultAction), and the checks made when a scenario's faults or
// `habench fault`'s arguments are read.

// faultSpecs is the registry: name -> spec.
var faultSpecs = map[string]*FaultSpec{}

// FaultSpecLacks lists what s lacks to be registered (a name, help, past participle, a
// parameter without name, help or check, or named at, action or node), sorted; empty
// when it is whole.
func FaultSpecLacks(s FaultSpec) []string {
	var lacks []string
	for what, missing := range map[string]bool{"Name": s.Name == "", "Help": s.Help == "", "Past": s.Past == ""} {
		if missing {
			lacks = append(lacks, what)
		}
	}
	for i, p := range s.Params {
		if p.Name == "" || p.Help == "" || p.Check == nil || p.Name == "at" || p.Name == "action" || p.Name == "node" {
			lacks = append(lacks, fmt.Sprintf("Params[%d] (a name other than at, action, node; help; check)", i))
		}
	}
	sort.Strings(lacks)
	return lacks
}

// RegisterFault adds s to the registry; experiment.RegisterFaultAction calls it for each
// action it registers (a spec registered here alone can be scheduled and checked, but an
// injection of it is refused: nothing implements it). Errors: s lacks a piece
// (FaultSpecLacks) or its name is registered already.
func RegisterFault(s FaultSpec) error {
	if lacks := FaultSpecLacks(s); len(lacks) > 0 {
		return fmt.Errorf("fault action %q lacks %s", s.Name, strings.Join(lacks, ", "))
	}
	if _, dup := faultSpecs[s.Name]; dup {
		return fmt.Errorf("fault action %q registered twice", s.Name)
	}
	faultSpecs[s.Name] = &s
	return nil
}

// faultOf returns the spec of the action named name, nil when there is none.
func faultOf(name string) *FaultSpec { return faultSpecs[name] }

// FaultNames lists the registered actions in help order (Order, then name).
func FaultNames() []string {
	names := slices.Collect(maps.Keys(faultSpecs))
	sort.Slice(names, func(i, j int) bool {
		a, b := faultSpecs[names[i]], faultSpecs[names[j]]
		if a.Order != b.Order {
			return a.Order < b.Order
		}
		return a.Name < b.Name
	})
	return names
}

// FaultSpec is what a scenario and `habench fault` know of a fault action before anything
// runs: its name, help, parameters and the checks made when the faults are read. It is
// the part of a FaultAction that needs no cluster.
type FaultSpec struct {
	// Name is the action as users write it (`habench fault NAME`, faults[i].action).
	Name string
	// Order places the action in help texts and error messages (lowest first).
	Order int
	// Help is what the action does, for `habench fault --help` (lines of at most 100
	// characters, "\n" between them).
	Help string
	// Past is the past participle for messages ("killed", "partitioned").
	Past string
	// Params are the parameters it takes (faults[i].KEY in a scenario, KEY=VALUE after
	// the node in `habench fault`); none when empty.
	Params []FaultParam
	// Existing: offered on clusters habench did not deploy (an existing cluster's ssh:
	// section's commands). Other actions are refused there.
	Existing bool
	// LinkEvent is the link change the action makes, as the link watcher records it
	// ("applied" for partition, "cleared" for heal; "" for none): the run does not list
	// it as another command's, and a scenario whose runs impair the links cannot have it.
	LinkEvent string
	// Check says why the action cannot run on topology t with the scenario's network
	// ("" when it can); called when a scenario is read, after the common checks (the node
	// exists, an existing cluster offers the action). nil: nothing more to check.
	Check func(t topology.Spec, network string) string
	// Aux: the action applies to an aux member (a Galera arbitrator, garbd: no datadir, no
	// SQL), as kill, stop, start, restart, pause, resume, partition and heal do. Other
	// actions are refused on one when the faults are read.
	Aux bool
	// Sites: the action takes a site as its node (a topology with sites:); set from
	// experiment.FaultAction.InjectSite when the action registers (a value given here is
	// overwritten then).
	Sites bool
	// CheckArgs says why the parameters, each valid on its own, cannot go together (e.g.
	// rows with statement=update): the key of the parameter to name and the reason (a
	// clause, without "want"), or "" and "" when they can. nil: nothing to check.
	CheckArgs func(args FaultArgs) (key, why string)
	// CheckSchedule says why event i of a scenario's faults cannot run given the whole
	// schedule (e.g. a pause without duration needs a later resume of its node): the field
	// of faults[i] at fault ("duration") and the reason, or "" and "" when it can. nil:
	// nothing to check.
	CheckSchedule func(events []FaultEvent, i int) (field, why string)
	// Steps: the action logs each of its steps as a fault record of its own
	// (schema.FaultRecord.Of names the action; rolling-restart's restarts and
	// switchover), and a run lists those
	// instead of the action's record, so that each step's outage and recovery are measured.
	Steps bool
	// Leaves says what the action leaves its node as, for the convergence check after the
	// run (a node a kill left down only warns) and its messages.
	Leaves NodeAfter
	// Lasting: the action's own duration is the fault (a large transaction, a rebuild),
	// so the run measures the workload and the cluster before it and while it ran
	// (summary.json faults[i].during, the report's "While it ran" table: experiment.faultDuring).
	Lasting bool
}

const (
	// NodeAsBefore: the action does not start or stop the server.
	NodeAsBefore NodeAfter = iota
	// NodeDown: the server is down (kill, stop) until a NodeUp action on the same node.
	NodeDown
	// NodeUp: the server runs again (start, restart).
	NodeUp
)

// FaultParam is one parameter of an action.
type FaultParam struct {
	// Name is the key (faults[i].NAME, NAME=VALUE).
	Name string
	// Help is one line: what it is, its unit and default.
	Help string
	// Check is "" for a valid value, else why it is not (a clause after "want").
	Check func(v string) string
}

// FaultArgs are an action's parameters as written: name -> value (checked by
// CheckFaultArgs before Inject sees them).
type FaultArgs map[string]string

// Duration returns parameter name as a duration (0 when absent or not a duration).
func (a FaultArgs) Duration(name string) time.Duration {
	d, _ := time.ParseDuration(a[name])
	return d
}

// DurationParam is a parameter holding a duration > 0 ("2s", "500ms").
func DurationParam(name, help string) FaultParam {
	return FaultParam{Name: name, Help: help, Check: func(v string) string {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return "a duration > 0, e.g. 2s or 500ms"
		}
		return ""
	}}
}

// ExistingActions lists the actions offered on existing clusters, in help order.
func ExistingActions() []string {
	var out []string
	for _, n := range FaultNames() {
		if faultSpecs[n].Existing {
			out = append(out, n)
		}
	}
	return out
}

// auxActions lists the actions that apply to an aux member, in help order.
func auxActions() []string {
	var out []string
	for _, n := range FaultNames() {
		if faultSpecs[n].Aux {
			out = append(out, n)
		}
	}
	return out
}

// AuxRefusal is why action a cannot run on aux member x of topology t ("" when it can).
func AuxRefusal(a *FaultSpec, t string, x topology.AuxNode) string {
	if a.Aux {
		return ""
	}
	return fmt.Sprintf("%s is topology %s's %s (%s): it can be %s; %s needs a database server", x.Name, t, x.Role, x.Program, AndList(auxActions()), a.Name)
}

// LookupFault returns the spec of the action named name, or a *topology.FieldError on
// field listing the actions. With no action registered (a program that does not link
// experiment, whose fault_<name>.go files register them) the error says so.
func LookupFault(field, name string) (*FaultSpec, error) {
	a := faultOf(name)
	if a == nil && len(faultSpecs) == 0 {
		return nil, &topology.FieldError{Field: field, Value: name, Reason: "no fault actions are registered in this program (they register from package experiment)"}
	}
	if a == nil {
		return nil, &topology.FieldError{Field: field, Value: name, Reason: "want one of " + strings.Join(FaultNames(), ", ")}
	}
	return a, nil
}

// CheckFaultArgs checks args against a's parameters: field(key) names a parameter in
// errors (*topology.FieldError: an unknown key, a bad value), returned with the key.
func CheckFaultArgs(a *FaultSpec, args FaultArgs, field func(string) string) (string, error) {
	for _, k := range slices.Sorted(maps.Keys(args)) {
		i := slices.IndexFunc(a.Params, func(p FaultParam) bool { return p.Name == k })
		if i < 0 {
			reason := a.Name + " takes no parameters"
			if len(a.Params) > 0 {
				var names []string
				for _, p := range a.Params {
					names = append(names, p.Name)
				}
				reason = a.Name + " takes " + strings.Join(names, ", ")
			}
			return k, &topology.FieldError{Field: field(k), Value: args[k], Reason: reason}
		}
		if why := a.Params[i].Check(args[k]); why != "" {
			return k, &topology.FieldError{Field: field(k), Value: args[k], Reason: "want " + why}
		}
	}
	if a.CheckArgs != nil {
		if k, why := a.CheckArgs(args); why != "" {
			return k, &topology.FieldError{Field: field(k), Value: args[k], Reason: why}
		}
	}
	return "", nil
}

// ParseFaultArgs parses `habench fault`'s KEY=VALUE arguments for action: a
// *topology.FieldError names the argument (no "=", a key given twice, an unknown key or a
// bad value).
func ParseFaultArgs(action string, kvs []string) (FaultArgs, error) {
	a, err := LookupFault("action", action)
	if err != nil {
		return nil, err
	}
	args := FaultArgs{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, &topology.FieldError{Field: "parameter", Value: kv, Reason: "want KEY=VALUE"}
		}
		if _, dup := args[k]; dup {
			return nil, &topology.FieldError{Field: k, Value: v, Reason: "given twice"}
		}
		args[k] = v
	}
	_, err = CheckFaultArgs(a, args, func(k string) string { return k })
	return args, err
}

// FaultHelp is the actions' help for `habench fault --help`: one line per action (its
// parameters indented under it), in help order.
func FaultHelp() string {
	var b strings.Builder
	w := 0 // the name column: as wide as the longest name
	for _, n := range FaultNames() {
		w = max(w, len(n))
	}
	indent := "\n" + strings.Repeat(" ", w+3)
	for _, n := range FaultNames() {
		a := faultSpecs[n]
		fmt.Fprintf(&b, "  %-*s %s\n", w, n, strings.ReplaceAll(a.Help, "\n", indent))
		for _, p := range a.Params {
			fmt.Fprintf(&b, "  %-*s   %s=VALUE: %s\n", w, "", p.Name, p.Help)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// FaultPast is the past participle of action for messages ("killed"); the action's name
// when it is not registered.
func FaultPast(action string) string {
	if a := faultOf(action); a != nil {
		return a.Past
	}
	return action
}

// Leaves is what action leaves its node as (NodeAsBefore for an unknown action).
func Leaves(action string) NodeAfter {
	if a := faultOf(action); a != nil {
		return a.Leaves
	}
	return NodeAsBefore
}

// AndList joins names as "a, b and c".
func AndList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// SiteActions lists the past participles of the actions that take a site as their node.
func SiteActions() []string {
	var out []string
	for _, n := range FaultNames() {
		if a := faultSpecs[n]; a.Sites {
			out = append(out, a.Past)
		}
	}
	return out
}

// FaultEvent is one fault of a scenario's schedule: at At after the workload starts
// (warm-up included), Action on Node (a node name, "writer", or a site for the actions
// that take one) with the action's parameters Args (FaultSpec.Params: every other key
// of the entry, e.g. {at: 3s, action: pause, node: n1, duration: 2s}).
type FaultEvent struct {
	At     schema.Duration `yaml:"at" json:"at"`
	Action string          `yaml:"action" json:"action"`
	Node   string          `yaml:"node" json:"node"`
	Args   FaultArgs       `yaml:"-" json:"args,omitempty"`
	// argLines are the lines of Args' keys in the scenario file (for errors).
	argLines map[string]int
	// nested is the first key whose value was not a single value (a `params:` mapping, a
	// list), refused by ValidateFaults once the action is known (nestedParamError).
	nested *nestedParam
}

// nestedParam is a fault entry's key whose value is a mapping or a list: its key, line
// and, for a mapping of single values, those values (FaultArgs), for the error's example.
type nestedParam struct {
	key, value string // value in YAML's flow form: "{duration: 2s}"
	line       int
	args       FaultArgs
}

// UnmarshalYAML reads one entry of faults: at, action and node, every other key a
// parameter of the action (checked with the scenario, naming its line).
func (e *FaultEvent) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return LineError(n.Line, "faults[]", n.Value, "want a mapping {at: 3s, action: kill, node: n1}")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "at":
			if err = v.Decode(&e.At); err != nil {
				return LineError(v.Line, "at", v.Value, "want a duration like 3s or a number of seconds after the workload starts")
			}
		case "action":
			err = v.Decode(&e.Action)
		case "node":
			err = v.Decode(&e.Node)
		default:
			if v.Kind != yaml.ScalarNode {
				// Refused by ValidateFaults, which knows the action's parameters.
				if e.nested == nil {
					e.nested = &nestedParam{key: k.Value, value: flowText(v), line: k.Line, args: scalarMapping(v)}
				}
				continue
			}
			if e.Args == nil {
				e.Args, e.argLines = FaultArgs{}, map[string]int{}
			}
			e.Args[k.Value], e.argLines[k.Value] = v.Value, k.Line
		}
		if err != nil {
			return LineError(v.Line, k.Value, v.Value, "want a single word")
		}
	}
	return nil
}

// flowText is n in YAML's flow form on one line ("{duration: 2s}", "[2s, 3s]").
func flowText(n *yaml.Node) string {
	c := *n
	c.Style = yaml.FlowStyle
	b, err := yaml.Marshal(&c)
	if err != nil {
		return n.Tag
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// scalarMapping is mapping n's keys and single values (nil when n is not a mapping or
// has a value that is not single).
func scalarMapping(n *yaml.Node) FaultArgs {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	args := FaultArgs{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i+1].Kind != yaml.ScalarNode {
			return nil
		}
		args[n.Content[i].Value] = n.Content[i+1].Value
	}
	return args
}

// nestedParamError refuses fault f's key whose value is a mapping or a list (field names
// it), in one line that says how a's parameters are written: keys of the fault entry
// itself, with the entry rewritten that way ("{at: 3s, action: pause, node: n1, duration:
// 2s}": the entry's own parameters and those of the mapping, only those a takes; the
// first parameter as VALUE when none was given), a's parameters, and the keys given that
// a does not take ("not a parameter of kill: duration").
func nestedParamError(a *FaultSpec, f FaultEvent, field string) error {
	takes := a.Name + " takes no parameters"
	if len(a.Params) > 0 {
		var ps []string
		for _, p := range a.Params {
			ps = append(ps, p.Name+" ("+p.Help+")")
		}
		takes = a.Name + " takes " + strings.Join(ps, "; ")
	}
	args, unknown := FaultArgs{}, map[string]bool{}
	for _, given := range []FaultArgs{f.nested.args, f.Args} { // the entry's own keys win
		for k, v := range given {
			if slices.ContainsFunc(a.Params, func(p FaultParam) bool { return p.Name == k }) {
				args[k] = v
			} else {
				unknown[k] = true
			}
		}
	}
	if len(args) == 0 && len(a.Params) > 0 {
		args[a.Params[0].Name] = "VALUE"
	}
	entry := fmt.Sprintf("{at: %v, action: %s, node: %s", time.Duration(f.At), a.Name, f.Node)
	for _, k := range slices.Sorted(maps.Keys(args)) {
		entry += ", " + k + ": " + args[k]
	}
	entry += "}"
	reason := "a fault's parameters are keys of the fault itself, each with a single value: write " + entry + "; " + takes
	if len(a.Params) == 0 {
		reason = "not a parameter: write " + entry + "; " + takes
	}
	if len(unknown) > 0 {
		reason += "; not a parameter of " + a.Name + ": " + strings.Join(slices.Sorted(maps.Keys(unknown)), ", ")
	}
	return LineError(f.nested.line, field, f.nested.value, reason)
}

// ValidateFaults checks a scenario's fault schedule against its topologies and the
// workload's length (runFor: warm-up + time, the cell warm-up included, as
// Plan.WorkloadEnd; 0 = no time limit): each error is a *topology.FieldError naming
// faults[i] and the field.
func ValidateFaults(faults []FaultEvent, tops []topology.Spec, network string, runFor time.Duration) error {
	for i, f := range faults {
		field := func(name string) string { return fmt.Sprintf("faults[%d].%s", i, name) }
		a, err := LookupFault(field("action"), f.Action)
		if err != nil {
			return err
		}
		if f.nested != nil {
			return nestedParamError(a, f, field(f.nested.key))
		}
		if k, err := CheckFaultArgs(a, f.Args, field); err != nil {
			if l := f.argLines[k]; l > 0 {
				return fmt.Errorf("line %d: %w", l, err)
			}
			return err
		}
		at := time.Duration(f.At)
		if at < 0 {
			return &topology.FieldError{Field: field("at"), Value: at.String(), Reason: "want a time >= 0 after the workload starts"}
		}
		if runFor > 0 && at >= runFor {
			return &topology.FieldError{Field: field("at"), Value: at.String(), Reason: fmt.Sprintf("the workload runs %v (warm-up + time): the fault would never happen", runFor)}
		}
		if i > 0 && at < time.Duration(faults[i-1].At) {
			return &topology.FieldError{Field: field("at"), Value: at.String(), Reason: "faults must be in time order"}
		}
		if f.Node == "" {
			return &topology.FieldError{Field: field("node"), Value: "", Reason: "want a node name (n1, n2, ...) or writer"}
		}
		for _, t := range tops {
			if err := checkFaultOn(a, f, t, network, field); err != nil {
				return err
			}
		}
		if a.CheckSchedule != nil {
			if k, why := a.CheckSchedule(faults, i); why != "" {
				return &topology.FieldError{Field: field(k), Value: f.Args[k], Reason: why}
			}
		}
	}
	return nil
}

// checkFaultOn checks fault f (action a) against topology t of a scenario on network:
// an existing cluster offers it (ssh: commands), the node or site exists, and the
// action's own Check.
func checkFaultOn(a *FaultSpec, f FaultEvent, t topology.Spec, network string, field func(string) string) error {
	if !Deploys(t) {
		if t.SSH == nil {
			return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: fmt.Sprintf("topology %s is an existing cluster without ssh: faults run commands on its hosts", t.Name)}
		}
		if !a.Existing {
			return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: fmt.Sprintf("topology %s is an existing cluster: habench can %s its servers (ssh: faults commands), nothing else", t.Name, AndList(ExistingActions()))}
		}
		return nil
	}
	if f.Node != cluster.WriterAlias {
		site := t.Sites.Site(f.Node) != nil
		if !slices.Contains(t.MemberNames(), f.Node) && !site {
			have := fmt.Sprintf("n1..n%d", t.Nodes)
			for _, x := range t.AuxNodes() {
				have += ", " + x.Name
			}
			if len(t.Sites) > 0 {
				have += "; sites " + strings.Join(t.Sites.Names(), ", ")
			}
			return &topology.FieldError{Field: field("node"), Value: f.Node, Reason: fmt.Sprintf("topology %s has nodes %s", t.Name, have)}
		}
		if site && !a.Sites {
			return &topology.FieldError{Field: field("node"), Value: f.Node, Reason: fmt.Sprintf("%s is a site of topology %s: a site can be %s, %s needs a node", f.Node, t.Name, AndList(SiteActions()), f.Action)}
		}
		for _, x := range t.AuxNodes() {
			if why := AuxRefusal(a, t.Name, x); x.Name == f.Node && why != "" {
				return &topology.FieldError{Field: field("node"), Value: f.Node, Reason: why}
			}
		}
	}
	if a.Check != nil {
		if why := a.Check(t, network); why != "" {
			return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: why}
		}
	}
	return nil
}

// NodeAfter is what an action leaves its node as.
type NodeAfter int
