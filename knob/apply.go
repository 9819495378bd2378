package knob

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// SwitchGroupMode switches a Group Replication cluster to "single-primary" (with node
// primary as the primary; "" = the cluster's writer) or "multi-primary" and returns when
// every member is ONLINE in the new mode, with the roles read back into the cluster's state
// (cluster.SwitchGroupModeTo). A variable so tests can replace it; when nil,
// group_replication_mode is refused before anything is changed.
var SwitchGroupMode = cluster.SwitchGroupModeTo

// Restarter restarts a node so it rereads its option file (cluster.Store, through the
// cluster's provider).
type Restarter interface {
	RestartNode(ctx context.Context, c *cluster.Cluster, node string) error
}

// Options tune Apply.
type Options struct {
	// Keep leaves the values in place (habench knob set); when the cluster's provider
	// offers option files (cluster.OpOptionFiles: a sandbox) they are also written into
	// the nodes' option files so that restarts keep them, else they are runtime only (a
	// note says so). Without Keep the caller must call Restore (habench runs do, also on
	// error and interrupt).
	Keep bool
	// Restarter restarts nodes for knobs the server refuses at runtime (read only), on a
	// cluster whose provider offers cluster.OpRestartNode and cluster.OpOptionFiles.
	// Nil: such knobs are refused.
	Restarter Restarter
	Log       *slog.Logger
}

// Applied is the result of Apply: what was changed where, and how to undo it.
type Applied struct {
	c       *cluster.Cluster
	opt     Options
	req     []topology.KnobSetting
	entries []*entry
	dbs     map[string]*sql.DB
	// optionFiles holds the original option file of every node restarted for a knob.
	optionFiles map[string]string
	pendingPath string
	notes       []string
	restored    *bool
}

type entry struct {
	schema.KnobValue
	node    *cluster.Node
	t       Target
	changed bool // set on the server, to undo
	first   bool // group mode: the entry that switches the group
	// primary (group mode, first entry): the node that was PRIMARY of the single-primary
	// group before, made the primary again when the mode is set back.
	primary string
}

func (o Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

// Plan resolves settings for every node of c: node lists checked against the cluster, a
// setting for named nodes overriding one for every node, names mapped by the cluster's
// capabilities. Errors are *topology.FieldError naming the setting.
func Plan(c *cluster.Cluster, settings []topology.KnobSetting) (map[string][]Target, error) {
	if err := topology.CheckKnobs(settings); err != nil {
		return nil, err
	}
	caps := c.Capabilities()
	out := map[string][]Target{}
	owner := map[string]topology.KnobSetting{} // node + target ID -> setting
	for _, general := range []bool{true, false} {
		for _, k := range settings {
			if (len(k.Nodes) == 0) != general {
				continue
			}
			for _, name := range k.Nodes {
				if c.Node(name) == nil {
					return nil, &topology.FieldError{Field: "knob", Value: k.String(), Reason: fmt.Sprintf("cluster %s has no node %s (nodes: %s)", c.Name, name, strings.Join(nodeNames(c), ", "))}
				}
			}
			t, err := Resolve(k, caps)
			if err != nil {
				return nil, err
			}
			for _, n := range c.Nodes {
				if !k.AppliesTo(n.Name) {
					continue
				}
				key := n.Name + "\x00" + t.ID()
				if prev, ok := owner[key]; ok && (len(prev.Nodes) == 0) == general {
					return nil, &topology.FieldError{Field: "knob", Value: k.String(), Reason: fmt.Sprintf("%s on %s is already set by %s", t.Label(), n.Name, prev.String())}
				}
				owner[key] = k
				ts := out[n.Name]
				if i := slices.IndexFunc(ts, func(x Target) bool { return x.ID() == t.ID() }); i >= 0 {
					ts[i] = t // a setting for this node overrides one for every node
				} else {
					ts = append(ts, t)
				}
				out[n.Name] = ts
			}
		}
	}
	return out, nil
}

func nodeNames(c *cluster.Cluster) []string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, n.Name)
	}
	return s
}

