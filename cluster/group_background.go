package cluster

// Background plan steps: a group member's START GROUP_REPLICATION runs on a connection of
// its own while the deploy waits for the member to be ONLINE (topology.Step.Background).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/habench/habench/topology"
)

// background tracks the statements of Background steps still running.
type background struct {
	steps []*bgStep
}

type bgStep struct {
	done     chan error
	reported bool // its error was already returned by startBackground
}

// stmtError is a background statement's failure, as the cause of its wait's context.
type stmtError struct{ error }

// wait waits for every background step's statements and joins the errors not reported
// yet. A join's START GROUP_REPLICATION returns about 1 s after its member is ONLINE
// (0.97 s of a 5.4 s group deploy, make bench-deploy), and the deploy waits for it: until
// it returns, the member refuses some Group Replication settings (error 3724, "cannot be
// set while START or STOP GROUP_REPLICATION is ongoing"), which a knob applied right after
// the deploy hit when the deploy returned earlier.
func (b *background) wait() error {
	var errs []error
	for _, st := range b.steps {
		if err := <-st.done; !st.reported {
			errs = append(errs, err)
		}
	}
	b.steps = nil
	return errors.Join(errs...)
}

// startBackground runs st's statements on their own connection in a goroutine (see
// topology.Step.Background) and waits for st.Wait (only topology.WaitGroupOnline), ending
// the wait early with the statements' error when they fail.
func (s *Store) startBackground(ctx context.Context, c *Cluster, st topology.Step, bg *background) error {
	n := c.Node(st.Node)
	if st.Wait != topology.WaitGroupOnline {
		return fmt.Errorf("node %s: %s: a background step needs wait %q, not %q", n.Name, st.Desc, topology.WaitGroupOnline, st.Wait)
	}
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	step := &bgStep{done: make(chan error, 1)}
	bg.steps = append(bg.steps, step)
	go func() {
		var err error
		for _, q := range st.SQL {
			// ctx, not wctx: the statement must go on after the wait is over.
			if _, e := conn.ExecContext(ctx, q); e != nil && !ignoredError(e, st.IgnoreErrors) {
				// The server's own reason is in its error log ("see more details on error log").
				err = fmt.Errorf("node %s: %s: %s: %w; error log: %s", n.Name, st.Desc, redact(q), e, errorLines(readFile(filepath.Join(n.Dir, "error.log"))))
				cancel(stmtError{err})
				break
			}
		}
		conn.Close()
		db.Close()
		step.done <- err
	}()
	tctx, tcancel := context.WithTimeout(wctx, s.ReadyTimeout)
	defer tcancel()
	wdb, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer wdb.Close()
	if err := waitGroupOnline(tctx, wdb, n.Name); err != nil {
		var se stmtError
		if errors.As(context.Cause(wctx), &se) {
			step.reported = true
			return se.error
		}
		return err
	}
	s.log().Debug("step done (statements still running)", "node", n.Name, "step", st.Desc)
	return nil
}
