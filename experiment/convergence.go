package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/habench/habench/schema"
	"sort"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
)

// memberWord is how a topology calls its non-writer nodes.
func memberWord(k topology.Kind) string { return topology.KindOf(k).MemberWord }

// convergenceProblems describes every node of cv that did not converge, in the
// topology's own terms, e.g. "replica n2 is down (connection refused); replica n3 is
// behind (applier stopped: ...)"; "" when all converged. skipDown leaves out nodes that
// are down on purpose (a fault).
func convergenceProblems(cv *schema.Convergence, k topology.Kind, skipDown map[string]bool) string {
	return convergenceProblemsAfter(cv, k, skipDown, nil, nil)
}

// convergenceProblemsAfter is convergenceProblems for a run with faults (on samples.csv's clock) whose nodes
// started with startRoles: a node one of the faults left down is "down (killed by the
// run's fault at 3.0 s)", and called "old source n1" when it was the writer at the start
// and is no longer.
func convergenceProblemsAfter(cv *schema.Convergence, k topology.Kind, skipDown map[string]bool, faults []schema.RunFault, startRoles map[string]string) string {
	var ps []string
	for _, n := range cv.Nodes {
		who := memberWord(k) + " " + n.Node
		if n.Node == cv.Writer {
			who = "writer " + n.Node
		}
		switch n.State {
		case schema.Converged:
		case schema.Down:
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
			ps = append(ps, fmt.Sprintf("%s is down (%s by the run's fault at %.1f s)", who, scenario.FaultPast(f.Action), f.AtS))
		case schema.Behind:
			ps = append(ps, fmt.Sprintf("%s is behind (%s)", who, n.Reason))
		case schema.Diverged:
			ps = append(ps, fmt.Sprintf("%s has the writer's GTID position but different rows in %s (CHECKSUM TABLE)", who, strings.Join(n.Tables, ", ")))
		}
	}
	return strings.Join(ps, "; ")
}

// checkConvergence waits up to timeout for every node to reach the writer's GTID
// position, giving up on a node that stays unreachable for 3 s (Down) or keeps saying for
// stuckGrace that it cannot catch up by itself (Behind: an async replica whose applier or
// receiver stopped with an error, a group member OFFLINE, a Galera node outside the
// Primary component; a member
// RECOVERING or in ERROR, which may auto-rejoin, is waited for until it is ONLINE); then compares CHECKSUM TABLE of sbtest1..tables in database db on every
// node at the writer's position with the writer's. The writer is the node that takes
// writes when the run ends (a group's current PRIMARY).
func checkConvergence(ctx context.Context, c *cluster.Cluster, nodes []sampler.Node, db string, tables int, timeout time.Duration) *schema.Convergence {
	start := time.Now()
	cr := &convergenceRun{c: c, nodes: nodes, writer: referenceWriter(ctx, c), timeout: timeout,
		state: map[string]*schema.NodeConvergence{}, failingSince: map[string]time.Time{}, settling: map[string]bool{},
		stuckSince: map[string]time.Time{}, lastStuck: map[string]string{}}
	for _, n := range nodes {
		cr.state[n.Name] = &schema.NodeConvergence{Node: n.Name}
	}
	cv := &schema.Convergence{Writer: cr.writer}
	cr.waitForPositions(ctx)
	cr.settleLeftBehind()
	cv.CheckedTables = cr.compareChecksums(ctx, db, tables)
	for _, n := range nodes {
		nc := cr.state[n.Name]
		if !settled(nc) {
			nc.State = schema.Converged
		}
		cv.Nodes = append(cv.Nodes, *nc)
	}
	cv.TookS = time.Since(start).Seconds()
	return cv
}

// referenceWriter is the node the others are compared with: the writer when the run
// ends, unless it is known not to run (killed by a fault): then the first running
// writable node (Galera, a group), else the first running node. A provider that does not
// run the servers never knows a node is down (cluster.Cluster.NodeDown).
func referenceWriter(ctx context.Context, c *cluster.Cluster) string {
	writer := c.WriterNow(ctx).Name
	if w := c.Node(writer); w == nil || !c.NodeDown(w) {
		return writer
	}
	for _, n := range c.Nodes {
		if !c.NodeDown(n) && n.Role.Writable() {
			return n.Name
		}
	}
	for _, n := range c.Nodes {
		if !c.NodeDown(n) {
			return n.Name
		}
	}
	return c.Writer().Name
}

// convergenceRun is one checkConvergence: each node's state so far (State "" while it is
// not settled), since when a node has failed to answer, and which nodes are settling
// (RECOVERING or ERROR in their group: waited for).
type convergenceRun struct {
	c            *cluster.Cluster
	nodes        []sampler.Node
	writer       string
	timeout      time.Duration
	state        map[string]*schema.NodeConvergence
	failingSince map[string]time.Time
	settling     map[string]bool
	stuckSince   map[string]time.Time // since when a node has said it cannot catch up
	lastStuck    map[string]string    // why, while it is given stuckGrace
}

// stuckGrace is how long a node must keep saying it cannot catch up by itself before it
// is Behind: right after a heal a Galera node can be outside the Primary component for a
// moment while the components merge (CI-like run AG: n2 and n3 "non-Primary" right after
// n3's partition healed), as a replica's applier error or a member's OFFLINE can be a
// passing state too.
const stuckGrace = 10 * time.Second

// settled: the node's state is decided (Down, Behind, Diverged).
func settled(n *schema.NodeConvergence) bool { return n.State != "" }

