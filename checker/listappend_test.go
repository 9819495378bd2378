package checker

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/habench/habench/history"
)

var (
	ap = history.Append
	rl = history.RL
)

// laOK is an ok operation of process proc from start to start+5.
func laOK(proc int, start int64, mops ...history.Mop) history.Op {
	return op(proc, start, start+5, history.OK, mops...)
}

// wantOnly checks that v found anomalies of exactly the types in want (each at least
// once), and that the first of type want[0] involves exactly the operations idx (in any
// order) and names each of them in its explanation.
func wantOnly(t *testing.T, ops []history.Op, want []string, idx ...int) {
	t.Helper()
	wantOnlyBy(t, CheckListAppend, ops, want, idx...)
}

// wantOnlyBy is wantOnly with the check to run.
func wantOnlyBy(t *testing.T, check func([]history.Op) Verdict, ops []history.Op, want []string, idx ...int) {
	t.Helper()
	v := check(ops)
	got := map[string]bool{}
	for _, a := range v.Anomalies {
		got[a.Type] = true
	}
	var types []string
	for k := range got {
		types = append(types, k)
	}
	sort.Strings(types)
	w := append([]string(nil), want...)
	sort.Strings(w)
	if fmt.Sprint(types) != fmt.Sprint(w) || v.Valid {
		t.Fatalf("anomaly types %v (valid %v), want %v: %+v", types, v.Valid, w, v.Anomalies)
	}
	for _, a := range v.Anomalies {
		if a.Type != want[0] {
			continue
		}
		var got []int
		for _, o := range a.Ops {
			got = append(got, o.Index)
			if !strings.Contains(a.Explanation, fmt.Sprintf("T%d ", o.Index)) {
				t.Errorf("%s explanation does not name T%d: %s", a.Type, o.Index, a.Explanation)
			}
		}
		sort.Ints(got)
		if fmt.Sprint(got) != fmt.Sprint(idx) {
			t.Errorf("%s ops %v, want %v: %s", a.Type, got, idx, a.Explanation)
		}
		t.Logf("%s: %s", a.Type, a.Explanation)
		return
	}
}

// TestListAppendClean: a serial history of appends and reads passes.
func TestListAppendClean(t *testing.T) {
	ops := history.Sorted([]history.Op{
		laOK(0, 0, ap(1, 1), rl(2)),
		laOK(1, 10, rl(1, 1), ap(1, 2), ap(2, 1)),
		laOK(0, 20, rl(1, 1, 2), rl(2, 1), ap(1, 3), rl(1, 1, 2, 3)),
		laOK(1, 30, rl(1, 1, 2, 3)),
	})
	if v := CheckListAppend(ops); !v.Valid || len(v.Anomalies) != 0 || v.OK != 4 || v.Workload != "list-append" {
		t.Fatalf("verdict %+v, want valid", v)
	}
}

// TestListAppendReadAnomalies: duplicated, phantom, aborted (G1a) and intermediate
// (G1b) reads, and reads in incompatible orders, each in a minimal history.
func TestListAppendReadAnomalies(t *testing.T) {
	t.Run("duplicate", func(t *testing.T) {
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, ap(1, 1)), laOK(1, 10, rl(1, 1, 1))}),
			[]string{"duplicate-elements"}, 1)
	})
	t.Run("phantom", func(t *testing.T) {
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, ap(1, 1)), laOK(1, 10, rl(1, 1, 9))}),
			[]string{"phantom"}, 1)
	})
	t.Run("G1a", func(t *testing.T) {
		wantOnly(t, history.Sorted([]history.Op{op(0, 0, 5, history.Fail, ap(1, 1)), laOK(1, 10, rl(1, 1))}),
			[]string{"G1a"}, 0, 1)
	})
	t.Run("G1b", func(t *testing.T) {
		// T1 saw T0's first append but not its second: also a G-single (T1 rw-> T0 wr-> T1).
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, ap(1, 1), ap(1, 2)), laOK(1, 10, rl(1, 1)), laOK(2, 20, rl(1, 1, 2))}),
			[]string{"G1b", "G-single"}, 0, 1)
	})
	t.Run("incompatible-order", func(t *testing.T) {
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, ap(1, 1)), laOK(1, 10, ap(1, 2)),
			laOK(2, 20, rl(1, 1, 2)), laOK(3, 30, rl(1, 2))}),
			[]string{"incompatible-order"}, 2, 3)
	})
}

// TestListAppendLostAndSession: a lost append, and read-your-writes and monotonic
// reads per process.
func TestListAppendLostAndSession(t *testing.T) {
	t.Run("lost-append", func(t *testing.T) {
		// T0's 1 committed before T1 began; T2 saw T1's 2 but never T0's 1.
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, ap(1, 1)), laOK(1, 10, ap(1, 2)), laOK(2, 20, rl(1, 2))}),
			[]string{"lost-append"}, 0, 2)
	})
	t.Run("read-your-writes", func(t *testing.T) {
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, ap(1, 1)), laOK(0, 10, rl(1))}),
			[]string{"read-your-writes"}, 0, 1)
	})
	t.Run("monotonic-reads", func(t *testing.T) {
		wantOnly(t, history.Sorted([]history.Op{laOK(1, 0, ap(1, 1)), laOK(0, 10, rl(1, 1)), laOK(0, 20, rl(1))}),
			[]string{"monotonic-reads"}, 1, 2)
	})
}