// Apply sets settings on c's nodes (see the package comment for the phases) and returns
// what it did. On error nothing stays changed (what was set is rolled back; the error
// says if that failed too). Errors on bad input are *topology.FieldError naming the
// setting: unknown variable (ER 1193) or provider option, a value the server refuses, a
// read-only variable on a cluster whose provider does not restart nodes (an existing
// cluster) or without a Restarter, a node the cluster lacks. Without opt.Keep the caller
// must call Restore.
func Apply(ctx context.Context, c *cluster.Cluster, settings []topology.KnobSetting, opt Options) (a *Applied, err error) {
	if len(settings) == 0 {
		return &Applied{c: c, opt: opt}, nil
	}
	plan, err := Plan(c, settings)
	if err != nil {
		return nil, err
	}
	ap := newApplied(c, opt, settings, plan)
	a = ap
	defer func() {
		if err != nil || opt.Keep {
			ap.closeDBs()
		}
		if err != nil {
			a = nil
		}
	}()
	// Phase 1: read every current value; an unknown variable fails here, before any change.
	if err := a.readPhase(ctx); err != nil {
		return nil, err
	}
	if !opt.Keep {
		if err := a.writePending(true); err != nil {
			return nil, err
		}
	} else if p := pendingHolder(c); p != "" {
		return nil, fmt.Errorf("cluster %s: %s", c.Name, p)
	}
	defer func() {
		if err != nil {
			if rerr := ap.restore(context.WithoutCancel(ctx), false); rerr != nil {
				err = errors.Join(err, fmt.Errorf("rolling back: %w (habench knob restore %s)", rerr, c.Name))
			}
		}
	}()
	restart, err := a.setPhase(ctx, opt)
	if err != nil {
		return a, err
	}
	if err := a.restartPhase(ctx, restart); err != nil {
		return a, err
	}
	if opt.Keep && c.Offers(cluster.OpOptionFiles) {
		if err := a.persist(); err != nil {
			return a, err
		}
	}
	if err := a.readBackPhase(ctx); err != nil {
		return a, err
	}
	if !opt.Keep {
		if err := a.writePending(false); err != nil {
			return a, err
		}
	}
	if opt.Keep && !c.Offers(cluster.OpOptionFiles) {
		a.notes = append(a.notes, "runtime only: a restart of these servers returns them to their configured values")
	}
	return a, nil
}

// setPhase is Apply's phase 2: set every entry in order; read-only variables go to the
// restart phase (cannotRestart): it returns the nodes to restart. Errors as Apply's.
func (a *Applied) setPhase(ctx context.Context, opt Options) (map[string]bool, error) {
	restart := map[string]bool{}
	for _, e := range a.entries {
		err := a.set(ctx, e, e.t.Value)
		if isErr(err, 1238) && strings.Contains(err.Error(), "read only") {
			if why := cannotRestart(a.c, opt); why != "" {
				why = fmt.Sprintf("%s is read only at runtime (the server needs it in its option file and a restart); %s", e.t.Variable, why)
				return nil, &topology.FieldError{Field: "knob", Value: e.t.Knob + "=" + e.t.Value, Reason: why}
			}
			e.t.Method, e.Method = MethodRestart, string(MethodRestart)
			restart[e.Node] = true
			continue
		}
		if err != nil {
			return nil, knobError(a.c, e, err)
		}
	}
	return restart, nil
}

// restartPhase is Apply's phase 3: option file and restart for read-only knobs, node by
// node (the nodes in restart); a restart resets what SET GLOBAL changed on that node, so
// those are set again.
func (a *Applied) restartPhase(ctx context.Context, restart map[string]bool) error {
	for _, n := range a.c.Nodes {
		if !restart[n.Name] {
			continue
		}
		if err := a.restartWith(ctx, n); err != nil {
			return err
		}
		for _, e := range a.entries {
			if e.node == n && e.changed && e.t.Method != MethodRestart && e.t.Method != MethodGroupMode {
				if err := a.set(ctx, e, e.t.Value); err != nil {
					return knobError(a.c, e, err)
				}
			}
		}
	}
	return nil
}

// readBackPhase is Apply's phase 4: read back what every node took (10 s per read) into
// each entry's Effective and Matches, with a note when the server took another value,
// and what a new session starts with (sessionPhase).
func (a *Applied) readBackPhase(ctx context.Context) error {
	if err := a.globalReadBack(ctx); err != nil {
		return err
	}
	return a.sessionPhase(ctx)
}

// globalReadBack reads every entry's global value back (readBackPhase).
func (a *Applied) globalReadBack(ctx context.Context) error {
	for _, e := range a.entries {
		db, _ := a.db(e.node)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, full, err := read(rctx, db, e.t)
		cancel()
		if err != nil {
			return fmt.Errorf("node %s: reading back %s: %w", e.Node, e.t.Label(), err)
		}
		e.Effective, e.Matches = v, Same(e.t.Value, v)
		if e.t.Method == MethodProvider {
			e.ProviderOptions = full
		}
		if !e.Matches {
			note := fmt.Sprintf("the server took %s, not %s", v, e.t.Value)
			if e.t.WaitResize {
				note += " (InnoDB rounds buffer pool sizes to its chunk granularity; MySQL: a multiple of innodb_buffer_pool_chunk_size * innodb_buffer_pool_instances)"
			}
			e.Note = joinNote(e.Note, note)
		}
	}
	return nil
}

