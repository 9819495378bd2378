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

// graph is the dependency graph over ops (indexes in ix.ops).
type graph map[int][]dep

// buildGraph infers ww, wr and rw edges from each key's version order (its longest
// read) and the external reads of ok ops that are prefixes of it. Failed ops' elements
// get no edges (they are G1a already).
func (ix *laIndex) buildGraph() graph {
	g := graph{}
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
// dependency graph: G0, else G1c, else G-single, else G2-item, with its shortest cycle.
func (ix *laIndex) cycleAnomalies() []Anomaly {
	g := ix.buildGraph()
	var out []Anomaly
	for _, scc := range g.sccs() {
		in := make(map[int]bool, len(scc))
		for _, n := range scc {
			in[n] = true
		}
		typ, cyc := "G0", g.shortestCycle(scc, in, depWW)
		if cyc == nil {
			typ, cyc = "G1c", g.shortestCycle(scc, in, depWW|depWR)
		}
		if cyc == nil {
			typ, cyc = "G-single", g.singleRW(scc, in)
		}
		if cyc == nil {
			typ, cyc = "G2-item", g.shortestCycle(scc, in, depWW|depWR|depRW)
			if rwCount(cyc) == 1 { // singleRW stopped at maxStarts before finding it
				typ = "G-single"
			}
		}
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

// maxStarts bounds the nodes of one component a shortest-cycle search starts from.
const maxStarts = 256

// shortestCycle returns the shortest cycle through the component's first maxStarts
// nodes using only edges of the kinds in mask (nil: none), as its edges with their
// sources: cycle[i] leaves from[i].
func (g graph) shortestCycle(scc []int, in map[int]bool, mask uint8) []step {
	var best []step
	for i, s := range scc {
		if i == maxStarts {
			break
		}
		if p := g.path(s, s, in, mask); p != nil && (best == nil || len(p) < len(best)) {
			best = p
		}
	}
	return best
}

// singleRW returns the shortest cycle of one rw edge and ww/wr edges, nil if none.
func (g graph) singleRW(scc []int, in map[int]bool) []step {
	var best []step
	tries := 0
	for _, u := range scc {
		for _, d := range g[u] {
			if d.kind != depRW || !in[d.to] || tries == maxStarts {
				continue
			}
			tries++
			if p := g.path(d.to, u, in, depWW|depWR); p != nil && (best == nil || len(p)+1 < len(best)) {
				best = append([]step{{u, d}}, p...)
			}
		}
	}
	return best
}

// step is one edge of a path with its source.
type step struct {
	from int
	dep
}

// path returns the shortest path (breadth first) from s to t of at least one edge
// within the component, using edges of the kinds in mask; nil if none.
func (g graph) path(s, t int, in map[int]bool, mask uint8) []step {
	parent := map[int]step{}
	queue := []int{s}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, d := range g[u] {
			if d.kind&mask == 0 || !in[d.to] {
				continue
			}
			if _, done := parent[d.to]; done {
				continue
			}
			parent[d.to] = step{u, d}
			if d.to == t {
				var p []step
				for n := t; ; {
					st := parent[n]
					p = append([]step{st}, p...)
					if n = st.from; n == s {
						return p
					}
				}
			}
			queue = append(queue, d.to)
		}
	}
	return nil
}

// sccs returns the strongly connected components of g with two or more nodes (Tarjan,
// iterative), each sorted, ordered by their smallest node.
func (g graph) sccs() [][]int {
	var nodes []int
	for n := range g {
		nodes = append(nodes, n)
	}
	sort.Ints(nodes)
	index, low, on := map[int]int{}, map[int]int{}, map[int]bool{}
	var stack []int
	var out [][]int
	type frame struct{ n, next int }
	for _, root := range nodes {
		if _, seen := index[root]; seen {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root], on[root] = len(index), len(index), true
		stack = append(stack, root)
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.next < len(g[f.n]) {
				w := g[f.n][f.next].to
				f.next++
				if _, seen := index[w]; !seen {
					index[w], low[w], on[w] = len(index), len(index), true
					stack = append(stack, w)
					call = append(call, frame{w, 0})
				} else if on[w] && index[w] < low[f.n] {
					low[f.n] = index[w]
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
		default:
			seen := "empty"
			if st.a >= 0 {
				seen = fmt.Sprintf("ending with %d", st.a)
			}
			parts[i] = fmt.Sprintf("%s read key %d %s, without %d, which %s appended next (rw)", from, st.key, seen, st.b, to)
		}
	}
	names := map[string]string{"G0": "write cycle (G0)", "G1c": "circular information flow (G1c)",
		"G-single": "read skew (G-single, one anti-dependency)", "G2-item": "write skew (G2-item, anti-dependency cycle)"}
	return ix.anomaly(typ, cyc[0].key, idx, fmt.Sprintf("%s of %d transactions: %s; so each must precede the next, around a cycle",
		names[typ], len(cyc), strings.Join(parts, "; ")))
}
