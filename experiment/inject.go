package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// Injector injects faults into sandboxes. Links.Args are the link process's arguments
// without the cluster's name (Inject appends it).
type Injector struct {
	Store *cluster.Store
	// Links starts the link process for partitions (as netem apply does).
	Links links.Process
	// CatchUp bounds promote's wait for the new source (0: 30 s).
	CatchUp time.Duration

	paused *pausedNodes // nodes paused without duration (fault_pause.go)
}

// Inject runs action on node of c without parameters (InjectArgs).
func (in *Injector) Inject(ctx context.Context, c *cluster.Cluster, action, node string) (schema.FaultRecord, string, error) {
	return in.InjectArgs(ctx, c, action, node, nil)
}

// InjectArgs runs action (a registered FaultAction) with its parameters args on node of
// c (cluster.WriterAlias resolves to the current writer; a site of the topology for the
// actions that take one), appends it to the cluster's faults log (also when it failed)
// and returns the record with a one-line detail of what happened ("" when there is
// nothing to add). The action's check against the cluster's topology and network
// (FaultAction.Check, as when a scenario is read) and the provider operations it needs
// (FaultAction.Ops) come first; kill, stop and start go to c's provider (a sandbox signals and starts the
// process; an existing cluster runs its ssh: section's commands and waits for the
// server). A stop or restart whose clean shutdown took SIGKILL is no failure (the node
// went down; a restart starts it again) but a crash: the record's Escalated says so and
// callers must warn. Errors: *topology.FieldError for bad input (unknown action, node or
// parameter, an action the kind, the network or the provider cannot do), else the
// action's failure.
func (in *Injector) InjectArgs(ctx context.Context, c *cluster.Cluster, action, node string, args scenario.FaultArgs) (schema.FaultRecord, string, error) {
	spec, err := scenario.LookupFault("action", action)
	if err != nil {
		return schema.FaultRecord{}, "", err
	}
	a := faultActions[spec.Name]
	if a == nil {
		return schema.FaultRecord{}, "", fmt.Errorf("fault action %s: its spec is registered but nothing injects it (register it with RegisterFaultAction)", action)
	}
	if _, err := scenario.CheckFaultArgs(spec, args, func(k string) string { return k }); err != nil {
		return schema.FaultRecord{}, "", err
	}
	if !c.Deployed() && !a.Existing {
		return schema.FaultRecord{}, "", &topology.FieldError{Field: "action", Value: action, Reason: "on an existing cluster habench can " + scenario.AndList(scenario.ExistingActions()) + " servers (with the ssh: section's commands); partition with netem apply --partition"}
	}
	if a.Check != nil && c.Deployed() {
		if why := a.Check(c.Spec, c.Network); why != "" {
			return schema.FaultRecord{}, "", &topology.FieldError{Field: "action", Value: action, Reason: why}
		}
	}
	if site := c.Spec.Sites.Site(node); site != nil {
		return in.injectSite(ctx, c, a, site.Name)
	}
	n, err := c.CurrentWriter(ctx, node)
	if m := c.Member(node); m != nil && m.IsAux() {
		n, err = m, nil // an aux member (an arbitrator): no writer to resolve
		for _, x := range c.Spec.AuxNodes() {
			if why := scenario.AuxRefusal(spec, c.Spec.Name, x); x.Name == m.Name && why != "" {
				return schema.FaultRecord{}, "", &topology.FieldError{Field: "node", Value: node, Reason: why}
			}
		}
	}
	if err != nil {
		return schema.FaultRecord{}, "", err
	}
	for _, op := range a.Ops {
		if err := c.Refuse(op, string(op)+" "+n.Name); err != nil {
			return schema.FaultRecord{}, "", err
		}
	}
	at := time.Now()
	rec := schema.FaultRecord{At: at.UTC(), Action: action, Node: n.Name, PID: n.PID}
	detail, err := a.Inject(ctx, in, c, n, args, &rec)
	rec.Took = time.Since(at).Seconds()
	return logFault(c, rec, detail, err)
}

// logFault appends rec (with err's text) to c's faults log and returns it with detail and
// err; bad input (*topology.FieldError) is returned without logging: nothing happened.
func logFault(c *cluster.Cluster, rec schema.FaultRecord, detail string, err error) (schema.FaultRecord, string, error) {
	var fe *topology.FieldError
	if err != nil && errors.As(err, &fe) {
		return rec, "", err
	}
	if err != nil {
		rec.Error = err.Error()
	}
	rec.Detail = detail
	if lerr := AppendFault(c, rec); lerr != nil {
		err = errors.Join(err, lerr)
	}
	return rec, detail, err
}

