package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
)

// memberWord is how a topology calls its non-writer nodes.
func memberWord(k topology.Kind) string { return topology.KindOf(k).MemberWord }

// convergenceProblems describes every node of cv that did not converge, in the
// topology's own terms, e.g. "replica n2 is down (connection refused); replica n3 is
// behind (applier stopped: ...)"; "" when all converged. skipDown leaves out nodes that
// are down on purpose (a fault).
func convergenceProblems(cv *Convergence, k topology.Kind, skipDown map[string]bool) string {
	return convergenceProblemsAfter(cv, k, skipDown, nil, nil)
}

// convergenceProblemsAfter is convergenceProblems for a run with faults (on samples.csv's clock) whose nodes
// started with startRoles: a node one of the faults left down is "down (killed by the
// run's fault at 3.0 s)", and called "old source n1" when it was the writer at the start
// and is no longer.
func convergenceProblemsAfter(cv *Convergence, k topology.Kind, skipDown map[string]bool, faults []RunFault, startRoles map[string]string) string {
	var ps []string
	for _, n := range cv.Nodes {
		who := memberWord(k) + " " + n.Node
		if n.Node == cv.Writer {
			who = "writer " + n.Node
		}
		switch n.State {
		case Converged:
		case Down:
			if skipDown[n.Node] {
				continue
			}
			f := downFault(faults, n.Node)
			if f == nil {
				ps = append(ps, fmt.Sprintf("%s is down (%s)", who, n.Reason))
				continue
			}
			if r := topology.Role(startRoles[n.Node]); n.Node != cv.Writer && (r == topology.RoleSource || r == topology.RolePrimary) {
				who = "old " + string(r) + " " + n.Node
			}
			verb := map[string]string{"kill": "killed", "stop": "stopped"}[f.Action]
			ps = append(ps, fmt.Sprintf("%s is down (%s by the run's fault at %.1f s)", who, verb, f.AtS))
		case Behind:
			ps = append(ps, fmt.Sprintf("%s is behind (%s)", who, n.Reason))
		case Diverged:
			ps = append(ps, fmt.Sprintf("%s has the writer's GTID position but different rows in %s (CHECKSUM TABLE)", who, strings.Join(n.Tables, ", ")))
		}
	}
	return strings.Join(ps, "; ")
}

