package checker

import (
	"fmt"
	"sort"

	"github.com/habench/habench/history"
)

// lostAppends returns each acknowledged append that no read saw although some read of
// its key saw an element appended by a transaction that began after the append was
// acknowledged (that read should have seen it: the append came first in real time).
func (ix *laIndex) lostAppends() []Anomaly {
	type latest struct {
		start int64
		read  int
		val   int64
	}
	last := map[int64]latest{}
	for i, r := range ix.reads {
		for _, x := range r.list {
			ref, ok := ix.appender[elem{r.key, x}]
			if !ok {
				continue
			}
			if l, had := last[r.key]; !had || ix.ops[ref.op].Start > l.start {
				last[r.key] = latest{ix.ops[ref.op].Start, i, x}
			}
		}
	}
	var lost []elem
	for e, ref := range ix.appender {
		op := ix.ops[ref.op]
		if op.Outcome != history.OK || ix.seen[e] {
			continue
		}
		if l, ok := last[e.key]; ok && l.start > op.End {
			lost = append(lost, e)
		}
	}
	sort.Slice(lost, func(i, j int) bool {
		if lost[i].key != lost[j].key {
			return lost[i].key < lost[j].key
		}
		return lost[i].val < lost[j].val
	})
	var out []Anomaly
	for _, e := range lost {
		w, l := ix.appender[e].op, last[e.key]
		r := ix.reads[l.read]
		out = append(out, ix.anomaly("lost-append", e.key, []int{w, r.op},
			fmt.Sprintf("lost append: %s appended %d to key %d and committed, but no read saw it; %s read key %d as %v, with %d, appended by a transaction that began after that commit",
				ix.tn(w), e.val, e.key, ix.tn(r.op), e.key, r.list, l.val)))
	}
	return out
}

// sessionAnomalies returns, per process in order of start, the reads that missed the
// process's own earlier acknowledged append to the key (read-your-writes) and those
// that saw fewer elements of a key than the process's previous read of it (monotonic
// reads). Only external reads are checked.
func (ix *laIndex) sessionAnomalies() []Anomaly {
	byProc := map[int][]int{}
	var procs []int
	for i, op := range ix.ops {
		if op.Outcome != history.OK {
			continue
		}
		if byProc[op.Process] == nil {
			procs = append(procs, op.Process)
		}
		byProc[op.Process] = append(byProc[op.Process], i)
	}
	sort.Ints(procs)
	readsOf := map[int][]laRead{}
	for _, r := range ix.reads {
		readsOf[r.op] = append(readsOf[r.op], r)
	}
	var out []Anomaly
	for _, p := range procs {
		idx := byProc[p]
		sort.SliceStable(idx, func(a, b int) bool { return ix.ops[idx[a]].Start < ix.ops[idx[b]].Start })
		out = append(out, ix.sessionOf(idx, readsOf)...)
	}
	return out
}

// sessionOf checks one process's ok ops (in order) for read-your-writes and monotonic
// reads.
func (ix *laIndex) sessionOf(idx []int, readsOf map[int][]laRead) []Anomaly {
	type mark struct {
		op  int
		val int64
	}
	wrote := map[int64]mark{}  // last own append per key
	prev := map[int64]laRead{} // last read per key
	var out []Anomaly
	for _, i := range idx {
		for _, r := range readsOf[i] {
			if !r.external {
				continue
			}
			if w, ok := wrote[r.key]; ok && !contains(r.list, w.val) {
				out = append(out, ix.anomaly("read-your-writes", r.key, []int{w.op, i},
					fmt.Sprintf("read-your-writes: %s appended %d to key %d, then the same process's %s read key %d as %v, without it",
						ix.tn(w.op), w.val, r.key, ix.tn(i), r.key, r.list)))
			}
			if p, ok := prev[r.key]; ok && len(r.list) < len(p.list) {
				out = append(out, ix.anomaly("monotonic-reads", r.key, []int{p.op, i},
					fmt.Sprintf("monotonic reads: %s read key %d as %v, then the same process's %s read it as %v, fewer elements",
						ix.tn(p.op), r.key, p.list, ix.tn(i), r.list)))
			}
		}
		for _, r := range readsOf[i] {
			prev[r.key] = r
		}
		for _, m := range ix.ops[i].Value {
			if m.F == "append" && m.Value != nil {
				wrote[m.Key] = mark{i, *m.Value}
			}
		}
	}
	return out
}

// contains reports whether l holds x.
func contains(l []int64, x int64) bool {
	for _, y := range l {
		if y == x {
			return true
		}
	}
	return false
}
