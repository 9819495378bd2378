package checker

import (
	"fmt"

	"github.com/habench/habench/history"
)

// CheckListAppend runs the list-append checks on ops (a history of transactions of
// appends and reads of lists, history.Append and history.RL), in the spirit of Elle's
// list-append checker. Each appended value must be unique per key. Operations of unknown
// outcome may or may not have happened: their appends may be seen (never a G1a or a
// phantom) and need not be (never lost), their reads are not used; failed operations'
// appends must never be seen (G1a), and their reads are not used either. The version
// order of a key is its longest read. Anomaly types, each with its operations:
//   - "duplicate-elements": a read saw an element twice;
//   - "phantom": a read saw an element nobody appended;
//   - "G1a": a read saw an element of a failed transaction (aborted read);
//   - "G1b": a read ended with an element its appender followed with another append of
//     that key (intermediate read);
//   - "incompatible-order": a read is not a prefix of the key's longest read;
//   - "lost-append": an acknowledged append no read saw, though a read saw an element
//     appended by a transaction that began after that append was acknowledged;
//   - "read-your-writes", "monotonic-reads": per process (session), a read that missed
//     the process's own earlier append, or saw fewer elements than its earlier read;
//   - "G0", "G1c", "G-single", "G2-item": a cycle of the dependency graph (ww, wr, rw
//     edges inferred from the version orders) of only ww edges, of ww and wr edges, with
//     exactly one rw edge, with more than one; one per strongly connected component,
//     the first class found in that order, with the operations of its shortest cycle.
func CheckListAppend(ops []history.Op) Verdict {
	v := Verdict{Workload: "list-append", Ops: len(ops)}
	countOutcomes(&v, ops)
	ix := indexListAppend(ops)
	var out []Anomaly
	out = append(out, ix.readAnomalies()...)
	out = append(out, ix.orderAnomalies()...)
	out = append(out, ix.lostAppends()...)
	out = append(out, ix.sessionAnomalies()...)
	out = append(out, ix.cycleAnomalies()...)
	if out == nil {
		out = []Anomaly{}
	}
	v.Anomalies = out
	v.Valid = len(out) == 0
	return v
}

// countOutcomes counts ops by outcome into v.
func countOutcomes(v *Verdict, ops []history.Op) {
	for _, op := range ops {
		switch op.Outcome {
		case history.OK:
			v.OK++
		case history.Fail:
			v.Failed++
		default:
			v.Unknown++
		}
	}
}

// elem is one element of one key's list.
type elem struct{ key, val int64 }

// appendRef is where an element was appended: the op (index in ops) and whether it was
// that op's last append to the key.
type appendRef struct {
	op   int
	last bool
}

// laRead is one read of a list by an ok op; external when the op had not appended to
// the key before it.
type laRead struct {
	op       int
	key      int64
	list     []int64
	external bool
}

// laIndex is a list-append history indexed for the checks.
type laIndex struct {
	ops      []history.Op
	appender map[elem]appendRef
	reads    []laRead
	order    map[int64][]int64 // version order per key: its longest read
	longest  map[int64]int     // index in reads of that read
	seen     map[elem]bool     // elements some read saw
}

// indexListAppend indexes ops: who appended each element, every read of ok ops, the
// version order of each key.
func indexListAppend(ops []history.Op) *laIndex {
	ix := &laIndex{ops: ops, appender: map[elem]appendRef{}, order: map[int64][]int64{},
		longest: map[int64]int{}, seen: map[elem]bool{}}
	for i, op := range ops {
		lastAppend := map[int64]int{}
		for j, m := range op.Value {
			if m.F == "append" && m.Value != nil {
				lastAppend[m.Key] = j
			}
		}
		appended := map[int64]bool{}
		for j, m := range op.Value {
			switch {
			case m.F == "append" && m.Value != nil:
				e := elem{m.Key, *m.Value}
				if _, dup := ix.appender[e]; !dup {
					ix.appender[e] = appendRef{op: i, last: lastAppend[m.Key] == j}
				}
				appended[m.Key] = true
			case m.F == "r" && m.List != nil && op.Outcome == history.OK:
				ix.addRead(laRead{op: i, key: m.Key, list: m.List, external: !appended[m.Key]})
			}
		}
	}
	return ix
}

