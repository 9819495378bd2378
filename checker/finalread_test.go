package checker

import (
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/history"
)

// probeHistory is a probe writer's history by hand: appends of 1..6 to key 1 (1, 2, 4
// acknowledged, 3 failed, 5 and 6 of unknown outcome), then a read after the run that saw
// 1, 3 and 5 (2 and 4 lost, failed 3 and unknown 5 took effect).
func probeHistory() []history.Op {
	var ops []history.Op
	outcomes := []history.Outcome{history.OK, history.OK, history.Fail, history.OK, history.Unknown, history.Unknown}
	for i, o := range outcomes {
		ops = append(ops, history.Op{Index: i, Start: int64(i * 10), End: int64(i*10 + 5), Outcome: o, Value: []history.Mop{history.Append(1, int64(i+1))}})
	}
	return append(ops, history.Op{Index: 6, Start: 100, End: 110, Outcome: history.OK, Value: []history.Mop{history.RL(1, 1, 3, 5)}})
}

// TestFinalReadLoss: a hand-built probe history's acknowledged, failed, unknown and
// missing appends are counted; a read that is not final or missing is an error.
func TestFinalReadLoss(t *testing.T) {
	ops := probeHistory()
	l, err := FinalReadLoss(ops, 1)
	if err != nil {
		t.Fatal(err)
	}
	if l.Acknowledged != 3 || l.Failed != 1 || l.Unknown != 2 || !slices.Equal(l.LostAcknowledged, []int64{2, 4}) || l.FailedPresent != 1 || l.UnknownPresent != 1 {
		t.Errorf("loss %+v, want 3 acknowledged (2, 4 lost), 1 failed (present), 2 unknown (1 present)", l)
	}
	ops[6].Value[0] = history.RL(1, 1, 2, 3, 4, 5, 6)
	if l, err := FinalReadLoss(ops, 1); err != nil || len(l.LostAcknowledged) != 0 || l.UnknownPresent != 2 {
		t.Errorf("nothing lost: %+v, %v", l, err)
	}
	ops[6].Start = 40
	if _, err := FinalReadLoss(ops, 1); err == nil || !strings.Contains(err.Error(), "not a final read") {
		t.Errorf("a read before the last append ended: %v", err)
	}
	if _, err := FinalReadLoss(ops[:6], 1); err == nil || !strings.Contains(err.Error(), "no read") {
		t.Errorf("no read: %v", err)
	}
}