// checkConvergence waits up to timeout for every node to reach the writer's GTID
// position, giving up at once on a node that stays unreachable for 3 s (Down) or cannot
// catch up by itself (Behind: an async replica whose applier or receiver stopped with an
// error, a group member OFFLINE, a Galera node outside the Primary component; a member
// RECOVERING or in ERROR, which may auto-rejoin, is waited for until it is ONLINE); then compares CHECKSUM TABLE of sbtest1..tables in database db on every
// node at the writer's position with the writer's. The writer is the node that takes
// writes when the run ends (a group's current PRIMARY).
func checkConvergence(ctx context.Context, c *cluster.Cluster, nodes []sampler.Node, db string, tables int, timeout time.Duration) *Convergence {
	start := time.Now()
	writer := c.WriterNow(ctx).Name
	// A writer known not to run (killed by a fault) is no reference: the first running
	// writable node (Galera, a group), else the first running node. A provider that does
	// not run the servers never knows a node is down (cluster.Cluster.NodeDown).
	if w := c.Node(writer); w != nil && c.NodeDown(w) {
		writer = ""
		for _, n := range c.Nodes {
			if !c.NodeDown(n) && n.Role.Writable() && writer == "" {
				writer = n.Name
			}
		}
		for _, n := range c.Nodes {
			if !c.NodeDown(n) && writer == "" {
				writer = n.Name
			}
		}
		if writer == "" {
			writer = c.Writer().Name
		}
	}
	cv := &Convergence{Writer: writer}
	state := map[string]*NodeConvergence{}
	failingSince := map[string]time.Time{}
	settling := map[string]bool{}
	var wdb *sql.DB
	for _, n := range nodes {
		state[n.Name] = &NodeConvergence{Node: n.Name}
		if n.Name == writer {
			wdb = n.DB
		}
	}
	settled := func(n *NodeConvergence) bool { return n.State != "" }
	deadline := time.Now().Add(timeout)
	for {
		var wpos string
		for _, n := range nodes {
			nc := state[n.Name]
			if settled(nc) {
				continue
			}
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			pos, stuck, settle, err := probeNode(qctx, c, n)
			cancel()
			if err != nil {
				if failingSince[n.Name].IsZero() {
					failingSince[n.Name] = time.Now()
				} else if time.Since(failingSince[n.Name]) > 3*time.Second {
					nc.State, nc.Reason = Down, shortErr(err)
				}
				continue
			}
			delete(failingSince, n.Name)
			nc.Position = pos
			settling[n.Name] = settle
			if stuck != "" && n.Name != writer {
				nc.State, nc.Reason = Behind, stuck
			}
			if n.Name == writer {
				wpos = pos
			}
		}
		w := state[writer]
		if w != nil && w.State == Down {
			// No reference: every node that still answers is compared by checksum only.
			for _, nc := range state {
				if !settled(nc) {
					nc.State, nc.Reason = Behind, "the writer "+writer+" is down: nothing to catch up with"
				}
			}
		}
		all := true
		for _, n := range nodes {
			nc := state[n.Name]
			if settled(nc) || n.Name == writer {
				continue
			}
			if wpos == "" || nc.Position != wpos || settling[n.Name] {
				all = false
			}
		}
		if all || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	w := state[writer]
	for _, n := range nodes {
		nc := state[n.Name]
		if settled(nc) {
			continue
		}
		if n.Name != writer && (w == nil || nc.Position != w.Position) {
			nc.State, nc.Reason = Behind, fmt.Sprintf("at %s, the writer at %s after %v", orNone(nc.Position), orNone(w.Position), timeout.Round(time.Second))
		} else if settling[n.Name] {
			nc.State, nc.Reason = Behind, fmt.Sprintf("not ONLINE in its group (RECOVERING or ERROR) after %v", timeout.Round(time.Second))
		}
	}
	// Checksums of every node at the writer's position (and of the writer).
	if wdb != nil && w != nil && w.State == "" && tables > 0 && ctx.Err() == nil {
		ref, err := checksums(ctx, wdb, db, tables)
		if err == nil {
			cv.CheckedTables = len(ref)
			for _, n := range nodes {
				nc := state[n.Name]
				if settled(nc) || n.Name == writer {
					continue
				}
				got, err := checksums(ctx, n.DB, db, tables)
				if err != nil {
					nc.State, nc.Reason = Behind, "CHECKSUM TABLE failed: "+shortErr(err)
					continue
				}
				for _, t := range sortedKeys(ref) {
					if got[t] != ref[t] {
						nc.Tables = append(nc.Tables, t)
					}
				}
				if len(nc.Tables) > 0 {
					nc.State = Diverged
				}
			}
		}
	}
	for _, n := range nodes {
		nc := state[n.Name]
		if !settled(nc) {
			nc.State = Converged
		}
		cv.Nodes = append(cv.Nodes, *nc)
	}
	cv.TookS = time.Since(start).Seconds()
	return cv
}

// probeNode reads a node's position and whether it cannot catch up by itself ("" when
// it can): an async/semi-sync replica whose receiver or applier stopped with an error,
// a group member in ERROR or OFFLINE, a Galera node outside the Primary component.
func probeNode(ctx context.Context, c *cluster.Cluster, n sampler.Node) (pos, stuck string, settling bool, err error) {
	pos, err = consistencyPosition(ctx, c, n.DB)
	if err != nil {
		return "", "", false, err
	}
	if cn := c.Node(n.Name); cn != nil {
		stuck, settling = c.NodeStuck(ctx, cn, n.DB)
	}
	return pos, stuck, settling, nil
}

// checksums returns CHECKSUM TABLE of sbtest1..tables in db (table name -> checksum;
// a missing table has no entry).
func checksums(ctx context.Context, db *sql.DB, schema string, tables int) (map[string]string, error) {
	var names []string
	for i := 1; i <= tables; i++ {
		names = append(names, fmt.Sprintf("`%s`.sbtest%d", strings.ReplaceAll(schema, "`", "``"), i))
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rows, err := db.QueryContext(qctx, "CHECKSUM TABLE "+strings.Join(names, ", "))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name string
		var sum sql.NullString
		if err := rows.Scan(&name, &sum); err != nil {
			return nil, err
		}
		if sum.Valid {
			out[name[strings.LastIndexByte(name, '.')+1:]] = sum.String
		}
	}
	return out, rows.Err()
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// shortErr is the first line of err.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
