// Package history records every operation of a checker workload (a transaction of
// reads and writes on a few keys) with its timing, where it ran and how it ended, and
// writes it as JSON lines (history.jsonl) or in the EDN history format Jepsen's Elle
// checker reads (history.edn), so that the checks in habench can be repeated there.
package history

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/habench/habench/internal/atomicfile"
)

// Outcome is how an operation ended.
type Outcome string

const (
	// OK: the transaction committed (COMMIT returned success).
	OK Outcome = "ok"
	// Fail: the transaction certainly did not take effect (a statement failed and the
	// transaction was rolled back, or COMMIT returned an error the server sent).
	Fail Outcome = "fail"
	// Unknown: the connection died after COMMIT was sent; the transaction may or may not
	// have taken effect (Elle's :info).
	Unknown Outcome = "unknown"
)

// Mop is one micro-operation of a transaction. In a register history: a read ("r") of
// Key that saw Value (nil: not read, e.g. the transaction failed first, or the key had
// no value), or a write ("w") of Value to Key. In a list-append history: an append
// ("append") of Value to the list at Key, or a read ("r") of Key that saw the list List,
// oldest element first (nil: not read; empty, not nil: the key had no elements yet).
type Mop struct {
	F     string  `json:"f"`
	Key   int64   `json:"key"`
	Value *int64  `json:"value"`
	List  []int64 `json:"list,omitzero"`
}

// Append returns an append of v to the list at key.
func Append(key, v int64) Mop { return Mop{F: "append", Key: key, Value: &v} }

// RL returns a read of the list at key that saw elems (none: an empty list).
func RL(key int64, elems ...int64) Mop {
	if elems == nil {
		elems = []int64{}
	}
	return Mop{F: "r", Key: key, List: elems}
}

// R returns a read of key that saw v.
func R(key, v int64) Mop { return Mop{F: "r", Key: key, Value: &v} }

// W returns a write of v to key.
func W(key, v int64) Mop { return Mop{F: "w", Key: key, Value: &v} }

// Op is one operation (transaction) of a history.
type Op struct {
	// Index is the operation's number in the history, from 0 in order of Start.
	Index int `json:"index"`
	// Process is the client process in Jepsen's sense: a session, given a new number
	// after an operation of unknown outcome (the old one may still be in flight).
	Process int `json:"process"`
	// Session is the worker (thread) that ran the operation, from 0.
	Session int `json:"session"`
	// Node is the label of the server the session was connected to.
	Node string `json:"node"`
	// Start is the intended start, End when the outcome was known, both in
	// nanoseconds since the history's start.
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
	// Value lists the reads and writes in the order they were sent.
	Value []Mop `json:"value"`
	// Outcome is ok, fail or unknown.
	Outcome Outcome `json:"outcome"`
	// Error is the error that failed the operation or made its outcome unknown.
	Error string `json:"error,omitempty"`
}

// History is a concurrent-safe list of operations; Add is called from every worker.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []Op
}

// New returns an empty history whose clock starts now.
func New() *History { return &History{start: time.Now()} }

// Start is the history's clock zero: the time its operations' Start and End count from.
func (h *History) Start() time.Time { return h.start }

// Since returns t in nanoseconds since the history's start.
func (h *History) Since(t time.Time) int64 { return t.Sub(h.start).Nanoseconds() }

// Add appends op (its Index is set by Ops).
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns a copy of the operations ordered by Start (then Session), with Index set
// to the position in that order.
func (h *History) Ops() []Op {
	h.mu.Lock()
	ops := append([]Op(nil), h.ops...)
	h.mu.Unlock()
	return Sorted(ops)
}

// Sorted orders ops by Start (then Session) and numbers them from 0, in place.
func Sorted(ops []Op) []Op {
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].Start != ops[j].Start {
			return ops[i].Start < ops[j].Start
		}
		return ops[i].Session < ops[j].Session
	})
	for i := range ops {
		ops[i].Index = i
	}
	return ops
}

// WriteJSONL writes one JSON object per operation and line (history.jsonl's format).
func WriteJSONL(w io.Writer, ops []Op) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteFile writes ops to path with write (WriteJSONL or WriteEDN), whole or not at
// all (a temporary file renamed into place); the error names the file.
func WriteFile(path string, ops []Op, write func(io.Writer, []Op) error) error {
	return atomicfile.Write(path, 0o640, func(w io.Writer) error { return write(w, ops) })
}
