package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"olympos.io/encoding/edn"
)

func sample() []Op {
	return Sorted([]Op{
		{Process: 0, Session: 0, Node: "n1", Start: 100, End: 900, Outcome: OK,
			Value: []Mop{R(1, 4), W(1, 7)}},
		{Process: 1, Session: 1, Node: "n2", Start: 200, End: 700, Outcome: Fail,
			Value: []Mop{R(2, 0), W(2, 3)}, Error: `Error 1213: "Deadlock" found`},
		{Process: 2, Session: 2, Node: "n1", Start: 300, End: 1000, Outcome: Unknown,
			Value: []Mop{R(1, 4), W(1, 8)}, Error: "invalid connection"},
	})
}

// TestEDNParses: the export parses with an EDN parser, one map per line, in the shape
// Elle's rw-register reads: an :invoke and a completion per operation, :index from 0
// in :time order, reads nil unless :ok.
func TestEDNParses(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteEDN(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	type ev = map[edn.Keyword]any
	var evs []ev
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m ev
		if err := edn.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q does not parse as EDN: %v", sc.Text(), err)
		}
		evs = append(evs, m)
	}
	if len(evs) != 6 {
		t.Fatalf("%d events, want 6 (an invoke and a completion per op)", len(evs))
	}
	wantTypes := []edn.Keyword{"invoke", "invoke", "invoke", "fail", "ok", "info"}
	var last int64 = -1
	for i, m := range evs {
		if m[edn.Keyword("index")] != int64(i) {
			t.Errorf("event %d: :index %v", i, m[edn.Keyword("index")])
		}
		tm, _ := m[edn.Keyword("time")].(int64)
		if tm < last {
			t.Errorf("event %d: :time %d before %d", i, tm, last)
		}
		last = tm
		if m[edn.Keyword("type")] != wantTypes[i] {
			t.Errorf("event %d: :type %v, want %v", i, m[edn.Keyword("type")], wantTypes[i])
		}
		if m[edn.Keyword("f")] != edn.Keyword("txn") {
			t.Errorf("event %d: :f %v", i, m[edn.Keyword("f")])
		}
		if _, ok := m[edn.Keyword("process")].(int64); !ok {
			t.Errorf("event %d: :process %v not an integer", i, m[edn.Keyword("process")])
		}
		val, ok := m[edn.Keyword("value")].([]any)
		if !ok || len(val) != 2 {
			t.Fatalf("event %d: :value %#v, want a vector of 2 mops", i, m[edn.Keyword("value")])
		}
		r, w := val[0].([]any), val[1].([]any)
		if r[0] != edn.Keyword("r") || w[0] != edn.Keyword("w") {
			t.Errorf("event %d: mops %v %v, want [:r ..] [:w ..]", i, r, w)
		}
		if wantTypes[i] == "ok" {
			if r[1] != int64(1) || r[2] != int64(4) || w[2] != int64(7) {
				t.Errorf("ok event: %v %v, want [:r 1 4] [:w 1 7]", r, w)
			}
		} else if r[2] != nil {
			t.Errorf("event %d (%v): read value %v, want nil", i, wantTypes[i], r[2])
		}
	}
	if evs[3][edn.Keyword("error")] != `Error 1213: "Deadlock" found` {
		t.Errorf(":error %q", evs[3][edn.Keyword("error")])
	}
}

// TestJSONLRoundTrip: history.jsonl has one operation per line, read back equal.
func TestJSONLRoundTrip(t *testing.T) {
	ops := sample()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := WriteFile(path, ops, WriteJSONL); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(ops) {
		t.Fatalf("%d lines, want %d", len(lines), len(ops))
	}
	for i, l := range lines {
		var op Op
		if err := json.Unmarshal([]byte(l), &op); err != nil {
			t.Fatal(err)
		}
		if op.Index != i || op.Outcome != ops[i].Outcome || op.Node != ops[i].Node || len(op.Value) != 2 ||
			*op.Value[1].Value != *ops[i].Value[1].Value {
			t.Errorf("line %d: %+v, want %+v", i, op, ops[i])
		}
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "h.jsonl"), ops, WriteJSONL); err == nil ||
		!strings.Contains(err.Error(), "h.jsonl") {
		t.Errorf("write into a missing directory: %v, want an error naming the file", err)
	}
}

// TestStart: Start is the clock zero of Since (an operation's Start and End count from it),
// between the times before and after New.
func TestStart(t *testing.T) {
	before := time.Now()
	h := New()
	after := time.Now()
	if s := h.Start(); s.Before(before) || s.After(after) || h.Since(s) != 0 || h.Since(s.Add(time.Second)) != 1e9 {
		t.Errorf("start %v (New between %v and %v), Since(start) %d", s, before, after, h.Since(s))
	}
}
