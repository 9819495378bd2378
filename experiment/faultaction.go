package experiment

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

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
	// FaultAction.InjectSite when the action registers.
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
	// Steps: the action logs each of its steps as a fault record of its own (FaultRecord.Of
	// names the action; rolling-restart's restarts and switchover), and a run lists those
	// instead of the action's record, so that each step's outage and recovery are measured.
	Steps bool
	// Leaves says what the action leaves its node as, for the convergence check after the
	// run (a node a kill left down only warns) and its messages.
	Leaves NodeAfter
	// Lasting: the action's own duration is the fault (a large transaction, a rebuild),
	// so the run measures the workload and the cluster before it and while it ran
	// (summary.json faults[i].during, the report's "While it ran" table: faultDuring).
	Lasting bool
}

// FaultAction is one fault habench injects (kill, partition, promote, ...), declared in a
// file of its own (fault_<name>.go) that calls RegisterFaultAction from init, as
// toxiproxy declares its toxics: its FaultSpec (what is known before anything runs) and
// how it is injected and judged. `habench fault` and scenarios' faults read the registry,
// never the action's name.
type FaultAction struct {
	FaultSpec
	// Ops are the provider operations it needs: each is asked with cluster.Cluster.Refuse
	// before Inject runs, so an action the provider does not offer is refused in one line.
	Ops []cluster.Op
	// Inject runs the action on node n of c with its parsed, valid args, filling rec
	// (Escalated) as it goes; detail is one line of what happened ("" when nothing to
	// add). A *topology.FieldError is bad input: nothing happened, nothing is logged.
	Inject func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, args FaultArgs, rec *FaultRecord) (detail string, err error)
	// InjectSite, when not nil, runs the action on a whole site (a topology with sites:;
	// groups is its cut in netem's group form, topology.Sites.CutOff);
	// nil: a site is refused as the action's node.
	InjectSite func(ctx context.Context, in *Injector, c *cluster.Cluster, site, groups string) error
	// CaughtUp says how the fault's caught_up_s is judged (CaughtUpNone: not measured).
	CaughtUp CaughtUpFrom
}

// CaughtUpFrom is how a fault's caught_up_s is measured (summary.json faults).
type CaughtUpFrom int

const (
	// CaughtUpNone: not measured (nil).
	CaughtUpNone CaughtUpFrom = iota
	// CaughtUpAfterAction: from the end of the action (At + Took: the node is up and
	// rejoined, healed, promoted or resumed), so that samples from before it do not count.
	CaughtUpAfterAction
	// CaughtUpAfterDown: only when the node came back without a fault of its own (a
	// sample with node_up 0, then a lag sample): kill and stop.
	CaughtUpAfterDown
)

// NodeAfter is what an action leaves its node as.
type NodeAfter int

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
// checkFaultArgs before Inject sees them).
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

// faultActions is the registry: name -> action.
var faultActions = map[string]*FaultAction{}

// faultActionErrs are the registrations refused, kept for TestFaultActionsRegistered.
var faultActionErrs []string

// RegisterFaultAction adds a to the registry; called from each action file's init. A
// name registered twice or an action lacking a piece (name, help, past participle,
// Inject, a parameter without name or check) is refused and listed by
// FaultActionRegistrationErrors.
func RegisterFaultAction(a FaultAction) {
	if err := addFaultAction(faultActions, a); err != nil {
		faultActionErrs = append(faultActionErrs, err.Error())
	}
}

// addFaultAction adds a to reg, or says what is wrong with it.
func addFaultAction(reg map[string]*FaultAction, a FaultAction) error {
	var lacks []string
	a.Sites = a.InjectSite != nil
	for what, missing := range map[string]bool{"Name": a.Name == "", "Help": a.Help == "", "Past": a.Past == "", "Inject": a.Inject == nil} {
		if missing {
			lacks = append(lacks, what)
		}
	}
	for i, p := range a.Params {
		if p.Name == "" || p.Help == "" || p.Check == nil || p.Name == "at" || p.Name == "action" || p.Name == "node" {
			lacks = append(lacks, fmt.Sprintf("Params[%d] (a name other than at, action, node; help; check)", i))
		}
	}
	if len(lacks) > 0 {
		sort.Strings(lacks)
		return fmt.Errorf("fault action %q lacks %s", a.Name, strings.Join(lacks, ", "))
	}
	if _, dup := reg[a.Name]; dup {
		return fmt.Errorf("fault action %q registered twice", a.Name)
	}
	reg[a.Name] = &a
	return nil
}

// FaultActionRegistrationErrors lists registrations that were refused (empty when all is well).
func FaultActionRegistrationErrors() []string { return slices.Clone(faultActionErrs) }

// FaultActionOf returns the action named name, nil when there is none.
func FaultActionOf(name string) *FaultAction { return faultActions[name] }

// FaultActionNames lists the registered actions in help order.
func FaultActionNames() []string {
	names := slices.Collect(maps.Keys(faultActions))
	sort.Slice(names, func(i, j int) bool {
		a, b := faultActions[names[i]], faultActions[names[j]]
		if a.Order != b.Order {
			return a.Order < b.Order
		}
		return a.Name < b.Name
	})
	return names
}

// existingActions lists the actions offered on existing clusters, in help order.
func existingActions() []string {
	var out []string
	for _, n := range FaultActionNames() {
		if faultActions[n].Existing {
			out = append(out, n)
		}
	}
	return out
}

// auxActions lists the actions that apply to an aux member, in help order.
func auxActions() []string {
	var out []string
	for _, n := range FaultActionNames() {
		if faultActions[n].Aux {
			out = append(out, n)
		}
	}
	return out
}

// auxRefusal is why action a cannot run on aux member x of topology t ("" when it can).
func auxRefusal(a *FaultAction, t string, x topology.AuxNode) string {
	if a.Aux {
		return ""
	}
	return fmt.Sprintf("%s is topology %s's %s (%s): it can be %s; %s needs a database server", x.Name, t, x.Role, x.Program, orList(auxActions()), a.Name)
}

// lookupFaultAction returns the action named name, or a *topology.FieldError on field
// listing the actions.
func lookupFaultAction(field, name string) (*FaultAction, error) {
	a := FaultActionOf(name)
	if a == nil {
		return nil, &topology.FieldError{Field: field, Value: name, Reason: "want one of " + strings.Join(FaultActionNames(), ", ")}
	}
	return a, nil
}

// checkFaultArgs checks args against a's parameters: field(key) names a parameter in
// errors (*topology.FieldError: an unknown key, a bad value), returned with the key.
func checkFaultArgs(a *FaultAction, args FaultArgs, field func(string) string) (string, error) {
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
	a, err := lookupFaultAction("action", action)
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
	_, err = checkFaultArgs(a, args, func(k string) string { return k })
	return args, err
}

// FaultHelp is the actions' help for `habench fault --help`: one line per action (its
// parameters indented under it), in help order.
func FaultHelp() string {
	var b strings.Builder
	w := 0 // the name column: as wide as the longest name
	for _, n := range FaultActionNames() {
		w = max(w, len(n))
	}
	indent := "\n" + strings.Repeat(" ", w+3)
	for _, n := range FaultActionNames() {
		a := faultActions[n]
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
	if a := FaultActionOf(action); a != nil {
		return a.Past
	}
	return action
}

// leaves is what action leaves its node as (NodeAsBefore for an unknown action).
func leaves(action string) NodeAfter {
	if a := FaultActionOf(action); a != nil {
		return a.Leaves
	}
	return NodeAsBefore
}
