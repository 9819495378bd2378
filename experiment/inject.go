package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
)

// FaultActions are the faults habench injects, in help order: kill (SIGKILL of the
// server), stop (clean shutdown), start, restart, partition and heal (a standing link
// partition of the node and its removal), promote (a replica becomes the source).
var FaultActions = []string{"kill", "stop", "start", "restart", "partition", "heal", "promote"}

// Injector injects faults into sandboxes. Links.Args are the link process's arguments
// without the cluster's name (Inject appends it).
type Injector struct {
	Sandbox *cluster.Sandbox
	// Links starts the link process for partitions (as netem apply does).
	Links LinkProcess
	// CatchUp bounds promote's wait for the new source (0: 30 s).
	CatchUp time.Duration
}

// Inject runs action on node of c (cluster.WriterAlias resolves to the current writer),
// appends it to the cluster's faults log (also when it failed) and returns the record
// with a one-line detail of what happened ("" when there is nothing to add). A stop or
// restart whose clean shutdown took SIGKILL is no failure (the node went down; a restart
// starts it again) but a crash: the record's Escalated says so and callers must warn.
// Errors: *topology.FieldError for bad input (unknown action or node, an action the kind
// or the network cannot do), else the action's failure.
func (in *Injector) Inject(ctx context.Context, c *cluster.Cluster, action, node string) (FaultRecord, string, error) {
	if !slices.Contains(FaultActions, action) {
		return FaultRecord{}, "", &topology.FieldError{Field: "action", Value: action, Reason: "want one of " + strings.Join(FaultActions, ", ")}
	}
	if site := c.Spec.Sites.Site(node); site != nil && !c.Existing() {
		return in.injectSite(ctx, c, action, site.Name)
	}
	n, err := c.CurrentWriter(ctx, node)
	if m := c.Member(node); m != nil && m.IsAux() {
		n, err = m, nil // an aux member (an arbitrator): no writer to resolve
	}
	if err != nil {
		return FaultRecord{}, "", err
	}
	if c.Existing() {
		return in.injectExisting(ctx, c, action, n)
	}
	sb := in.Sandbox
	at := time.Now()
	rec := FaultRecord{At: at.UTC(), Action: action, Node: n.Name, PID: n.PID}
	detail := ""
	switch action {
	case "kill":
		err = sb.KillNode(c, n.Name)
	case "stop":
		err = escalated(&rec, sb.StopNode(c, n.Name))
	case "start":
		if err = sb.StartNode(ctx, c, n.Name); err == nil {
			err = c.RejoinAsReplica(ctx, n.Name)
		}
	case "restart":
		// A stop that took SIGKILL left the node down all the same: start it again.
		if err = escalated(&rec, sb.StopNode(c, n.Name)); err == nil {
			if err = sb.StartNode(ctx, c, n.Name); err == nil {
				err = c.RejoinAsReplica(ctx, n.Name)
			}
		}
	case "partition", "heal":
		err = in.partition(ctx, c, n.Name, action)
	case "promote":
		catchUp := in.CatchUp
		if catchUp <= 0 {
			catchUp = 30 * time.Second
		}
		var rep *cluster.PromoteReport
		rep, err = sb.Promote(ctx, c, n.Name, catchUp)
		if rep != nil {
			state := "down: what it had not sent is lost"
			if rep.OldSourceUp {
				state = "up, caught up first"
			}
			detail = fmt.Sprintf("old source %s %s; repointed %s", rep.OldSource, state, strings.Join(rep.Repointed, ","))
			if len(rep.Down) > 0 {
				detail += "; down, repointed when started: " + strings.Join(rep.Down, ",")
			}
		}
	}
	rec.Took = time.Since(at).Seconds()
	var fe *topology.FieldError
	if err != nil && errors.As(err, &fe) {
		return rec, "", err // bad input: nothing happened, nothing to log
	}
	if err != nil {
		rec.Error = err.Error()
	}
	if lerr := AppendFault(c, rec); lerr != nil {
		err = errors.Join(err, lerr)
	}
	return rec, detail, err
}

// escalated records in rec a stop that took SIGKILL (cluster.StopEscalatedError) and
// returns nil for it: the node is down, as a stop leaves it. Other errors pass through.
func escalated(rec *FaultRecord, err error) error {
	var se *cluster.StopEscalatedError
	if errors.As(err, &se) {
		rec.Escalated = se.Error()
		return nil
	}
	return err
}

