package cluster

// The plan runner: a topology's bootstrap steps (topology.Plan) run in order over admin
// connections, the same for every provider that deploys servers; only how a step starts
// its node differs (a stepStarter: the local sandbox's startStepNode, the hosts
// provider's startHostStepNode).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/habench/habench/topology"
)

// stepStarter starts node n for a plan step that starts it (topology.Step.Start), with
// the plan's StartArgs, records it in the state file, and returns once it accepts
// connections: the one part of running a plan that depends on where the servers run.
type stepStarter func(ctx context.Context, c *Cluster, plan topology.Plan, n *Node) error

// runPlanWith executes the bootstrap steps in order over admin connections (c.OpenAdmin,
// so over whatever c's provider gives), starting nodes with start. A step on a node of up
// (servers launched before the plan; nil when none are pending) first waits until that
// server accepts connections.
func (s *Store) runPlanWith(ctx context.Context, c *Cluster, plan topology.Plan, start stepStarter, up *launched) (rerr error) {
	var bg background
	defer func() { rerr = errors.Join(rerr, bg.wait()) }()
	for _, st := range plan.Steps {
		if err := up.await(st.Node); err != nil {
			return err
		}
		if st.Background {
			if err := s.startBackground(ctx, c, st, &bg); err != nil {
				return err
			}
			continue
		}
		if err := s.runStep(ctx, c, plan, st, start); err != nil {
			return err
		}
	}
	return nil
}

// runStep runs one plan step: it starts the step's node when the step says so, runs its
// statements over an admin connection, then waits for its condition (s.ReadyTimeout).
func (s *Store) runStep(ctx context.Context, c *Cluster, plan topology.Plan, st topology.Step, start stepStarter) error {
	caps := c.Binaries.Caps()
	n := c.Node(st.Node)
	if st.Start {
		if err := start(ctx, c, plan, n); err != nil {
			return err
		}
		s.log().Debug("server up", "node", n.Name, "step", st.Desc)
	}
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	err = func() error {
		defer db.Close()
		// A server that has just started (a Galera joiner during its state transfer) can
		// drop the first connection: retried for up to 10 s.
		var conn *sql.Conn
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			conn, err = db.Conn(ctx)
			if err == nil || !(errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn)) || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		defer conn.Close()
		for _, q := range st.SQL {
			if _, err := conn.ExecContext(ctx, q); err != nil && !ignoredError(err, st.IgnoreErrors) {
				return fmt.Errorf("node %s: %s: %s: %w", n.Name, st.Desc, redact(q), err)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, s.ReadyTimeout)
		defer cancel()
		switch st.Wait {
		case topology.WaitReplicaRunning:
			return waitReplicaRunning(wctx, db, caps, n.Name)
		case topology.WaitSemiSyncReady:
			return waitSemiSyncClients(wctx, db, caps, max(st.Replicas, c.Spec.SemiSync.WaitForReplicas), n.Name)
		case topology.WaitGroupOnline:
			return waitGroupOnline(wctx, db, n.Name)
		case topology.WaitSynced:
			if err := waitSynced(wctx, c, db, n, st.ClusterSize); err != nil || st.ClusterSize < 2 {
				return err
			}
			return waitApplied(wctx, c, db, n)
		}
		return nil
	}()
	if err != nil {
		return err
	}
	s.log().Debug("step done", "node", n.Name, "step", st.Desc)
	return nil
}

// redact hides passwords in SQL for error messages.
func redact(q string) string {
	for _, k := range []string{"PASSWORD=", "IDENTIFIED BY "} {
		if i := strings.Index(q, k); i >= 0 {
			j := strings.IndexAny(q[i+len(k)+1:], "'")
			if j >= 0 {
				q = q[:i+len(k)] + "'***'" + q[i+len(k)+j+2:]
			}
		}
	}
	return q
}
