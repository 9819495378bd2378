package checker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/habench/habench/history"
)

// Dependency kinds of a list-append graph's edges (bits, so a mask selects kinds).
const (
	depWW uint8 = 1 << iota // write-write: to appended the element right after from's
	depWR                   // write-read: to read a list ending with from's element
	depRW                   // read-write (anti-dependency): from read a list to whose end to appended next
	depRT                   // realtime: from was acknowledged before to began (listappend_realtime.go)
)

// dep is one edge of the dependency graph: to its op, of one kind, on key; a is from's
// element (ww) or the last element from read (rw, -1: the list was empty); b is to's
// element (ww, rw) or the last element to read (wr).
type dep struct {
	to   int
	kind uint8
	key  int64
	a, b int64
}

// graph is the dependency graph over ops: g[i] are the edges leaving ops[i].
type graph [][]dep

// buildGraph infers ww, wr and rw edges from each key's version order (its longest
// read) and the external reads of ok ops that are prefixes of it. Failed ops' elements
// get no edges (they are G1a already).
func (ix *laIndex) buildGraph() graph {
	g := make(graph, len(ix.ops))
	live := func(e elem) (int, bool) {
		ref, ok := ix.appender[e]
		return ref.op, ok && ix.ops[ref.op].Outcome != history.Fail
	}
	for key, order := range ix.order {
		for i := 1; i < len(order); i++ {
			a, okA := live(elem{key, order[i-1]})
			b, okB := live(elem{key, order[i]})
			if okA && okB && a != b {
				g[a] = append(g[a], dep{b, depWW, key, order[i-1], order[i]})
			}
		}
	}
	for _, r := range ix.reads {
		order := ix.order[r.key]
		if !r.external || !isPrefix(r.list, order) {
			continue
		}
		last := int64(-1)
		if n := len(r.list); n > 0 {
			last = r.list[n-1]
			if w, ok := live(elem{r.key, last}); ok && w != r.op {
				g[w] = append(g[w], dep{r.op, depWR, r.key, last, last})
			}
		}
		if len(r.list) < len(order) {
			next := order[len(r.list)]
			if w, ok := live(elem{r.key, next}); ok && w != r.op {
				g[r.op] = append(g[r.op], dep{w, depRW, r.key, last, next})
			}
		}
	}
	return g
}

// cycleAnomalies returns one cycle anomaly per strongly connected component of the
// dependency graph: G0, else G1c, else G-single, else G2-item, with its shortest cycle
// (shortest among the searches' bounded starts).
func (ix *laIndex) cycleAnomalies() []Anomaly {
	g := ix.buildGraph()
	all := depWW | depWR | depRW
	sr := newSearcher(g)
	var out []Anomaly
	for _, scc := range g.sccs(nil, all, nil) {
		sr.enter(scc)
		typ, cyc := "G0", sr.shortestCycle(scc, depWW)
		if cyc == nil {
			typ, cyc = "G1c", sr.shortestCycle(scc, depWW|depWR)
		}
		if cyc == nil {
			typ, cyc = "G-single", sr.singleRW(scc, depWW|depWR)
		}
		if cyc == nil {
			typ, cyc = "G2-item", sr.shortestCycle(scc, all)
			if rwCount(cyc) == 1 { // singleRW stopped at its bound before finding it
				typ = "G-single"
			}
		}
		sr.leave(scc)
		if cyc != nil {
			out = append(out, ix.cycleAnomaly(typ, cyc))
		}
	}
	return out
}

// rwCount counts the rw edges of cyc.
func rwCount(cyc []step) int {
	n := 0
	for _, st := range cyc {
		if st.kind == depRW {
			n++
		}
	}
	return n
}

// Bounds of the searches in one component: breadth-first searches a shortest cycle
// starts from, and rw edges singleRW tries.
const (
	maxStarts = 8
	maxRW     = 64
)

// step is one edge of a path with its source.
type step struct {
	from int
	dep
}

// searcher finds short cycles within one component at a time, with arrays reused
// across searches (a breadth-first search costs the nodes it visits, no allocation).
type searcher struct {
	g      graph
	in     []bool   // node is in the current component
	stamp  []uint32 // node was visited by search gen
	gen    uint32
	parent []step
	queue  []int
}

func newSearcher(g graph) *searcher {
	return &searcher{g: g, in: make([]bool, len(g)), stamp: make([]uint32, len(g)), parent: make([]step, len(g))}
}

func (sr *searcher) enter(scc []int) {
	for _, n := range scc {
		sr.in[n] = true
	}
}

func (sr *searcher) leave(scc []int) {
	for _, n := range scc {
		sr.in[n] = false
	}
}

// shortestCycle returns the shortest cycle within the component using only edges of
// the kinds in mask, nil if there is none: the components of that subgraph are found
// first, and searches start from up to maxStarts of their nodes.
func (sr *searcher) shortestCycle(scc []int, mask uint8) []step {
	var best []step
	starts := 0
	for _, sub := range sr.g.sccs(scc, mask, sr.in) {
		for _, s := range sub {
			if starts == maxStarts {
				return best
			}
			starts++
			if p := sr.path(s, s, mask); p != nil && (best == nil || len(p) < len(best)) {
				best = p
			}
		}
	}
	return best
}

