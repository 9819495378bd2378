package report

import (
	"fmt"
	"strings"

	"github.com/habench/habench/schema"
)

// DuringTable renders the lasting faults' FaultDuring as a Markdown table ("" when none
// has one): outcome and duration, TPS and p99 before and during, flow control, queues
// and membership.
func DuringTable(fs []schema.FaultSummary) string {
	var b strings.Builder
	for _, f := range fs {
		d := f.During
		if d == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| at (s) | fault | node | outcome | took s | TPS before → during | p99 ms before → during | flow control | peak queue | members before → min |\n|---|---|---|---|---|---|---|---|---|---|\n")
		}
		outcome := f.Outcome
		if f.Error != "" {
			outcome = "action failed: " + f.Error
		}
		if f.Rows > 0 {
			outcome += fmt.Sprintf(" (%d rows)", f.Rows)
		}
		if f.Bytes > 0 {
			outcome += fmt.Sprintf(" %.1f MB received", float64(f.Bytes)/1e6)
		}

		fc := "-"
		switch {
		case d.FCPausedMax != nil:
			fc = fmt.Sprintf("paused ≤ %.0f%%", *d.FCPausedMax*100)
		case d.FCThrottleS != nil:
			fc = fmt.Sprintf("throttled %.1f s", *d.FCThrottleS)
		}
		queue := "-"
		if d.QueuePeakOn != "" {
			queue = fmt.Sprintf("%.0f (%s)", d.QueuePeak, d.QueuePeakOn)
		}
		before, p99b := "n/a", "n/a"
		if d.BeforeIntervals > 0 {
			before, p99b = fmt.Sprintf("%.0f", d.TPSBefore), fmt.Sprintf("%.1f", d.P99BeforeMs)
		}
		fmt.Fprintf(&b, "| %.2f | %s | %s | %s | %.2f | %s → %.0f | %s → %.1f | %s | %s | %s → %s |\n", f.AtS, f.Action, f.Node, orDash(strings.TrimSpace(outcome)),
			d.TookS, before, d.TPSDuring, p99b, d.P99DuringMs, fc, queue, fmtOpt(d.MembersBefore, "%.0f"), fmtOpt(d.MembersMin, "%.0f"))
	}
	return b.String()
}

// DuringNote explains DuringTable's columns.
const DuringNote = "For the faults that last (a large transaction, a rebuild): outcome = the transaction's own result (ok, or the server's error: a refusal by the group's " +
	"group_replication_transaction_size_limit or Galera's wsrep_max_ws_size is the transaction's result, not a failure of the run); took = the action's duration; " +
	"TPS before = the workload's transactions per second in the report intervals that ended in the 30 s before it, during = in those that overlapped it; " +
	"p99 before = the median of the before intervals' p99, during = the largest p99 of the intervals during it; flow control = Galera's largest paused fraction or the seconds " +
	"the group's flow control held commits, while it ran; peak queue = the largest replication queue any node reported (transactions); members = the largest membership " +
	"any node saw before, and the smallest while it ran (lower: a member was expelled or left the Primary component). " +
	"The Faults table's recovered after and outage of look at the fault's start only: a stall at the end of a long action (a large transaction's commit) shows here and in the WARNINGs."
