package knob

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// Show reads knobs (names as for --set, without values) on every node of c. Without names,
// every catalog knob of the cluster's kind that exists on these servers (unknown ones
// skipped). A variable named
// explicitly that a node cannot read shows as "(unknown: ER n)" for that node; when no node
// can read it, the values are still returned together with a *topology.FieldError naming it
// (joined, one per such name).
func Show(ctx context.Context, c *cluster.Cluster, names []string) ([]schema.KnobValue, error) {
	caps := c.Capabilities()
	explicit := len(names) > 0
	if !explicit {
		for _, e := range Catalog {
			if catalogKindApplies(e.Name, c.Spec.Kind) {
				names = append(names, e.Name)
			}
		}
	}
	a := &Applied{c: c, dbs: map[string]*sql.DB{}}
	defer a.closeDBs()
	var out []schema.KnobValue
	var unknown []error
	for _, name := range names {
		k, err := topology.ParseKnobEntry(name, "x")
		if err != nil {
			return nil, &topology.FieldError{Field: "NAME", Value: name, Reason: "not a knob name"}
		}
		t, err := resolve(topology.KnobSetting{Name: k.Name}, caps, false)
		if err != nil {
			return nil, err
		}
		read1, failed := 0, ""
		for _, n := range c.Nodes {
			if len(k.Nodes) > 0 && !k.AppliesTo(n.Name) {
				continue
			}
			db, err := a.db(n)
			if err != nil {
				return nil, err
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			v, _, err := read(rctx, db, t)
			cancel()
			if err != nil {
				if !explicit {
					continue
				}
				failed = shortErr(err)
				v = "(unknown: " + failed + ")"
			} else {
				read1++
			}
			out = append(out, schema.KnobValue{Node: n.Name, Knob: name, Variable: t.Label(), Method: string(t.Method), Effective: v})
		}
		if explicit && read1 == 0 && failed != "" {
			fe := &topology.FieldError{Field: "NAME", Value: name, Reason: "no node could read it (" + failed + ")"}
			if db, err := a.db(c.Nodes[0]); err == nil {
				_ = withSuggestion(ctx, db, &entry{KnobValue: schema.KnobValue{Node: c.Nodes[0].Name}, t: t}, fe)
			}
			unknown = append(unknown, fe)
		}
	}
	return out, errors.Join(unknown...)
}

// catalogKindApplies: Group Replication knobs are shown for groups only and Galera ones
// (wsrep_*, gcs.*) for Galera only; MariaDB has the wsrep variables on every server.
func catalogKindApplies(name string, k topology.Kind) bool {
	switch {
	case strings.HasPrefix(name, "group_replication_"):
		return k.Is(topology.Group)
	case strings.HasPrefix(name, "wsrep_"), strings.HasPrefix(name, "gcs."):
		return k.Is(topology.Galera)
	}
	return true
}

func shortErr(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return fmt.Sprintf("ER %d", me.Number)
	}
	return err.Error()
}
