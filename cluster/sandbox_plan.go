package cluster

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

// runPlan executes the bootstrap steps in order over the admin sockets.
func (s *Sandbox) runPlan(ctx context.Context, c *Cluster, plan topology.Plan) error {
	return s.runPlanWith(ctx, c, plan, s.startStepNode)
}

// stepStarter starts node n for a plan step that starts it (topology.Step.Start), with
// the plan's StartArgs, records it in the state file, and returns once it accepts
// connections: the one part of running a plan that depends on where the servers run.
type stepStarter func(ctx context.Context, c *Cluster, plan topology.Plan, n *Node) error

// runPlanWith executes the bootstrap steps in order over admin connections (c.OpenAdmin,
// so over whatever c's provider gives), starting nodes with start.
func (s *Sandbox) runPlanWith(ctx context.Context, c *Cluster, plan topology.Plan, start stepStarter) (rerr error) {
	var bg background
	defer func() { rerr = errors.Join(rerr, bg.wait()) }()
	for _, st := range plan.Steps {
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
func (s *Sandbox) runStep(ctx context.Context, c *Cluster, plan topology.Plan, st topology.Step, start stepStarter) error {
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
			return waitSynced(wctx, c, db, n, st.ClusterSize)
		}
		return nil
	}()
	if err != nil {
		return err
	}
	s.log().Debug("step done", "node", n.Name, "step", st.Desc)
	return nil
}

// startStepNode starts node n for a plan step (with its plan's StartArgs) and records its
// PID in the state file at once. A server that refuses an option is a *topology.FieldError.
func (s *Sandbox) startStepNode(ctx context.Context, c *Cluster, plan topology.Plan, n *Node) error {
	err := s.startNode(ctx, c, n, plan.StartArgs(n.Name)...)
	if serr := c.save(); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// ReplicaStatus reads SHOW REPLICA|SLAVE STATUS into a column->value map (nil, nil when
// the node is not a replica).
func ReplicaStatus(ctx context.Context, db *sql.DB, caps topology.Capabilities) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, caps.ShowReplicaStatus())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(cols))
	for i, c := range cols {
		m[c] = vals[i].String
	}
	return m, rows.Err()
}

func waitReplicaRunning(ctx context.Context, db *sql.DB, caps topology.Capabilities, node string) error {
	var last map[string]string
	start := time.Now()
	for {
		st, err := ReplicaStatus(ctx, db, caps)
		if err == nil && st != nil {
			last = st
			io, sqlr := st[caps.ReplicaStatusColumn("io_running")], st[caps.ReplicaStatusColumn("sql_running")]
			if io == "Yes" && sqlr == "Yes" {
				return nil
			}
			// A thread that stopped with an error will not recover by waiting
			// ("Connecting" is a retry in progress and may).
			if e := st[caps.ReplicaStatusColumn("last_io_error")]; io == "No" && e != "" {
				return fmt.Errorf("node %s: replica receiver stopped: %s", node, e)
			}
			if e := st[caps.ReplicaStatusColumn("last_sql_error")]; sqlr == "No" && e != "" {
				return fmt.Errorf("node %s: replica applier stopped: %s", node, e)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: replica threads not running after %v (io=%q sql=%q io_error=%q sql_error=%q)", node, waited(start),
				last[caps.ReplicaStatusColumn("io_running")], last[caps.ReplicaStatusColumn("sql_running")],
				last[caps.ReplicaStatusColumn("last_io_error")], last[caps.ReplicaStatusColumn("last_sql_error")])
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func waitSemiSyncClients(ctx context.Context, db *sql.DB, caps topology.Capabilities, want int, node string) error {
	v := caps.SemiSyncNames()
	var name string
	var n int
	start := time.Now()
	for {
		err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v.StatusPrefix+"clients'").Scan(&name, &n)
		if err == nil && n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: %d semi-sync replicas connected after %v, want %d (last error: %v)", node, n, waited(start), want, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
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