// nodeOp runs op (cluster.OpKillNode, OpStopNode or OpStartNode) on n through c's
// provider, under ctx: the provider's *cluster.UnsupportedError first when it does not
// offer op.
func (in *Injector) nodeOp(ctx context.Context, c *cluster.Cluster, op cluster.Op, n *cluster.Node) error {
	if err := c.Refuse(op, string(op)+" "+n.Name); err != nil {
		return err
	}
	p := c.Provider()
	switch op {
	case cluster.OpKillNode:
		return p.KillNode(ctx, in.Store, c, n)
	case cluster.OpStopNode:
		return p.StopNode(ctx, in.Store, c, n)
	case cluster.OpStartNode:
		return p.StartNode(ctx, in.Store, c, n)
	}
	return fmt.Errorf("node %s: %s is not a node operation", n.Name, op)
}

// start starts n through c's provider; on a cluster habench deployed, a replica started
// after a promote is then pointed at the current source (cluster.Cluster.RejoinAsReplica).
func (in *Injector) start(ctx context.Context, c *cluster.Cluster, n *cluster.Node) error {
	if err := in.nodeOp(ctx, c, cluster.OpStartNode, n); err != nil || !c.Deployed() {
		return err
	}
	return c.RejoinAsReplica(ctx, n.Name)
}

// escalated records in rec a stop that took SIGKILL (cluster.StopEscalatedError) and
// returns nil for it: the node is down, as a stop leaves it. Other errors pass through.
func escalated(rec *schema.FaultRecord, err error) error {
	var se *cluster.StopEscalatedError
	if errors.As(err, &se) {
		rec.Escalated = se.Error()
		return nil
	}
	return err
}

// injectSite runs action a on a whole site (a.InjectSite: a partition that cuts the
// site's members off from every other member, links inside the site and among the others
// untouched, or its removal). An action without InjectSite on a site is bad input.
func (in *Injector) injectSite(ctx context.Context, c *cluster.Cluster, a *FaultAction, site string) (schema.FaultRecord, string, error) {
	if a.InjectSite == nil {
		return schema.FaultRecord{}, "", &topology.FieldError{Field: "node", Value: site, Reason: "a site can be " + scenario.AndList(scenario.SiteActions()) + "; " + a.Name + " needs a node"}
	}
	groups, err := c.Spec.Sites.CutOff(site)
	if err != nil {
		return schema.FaultRecord{}, "", err
	}
	at := time.Now()
	rec := schema.FaultRecord{At: at.UTC(), Action: a.Name, Node: site}
	err = a.InjectSite(ctx, in, c, site, groups)
	rec.Took = time.Since(at).Seconds()
	st := c.Spec.Sites.Site(site)
	return logFault(c, rec, fmt.Sprintf("site %s: %s", site, strings.Join(st.Nodes, ",")), err)
}

// applyPartition applies req, the standing partition of node (a node or a site), or
// removes it (heal true); heal refuses impairments other than req.
func (in *Injector) applyPartition(ctx context.Context, c *cluster.Cluster, node string, heal bool, req netem.Request) error {
	if c.Links() == cluster.LinksNone {
		return &topology.FieldError{Field: "cluster", Value: c.Name, Reason: fmt.Sprintf("network %s: partitions need a cluster deployed with --network netns (as root)", c.Network)}
	}
	st, err := links.ReadStanding(c)
	if err != nil {
		return err
	}
	if heal {
		if st == nil {
			return nil
		}
		if r := st.Request; r.String() != req.String() {
			return &topology.FieldError{Field: "node", Value: node, Reason: fmt.Sprintf("the cluster's impairments are `%s`, not a partition of %s: use habench netem clear %s", r.String(), node, c.Name)}
		}
		return links.ClearStanding(c)
	}
	if st != nil {
		return &topology.FieldError{Field: "cluster", Value: c.Name, Reason: fmt.Sprintf("has impairments already (`%s`): habench netem clear %s first", st.Request.String(), c.Name)}
	}
	if in.Links.Exe == "" && c.Links() == cluster.LinksNamespaces {
		return fmt.Errorf("partition of %s: no link process to start (the injector has no habench binary)", node)
	}
	lp := in.Links
	lp.Args = append(slices.Clone(lp.Args), c.Name)
	_, err = links.ApplyStanding(ctx, c, req, lp)
	return err
}

// faultGrace bounds how long a run waits, after its workload ended, for a scheduled fault
// action still in progress (a start waiting for its node to rejoin, a promote waiting for
// the catch-up) before cancelling it.
var faultGrace = 2 * time.Minute

// injectFunc injects one fault (Injector.InjectArgs on the run's cluster, without its detail).
type injectFunc func(ctx context.Context, ev scenario.FaultEvent) (schema.FaultRecord, error)

