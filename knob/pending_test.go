package knob_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
)

// TestPendingRecordPIDReused: a pending record whose run was killed is reported as left by
// an interrupted run (habench knob restore) even when its PID now belongs to another
// process: PID 1 is always alive, but was not started at the recorded time. A record
// without start time (older habench) keeps the PID-only check.
func TestPendingRecordPIDReused(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "clusters", "rvpd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := `{"name":"rvpd","provider":"existing","network":"existing","state":"ready",
 "spec":{"name":"rvpd","provider":"existing","kind":"single","nodes":1,"flavor":"mariadb"},
 "binaries":{"flavor":"mariadb","version":"10.11.19"},
 "nodes":[{"name":"n1","role":"source","host":"127.0.0.1","port":1}]}`
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(st), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := (&cluster.Store{StateDir: state}).Load("rvpd")
	if err != nil {
		t.Fatal(err)
	}
	ticks, ok := cluster.ProcessStartTicks(1)
	if !ok {
		t.Fatal("pid 1 not readable")
	}
	for _, tc := range []struct {
		ticks string
		want  string
	}{
		{`"start_ticks": 1`, "an interrupted run (pid 1)"},
		{`"start_ticks": ` + strconv.FormatUint(ticks, 10), "a run (pid 1"},
		{`"x": 0`, "a run (pid 1"},
	} {
		rec := `{"cluster":"rvpd","pid":1,` + tc.ticks + `,"requested":["sync_binlog=0"],"entries":[]}`
		if err := os.WriteFile(filepath.Join(dir, knob.PendingFile), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := knob.Pending(c); !strings.HasPrefix(got, tc.want) {
			t.Errorf("record %s: Pending = %q, want it to start with %q", rec, got, tc.want)
		}
	}
}