// addRead records r, its elements as seen, and r as the key's order when longest.
func (ix *laIndex) addRead(r laRead) {
	ix.reads = append(ix.reads, r)
	for _, x := range r.list {
		ix.seen[elem{r.key, x}] = true
	}
	if len(r.list) > len(ix.order[r.key]) || ix.order[r.key] == nil {
		ix.order[r.key] = r.list
		ix.longest[r.key] = len(ix.reads) - 1
	}
}

// tn names op i as in the explanations, e.g. "T12 (process 3 on n1)".
func (ix *laIndex) tn(i int) string {
	op := ix.ops[i]
	return fmt.Sprintf("T%d (process %d on %s)", op.Index, op.Process, op.Node)
}

// anomaly builds an Anomaly of typ on key with the ops (indexes in ix.ops).
func (ix *laIndex) anomaly(typ string, key int64, opIdx []int, expl string) Anomaly {
	a := Anomaly{Type: typ, Key: key, Explanation: expl, Ops: make([]history.Op, len(opIdx))}
	for i, o := range opIdx {
		a.Ops[i] = ix.ops[o]
	}
	return a
}

// readAnomalies returns each read's duplicated, phantom and aborted (G1a) elements and
// its intermediate read (G1b).
func (ix *laIndex) readAnomalies() []Anomaly {
	var out []Anomaly
	for _, r := range ix.reads {
		count := map[int64]int{}
		for _, x := range r.list {
			count[x]++
		}
		for _, x := range r.list {
			e := elem{r.key, x}
			ref, ok := ix.appender[e]
			switch {
			case count[x] > 1:
				out = append(out, ix.anomaly("duplicate-elements", r.key, []int{r.op},
					fmt.Sprintf("duplicated element: %s read key %d as %v, with %d %d times", ix.tn(r.op), r.key, r.list, x, count[x])))
				count[x] = 1
			case !ok:
				out = append(out, ix.anomaly("phantom", r.key, []int{r.op},
					fmt.Sprintf("phantom element: %s read key %d as %v, with %d, which no transaction appended", ix.tn(r.op), r.key, r.list, x)))
			case ix.ops[ref.op].Outcome == history.Fail:
				out = append(out, ix.anomaly("G1a", r.key, []int{ref.op, r.op},
					fmt.Sprintf("aborted read (G1a): %s read key %d as %v, with %d, appended by %s, which failed", ix.tn(r.op), r.key, r.list, x, ix.tn(ref.op))))
			}
		}
		if n := len(r.list); n > 0 {
			ref, ok := ix.appender[elem{r.key, r.list[n-1]}]
			if ok && !ref.last && ref.op != r.op && ix.ops[ref.op].Outcome != history.Fail {
				out = append(out, ix.anomaly("G1b", r.key, []int{ref.op, r.op},
					fmt.Sprintf("intermediate read (G1b): %s read key %d as %v, ending with %d, which %s followed with another append to key %d in the same transaction",
						ix.tn(r.op), r.key, r.list, r.list[n-1], ix.tn(ref.op), r.key)))
			}
		}
	}
	return out
}

// orderAnomalies returns each read that is not a prefix of its key's longest read.
func (ix *laIndex) orderAnomalies() []Anomaly {
	var out []Anomaly
	for i, r := range ix.reads {
		long := ix.reads[ix.longest[r.key]]
		if i == ix.longest[r.key] || isPrefix(r.list, long.list) {
			continue
		}
		out = append(out, ix.anomaly("incompatible-order", r.key, []int{r.op, long.op},
			fmt.Sprintf("incompatible orders: %s read key %d as %v and %s as %v; neither is a prefix of the other",
				ix.tn(r.op), r.key, r.list, ix.tn(long.op), long.list)))
	}
	return out
}

// isPrefix reports whether a is a prefix of b.
func isPrefix(a, b []int64) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
