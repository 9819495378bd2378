package experiment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/report"
)

// TestFaultStopEscalationIsRecorded, on a real 3-member MySQL group: with a 1 s stop grace
// the primary (whose clean shutdown takes about 5 s idle: 3 s to leave the group, 2 s
// more before the plugin stops) is killed with SIGKILL. The restart fault goes on (the
// member is started again and ONLINE), is no failure, and records the escalation: in the
// returned record, the faults log, the run's warnings and the faults table. A stop of a
// secondary with the default grace is clean and records nothing.
func TestFaultStopEscalationIsRecorded(t *testing.T) {
	t.Parallel()
	s, c := sharedGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	from := time.Now()
	s.StopGrace = time.Second
	in := &Injector{Store: s}
	rec, _, err := in.Inject(ctx, c, "restart", cluster.WriterAlias)
	if err != nil {
		t.Fatalf("restart of the writer after an escalated stop: %v, want it started again", err)
	}
	want := "node " + rec.Node + " did not shut down within 1 s of SIGTERM: killed with SIGKILL (a crash, not a clean stop)"
	if rec.Escalated != want || rec.Error != "" {
		t.Errorf("record escalated %q error %q, want escalated %q and no error", rec.Escalated, rec.Error, want)
	}
	if c, err = c.Reload(); err != nil {
		t.Fatal(err)
	}
	if h := c.Health(ctx, c.Node(rec.Node)); !strings.Contains(h, "ONLINE") {
		t.Errorf("%s after the restart: %q, want ONLINE", rec.Node, h)
	}

	s.StopGrace = 0
	clean, _, err := in.Inject(ctx, c, "stop", "n3")
	if err != nil || clean.Escalated != "" {
		t.Errorf("stop of n3 with the default grace: err %v, escalated %q; want a clean stop", err, clean.Escalated)
	}

	faults := faultsDuring(c, from, from, time.Now())
	if len(faults) != 2 || faults[0].Escalated != want || faults[1].Escalated != "" {
		t.Fatalf("faults log: %+v, want the escalated restart then the clean stop", faults)
	}
	ws := escalationWarnings(faults)
	if len(ws) != 1 || !strings.HasPrefix(ws[0], "⚠ fault restart "+rec.Node) || !strings.Contains(ws[0], "NOT a clean stop") {
		t.Errorf("run warnings %q, want one ⚠ warning for the restart", ws)
	}
	if w := faultWarning(faults); !strings.Contains(w, "restart "+rec.Node) || !strings.Contains(w, "escalated to SIGKILL") {
		t.Errorf("fault warning %q does not mark the escalation", w)
	}
	table := report.FaultTable(faultSummaries(faults, nil, nil, nil))
	if !strings.Contains(table, "| restart ⚠ escalated to SIGKILL (a crash) | "+rec.Node+" |") || strings.Count(table, "SIGKILL") != 1 {
		t.Errorf("faults table does not mark the restart, and only it:\n%s", table)
	}
}