// singleRW returns the shortest cycle of one rw edge and edges of the kinds in mask found
// from up to maxRW rw edges, nil if none.
func (sr *searcher) singleRW(scc []int, mask uint8) []step {
	var best []step
	tries := 0
	for _, u := range scc {
		for _, d := range sr.g[u] {
			if d.kind != depRW || !sr.in[d.to] {
				continue
			}
			if tries == maxRW {
				return best
			}
			tries++
			if p := sr.path(d.to, u, mask); p != nil && (best == nil || len(p)+1 < len(best)) {
				best = append([]step{{u, d}}, p...)
			}
		}
	}
	return best
}

// path returns the shortest path (breadth first) from s to t of at least one edge
// within the component, using edges of the kinds in mask; nil if none.
func (sr *searcher) path(s, t int, mask uint8) []step {
	sr.gen++
	sr.queue = append(sr.queue[:0], s)
	for h := 0; h < len(sr.queue); h++ {
		u := sr.queue[h]
		for _, d := range sr.g[u] {
			if d.kind&mask == 0 || !sr.in[d.to] || sr.stamp[d.to] == sr.gen {
				continue
			}
			sr.stamp[d.to] = sr.gen
			sr.parent[d.to] = step{u, d}
			if d.to == t {
				var p []step
				for n := t; ; {
					st := sr.parent[n]
					p = append([]step{st}, p...)
					if n = st.from; n == s {
						return p
					}
				}
			}
			sr.queue = append(sr.queue, d.to)
		}
	}
	return nil
}

// sccs returns the strongly connected components of two or more nodes of g's subgraph
// of the edge kinds in mask and, when in is not nil, the nodes in marks, searched from
// roots (nil: every node) (Tarjan, iterative), each sorted, ordered by their smallest
// node.
func (g graph) sccs(roots []int, mask uint8, in []bool) [][]int {
	ok := func(n int) bool { return in == nil || in[n] }
	index := make(map[int]int)
	low := make(map[int]int)
	on := make(map[int]bool)
	var stack []int
	var out [][]int
	type frame struct{ n, next int }
	if roots == nil {
		roots = make([]int, len(g))
		for i := range roots {
			roots[i] = i
		}
	}
	for _, root := range roots {
		if _, seen := index[root]; seen || !ok(root) || len(g[root]) == 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root], on[root] = len(index), len(index), true
		stack = append(stack, root)
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.next < len(g[f.n]) {
				d := g[f.n][f.next]
				f.next++
				if d.kind&mask == 0 || !ok(d.to) {
					continue
				}
				if _, seen := index[d.to]; !seen {
					index[d.to], low[d.to], on[d.to] = len(index), len(index), true
					stack = append(stack, d.to)
					call = append(call, frame{d.to, 0})
				} else if on[d.to] && index[d.to] < low[f.n] {
					low[f.n] = index[d.to]
				}
				continue
			}
			n := f.n
			call = call[:len(call)-1]
			if len(call) > 0 && low[n] < low[call[len(call)-1].n] {
				low[call[len(call)-1].n] = low[n]
			}
			if low[n] == index[n] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					on[w] = false
					comp = append(comp, w)
					if w == n {
						break
					}
				}
				if len(comp) > 1 {
					sort.Ints(comp)
					out = append(out, comp)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// cycleAnomaly explains cyc as an anomaly of typ: its operations in cycle order and
// each edge in words.
func (ix *laIndex) cycleAnomaly(typ string, cyc []step) Anomaly {
	idx := make([]int, len(cyc))
	parts := make([]string, len(cyc))
	for i, st := range cyc {
		idx[i] = st.from
		from, to := ix.tn(st.from), ix.tn(st.to)
		switch st.kind {
		case depWW:
			parts[i] = fmt.Sprintf("%s appended %d to key %d and %s appended the next element %d (ww)", from, st.a, st.key, to, st.b)
		case depWR:
			parts[i] = fmt.Sprintf("%s read key %d ending with %d, which %s appended (wr)", to, st.key, st.b, from)
		case depRT:
			parts[i] = fmt.Sprintf("%s was acknowledged before %s began (realtime)", from, to)
		default:
			seen := "empty"
			if st.a >= 0 {
				seen = fmt.Sprintf("ending with %d", st.a)
			}
			parts[i] = fmt.Sprintf("%s read key %d %s, without %d, which %s appended next (rw)", from, st.key, seen, st.b, to)
		}
	}
	names := map[string]string{"G0": "write cycle (G0)", "G1c": "circular information flow (G1c)",
		"G-single": "read skew (G-single, one anti-dependency)", "G2-item": "write skew (G2-item, anti-dependency cycle)",
		"G0-realtime":       "write cycle against the realtime order (G0-realtime)",
		"G1c-realtime":      "circular information flow against the realtime order (G1c-realtime)",
		"G-single-realtime": "stale read (G-single-realtime, one anti-dependency against the realtime order)",
		"G2-item-realtime":  "anti-dependency cycle against the realtime order (G2-item-realtime)"}
	key := cyc[0].key
	for _, st := range cyc { // a realtime edge has no key: the first edge that has one
		if st.kind != depRT {
			key = st.key
			break
		}
	}
	return ix.anomaly(typ, key, idx, fmt.Sprintf("%s of %d transactions: %s; so each must precede the next, around a cycle",
		names[typ], len(cyc), strings.Join(parts, "; ")))
}