// waitForPositions polls every unsettled node every 200 ms until each has the writer's
// position and is not settling, the timeout passes or ctx ends. A node failing to answer
// for 3 s is Down, one that cannot catch up by itself Behind; with the writer Down,
// every other node is Behind (nothing to catch up with).
func (cr *convergenceRun) waitForPositions(ctx context.Context) {
	deadline := time.Now().Add(cr.timeout)
	for {
		wpos := cr.probeAll(ctx)
		if w := cr.state[cr.writer]; w != nil && w.State == schema.Down {
			// No reference: every node that still answers is compared by checksum only.
			for _, nc := range cr.state {
				if !settled(nc) {
					nc.State, nc.Reason = schema.Behind, "the writer "+cr.writer+" is down: nothing to catch up with"
				}
			}
		}
		if cr.allAt(wpos) || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// probeAll probes every unsettled node once and returns the writer's position ("" when
// the writer did not answer this round).
func (cr *convergenceRun) probeAll(ctx context.Context) string {
	var wpos string
	for _, n := range cr.nodes {
		nc := cr.state[n.Name]
		if settled(nc) {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		pos, stuck, settle, err := probeNode(qctx, cr.c, n)
		cancel()
		if err != nil {
			if cr.failingSince[n.Name].IsZero() {
				cr.failingSince[n.Name] = time.Now()
			} else if time.Since(cr.failingSince[n.Name]) > 3*time.Second {
				nc.State, nc.Reason = schema.Down, shortErr(err)
			}
			continue
		}
		delete(cr.failingSince, n.Name)
		nc.Position = pos
		cr.settling[n.Name] = settle
		cr.stuck(n.Name, nc, stuck)
		if n.Name == cr.writer {
			wpos = pos
		}
	}
	return wpos
}

// stuck records why node nc cannot catch up by itself (stuck, "" when it can): Behind
// once it has said so for stuckGrace without a break, settling until then. The writer is
// never Behind.
func (cr *convergenceRun) stuck(name string, nc *schema.NodeConvergence, stuck string) {
	if stuck == "" || name == cr.writer {
		delete(cr.stuckSince, name)
		delete(cr.lastStuck, name)
		return
	}
	since, ok := cr.stuckSince[name]
	if !ok {
		since = time.Now()
		cr.stuckSince[name] = since
	}
	if time.Since(since) >= stuckGrace {
		nc.State, nc.Reason = schema.Behind, stuck
		return
	}
	cr.settling[name] = true
	cr.lastStuck[name] = stuck
}

// allAt: every unsettled node other than the writer is at wpos and not settling.
func (cr *convergenceRun) allAt(wpos string) bool {
	for _, n := range cr.nodes {
		nc := cr.state[n.Name]
		if settled(nc) || n.Name == cr.writer {
			continue
		}
		if wpos == "" || nc.Position != wpos || cr.settling[n.Name] {
			return false
		}
	}
	return true
}

// settleLeftBehind marks Behind the nodes the wait left short of the writer's position,
// or still settling, with the timeout in the reason.
func (cr *convergenceRun) settleLeftBehind() {
	w := cr.state[cr.writer]
	for _, n := range cr.nodes {
		nc := cr.state[n.Name]
		if settled(nc) {
			continue
		}
		if why := cr.lastStuck[n.Name]; why != "" {
			nc.State, nc.Reason = schema.Behind, why
			continue
		}
		if n.Name != cr.writer && (w == nil || nc.Position != w.Position) {
			wp := ""
			if w != nil {
				wp = w.Position
			}
			nc.State, nc.Reason = schema.Behind, fmt.Sprintf("at %s, the writer at %s after %v", orNone(nc.Position), orNone(wp), cr.timeout.Round(time.Second))
		} else if cr.settling[n.Name] {
			nc.State, nc.Reason = schema.Behind, fmt.Sprintf("not ONLINE in its group (RECOVERING or ERROR) after %v", cr.timeout.Round(time.Second))
		}
	}
}

// compareChecksums compares CHECKSUM TABLE of sbtest1..tables in db on every unsettled
// node (at the writer's position) with the writer's, marking Diverged the nodes whose
// tables differ; it returns how many tables the writer had (0 when the writer's own state
// is decided, e.g. Down, it has no connection, or its checksum failed).
func (cr *convergenceRun) compareChecksums(ctx context.Context, db string, tables int) int {
	var wdb *sql.DB
	for _, n := range cr.nodes {
		if n.Name == cr.writer {
			wdb = n.DB
		}
	}
	w := cr.state[cr.writer]
	if wdb == nil || w == nil || w.State != "" || tables <= 0 || ctx.Err() != nil {
		return 0
	}
	ref, err := checksums(ctx, wdb, db, tables)
	if err != nil {
		return 0
	}
	for _, n := range cr.nodes {
		nc := cr.state[n.Name]
		if settled(nc) || n.Name == cr.writer {
			continue
		}
		got, err := checksums(ctx, n.DB, db, tables)
		if err != nil {
			nc.State, nc.Reason = schema.Behind, "CHECKSUM TABLE failed: "+shortErr(err)
			continue
		}
		for _, t := range sortedKeys(ref) {
			if got[t] != ref[t] {
				nc.Tables = append(nc.Tables, t)
			}
		}
		if len(nc.Tables) > 0 {
			nc.State = schema.Diverged
		}
	}
	return len(ref)
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
