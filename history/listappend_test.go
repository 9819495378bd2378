package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"olympos.io/encoding/edn"
)

// TestListAppendEDN: a list-append history exports as Elle's list-append reads it:
// [:append k v] throughout, [:r k [1 2]] in :ok, [:r k nil] in :invoke, :fail and :info,
// and an empty read as [:r k []].
func TestListAppendEDN(t *testing.T) {
	ops := Sorted([]Op{
		{Process: 0, Start: 10, End: 20, Outcome: OK, Value: []Mop{Append(1, 3), RL(1, 1, 2, 3), RL(2)}},
		{Process: 1, Start: 11, End: 30, Outcome: Unknown, Value: []Mop{RL(1, 1), Append(1, 4)}},
	})
	var buf bytes.Buffer
	if err := WriteEDN(&buf, ops); err != nil {
		t.Fatal(err)
	}
	var vals [][]any
	var types []edn.Keyword
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m map[edn.Keyword]any
		if err := edn.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q does not parse as EDN: %v", sc.Text(), err)
		}
		vals = append(vals, m[edn.Keyword("value")].([]any))
		types = append(types, m[edn.Keyword("type")].(edn.Keyword))
	}
	if !reflect.DeepEqual(types, []edn.Keyword{"invoke", "invoke", "ok", "info"}) {
		t.Fatalf("types %v", types)
	}
	want := [][]any{
		{[]any{edn.Keyword("append"), int64(1), int64(3)}, []any{edn.Keyword("r"), int64(1), nil}, []any{edn.Keyword("r"), int64(2), nil}},
		{[]any{edn.Keyword("r"), int64(1), nil}, []any{edn.Keyword("append"), int64(1), int64(4)}},
		{[]any{edn.Keyword("append"), int64(1), int64(3)}, []any{edn.Keyword("r"), int64(1), []any{int64(1), int64(2), int64(3)}}, []any{edn.Keyword("r"), int64(2), []any{}}},
		{[]any{edn.Keyword("r"), int64(1), nil}, []any{edn.Keyword("append"), int64(1), int64(4)}},
	}
	for i := range want {
		if !reflect.DeepEqual(vals[i], want[i]) {
			t.Errorf("event %d: %#v, want %#v", i, vals[i], want[i])
		}
	}
}

// TestListAppendJSON: a read of an empty list stays empty (not unknown) through
// history.jsonl, and an unknown read stays nil.
func TestListAppendJSON(t *testing.T) {
	ops := []Op{{Value: []Mop{RL(1), {F: "r", Key: 2}, RL(3, 5, 6), Append(3, 7)}}}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, ops); err != nil {
		t.Fatal(err)
	}
	var op Op
	if err := json.Unmarshal(buf.Bytes(), &op); err != nil {
		t.Fatal(err)
	}
	if op.Value[0].List == nil || len(op.Value[0].List) != 0 || op.Value[1].List != nil ||
		!reflect.DeepEqual(op.Value[2].List, []int64{5, 6}) || *op.Value[3].Value != 7 {
		t.Errorf("read back %+v from %s", op.Value, buf.String())
	}
}
