package checker

import (
	"strings"
	"testing"

	"github.com/habench/habench/history"
)

func op(proc int, start, end int64, out history.Outcome, mops ...history.Mop) history.Op {
	return history.Op{Process: proc, Session: proc, Node: "n1", Start: start, End: end, Outcome: out, Value: mops}
}

// TestLostUpdateDetected: T0 and T1 both read version 0 of key 1 and both committed a
// write of it: a lost update naming both; T2, which read T1's write, is not involved.
func TestLostUpdateDetected(t *testing.T) {
	ops := history.Sorted([]history.Op{
		op(0, 10, 50, history.OK, history.R(1, 0), history.W(1, 1)),
		op(1, 20, 60, history.OK, history.R(1, 0), history.W(1, 2)),
		op(2, 70, 90, history.OK, history.R(1, 2), history.W(1, 3)),
	})
	v := CheckRegister(ops)
	if v.Valid || len(v.Anomalies) != 1 || v.LostUpdates != 1 {
		t.Fatalf("verdict %+v, want one lost update", v)
	}
	a := v.Anomalies[0]
	if a.Type != "lost-update" || a.Key != 1 || a.Version != 0 || len(a.Ops) != 2 ||
		a.Ops[0].Index != 0 || a.Ops[1].Index != 1 {
		t.Fatalf("anomaly %+v, want key 1 version 0 by T0 and T1", a)
	}
	for _, s := range []string{"key 1", "version 0", "T0 (process 0 on n1) wrote 1", "T1 (process 1 on n1) wrote 2", "1 update was lost"} {
		if !strings.Contains(a.Explanation, s) {
			t.Errorf("explanation %q lacks %q", a.Explanation, s)
		}
	}
}

// TestCleanHistoryPasses: a serial chain of read-then-writes, a failed and an
// unknown-outcome transaction that read the same version as a committed one, and a
// blind write: no anomaly.
func TestCleanHistoryPasses(t *testing.T) {
	ops := history.Sorted([]history.Op{
		op(0, 10, 20, history.OK, history.R(1, 0), history.W(1, 1)),
		op(1, 30, 40, history.OK, history.R(1, 1), history.W(1, 2)),
		op(2, 31, 45, history.Fail, history.R(1, 1), history.W(1, 3)),
		op(3, 32, 46, history.Unknown, history.R(1, 1), history.W(1, 4)),
		op(4, 50, 60, history.OK, history.W(1, 5), history.R(1, 5)),
		op(5, 50, 60, history.OK, history.R(2, 0), history.W(2, 1)),
		op(6, 70, 80, history.OK, history.R(2, 1)),
	})
	v := CheckRegister(ops)
	if !v.Valid || len(v.Anomalies) != 0 || v.LostUpdates != 0 {
		t.Fatalf("verdict %+v, want valid", v)
	}
	if v.Ops != 7 || v.OK != 5 || v.Failed != 1 || v.Unknown != 1 {
		t.Errorf("counts %+v, want 7 ops: 5 ok, 1 failed, 1 unknown", v)
	}
}

// TestLostUpdateThree: three committed transactions read one version: two updates lost.
func TestLostUpdateThree(t *testing.T) {
	ops := history.Sorted([]history.Op{
		op(0, 10, 50, history.OK, history.R(3, 7), history.W(3, 8)),
		op(1, 11, 51, history.OK, history.R(3, 7), history.W(3, 9)),
		op(2, 12, 52, history.OK, history.R(3, 7), history.W(3, 10)),
		op(3, 13, 53, history.OK, history.R(4, 7), history.W(4, 11)),
	})
	v := CheckRegister(ops)
	if len(v.Anomalies) != 1 || v.LostUpdates != 2 || v.Anomalies[0].Key != 3 {
		t.Fatalf("verdict %+v, want one anomaly on key 3 losing 2 updates", v)
	}
}
