package sampler

import (
	"context"
	"sync"
	"time"
)

// Metric names this sampler emits (Sample.Metric; see Metrics and docs/results.md).
const (
	// MetricGRMajorityState: the member's state as the group's majority reports it.
	MetricGRMajorityState = "gr_majority_state"
	// MetricGRMajorityRole: the member's role as the group's majority reports it.
	MetricGRMajorityRole = "gr_majority_role"
)

// The majority's view of a group (gr_majority_state, gr_majority_role): a member cut off
// in a minority keeps calling itself ONLINE and, an old primary, PRIMARY, until it learns
// it was expelled (about a minute later). What the group says of it is what the members
// that see a majority ONLINE report, read from every member once per tick.

// memberView is one member's performance_schema.replication_group_members.
type memberView struct {
	self string               // its @@server_uuid
	rows map[string]viewState // MEMBER_ID -> state and role
}

type viewState struct{ state, role string }

// viewQuery reads a member's @@server_uuid and every row of its view (one row with empty
// member columns when the view is empty).
const viewQuery = `SELECT @@server_uuid, COALESCE(m.MEMBER_ID, ''), COALESCE(m.MEMBER_STATE, ''), COALESCE(m.MEMBER_ROLE, '')
 FROM (SELECT 1) AS d LEFT JOIN performance_schema.replication_group_members AS m ON TRUE`

// readView reads member n's view.
func readView(ctx context.Context, n Node) (memberView, error) {
	rows, err := n.DB.QueryContext(ctx, viewQuery)
	if err != nil {
		return memberView{}, err
	}
	defer rows.Close()
	v := memberView{rows: map[string]viewState{}}
	for rows.Next() {
		var id string
		var st viewState
		if err := rows.Scan(&v.self, &id, &st.state, &st.role); err != nil {
			return memberView{}, err
		}
		if id != "" {
			v.rows[id] = st
		}
	}
	return v, rows.Err()
}

// readViews reads the views of every member among nodes at once; members that fail (down,
// cut off, past ctx) are missing.
func readViews(ctx context.Context, nodes []Node, member func(Node) bool) map[string]memberView {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]memberView{}
	for _, n := range nodes {
		if !member(n) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := readView(ctx, n); err == nil {
				mu.Lock()
				out[n.Name] = v
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// hasMajority reports whether the view is a majority's: its own row is ONLINE and more
// than half of its rows are ONLINE (a member cut off sees the others UNREACHABLE; one in
// ERROR or OFFLINE lists only itself, not ONLINE).
func (v memberView) hasMajority() bool {
	if v.rows[v.self].state != "ONLINE" {
		return false
	}
	online := 0
	for _, r := range v.rows {
		if r.state == "ONLINE" {
			online++
		}
	}
	return 2*online > len(v.rows)
}

// majorityState is a member's state and role in the majority's view: MEMBER_STATE, or
// notInGroup when the majority's view has no row for it (expelled, left, not joined), and
// MEMBER_ROLE ("" unless ONLINE).
const notInGroup = "NOT_IN_GROUP"

// confirmed reports whether every member ONLINE in view v that was read (views, by its
// uuid) lists v's member in its own view too. An expelled member that has not learnt it
// yet keeps the old membership and, once the partition heals, sees every old member
// ONLINE: a "majority" the others' views (without it) contradict.
func (v memberView) confirmed(byUUID map[string]memberView) bool {
	for id, r := range v.rows {
		if id == v.self || r.state != "ONLINE" {
			continue
		}
		if other, read := byUUID[id]; read {
			if _, lists := other.rows[v.self]; !lists {
				return false
			}
		}
	}
	return true
}

// majorityOf returns, for every node whose @@server_uuid is known (uuids: node -> uuid),
// its state and role in the view of the first member in order that sees a majority
// ONLINE, confirmed by the views of those members. Nothing when no readable member does
// (no group to speak for it).
func majorityOf(views map[string]memberView, order []string, uuids map[string]string) map[string]viewState {
	byUUID := map[string]memberView{}
	for _, v := range views {
		byUUID[v.self] = v
	}
	var maj *memberView
	for _, n := range order {
		if v, ok := views[n]; ok && v.hasMajority() && v.confirmed(byUUID) {
			maj = &v
			break
		}
	}
	if maj == nil {
		return nil
	}
	out := map[string]viewState{}
	for node, id := range uuids {
		st, ok := maj.rows[id]
		switch {
		case !ok:
			st = viewState{state: notInGroup}
		case st.state != "ONLINE":
			st.role = ""
		}
		out[node] = st
	}
	return out
}

// majorityStateCode are gr_majority_state's values: gr_member_state's, and 5 for a member
// the majority's view does not list.
var majorityStateCode = map[string]float64{"OFFLINE": 0, "ONLINE": 1, "RECOVERING": 2, "UNREACHABLE": 3, "ERROR": 4, notInGroup: 5}

// majoritySamples returns member n's gr_majority_state and gr_majority_role in tick t
// (nothing without a tick, when no member sees a majority or n's uuid was never read).
// The views are read once per tick for every member (Tick.Once), under a deadline shortly
// before ctx's so that a member that does not answer leaves time for the callers.
func (g *Group) majoritySamples(ctx context.Context, t *Tick, n Node) []Sample {
	if t == nil {
		return nil
	}
	views, err := onceTyped(ctx, t, "group.views", func() (map[string]memberView, error) {
		vctx := ctx
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) > 300*time.Millisecond {
			var cancel context.CancelFunc
			vctx, cancel = context.WithDeadline(ctx, dl.Add(-150*time.Millisecond))
			defer cancel()
		}
		return readViews(vctx, t.Nodes, g.Supports), nil
	})
	if err != nil {
		return nil
	}
	var order []string
	for _, m := range t.Nodes {
		order = append(order, m.Name)
	}
	g.mu.Lock()
	for name, v := range views {
		g.uuids[name] = v.self
	}
	uuids := make(map[string]string, len(g.uuids))
	for k, v := range g.uuids {
		uuids[k] = v
	}
	g.mu.Unlock()
	st, ok := majorityOf(views, order, uuids)[n.Name]
	if !ok {
		return nil
	}
	code, known := majorityStateCode[st.state]
	if !known {
		return nil
	}
	return []Sample{{Metric: MetricGRMajorityState, Value: code}, {Metric: MetricGRMajorityRole, Value: memberRoleCode[st.role]}}
}
