package experiment_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// TestLargeTransaction: on real 3-node sandboxes under oltp_write_only on n1, the scenario
// fault {at: 5s, action: large-transaction, node: writer, rows: 200000}: on Galera it
// commits (outcome ok, 200000 rows); on a group whose group_replication_transaction_size_limit
// is lowered to 1 MB (a knob) the server refuses it at commit, and the refusal is the
// transaction's outcome (the server's error code and message), not a failure of the action
// or the run. Both: summary.json's during has intervals before and during it, and
// report.md's "While it ran" table shows the outcome; the nodes converge.
func TestLargeTransaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		kind    topology.Kind
		flavor  topology.Flavor
		knobs   []topology.KnobSetting
		outcome string
	}{
		{"group", topology.Group, topology.MySQL, []topology.KnobSetting{{Name: "group_replication_transaction_size_limit", Value: "1000000"}}, "error 3"},
		{"galera", topology.Galera, topology.MariaDB, nil, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := testenv.Store(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "bt"+tc.name[:2]), tc.kind, 3, tc.flavor))
			if err != nil {
				t.Fatal(err)
			}
			o := smallOptions(2, 16*time.Second)
			o.Rate = behaviourRate
			o.Tables = 1
			b, stdout := preparedBench(ctx, t, s, c, "oltp_write_only", o, "n1")
			b.Knobs = tc.knobs
			b.Faults = []scenario.FaultEvent{{At: schema.Duration(5 * time.Second), Action: "large-transaction", Node: "writer",
				Args: scenario.FaultArgs{"rows": "200000"}}}
			out, err := b.Run(ctx)
			t.Logf("output:\n%s", stdout.String())
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if len(out.Summary.Faults) != 1 {
				t.Fatalf("summary faults %+v, want one", out.Summary.Faults)
			}
			f := out.Summary.Faults[0]
			if f.Action != "large-transaction" || f.Node != "n1" || f.Error != "" || !strings.HasPrefix(f.Outcome, tc.outcome) {
				t.Fatalf("fault %+v: want the large transaction on n1 without an action error, outcome %q...", f, tc.outcome)
			}
			if tc.outcome == "ok" && f.Rows != 200000 {
				t.Errorf("rows %d, want 200000", f.Rows)
			}
			d := f.During
			if d == nil || d.TookS <= 0 || d.BeforeIntervals < 2 || d.DuringIntervals < 1 || d.TPSBefore <= 0 || d.P99BeforeMs <= 0 || d.P99DuringMs <= 0 {
				t.Fatalf("during %+v, want intervals before and during it with TPS and p99", d)
			}
			t.Logf("%s: outcome %q, %d rows, took %.2f s; TPS %.0f -> %.0f, p99 %.1f -> %.1f ms; fc paused %v throttle %v; queue %.0f (%s); members %v -> %v",
				tc.name, f.Outcome, f.Rows, d.TookS, d.TPSBefore, d.TPSDuring, d.P99BeforeMs, d.P99DuringMs, deref(d.FCPausedMax), deref(d.FCThrottleS),
				d.QueuePeak, d.QueuePeakOn, deref(d.MembersBefore), deref(d.MembersMin))
			md, _ := os.ReadFile(filepath.Join(out.Dir, "report.md"))
			if !strings.Contains(string(md), "### While it ran") || !strings.Contains(string(md), "| large-transaction | n1 | "+tc.outcome) {
				t.Errorf("report.md has no While it ran row with outcome %q:\n%s", tc.outcome, md)
			}
			if cv := out.Summary.Convergence; cv == nil || !cv.OK() {
				t.Errorf("convergence %+v, want the nodes converged", cv)
			}
		})
	}
}
