package experiment_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// TestRebuildGaleraNode: on a real 3-node Galera (MariaDB) sandbox under oltp_write_only on
// n1, the scenario fault {at: 4s, action: rebuild, node: n3} stops n3, empties its datadir
// and starts it: it rejoins by SST (rsync) and is Synced when the action ends. Recorded:
// outcome rejoined with the bytes its datadir holds after the transfer (more than the
// template's few MB: the sbtest table came with it), the workload's TPS and p99 before
// and while it ran, n3 caught up; the nodes converge (n3 has every row).
func TestRebuildGaleraNode(t *testing.T) {
	t.Parallel()
	out, f := runRebuild(t, testenv.Spec(t, testenv.Name(t, "btrb"), topology.Galera, 3, topology.MariaDB))
	d := f.During
	t.Logf("rebuild n3: took %.2f s, %d bytes; TPS %.0f -> %.0f, p99 %.1f -> %.1f ms; fc paused %v; queue %.0f (%s); members %v -> %v; caught up %v s",
		d.TookS, f.Bytes, d.TPSBefore, d.TPSDuring, d.P99BeforeMs, d.P99DuringMs, deref(d.FCPausedMax), d.QueuePeak, d.QueuePeakOn,
		deref(d.MembersBefore), deref(d.MembersMin), deref(f.CaughtUpS))
	if d.MembersMin == nil || *d.MembersMin != 2 {
		t.Errorf("members min %v while n3 was rebuilt, want 2 (n3 left the cluster, the others stayed in it)", deref(d.MembersMin))
	}
	md, _ := os.ReadFile(filepath.Join(out.Dir, "report.md"))
	if !strings.Contains(string(md), "| rebuild | n3 | rejoined") {
		t.Errorf("report.md has no While it ran row for the rebuild:\n%s", md)
	}
	if cv := out.Summary.Convergence; cv == nil || len(cv.Nodes) != 3 || !cv.OK() {
		t.Errorf("convergence %+v, want the 3 nodes converged (n3 got everything by SST)", cv)
	}
}

// TestRebuildGroupMember: on a real 3-node single-primary group (MySQL) under
// oltp_write_only on the primary n1, {at: 4s, action: rebuild, node: n3} makes n3 leave the
// group and CLONE INSTANCE from the secondary n2, shut down, start on the cloned data and
// rejoin: ONLINE when the action ends. Recorded as the Galera rebuild is (outcome
// rejoined, bytes, the workload before and while it ran, the group at 2 members ONLINE while
// n3 was out), and the nodes converge (n3 has every row, also those committed after the clone).
func TestRebuildGroupMember(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MySQL)
	out, f := runRebuild(t, testenv.Spec(t, testenv.Name(t, "btrc"), topology.Group, 3, topology.MySQL))
	d := f.During
	t.Logf("rebuild n3 by clone: took %.2f s, %d bytes; TPS %.0f -> %.0f, p99 %.1f -> %.1f ms; members %v -> %v; caught up %v s",
		d.TookS, f.Bytes, d.TPSBefore, d.TPSDuring, d.P99BeforeMs, d.P99DuringMs, deref(d.MembersBefore), deref(d.MembersMin), deref(f.CaughtUpS))
	if d.MembersMin == nil || *d.MembersMin != 2 {
		t.Errorf("members min %v while n3 was rebuilt, want 2 (n3 left the group, the others stayed ONLINE)", deref(d.MembersMin))
	}
	if !strings.Contains(f.Detail, "cloned from n2") {
		t.Errorf("fault detail %q: want n3 cloned from the secondary n2", f.Detail)
	}
	if cv := out.Summary.Convergence; cv == nil || len(cv.Nodes) != 3 || !cv.OK() {
		t.Errorf("convergence %+v, want the 3 nodes converged (n3 recovered what was committed after the clone)", cv)
	}
}

// runRebuild deploys spec on a sandbox, prepares 1 table of 20000 rows, runs
// oltp_write_only with 2 threads on n1 for 30 s with {at: 4s, action: rebuild, node: n3},
// and returns the run and its one fault, checked: n3 rebuilt without error, rejoined with
// more than 5 MB, and intervals before and during it.
func runRebuild(t *testing.T, spec topology.Spec) (*experiment.Outcome, schema.FaultSummary) {
	t.Helper()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	o := smallOptions(2, 30*time.Second)
	o.Rate = behaviourRate
	o.Tables, o.TableSize = 1, 20000
	b, stdout := preparedBench(ctx, t, s, c, "oltp_write_only", o, "n1")
	b.Faults = []scenario.FaultEvent{{At: schema.Duration(4 * time.Second), Action: "rebuild", Node: "n3"}}
	out, err := b.Run(ctx)
	t.Logf("output:\n%s", stdout.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(out.Summary.Faults) != 1 {
		t.Fatalf("summary faults %+v, want one", out.Summary.Faults)
	}
	f := out.Summary.Faults[0]
	if f.Action != "rebuild" || f.Node != "n3" || f.Error != "" || f.Outcome != "rejoined" || f.Bytes < 5e6 {
		t.Fatalf("fault %+v: want n3 rebuilt, rejoined with more than 5 MB", f)
	}
	d := f.During
	if d == nil || d.TookS <= 1 || d.BeforeIntervals < 2 || d.DuringIntervals < 1 || d.TPSBefore <= 0 || d.P99DuringMs <= 0 {
		t.Fatalf("during %+v, want intervals before and during it", d)
	}
	return out, f
}