// faultSchedule is what scheduleFaults did: the records of the faults it injected (also
// failed ones; the run records the faults from the cluster's log and marks these as its
// own) and its WARNINGs (failed actions, an action the end of the workload caught in
// progress, events never injected).
type faultSchedule struct {
	Done     []schema.FaultRecord
	Warnings []string
}

// scheduleFaults injects events, each at its time after start, until all are injected,
// the workload ends (ended closes) or ctx ends (the run is interrupted: no warnings then).
// An action in progress when the workload ends is not cancelled: the run waits for it, at
// most faultGrace, so that a node being started is not left down; a warning says how long
// the run waited (the workload's numbers do not cover the action's end), or that the
// action was cut off. Events not yet due when the workload ends are not injected, and a
// warning names them. Each warning also goes to say as it happens.
func scheduleFaults(ctx context.Context, ended <-chan struct{}, inject injectFunc, events []scenario.FaultEvent, start time.Time, say func(string)) faultSchedule {
	var s faultSchedule
	warn := func(w string) {
		s.Warnings = append(s.Warnings, w)
		say(w)
	}
	for i, ev := range events {
		if !waitUntil(ctx, ended, start.Add(time.Duration(ev.At))) {
			if ctx.Err() == nil {
				warn(notInjected(events[i:]))
			}
			return s
		}
		name := fmt.Sprintf("fault %s %s at %v", ev.Action, ev.Node, time.Duration(ev.At))
		r := injectBounded(ctx, ended, inject, ev)
		if !r.rec.At.IsZero() {
			s.Done = append(s.Done, r.rec)
		}
		if ctx.Err() != nil {
			return s
		}
		switch {
		case r.cut:
			warn(fmt.Sprintf("%s was still in progress %v after the workload ended and was cut off: %s may be left down or not rejoined (%v)", name, faultGrace, ev.Node, r.err))
		case r.waited > 0 && r.err != nil:
			warn(fmt.Sprintf("%s was still in progress when the workload ended and failed %.1f s later: %v", name, r.waited.Seconds(), r.err))
		case r.waited > 0:
			warn(fmt.Sprintf("%s was still in progress when the workload ended: the run waited %.1f s for it to finish; the workload's numbers do not cover its end", name, r.waited.Seconds()))
		case r.err != nil:
			warn(fmt.Sprintf("%s: %v", name, r.err))
		}
	}
	return s
}

// waitUntil waits until at and reports true, or false when the workload ended (ended
// closed) or ctx ended first.
func waitUntil(ctx context.Context, ended <-chan struct{}, at time.Time) bool {
	t := time.NewTimer(max(time.Until(at), 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-ended:
		return false
	case <-t.C:
	}
	select { // an event due just as the workload ended is not injected either
	case <-ended:
		return false
	default:
		return ctx.Err() == nil
	}
}

// injected is one injectBounded: the fault's record and error, how long it ran after the
// end of the workload (0: it finished before) and whether faultGrace cut it off.
type injected struct {
	rec    schema.FaultRecord
	err    error
	waited time.Duration
	cut    bool
}

// injectBounded runs inject for ev under ctx; when the workload ends (ended closes) while
// it runs, it lets it finish for at most faultGrace, then cancels it.
func injectBounded(ctx context.Context, ended <-chan struct{}, inject injectFunc, ev scenario.FaultEvent) injected {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	finished, gone := make(chan struct{}), make(chan struct{})
	var endedAt time.Time
	var cut bool
	go func() {
		defer close(gone)
		select {
		case <-finished:
			return
		case <-ended:
		}
		endedAt = time.Now()
		t := time.NewTimer(faultGrace)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			cut = true
			cancel()
		}
	}()
	var r injected
	r.rec, r.err = inject(ictx, ev)
	close(finished)
	<-gone
	if !endedAt.IsZero() {
		r.waited = time.Since(endedAt)
	}
	r.cut = cut
	return r
}

// notInjected is the warning for scheduled events the workload's end left out.
func notInjected(events []scenario.FaultEvent) string {
	var names []string
	for _, ev := range events {
		names = append(names, fmt.Sprintf("%s %s at %v", ev.Action, ev.Node, time.Duration(ev.At)))
	}
	return fmt.Sprintf("the workload ended before %d scheduled fault(s) were injected: %s", len(events), strings.Join(names, ", "))
}

// promotableKinds lists the kinds whose replicas can be promoted (KindDef.Promotable).
func promotableKinds() []string {
	var out []string
	for _, k := range topology.Kinds() {
		if topology.KindOf(k).Promotable {
			out = append(out, string(k))
		}
	}
	return out
}