// injectExisting runs a kill, stop, start or restart of an existing cluster's node with
// the commands of its ssh: section (topology.FaultCommands, on the node's host over
// SSH), then waits for the server to go away (kill, stop) or to accept connections
// again (start, restart; up to 90 s).
func (in *Injector) injectExisting(ctx context.Context, c *cluster.Cluster, action string, n *cluster.Node) (FaultRecord, string, error) {
	switch action {
	case "kill", "stop", "start", "restart":
	default:
		return FaultRecord{}, "", &topology.FieldError{Field: "action", Value: action, Reason: "on an existing cluster habench can kill, stop, start and restart servers (with the ssh: section's commands); partition with netem apply --partition"}
	}
	h := c.Host(n)
	if h == nil {
		return FaultRecord{}, "", &topology.FieldError{Field: "node", Value: n.Name, Reason: fmt.Sprintf("cluster %s has no ssh: access to its hosts: faults run commands on them (register with --ssh, or ssh: in the topology)", c.Name)}
	}
	var cmds topology.FaultCommands
	if c.Spec.SSH != nil {
		cmds = c.Spec.SSH.Faults
	}
	at := time.Now()
	rec := FaultRecord{At: at.UTC(), Action: action, Node: n.Name}
	steps := []string{action}
	if action == "restart" {
		steps = []string{"stop", "start"}
	}
	var err error
	for _, step := range steps {
		cmd := cmds.Command(step)
		if _, err = h.Run(ctx, "sh", "-c", cmd); err != nil {
			err = fmt.Errorf("node %s (%s): %s: %w", n.Name, h.Name(), cmd, err)
			break
		}
		if err = waitServer(ctx, c, n, step == "start"); err != nil {
			break
		}
	}
	rec.Took = time.Since(at).Seconds()
	if err != nil {
		rec.Error = err.Error()
	}
	if lerr := AppendFault(c, rec); lerr != nil {
		err = errors.Join(err, lerr)
	}
	return rec, "", err
}

