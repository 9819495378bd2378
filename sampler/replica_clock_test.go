package sampler

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/topology"
)

// TestApplierLagClockCorrection: applier_lag_s is END_APPLY on the replica's host minus
// ORIGINAL_COMMIT on the source's: with the replica's clock 40 ms ahead of this machine's
// and the source's 10 ms behind, a raw 80 ms is a corrected 30 ms; no correction on one
// machine, nor without a source; a value below 0 after correction is 0; a lag smaller than
// the offsets' combined uncertainty is warned about once per node.
func TestApplierLagClockCorrection(t *testing.T) {
	var logs bytes.Buffer
	r := NewReplica()
	if _, err := r.Start(context.Background(), Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil); err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	src := Node{Name: "n1", Role: topology.RoleSource, ClockOffset: -10 * ms, ClockUncertainty: ms}
	rep := Node{Name: "n2", Role: topology.RoleReplica, ClockOffset: 40 * ms, ClockUncertainty: 2 * ms}
	tick := NewTick(time.Now(), 0, []Node{src, rep})
	near := func(got, want float64) bool { return got > want-1e-9 && got < want+1e-9 }
	if got := r.correctLag(0.080, rep, tick); !near(got, 0.030) {
		t.Errorf("corrected lag %v, want 0.030", got)
	}
	if logs.Len() != 0 {
		t.Errorf("a lag above the uncertainty (3 ms) warned: %s", logs.String())
	}
	if got := r.correctLag(0.040, rep, tick); got != 0 {
		t.Errorf("raw 40 ms with 50 ms of offsets: %v, want 0 (clamped)", got)
	}
	r.correctLag(0.051, rep, tick) // 1 ms: below the uncertainty again, no second warning
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "node=n2") || !strings.Contains(logs.String(), "clock_uncertainty_s=0.003") {
		t.Errorf("want one warning naming n2 and 3 ms, got %d:\n%s", n, logs.String())
	}
	local := NewTick(time.Now(), 0, []Node{{Name: "n1", Role: topology.RoleSource}, {Name: "n2", Role: topology.RoleReplica}})
	if got := r.correctLag(0.0004, local.Nodes[1], local); got != 0.0004 {
		t.Errorf("one machine: %v, want the raw 0.0004", got)
	}
	if got := r.correctLag(-0.002, rep, nil); got != 0 {
		t.Errorf("no tick: %v, want the raw value clamped at 0", got)
	}
	noSrc := NewTick(time.Now(), 0, []Node{rep})
	if got := r.correctLag(0.080, rep, noSrc); got != 0.080 {
		t.Errorf("no source in the tick: %v, want the raw 0.080", got)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
}
