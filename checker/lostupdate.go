// Package checker runs checker workloads (transactions whose every read and write is
// recorded in a history.History) and checks their histories for anomalies, in Go: the
// read-write register workload (register.go) and the lost-update check (P4), the bank
// (bank.go) and its invariant, and list-append (listappend_workload.go) with Elle's
// checks (listappend.go: G0, G1a, G1b, G1c, G-single, G2-item, lost appends ...).
package checker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/habench/habench/history"
)

// Anomaly is one anomaly found in a history, with the operations involved.
type Anomaly struct {
	// Type is the anomaly's name in the field's terms, e.g. "lost-update" (P4).
	Type string `json:"type"`
	// Key is the key the anomaly is about.
	Key int64 `json:"key"`
	// Version is the value (version) of Key the operations read.
	Version int64 `json:"version"`
	// Ops are the operations involved, by history index.
	Ops []history.Op `json:"ops"`
	// Explanation says in one sentence why these operations are an anomaly.
	Explanation string `json:"explanation"`
}

// LostUpdates returns the lost updates (P4) of a register history: committed (ok)
// operations that read the same version of a key and both wrote that key, so that each
// overwrote the other's write without seeing it. Writes must be unique per key (the
// register workload writes each value once), so a version is the value read. One Anomaly
// per key and version read by two or more such operations, ordered by key and version;
// operations of unknown outcome are not counted (they may not have committed) and
// neither are failed ones. A transaction that wrote a key without reading it first, or
// wrote before it read, is not a read-then-write of that key and is ignored.
func LostUpdates(ops []history.Op) []Anomaly {
	type kv struct{ key, version int64 }
	groups := map[kv][]int{}
	for i, op := range ops {
		if op.Outcome != history.OK {
			continue
		}
		for _, k := range readThenWritten(op) {
			groups[k.kv()] = append(groups[k.kv()], i)
		}
	}
	var out []Anomaly
	for g, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		a := Anomaly{Type: "lost-update", Key: g.key, Version: g.version}
		for _, i := range idx {
			a.Ops = append(a.Ops, ops[i])
		}
		a.Explanation = explainLostUpdate(a)
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// readWrite is a key an operation read (seeing version) and then wrote (value).
type readWrite struct{ key, version, value int64 }

func (r readWrite) kv() struct{ key, version int64 } {
	return struct{ key, version int64 }{r.key, r.version}
}

// readThenWritten returns, per key, the first read of op followed by a write of the same
// key (without a write of that key in between).
func readThenWritten(op history.Op) []readWrite {
	var out []readWrite
	read := map[int64]int64{}
	written := map[int64]bool{}
	done := map[int64]bool{}
	for _, m := range op.Value {
		if m.Value == nil || done[m.Key] {
			continue
		}
		switch m.F {
		case "r":
			if _, ok := read[m.Key]; !ok && !written[m.Key] {
				read[m.Key] = *m.Value
			}
		case "w":
			if v, ok := read[m.Key]; ok {
				out = append(out, readWrite{m.Key, v, *m.Value})
				done[m.Key] = true
			}
			written[m.Key] = true
		}
	}
	return out
}

// explainLostUpdate says which transactions read the version and what each wrote.
func explainLostUpdate(a Anomaly) string {
	parts := make([]string, len(a.Ops))
	for i, op := range a.Ops {
		w := "?"
		for _, rw := range readThenWritten(op) {
			if rw.key == a.Key {
				w = fmt.Sprint(rw.value)
			}
		}
		parts[i] = fmt.Sprintf("T%d (process %d on %s) wrote %s", op.Index, op.Process, op.Node, w)
	}
	lost := "1 update was lost"
	if n := len(a.Ops) - 1; n > 1 {
		lost = fmt.Sprintf("%d updates were lost", n)
	}
	return fmt.Sprintf("lost update (P4) on key %d: %d committed transactions read version %d and each wrote the key without seeing the other writes: %s; %s",
		a.Key, len(a.Ops), a.Version, strings.Join(parts, ", "), lost)
}