// waitServer waits until n's server accepts connections (up) or refuses them (down):
// 90 s for up, 30 s for down.
func waitServer(ctx context.Context, c *cluster.Cluster, n *cluster.Node, up bool) error {
	limit := 30 * time.Second
	if up {
		limit = 90 * time.Second
	}
	deadline := time.Now().Add(limit)
	for {
		db, err := c.OpenAdmin(n)
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err = db.PingContext(pctx)
			cancel()
			db.Close()
		}
		if (err == nil) == up {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			state := map[bool]string{true: "accept connections", false: "go away"}[up]
			return fmt.Errorf("node %s: the server did not %s within %v", n.Name, state, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// injectSite runs partition or heal on a whole site: a standing partition that cuts the
// site's members off from every other member (links inside the site and among the others
// untouched), or its removal. Other actions on a site are bad input.
func (in *Injector) injectSite(ctx context.Context, c *cluster.Cluster, action, site string) (FaultRecord, string, error) {
	if action != "partition" && action != "heal" {
		return FaultRecord{}, "", &topology.FieldError{Field: "node", Value: site, Reason: "a site can be partitioned and healed; " + action + " needs a node"}
	}
	groups, err := c.Spec.Sites.CutOff(site)
	if err != nil {
		return FaultRecord{}, "", err
	}
	at := time.Now()
	rec := FaultRecord{At: at.UTC(), Action: action, Node: site}
	err = in.applyPartition(ctx, c, site, action, netem.Request{Groups: groups})
	rec.Took = time.Since(at).Seconds()
	var fe *topology.FieldError
	if err != nil && errors.As(err, &fe) {
		return rec, "", err
	}
	if err != nil {
		rec.Error = err.Error()
	}
	if lerr := AppendFault(c, rec); lerr != nil {
		err = errors.Join(err, lerr)
	}
	st := c.Spec.Sites.Site(site)
	return rec, fmt.Sprintf("site %s: %s", site, strings.Join(st.Nodes, ",")), err
}

// partition applies (partition) or removes (heal) a standing partition of node. Partition
// refuses a cluster that has other impairments (heal would remove them too).
func (in *Injector) partition(ctx context.Context, c *cluster.Cluster, node, action string) error {
	return in.applyPartition(ctx, c, node, action, netem.Request{Partition: []string{node}})
}

// applyPartition applies req, the standing partition of what (a node or a site), or
// removes it (heal); heal refuses impairments other than req.
func (in *Injector) applyPartition(ctx context.Context, c *cluster.Cluster, node, action string, req netem.Request) error {
	if c.Network != cluster.NetNamespaces {
		return &topology.FieldError{Field: "cluster", Value: c.Name, Reason: fmt.Sprintf("network %s: partitions need a cluster deployed with --network netns (as root)", c.Network)}
	}
	st, err := ReadStanding(c)
	if err != nil {
		return err
	}
	if action == "heal" {
		if st == nil {
			return nil
		}
		if r := st.Request; r.String() != req.String() {
			return &topology.FieldError{Field: "node", Value: node, Reason: fmt.Sprintf("the cluster's impairments are `%s`, not a partition of %s: use habench netem clear %s", r.String(), node, c.Name)}
		}
		return ClearStanding(c)
	}
	if st != nil {
		return &topology.FieldError{Field: "cluster", Value: c.Name, Reason: fmt.Sprintf("has impairments already (`%s`): habench netem clear %s first", st.Request.String(), c.Name)}
	}
	if in.Links.Exe == "" {
		return fmt.Errorf("partition of %s: no link process to start (the injector has no habench binary)", node)
	}
	lp := in.Links
	lp.Args = append(slices.Clone(lp.Args), c.Name)
	_, err = ApplyStanding(ctx, c, req, lp)
	return err
}

// FaultEvent is one fault of a scenario's schedule: at At after the workload starts
// (warm-up included), Action on Node (a node name or "writer").
type FaultEvent struct {
	At     Duration `yaml:"at" json:"at"`
	Action string   `yaml:"action" json:"action"`
	Node   string   `yaml:"node" json:"node"`
}

// validateFaults checks a scenario's fault schedule against its topologies and the
// workload's length (runFor: warm-up + time; 0 = no time limit): each error is a
// *topology.FieldError naming faults[i] and the field.
func validateFaults(faults []FaultEvent, tops []topology.Spec, network string, runFor time.Duration) error {
	for i, f := range faults {
		field := func(name string) string { return fmt.Sprintf("faults[%d].%s", i, name) }
		if !slices.Contains(FaultActions, f.Action) {
			return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: "want one of " + strings.Join(FaultActions, ", ")}
		}
		at := time.Duration(f.At)
		if at < 0 {
			return &topology.FieldError{Field: field("at"), Value: at.String(), Reason: "want a time >= 0 after the workload starts"}
		}
		if runFor > 0 && at >= runFor {
			return &topology.FieldError{Field: field("at"), Value: at.String(), Reason: fmt.Sprintf("the workload runs %v (warmup + time): the fault would never happen", runFor)}
		}
		if i > 0 && at < time.Duration(faults[i-1].At) {
			return &topology.FieldError{Field: field("at"), Value: at.String(), Reason: "faults must be in time order"}
		}
		if f.Node == "" {
			return &topology.FieldError{Field: field("node"), Value: "", Reason: "want a node name (n1, n2, ...) or writer"}
		}
		if (f.Action == "partition" || f.Action == "heal") && network == cluster.NetLoopback {
			return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: "partitions need network netns (nodes on loopback share one interface)"}
		}
		for _, t := range tops {
			if t.IsExisting() {
				if t.SSH == nil {
					return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: fmt.Sprintf("topology %s is an existing cluster without ssh: faults run commands on its hosts", t.Name)}
				}
				if f.Action != "kill" && f.Action != "stop" && f.Action != "start" && f.Action != "restart" {
					return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: fmt.Sprintf("topology %s is an existing cluster: habench kills, stops, starts and restarts its servers (ssh: faults commands), nothing else", t.Name)}
				}
				continue
			}
			if f.Node != cluster.WriterAlias {
				site := t.Sites.Site(f.Node) != nil
				if !slices.Contains(t.MemberNames(), f.Node) && !site {
					have := fmt.Sprintf("n1..n%d", t.Nodes)
					for _, a := range t.AuxNodes() {
						have += ", " + a.Name
					}
					if len(t.Sites) > 0 {
						have += "; sites " + strings.Join(t.Sites.Names(), ", ")
					}
					return &topology.FieldError{Field: field("node"), Value: f.Node, Reason: fmt.Sprintf("topology %s has nodes %s", t.Name, have)}
				}
				if site && f.Action != "partition" && f.Action != "heal" {
					return &topology.FieldError{Field: field("node"), Value: f.Node, Reason: fmt.Sprintf("%s is a site of topology %s: a site can be partitioned and healed, %s needs a node", f.Node, t.Name, f.Action)}
				}
			}
			if f.Action == "promote" && !topology.KindOf(t.Kind).Promotable {
				return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: fmt.Sprintf("topology %s is %s: promote is for kinds whose replicas can become the source (%s)", t.Name, t.Kind, strings.Join(promotableKinds(), ", "))}
			}
			if (f.Action == "partition" || f.Action == "heal") && t.Nodes < 2 {
				return &topology.FieldError{Field: field("action"), Value: f.Action, Reason: fmt.Sprintf("topology %s has one node: nothing to partition it from", t.Name)}
			}
		}
	}
	return nil
}

// scheduleFaults injects events on c, each at its time after start, until ctx ends
// (the workload's end); it returns when all were injected or ctx ended, with the records
// of those it injected (also failed ones; the run records the faults from the cluster's
// log and marks these as its own), and reports each failure to fail.
func scheduleFaults(ctx context.Context, in *Injector, c *cluster.Cluster, events []FaultEvent, start time.Time, fail func(error)) []FaultRecord {
	var done []FaultRecord
	for _, ev := range events {
		wait := time.Until(start.Add(time.Duration(ev.At)))
		if wait > 0 {
			select {
			case <-ctx.Done():
				return done
			case <-time.After(wait):
			}
		}
		rec, _, err := in.Inject(ctx, c, ev.Action, ev.Node)
		if !rec.At.IsZero() {
			done = append(done, rec)
		}
		if err != nil && ctx.Err() == nil {
			fail(fmt.Errorf("fault %s %s at %v: %w", ev.Action, ev.Node, time.Duration(ev.At), err))
		}
	}
	return done
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
