package checker

import (
	"fmt"
	"slices"

	"github.com/habench/habench/history"
)

// AppendLoss is what a final read of one list-append key says about the appends to it
// (FinalReadLoss): counts of the appends by outcome and which of them the read saw.
type AppendLoss struct {
	// Acknowledged, Failed and Unknown count the appends to the key by outcome (ok,
	// fail, unknown).
	Acknowledged, Failed, Unknown int
	// LostAcknowledged are the acknowledged appends' values the final read lacks
	// (ascending): commits the servers acknowledged and then lost.
	LostAcknowledged []int64
	// FailedPresent counts failed appends the read saw (a commit reported failed that
	// took effect); UnknownPresent the unknown-outcome appends it saw (they took effect).
	FailedPresent, UnknownPresent int
}

// FinalReadLoss checks the appends to key in ops against the final read of key: the
// last ok operation reading it, which must have begun after every append to key ended
// (a read after the run, e.g. the probe writer's read of its table). Each append is one
// operation's append mop (history.Append); its outcome is the operation's. The error
// says there is no such read or that it began before an append ended (not final).
func FinalReadLoss(ops []history.Op, key int64) (AppendLoss, error) {
	var out AppendLoss
	var final *history.Op
	var list []int64
	lastEnd := int64(-1 << 62)
	for i := range ops {
		op := &ops[i]
		for _, m := range op.Value {
			switch {
			case m.F == "append" && m.Key == key:
				lastEnd = max(lastEnd, op.End)
			case m.F == "r" && m.Key == key && m.List != nil && op.Outcome == history.OK && (final == nil || op.Start > final.Start):
				final, list = op, m.List
			}
		}
	}
	if final == nil {
		return out, fmt.Errorf("key %d: no read of it that committed", key)
	}
	if final.Start < lastEnd {
		return out, fmt.Errorf("key %d: its last read (T%d) began at %d ns, before an append ended (%d ns): not a final read", key, final.Index, final.Start, lastEnd)
	}
	seen := map[int64]bool{}
	for _, x := range list {
		seen[x] = true
	}
	for _, op := range ops {
		for _, m := range op.Value {
			if m.F != "append" || m.Key != key || m.Value == nil {
				continue
			}
			v := *m.Value
			switch op.Outcome {
			case history.OK:
				out.Acknowledged++
				if !seen[v] {
					out.LostAcknowledged = append(out.LostAcknowledged, v)
				}
			case history.Fail:
				out.Failed++
				if seen[v] {
					out.FailedPresent++
				}
			default:
				out.Unknown++
				if seen[v] {
					out.UnknownPresent++
				}
			}
		}
	}
	slices.Sort(out.LostAcknowledged)
	return out, nil
}
