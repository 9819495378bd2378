package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/habench/habench/internal/words"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
)

// knobUse is one knob name a plan sets: where it is written and on which topology.
type knobUse struct {
	field, name string
	line        int
}

// CheckKnobNames checks the name of every knob the cells that run (all when run is nil)
// set, the topologies' knobs: and the knob axes, before anything is deployed: on a sandbox
// against the committed variable list of its installation's flavor and version
// (knob.ListedNames; the installation is resolved, reading the server's --version; on
// hosts, the server the hosts have, asked over SSH: the store's SpecBinaries), on an
// existing cluster against its first node's SHOW GLOBAL VARIABLES. A flavor or version
// without a list, or an installation or server that cannot be reached, is not checked
// here (the server refuses an unknown name when the knob is applied, changing nothing; the
// run's own pre-flight reports a missing installation). sb may be nil: existing clusters
// named by cluster: are then not checked. Errors are *topology.FieldError (with "line N:"
// for an axis) naming the field, the name and the closest known one; the same name
// unknown on several topologies, and further unknown names, are counted on that one line.
func CheckKnobNames(ctx context.Context, p *scenario.Plan, sb *cluster.Store, run func(*scenario.Cell) bool) error {
	names := map[string]*knob.Names{} // by topology name; nil: not checked
	type failure struct {
		use        knobUse
		why        string
		topologies []string
	}
	var fails []*failure
	for _, d := range p.Deployments {
		uses := knobUses(p, d, run)
		if len(uses) == 0 {
			continue
		}
		sp := d.Spec
		n, seen := names[sp.Name]
		if !seen {
			n = specNames(ctx, sb, sp)
			names[sp.Name] = n
		}
		if n == nil {
			continue
		}
		for _, u := range uses {
			why := n.Unknown(u.name)
			if why == "" {
				continue
			}
			i := slices.IndexFunc(fails, func(f *failure) bool { return f.use == u })
			if i < 0 {
				fails = append(fails, &failure{use: u, why: why})
				i = len(fails) - 1
			}
			if !slices.Contains(fails[i].topologies, sp.Name) {
				fails[i].topologies = append(fails[i].topologies, sp.Name)
			}
		}
	}
	if len(fails) == 0 {
		return nil
	}
	f := fails[0]
	reason := fmt.Sprintf("topology %s: %s", f.topologies[0], f.why)
	if more := f.topologies[1:]; len(more) > 0 {
		reason += fmt.Sprintf("; the same on %s (%s)", words.Plural(len(more), "more topology"), strings.Join(more, ", "))
	}
	if len(fails) > 1 {
		var others []string
		for _, o := range fails[1:] {
			others = append(others, o.use.name)
		}
		reason += "; also unknown: " + strings.Join(others, ", ")
	}
	return scenario.LineError(f.use.line, f.use.field, f.use.name, reason)
}

// knobUses lists the knob names d's cells that run set: the topology's knobs: (field
// topologies[i].knobs.KEY) and each knob axis' variables (field sweep.AXIS, with its line),
// each once.
func knobUses(p *scenario.Plan, d *scenario.Deployment, run func(*scenario.Cell) bool) []knobUse {
	var uses []knobUse
	add := func(u knobUse) {
		if !slices.Contains(uses, u) {
			uses = append(uses, u)
		}
	}
	if !slices.ContainsFunc(d.Cells, func(c *scenario.Cell) bool { return run == nil || run(c) }) {
		return nil
	}
	ti := slices.IndexFunc(p.Scenario.Topologies, func(t topology.Spec) bool { return t.Name == d.Spec.Name })
	for key, value := range d.Spec.Knobs {
		if k, err := topology.ParseKnobEntry(key, value); err == nil {
			add(knobUse{field: fmt.Sprintf("topologies[%d].knobs.%s", ti, key), name: k.Name})
		}
	}
	for _, c := range d.Cells {
		if run != nil && !run(c) {
			continue
		}
		for _, as := range c.Knobs {
			line := 0
			if i := slices.IndexFunc(p.Axes, func(a *scenario.Axis) bool { return a.Name == as.Axis }); i >= 0 {
				line = p.Axes[i].Line
			}
			for _, s := range as.Settings {
				add(knobUse{field: "sweep." + as.Axis, name: s.Name, line: line})
			}
		}
	}
	slices.SortStableFunc(uses, func(a, b knobUse) int { return strings.Compare(a.field, b.field) })
	return uses
}

// specNames returns the names sp's knobs are checked against (see CheckKnobNames); nil
// when they cannot be checked before the run.
func specNames(ctx context.Context, sb *cluster.Store, sp topology.Spec) *knob.Names {
	switch {
	case sp.Cluster != "":
		if sb == nil {
			return nil
		}
		c, err := sb.Load(sp.Cluster)
		if err != nil || len(c.Nodes) == 0 {
			return nil
		}
		db, err := c.OpenAdmin(c.Nodes[0])
		if err != nil {
			return nil
		}
		defer db.Close()
		return serverNames(ctx, db, fmt.Sprintf("cluster %s node %s", sp.Cluster, c.Nodes[0].Name))
	case !scenario.Deploys(sp):
		nodes, err := cluster.ExistingNodes(sp)
		if err != nil || len(nodes) == 0 {
			return nil
		}
		db, err := sql.Open("mysql", nodes[0].DSN())
		if err != nil {
			return nil
		}
		defer db.Close()
		return serverNames(ctx, db, "node n1 ("+cluster.RedactDSN(sp.DSNs[0])+")")
	}
	bins, err := sb.SpecBinaries(ctx, sp)
	if err != nil {
		return nil
	}
	caps := bins.Caps()
	n, ok := knob.ListedNames(caps.Flavor, caps.Version, sp.Is(topology.Galera))
	if !ok {
		return nil
	}
	return n
}

// serverNames is knob.ServerNames with a timeout; nil when the server cannot be asked.
func serverNames(ctx context.Context, db *sql.DB, source string) *knob.Names {
	qctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	n, err := knob.ServerNames(qctx, db, source)
	if err != nil {
		return nil
	}
	return n
}
