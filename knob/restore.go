package knob

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/habench/habench/cluster"
)

// Restore sets every changed knob back to its value before Apply (option files restored
// and nodes restarted for read-only knobs, first), reads every value back into Restored,
// and removes the pending record. Error when a value could not be set back or reads
// back different from before (the pending record then stays: habench knob restore).
func (a *Applied) Restore(ctx context.Context) error {
	if a == nil || len(a.entries) == 0 {
		return nil
	}
	defer a.closeDBs()
	if err := a.restore(ctx, true); err != nil {
		f := false
		a.restored = &f
		return err
	}
	t := true
	a.restored = &t
	a.removePending()
	return nil
}

// restore undoes the changed entries; with readBack, records and checks Restored.
func (a *Applied) restore(ctx context.Context, readBack bool) error {
	var errs []error
	for _, n := range a.c.Nodes {
		orig, ok := a.optionFiles[n.Name]
		if !ok {
			continue
		}
		if err := a.c.WriteOptionFile(n, orig); err != nil {
			errs = append(errs, fmt.Errorf("node %s: restoring its option file: %w", n.Name, err))
			continue
		}
		a.dropDB(n)
		if err := a.opt.Restarter.RestartNode(ctx, a.c, n.Name); err != nil {
			var se *cluster.StopEscalatedError
			if !errors.As(err, &se) {
				errs = append(errs, fmt.Errorf("node %s: restart with its original option file: %w", n.Name, err))
				continue
			}
			// Restored and up again, but its server crashed on the way: say so.
			a.opt.log().Warn("restoring knobs: the restart was not clean", "cluster", a.c.Name, "node", n.Name, "err", err)
		}
		delete(a.optionFiles, n.Name)
		for _, e := range a.entries {
			if e.node == n && e.t.Method == MethodRestart {
				e.changed = false
			}
		}
	}
	for i := len(a.entries) - 1; i >= 0; i-- {
		e := a.entries[i]
		if !e.changed || e.t.Method == MethodRestart {
			continue
		}
		if err := a.set(ctx, e, e.Before); err != nil {
			if isErr(err, 1238) {
				// Read only at runtime: never changed at runtime either (a run killed
				// between the refusal and its restart left it recorded as a SET GLOBAL).
				e.changed = false
				continue
			}
			errs = append(errs, fmt.Errorf("node %s: setting %s back to %s: %w", e.Node, e.t.Label(), e.Before, err))
			continue
		}
		e.changed = false
	}
	if readBack {
		for _, e := range a.entries {
			db, err := a.db(e.node)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			v, _, err := read(rctx, db, e.t)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("node %s: reading %s after restoring: %w", e.Node, e.t.Label(), err))
				continue
			}
			e.Restored = &v
			if !Same(e.Before, v) {
				errs = append(errs, fmt.Errorf("node %s: %s is %s after restoring, was %s", e.Node, e.t.Label(), v, e.Before))
			}
		}
	}
	if len(errs) == 0 {
		a.removePending()
	}
	return errors.Join(errs...)
}
