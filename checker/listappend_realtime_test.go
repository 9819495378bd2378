package checker

import (
	"testing"

	"github.com/habench/habench/history"
)

// TestListAppendRealtimeStaleRead: T1 begins after T0's append of 1 to key 1 was
// acknowledged and reads key 1 empty. Serializable (T1 before T0), so CheckListAppend
// finds nothing; under strict serializability it is a stale read, G-single-realtime of
// T0 and T1.
func TestListAppendRealtimeStaleRead(t *testing.T) {
	ops := history.Sorted([]history.Op{
		laOK(0, 0, ap(1, 1)),
		laOK(1, 10, rl(1)),
		laOK(2, 20, rl(1, 1)),
	})
	if v := CheckListAppend(ops); !v.Valid {
		t.Fatalf("serializable history: %+v", v.Anomalies)
	}
	wantOnlyBy(t, CheckListAppendRealtime, ops, []string{"G-single-realtime"}, 0, 1)
}

// TestListAppendRealtimeThroughFrontier: the stale read is three acknowledged
// transactions after the append, so the realtime edges reach it only through them (the
// graph keeps the frontier's edges, not every pair): the cycle has all four.
func TestListAppendRealtimeThroughFrontier(t *testing.T) {
	ops := history.Sorted([]history.Op{
		laOK(0, 0, ap(1, 1)),
		laOK(1, 10, ap(2, 1)),
		laOK(2, 20, ap(3, 1)),
		laOK(3, 30, rl(1)),
		laOK(4, 40, rl(1, 1), rl(2, 1), rl(3, 1)),
	})
	wantOnlyBy(t, CheckListAppendRealtime, ops, []string{"G-single-realtime"}, 0, 1, 2, 3)
}

// TestListAppendRealtimeFutureRead: T0 read the element T1 appended, though T0 was
// acknowledged before T1 began: information flowing back in time, G1c-realtime.
func TestListAppendRealtimeFutureRead(t *testing.T) {
	ops := history.Sorted([]history.Op{
		laOK(0, 0, rl(1, 1)),
		laOK(1, 10, ap(1, 1)),
		laOK(2, 20, rl(1, 1)),
	})
	wantOnlyBy(t, CheckListAppendRealtime, ops, []string{"G1c-realtime"}, 0, 1)
}

// TestListAppendRealtimeConcurrent: the same reads by transactions that overlap the
// append (or begin at the instant it is acknowledged) are no anomaly; a clean serial
// history passes too, and a failed or unknown append gives no realtime edge.
func TestListAppendRealtimeConcurrent(t *testing.T) {
	for name, ops := range map[string][]history.Op{
		"overlapping":  {laOK(0, 0, ap(1, 1)), laOK(1, 3, rl(1)), laOK(2, 20, rl(1, 1))},
		"same instant": {laOK(0, 0, ap(1, 1)), laOK(1, 5, rl(1)), laOK(2, 20, rl(1, 1))},
		"serial": {laOK(0, 0, ap(1, 1), rl(2)), laOK(1, 10, rl(1, 1), ap(1, 2), ap(2, 1)),
			laOK(0, 20, rl(1, 1, 2), rl(2, 1)), laOK(1, 30, rl(1, 1, 2))},
		"unknown append": {op(0, 0, 5, history.Unknown, ap(1, 1)), laOK(1, 10, rl(1)), laOK(2, 20, rl(1, 1))},
	} {
		if v := CheckListAppendRealtime(history.Sorted(ops)); !v.Valid || len(v.Anomalies) != 0 {
			t.Errorf("%s: %+v, want valid", name, v.Anomalies)
		}
	}
}

// TestListAppendRealtimeBesideG2: T0 and T1 form a G2-item cycle (each read the key the
// other appended to, empty); T2 began after both were acknowledged and read T1's key
// empty: a stale read in the same component as the G2-item. Both are reported: the
// G2-item by CheckListAppend, the stale read (T1 -rt-> T2 -rw-> T1) as G-single-realtime.
func TestListAppendRealtimeBesideG2(t *testing.T) {
	ops := history.Sorted([]history.Op{
		laOK(0, 0, rl(1), ap(2, 1)),
		laOK(1, 0, rl(2), ap(1, 1)),
		laOK(2, 10, rl(1)),
		laOK(3, 20, rl(1, 1), rl(2, 1)),
	})
	wantOnlyBy(t, CheckListAppendRealtime, ops, []string{"G-single-realtime", "G2-item"}, 1, 2)
	// Without the stale read the component is the G2-item's alone: nothing realtime.
	clean := history.Sorted([]history.Op{ops[0], ops[1], ops[3]})
	wantOnlyBy(t, CheckListAppendRealtime, clean, []string{"G2-item"}, 0, 1)
}
