package experiment

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// FaultAction is one fault habench injects (kill, partition, promote, ...), declared in a
// file of its own (fault_<name>.go) that calls RegisterFaultAction from init, as
// toxiproxy declares its toxics: its FaultSpec (what is known before anything runs) and
// how it is injected and judged. `habench fault` and scenarios' faults read the registry,
// never the action's name.
type FaultAction struct {
	scenario.FaultSpec
	// Ops are the provider operations it needs: each is asked with cluster.Cluster.Refuse
	// before Inject runs, so an action the provider does not offer is refused in one line.
	Ops []cluster.Op
	// Inject runs the action on node n of c with its parsed, valid args, filling rec
	// (Escalated) as it goes; detail is one line of what happened ("" when nothing to
	// add). A *topology.FieldError is bad input: nothing happened, nothing is logged.
	Inject func(ctx context.Context, in *Injector, c *cluster.Cluster, n *cluster.Node, args scenario.FaultArgs, rec *schema.FaultRecord) (detail string, err error)
	// InjectSite, when not nil, runs the action on a whole site (a topology with sites:;
	// groups is its cut in netem's group form, topology.Sites.CutOff);
	// nil: a site is refused as the action's node.
	InjectSite func(ctx context.Context, in *Injector, c *cluster.Cluster, site, groups string) error
	// CaughtUp says how the fault's caught_up_s is judged (CaughtUpNone: not measured).
	CaughtUp CaughtUpFrom
	// Disrupts says which nodes the action can take away from the workload's clients (a
	// crash, a stop, a cut, a stall): on a topology where every node takes writes, a run
	// whose scheduled faults disrupt a node its workers write to lets them fail over to
	// another node (client failover, failover.go), and each such fault is measured by how
	// long its node's workers took to commit elsewhere.
	Disrupts Disruption
}

// Disruption is which nodes a fault action can take away from the workload's clients.
type Disruption int

const (
	// DisruptsNone: none (start, heal, resume, promote, a large transaction).
	DisruptsNone Disruption = iota
	// DisruptsNode: its node, or a site's members (kill, stop, restart, partition, pause,
	// rebuild).
	DisruptsNode
	// DisruptsEvery: every node in turn (rolling-restart).
	DisruptsEvery
)

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

// faultActions is the registry: name -> action.
var faultActions = map[string]*FaultAction{}

// faultActionErrs are the registrations refused, kept for TestFaultActionsRegistered.
var faultActionErrs []string

// RegisterFaultAction adds a to the registry, and its FaultSpec to the scenario
// package's (scenario.RegisterFault: what scenarios and `habench fault` check before
// anything runs); called from each action file's init. A name registered twice or an
// action lacking a piece (scenario.FaultSpecLacks, or Inject) is refused in both and
// listed by FaultActionRegistrationErrors.
func RegisterFaultAction(a FaultAction) {
	if err := addFaultAction(faultActions, a, scenario.RegisterFault); err != nil {
		faultActionErrs = append(faultActionErrs, err.Error())
	}
}

// addFaultAction adds a to reg after also (nil: none) took its spec, or says what is
// wrong with it (then neither has it).
func addFaultAction(reg map[string]*FaultAction, a FaultAction, also func(scenario.FaultSpec) error) error {
	a.Sites = a.InjectSite != nil
	lacks := scenario.FaultSpecLacks(a.FaultSpec)
	if a.Inject == nil {
		lacks = append(lacks, "Inject")
		sort.Strings(lacks)
	}
	if len(lacks) > 0 {
		return fmt.Errorf("fault action %q lacks %s", a.Name, strings.Join(lacks, ", "))
	}
	if _, dup := reg[a.Name]; dup {
		return fmt.Errorf("fault action %q registered twice", a.Name)
	}
	if also != nil {
		if err := also(a.FaultSpec); err != nil {
			return err
		}
	}
	reg[a.Name] = &a
	return nil
}

// FaultActionRegistrationErrors lists registrations that were refused (empty when all is well).
func FaultActionRegistrationErrors() []string { return slices.Clone(faultActionErrs) }

// FaultActionOf returns the action named name, nil when there is none.
func FaultActionOf(name string) *FaultAction { return faultActions[name] }

// FaultActionNames lists the registered actions in help order (scenario.FaultNames'
// order: Order, then name).
func FaultActionNames() []string {
	return slices.DeleteFunc(scenario.FaultNames(), func(n string) bool { return faultActions[n] == nil })
}