// TestListAppendCycles: G0, G1c, G-single and G2-item, each in a minimal history, with
// the operations of the cycle.
func TestListAppendCycles(t *testing.T) {
	t.Run("G0", func(t *testing.T) {
		// key 1 orders T0 before T1, key 2 T1 before T0.
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, ap(1, 1), ap(2, 2)), laOK(1, 1, ap(1, 2), ap(2, 1)),
			laOK(2, 20, rl(1, 1, 2), rl(2, 1, 2))}),
			[]string{"G0"}, 0, 1)
	})
	t.Run("G1c", func(t *testing.T) {
		// each read the other's append.
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, ap(1, 1), rl(2, 1)), laOK(1, 1, ap(2, 1), rl(1, 1))}),
			[]string{"G1c"}, 0, 1)
	})
	t.Run("G-single", func(t *testing.T) {
		// T0 saw T1's append to key 2 but not its append to key 1 (read skew).
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, rl(1), rl(2, 1)), laOK(1, 1, ap(1, 1), ap(2, 1)),
			laOK(2, 20, rl(1, 1))}),
			[]string{"G-single"}, 0, 1)
	})
	t.Run("G2-item", func(t *testing.T) {
		// write skew: each read the key the other appended to, empty.
		wantOnly(t, history.Sorted([]history.Op{laOK(0, 0, rl(1), ap(2, 1)), laOK(1, 1, rl(2), ap(1, 1)),
			laOK(2, 20, rl(1, 1), rl(2, 1))}),
			[]string{"G2-item"}, 0, 1)
	})
}

// TestListAppendUnknownNotAnomalies: operations of unknown outcome may or may not have
// happened: an unseen append is not lost, a seen one is no phantom or G1a, and their
// reads (and failed operations' reads) are not checked.
func TestListAppendUnknownNotAnomalies(t *testing.T) {
	ops := history.Sorted([]history.Op{
		op(0, 0, 5, history.Unknown, ap(1, 1)),
		op(1, 10, 15, history.Unknown, ap(1, 2), rl(2, 99)),
		laOK(2, 20, rl(1, 2)),
		op(3, 30, 35, history.Fail, rl(1, 7, 7)),
		laOK(2, 40, rl(1, 2), ap(1, 3)),
		laOK(4, 50, rl(1, 2, 3)),
	})
	if v := CheckListAppend(ops); !v.Valid || v.Unknown != 2 || v.Failed != 1 {
		t.Fatalf("verdict %+v, want valid with 2 unknown and 1 failed", v)
	}
	// The same history with T0 acknowledged: its 1 is now lost (T1 began after it).
	ops[0].Outcome = history.OK
	if v := CheckListAppend(ops); v.Valid || v.Anomalies[0].Type != "lost-append" {
		t.Fatalf("verdict %+v, want T0's append lost once acknowledged", v)
	}
}

// TestListAppendOptions: bad options name the field and value; a list parses back.
func TestListAppendOptions(t *testing.T) {
	for _, c := range []struct {
		o    ListAppendOptions
		want string
	}{
		{ListAppendOptions{Keys: 2000}, "list-append keys 2000"},
		{ListAppendOptions{MaxAppends: -1}, "list-append max appends -1"},
		{ListAppendOptions{MaxTxnLen: 17}, "list-append max txn len 17"},
		{ListAppendOptions{Isolation: "snapshot"}, `list-append isolation "snapshot"`},
	} {
		if err := c.o.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if err := (ListAppendOptions{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if l, err := parseList("3,14,15"); err != nil || fmt.Sprint(l) != "[3 14 15]" {
		t.Errorf("parseList: %v %v", l, err)
	}
	if l, err := parseList(""); err != nil || l == nil || len(l) != 0 {
		t.Errorf("parseList(\"\"): %v %v, want an empty list", l, err)
	}
	if _, err := parseList("3,x"); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("parseList(\"3,x\"): %v, want an error naming x", err)
	}
}

// TestListAppendTwoComponents: two independent write skews are two G2-item anomalies,
// one per strongly connected component, each with its own two transactions.
func TestListAppendTwoComponents(t *testing.T) {
	ops := history.Sorted([]history.Op{
		laOK(0, 0, rl(1), ap(2, 1)), laOK(1, 1, rl(2), ap(1, 1)),
		laOK(2, 2, rl(3), ap(4, 1)), laOK(3, 3, rl(4), ap(3, 1)),
		laOK(4, 20, rl(1, 1), rl(2, 1), rl(3, 1), rl(4, 1)),
	})
	v := CheckListAppend(ops)
	if len(v.Anomalies) != 2 {
		t.Fatalf("%d anomalies, want 2: %+v", len(v.Anomalies), v.Anomalies)
	}
	for i, a := range v.Anomalies {
		if a.Type != "G2-item" || len(a.Ops) != 2 || a.Ops[0].Index/2 != i || a.Ops[1].Index/2 != i {
			t.Errorf("anomaly %d: %s with %d ops: %s", i, a.Type, len(a.Ops), a.Explanation)
		}
	}
}
