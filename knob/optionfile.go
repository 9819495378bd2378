package knob

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// restartWith writes node n's read-only knobs into its option file and restarts it; on
// failure the original file is put back and the node started again.
func (a *Applied) restartWith(ctx context.Context, n *cluster.Node) error {
	orig, err := a.c.ReadOptionFile(n)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	var opts []topology.Option
	var names []string
	for _, e := range a.entries {
		if e.node == n && e.t.Method == MethodRestart {
			opts = append(opts, topology.Option{Name: optionName(e.t.Variable), Value: e.t.Value})
			names = append(names, e.t.Variable)
		}
	}
	a.optionFiles[n.Name] = orig
	if err := a.writePending(false); err != nil {
		return err
	}
	if err := a.c.WriteOptionFile(n, cluster.SetOptionLines(orig, opts)); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	for _, e := range a.entries {
		if e.node == n && e.t.Method == MethodRestart {
			e.changed = true
			e.Note = "read only at runtime: written into the node's option file, node restarted"
		}
	}
	a.opt.log().Info("restarting node for read-only knobs", "cluster", a.c.Name, "node", n.Name, "variables", strings.Join(names, ","))
	a.dropDB(n)
	if err := a.opt.Restarter.RestartNode(ctx, a.c, n.Name); err != nil {
		var se *cluster.StopEscalatedError
		if !errors.As(err, &se) {
			return &topology.FieldError{Field: "knob", Value: strings.Join(names, ","), Reason: fmt.Sprintf("node %s did not come back with it in its option file: %v", n.Name, err)}
		}
		// Up again with the knobs, but its server crashed on the way: the entries say so.
		a.opt.log().Warn("restarting node for read-only knobs: the restart was not clean", "cluster", a.c.Name, "node", n.Name, "err", err)
		for _, e := range a.entries {
			if e.node == n && e.t.Method == MethodRestart {
				e.Note += "; ⚠ " + err.Error()
			}
		}
	}
	return nil
}

// persist writes kept knobs into the nodes' option files (knob set; providers that offer
// cluster.OpOptionFiles), so that a node restart keeps them. Group mode is not persisted (a note says so).
func (a *Applied) persist() error {
	for _, n := range a.c.Nodes {
		var opts []topology.Option
		var provider []topology.ProviderOption
		for _, e := range a.entries {
			if e.node != n {
				continue
			}
			switch e.t.Method {
			case MethodProvider:
				provider = append(provider, topology.ProviderOption{Key: e.t.Key, Value: e.t.Value})
			case MethodGroupMode:
				if e.first {
					a.notes = append(a.notes, "group_replication_mode is not written into option files: a restarted member starts in its configured mode")
				}
			case MethodRestart:
			default:
				opts = append(opts, topology.Option{Name: optionName(e.t.Variable), Value: e.t.Value})
			}
		}
		if len(opts) == 0 && len(provider) == 0 {
			continue
		}
		content, err := a.c.ReadOptionFile(n)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		if len(provider) > 0 {
			cur, _ := cluster.OptionLineValue(content, "wsrep_provider_options")
			merged, err := topology.MergeProviderOptionString(strings.Trim(cur, `"'`), provider)
			if err != nil {
				return fmt.Errorf("node %s: option file: %w", n.Name, err)
			}
			opts = append(opts, topology.Option{Name: "wsrep_provider_options", Value: `"` + merged + `"`})
		}
		if err := a.c.WriteOptionFile(n, cluster.SetOptionLines(content, opts)); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	a.notes = append(a.notes, "also written into the nodes' option files (kept across restarts)")
	return nil
}

// optionName is how a variable is written into an option file: plugin variables
// (group_replication_*, rpl_semi_sync_*) with the loose_ prefix, so a server started
// before its plugin is loaded does not refuse to start.
func optionName(v string) string {
	if strings.HasPrefix(v, "group_replication_") || strings.HasPrefix(v, "rpl_semi_sync_") {
		return "loose_" + v
	}
	return v
}
