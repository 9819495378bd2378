package checker

import (
	"cmp"
	"slices"

	"github.com/habench/habench/history"
)

// CheckListAppendRealtime is CheckListAppend under strict serializability: besides
// CheckListAppend's anomalies, a transaction acknowledged before another began must
// precede it (a realtime edge), so a cycle that needs such an edge is an anomaly too, of
// type "G0-realtime", "G1c-realtime", "G-single-realtime" (a stale read: a transaction
// that began after an append was acknowledged read the list without it) or
// "G2-item-realtime", one per strongly connected component, with the operations of its
// shortest cycle found, as Elle reports them for strict serializability; a component that
// holds cycles of CheckListAppend's too has one when a realtime edge joins two operations
// no such cycle joins (realtimeBeside). Start and End of ok operations give the realtime order (Start
// is the intended start, never later than the real one: no false edge); operations of
// unknown outcome or failed get no realtime edges.
func CheckListAppendRealtime(ops []history.Op) Verdict {
	v := CheckListAppend(ops)
	if rt := indexListAppend(ops).realtimeAnomalies(); len(rt) > 0 {
		v.Anomalies = append(v.Anomalies, rt...)
		v.Valid = false
	}
	return v
}

// realtimeEdges adds to g an edge from every ok op to every ok op that began after it was
// acknowledged, transitively reduced as Elle does: when an op begins, an edge comes from
// each op of the frontier (acknowledged, and not acknowledged before another acknowledged
// op began); when an op is acknowledged, it joins the frontier and its own predecessors
// leave it (they precede it, so they precede whatever begins later through it). An op
// that begins at the instant another is acknowledged is concurrent with it.
func (ix *laIndex) realtimeEdges(g graph) {
	type event struct {
		at  int64
		op  int
		end bool
	}
	var evs []event
	for i, op := range ix.ops {
		if op.Outcome == history.OK {
			evs = append(evs, event{op.Start, i, false}, event{op.End, i, true})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if a.end != b.end { // at one instant: begins first (concurrent, no edge)
			if a.end {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.op, b.op)
	})
	var frontier []int // sorted
	preds := map[int][]int{}
	for _, e := range evs {
		if !e.end {
			preds[e.op] = slices.Clone(frontier)
			for _, f := range frontier {
				g[f] = append(g[f], dep{to: e.op, kind: depRT, a: -1, b: -1})
			}
			continue
		}
		frontier = slices.DeleteFunc(frontier, func(f int) bool { return slices.Contains(preds[e.op], f) })
		delete(preds, e.op)
		i, _ := slices.BinarySearch(frontier, e.op)
		frontier = slices.Insert(frontier, i, e.op)
	}
}

// realtimeAnomalies returns the cycles that need a realtime edge: the dependency graph
// with realtime edges, one anomaly per strongly connected component. In a component
// without a cycle of ww, wr and rw edges alone it is classified as cycleAnomalies does,
// with realtime edges allowed wherever ww and wr edges are; in one with such cycles (those
// are cycleAnomalies') it is realtimeBeside's.
func (ix *laIndex) realtimeAnomalies() []Anomaly {
	g := ix.buildGraph()
	ix.realtimeEdges(g)
	base := depWW | depWR | depRW
	all := base | depRT
	sr := newSearcher(g)
	var out []Anomaly
	for _, scc := range g.sccs(nil, all, nil) {
		sr.enter(scc)
		var typ string
		var cyc []step
		if subs := g.sccs(scc, base, sr.in); len(subs) > 0 {
			typ, cyc = sr.realtimeBeside(scc, subs)
		} else {
			typ, cyc = "G0-realtime", sr.shortestCycle(scc, depWW|depRT)
			if cyc == nil {
				typ, cyc = "G1c-realtime", sr.shortestCycle(scc, depWW|depWR|depRT)
			}
			if cyc == nil {
				typ, cyc = "G-single-realtime", sr.singleRW(scc, depWW|depWR|depRT)
			}
			if cyc == nil {
				typ, cyc = "G2-item-realtime", sr.shortestCycle(scc, all)
				if rwCount(cyc) == 1 {
					typ = "G-single-realtime"
				}
			}
		}
		sr.leave(scc)
		if cyc != nil {
			out = append(out, ix.cycleAnomaly(typ, cyc))
		}
	}
	return out
}

// realtimeBeside finds, in a component that holds the cycles of ww, wr and rw edges subs
// (its sub-components of those edges), the shortest cycle through a realtime edge that
// joins two operations no sub-component holds together (so no cycle of CheckListAppend's
// goes through both: the realtime edge is needed), from up to maxRW such edges; its type
// by its edges: G0-realtime (ww and realtime only), G1c-realtime (no rw),
// G-single-realtime (one rw), G2-item-realtime. Empty when no realtime edge qualifies.
func (sr *searcher) realtimeBeside(scc []int, subs [][]int) (string, []step) {
	sub := make(map[int]int, len(scc))
	for i, s := range subs {
		for _, n := range s {
			sub[n] = i + 1
		}
	}
	var best []step
	tries := 0
edges:
	for _, u := range scc {
		for _, d := range sr.g[u] {
			if d.kind != depRT || !sr.in[d.to] || (sub[u] != 0 && sub[u] == sub[d.to]) {
				continue
			}
			if tries == maxRW {
				break edges
			}
			tries++
			if p := sr.path(d.to, u, depWW|depWR|depRW|depRT); p != nil && (best == nil || len(p)+1 < len(best)) {
				best = append([]step{{u, d}}, p...)
			}
		}
	}
	if best == nil {
		return "", nil
	}
	kinds := uint8(0)
	for _, st := range best {
		kinds |= st.kind
	}
	switch {
	case kinds&(depWR|depRW) == 0:
		return "G0-realtime", best
	case kinds&depRW == 0:
		return "G1c-realtime", best
	case rwCount(best) == 1:
		return "G-single-realtime", best
	}
	return "G2-item-realtime", best
}
