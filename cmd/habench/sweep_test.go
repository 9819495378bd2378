package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/experiment"
)

// TestRunSweepDryRunAndBadInput: `run --dry-run` of a shipped sweep prints every cell and
// the estimate; bad sweep input, a bad --scale and a --resume of another scenario's
// directory are exit 2 with one line naming the field; nothing is deployed.
func TestRunSweepDryRunAndBadInput(t *testing.T) {
	t.Parallel()
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

// TestRunDryRunResumeChecked: `run --dry-run --resume DIR` refuses what the run itself
// refuses (exit 2, before printing a plan): a directory of another scenario file, another
// scale, another grid; a matching directory shows its done cells as not run again.
func TestRunDryRunResumeChecked(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	f := filepath.Join(t.TempDir(), "s.yaml")
	raw := "name: x\ntopologies:\n  - {name: swa, kind: single, flavor: mariadb}\nworkload:\n  test: oltp_read_write\nsweep:\n  threads: [1, 2]\n"
	os.WriteFile(f, []byte(raw), 0o644)
	sum := experiment.ScenarioSHA256([]byte(raw))
	sweep := func(sha, scale, cells string) string {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "sweep.json"), []byte(`{"format":1,"scenario":"x","scenario_file":"scenario.yaml","scenario_sha256":"`+sha+`","scale":"`+scale+`","cells":[`+cells+`]}`), 0o644)
		return dir
	}
	cells := `{"index":1,"axes":{"threads":"1","topology":"swa"},"status":"done"},{"index":2,"axes":{"threads":"2","topology":"swa"},"status":"pending"}`
	for _, c := range []struct {
		name, dir string
		args      []string
		want      string
	}{
		{"another file", sweep("0123456789abcdef", "full", cells), nil, "another scenario file"},
		{"another scale", sweep(sum, "full", cells), []string{"--scale", "small"}, "run at scale full"},
		{"another grid", sweep(sum, "full", ""), nil, "sweep.json has 0 cells"},
	} {
		r := habench(t, state, append([]string{"run", f, "--dry-run", "--resume", c.dir}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%s: exit %d stdout %q stderr %q, want exit 2 naming %q and no plan", c.name, r.code, r.stdout, r.stderr, c.want)
		}
	}
	r := habench(t, state, "run", f, "--dry-run", "--resume", sweep(sum, "full", cells))
	if r.code != 0 || !strings.Contains(r.stdout, "cell 1  topology=swa threads=1  done (not run again)") || !strings.Contains(r.stdout, "1 done already") {
		t.Errorf("matching directory: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	noClusters(t, state)
}