// sessionPhase fills each entry's Session: per node, one connection opened now (after
// every SET GLOBAL, never one of the pool's older ones) reads @@SESSION.var of every
// variable set as a plain server variable; a global-only variable (error 1238) has none.
// A new session that does not start with the global value gets a note and Matches false.
func (a *Applied) sessionPhase(ctx context.Context) error {
	byNode := map[*cluster.Node][]*entry{}
	var order []*cluster.Node
	for _, e := range a.entries {
		if e.t.Method == MethodProvider || e.t.Method == MethodGroupMode || !varRE.MatchString(e.t.Variable) {
			continue
		}
		if byNode[e.node] == nil {
			order = append(order, e.node)
		}
		byNode[e.node] = append(byNode[e.node], e)
	}
	for _, n := range order {
		if err := a.sessionValues(ctx, n, byNode[n]); err != nil {
			return fmt.Errorf("node %s: reading back a new session's values: %w", n.Name, err)
		}
	}
	return nil
}

// sessionValues reads es' session values on a new connection to node n.
func (a *Applied) sessionValues(ctx context.Context, n *cluster.Node, es []*entry) error {
	db, err := a.c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := db.Conn(rctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, e := range es {
		var v sql.NullString
		err := conn.QueryRowContext(rctx, "SELECT @@SESSION."+e.t.Variable).Scan(&v)
		switch {
		case isErr(err, 1238): // a GLOBAL variable: no session value
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", e.t.Variable, err)
		}
		e.Session = v.String
		if !Same(e.Effective, v.String) {
			e.Matches = false
			e.Note = joinNote(e.Note, fmt.Sprintf("a new session starts with %s, not the global %s", v.String, e.Effective))
		}
	}
	return nil
}

// cannotRestart is "" when Apply may restart c's nodes for read-only knobs (c's provider
// restarts nodes and rewrites their option files, and opt has a Restarter), else why not:
// the end of the knob's one-line error.
func cannotRestart(c *cluster.Cluster, opt Options) string {
	if !c.Offers(cluster.OpRestartNode) || !c.Offers(cluster.OpOptionFiles) {
		return fmt.Sprintf("habench does not restart the servers of %s cluster %s: set it in their configuration yourself", c.Provider().Name(), c.Name)
	}
	if opt.Restarter == nil {
		return "restarting nodes is not possible here"
	}
	return ""
}

// Check resolves settings and reads every current value without changing anything: an
// unknown variable or provider option, a bad value or a missing node fails as Apply would
// fail before its first change. Returns the values per node (Before filled).
func Check(ctx context.Context, c *cluster.Cluster, settings []topology.KnobSetting) ([]schema.KnobValue, error) {
	plan, err := Plan(c, settings)
	if err != nil {
		return nil, err
	}
	a := newApplied(c, Options{}, settings, plan)
	defer a.closeDBs()
	if err := a.readPhase(ctx); err != nil {
		return nil, err
	}
	return a.Values(), nil
}

func newApplied(c *cluster.Cluster, opt Options, settings []topology.KnobSetting, plan map[string][]Target) *Applied {
	a := &Applied{c: c, opt: opt, req: settings, dbs: map[string]*sql.DB{}, optionFiles: map[string]string{}}
	for _, n := range c.Nodes {
		for _, t := range plan[n.Name] {
			a.entries = append(a.entries, &entry{node: n, t: t, KnobValue: schema.KnobValue{Node: n.Name, Knob: t.Knob, Variable: t.Label(), Method: string(t.Method), Requested: t.Value}})
		}
	}
	return a
}

// readPhase reads every entry's current value into Before and refuses what cannot be
// applied (an unknown variable or provider option, group mode without SwitchGroupMode,
// the applier parallelism on a group), changing nothing.
func (a *Applied) readPhase(ctx context.Context) error {
	for _, e := range a.entries {
		db, err := a.db(e.node)
		if err != nil {
			return err
		}
		if e.t.Method == MethodGroupMode {
			if SwitchGroupMode == nil {
				return &topology.FieldError{Field: "knob", Value: e.t.Knob + "=" + e.t.Value, Reason: "group_replication_mode needs the Group Replication provider's cluster.SwitchGroupMode, not wired into this build yet"}
			}
			if !slices.ContainsFunc(a.entries, func(x *entry) bool { return x.first && x.t.Method == MethodGroupMode }) {
				e.first = true
				ms, err := a.c.GroupMembers(ctx)
				if err != nil {
					return fmt.Errorf("knob %s: %w", e.t.Knob+"="+e.t.Value, err)
				}
				for _, m := range ms {
					if m.SinglePrimary && m.Role == "PRIMARY" {
						e.primary = m.Node
					}
				}
			}
		}
		if e.t.Method == MethodApplierRestart && a.c.Spec.Is(topology.Group) {
			return &topology.FieldError{Field: "knob", Value: e.t.Knob + "=" + e.t.Value, Reason: "on Group Replication the applier parallelism takes effect only at START GROUP_REPLICATION, which habench does not do for a knob"}
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		e.Before, _, err = read(rctx, db, e.t)
		cancel()
		if err != nil {
			return withSuggestion(ctx, db, e, knobError(a.c, e, err))
		}
	}
	return nil
}

// withSuggestion adds the closest name the node has (SHOW GLOBAL VARIABLES, the provider's
// keys) to an unknown variable or provider option error: "(did you mean wsrep_slave_threads?)".
func withSuggestion(ctx context.Context, db *sql.DB, e *entry, err error) error {
	var fe *topology.FieldError
	if !errors.As(err, &fe) || !(strings.Contains(fe.Reason, "ER 1193") || strings.Contains(fe.Reason, "has no option")) {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	names, nerr := ServerNames(rctx, db, "node "+e.Node)
	if nerr != nil {
		return err
	}
	name := e.t.Variable
	if e.t.Key != "" {
		name = e.t.Key
	}
	if why := names.Unknown(name); strings.HasSuffix(why, "?)") {
		fe.Reason += why[strings.LastIndex(why, " (did you mean"):]
	}
	return err
}

// Values returns every node's knob values (as Apply recorded them; Restored after Restore).
func (a *Applied) Values() []schema.KnobValue {
	var out []schema.KnobValue
	for _, e := range a.entries {
		out = append(out, e.KnobValue)
	}
	return out
}

// Report is what manifest.json records.
func (a *Applied) Report() *schema.Knobs {
	if a == nil || len(a.req) == 0 {
		return nil
	}
	r := &schema.Knobs{Keep: a.opt.Keep, Nodes: a.Values(), Restored: a.restored, Notes: a.notes}
	for _, k := range a.req {
		r.Requested = append(r.Requested, k.String())
	}
	return r
}

// Notes are remarks for the user (runtime only on an existing cluster, ...).
func (a *Applied) Notes() []string { return a.notes }

// knobError turns a server error for e into a clear error naming the knob, node and value.
func knobError(c *cluster.Cluster, e *entry, err error) error {
	kv := e.t.Knob + "=" + e.t.Value
	var me *mysql.MySQLError
	switch {
	case errors.Is(err, errNoProvider):
		return &topology.FieldError{Field: "knob", Value: kv, Reason: fmt.Sprintf("node %s: %v", e.Node, err)}
	case errors.Is(err, errNoProviderKey):
		return &topology.FieldError{Field: "knob", Value: kv, Reason: fmt.Sprintf("node %s: the Galera provider has no option %s (see SELECT @@wsrep_provider_options)", e.Node, e.t.Key)}
	case errors.As(err, &me):
		switch me.Number {
		case 1193:
			hint := ""
			if strings.HasPrefix(e.t.Variable, "group_replication_") {
				hint = " (is the group_replication plugin loaded?)"
			}
			return &topology.FieldError{Field: "knob", Value: kv, Reason: fmt.Sprintf("node %s (%s): unknown system variable %s (ER 1193)%s; nothing was changed", e.Node, c.Capabilities().Flavor, e.t.Variable, hint)}
		case 1231, 1232, 1210:
			return &topology.FieldError{Field: "knob", Value: kv, Reason: fmt.Sprintf("node %s refused the value: %s (ER %d); nothing was changed", e.Node, me.Message, me.Number)}
		case 1227, 1044, 1045:
			return fmt.Errorf("knob %s: node %s: %s (ER %d): the user needs SYSTEM_VARIABLES_ADMIN or SUPER", kv, e.Node, me.Message, me.Number)
		case 1238:
			return &topology.FieldError{Field: "knob", Value: kv, Reason: fmt.Sprintf("node %s: %s (ER 1238)", e.Node, me.Message)}
		}
	}
	return fmt.Errorf("knob %s: node %s: %w", kv, e.Node, err)
}

func isErr(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
