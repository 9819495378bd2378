package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunSweepDryRunAndBadInput: `run --dry-run` of a shipped sweep prints every cell and
// the estimate; bad sweep input, a bad --scale and a --resume of another scenario's
// directory are exit 2 with one line naming the field; nothing is deployed.
func TestRunSweepDryRunAndBadInput(t *testing.T) {
	state := stateDir(t)
	r := habench(t, state, "run", "../../scenarios/s4-durability-mariadb.yaml", "--scale", "small", "--dry-run")
	if r.code != 0 {
		t.Fatalf("dry run: exit %d: %s", r.code, r.stderr)
	}
	for _, w := range []string{"scenario s4-durability-mariadb (scale small)", "knob.durability (innodb_flush_log_at_trx_commit, sync_binlog: each) [1, 0]",
		"cell 1  topology=s4maria knob.durability=1 test=oltp_write_only", "cell 8  topology=s4maria knob.durability=0 test=oltp_read_only",
		"8 cells in 1 deployment; estimated"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("dry run lacks %q:\n%s", w, r.stdout)
		}
	}
	f := filepath.Join(t.TempDir(), "s.yaml")
	base := "name: x\ntopologies:\n  - {name: swa, kind: single, flavor: mariadb}\nworkload:\n  test: oltp_read_write\n"
	os.WriteFile(f, []byte(base+"sweep:\n  threds: [1, 2]\n"), 0o644)
	r = habench(t, state, "run", f, "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "line 7") || !strings.Contains(r.stderr, `"threds"`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("bad axis: exit %d stderr %q", r.code, r.stderr)
	}
	os.WriteFile(f, []byte(base+"sweep:\n  threads: [1, 2]\n"), 0o644)
	r = habench(t, state, "run", f, "--scale", "tiny")
	if r.code != 2 || !strings.Contains(r.stderr, `--scale "tiny"`) {
		t.Errorf("bad scale: exit %d stderr %q", r.code, r.stderr)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "sweep.json"), []byte(`{"format":1,"scenario":"x","scenario_file":"scenario.yaml","scenario_sha256":"0123456789abcdef","scale":"full","cells":[]}`), 0o644)
	r = habench(t, state, "run", f, "--resume", dir)
	if r.code != 2 || !strings.Contains(r.stderr, "--resume") || !strings.Contains(r.stderr, "another scenario file") {
		t.Errorf("resume of another file: exit %d stderr %q", r.code, r.stderr)
	}
	r = habench(t, state, "run", f, "--resume", t.TempDir())
	if r.code != 2 || !strings.Contains(r.stderr, "not a sweep directory") {
		t.Errorf("resume of an empty dir: exit %d stderr %q", r.code, r.stderr)
	}
	noClusters(t, state)
}
