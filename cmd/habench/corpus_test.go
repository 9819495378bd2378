package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/internal/testserver"
)

// TestBadScenarioCorpus runs every file of testdata/bad (hostile scenario files: wrong
// types, unknown keys and nodes, faults at impossible times or for the wrong kind, bad
// links, ...) through `habench run` and `habench run --dry-run`: each must be refused
// with exit 2 and one line naming what its first line's "# want: a|b|c" lists, before
// anything is deployed or written.
func TestBadScenarioCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) < 20 {
		t.Fatalf("want at least 20 bad inputs in testdata/bad, got %d (%v)", len(files), err)
	}
	state := stateDir(t)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(filepath.Base(f), "knob-") {
				// Knob names are checked against the installed server's variable list
				// (the server's --version is read; no server is started).
				prereq.Need(t, testserver.Available())
			}
			first, _, _ := strings.Cut(string(b), "\n")
			spec, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("%s: first line must be '# want: ...'", f)
			}
			for _, args := range [][]string{{"run", f, "--dry-run"}, {"run", f, "--results", t.TempDir()}} {
				r := habench(t, state, args...)
				msg := strings.TrimSpace(r.stderr)
				if r.code != 2 || strings.Contains(msg, "\n") || strings.Contains(r.stderr, "panic") {
					t.Errorf("habench %v: exit %d, stderr %q; want exit 2 and one line", args, r.code, r.stderr)
					continue
				}
				for _, w := range strings.Split(spec, "|") {
					if !strings.Contains(msg, w) {
						t.Errorf("habench %v: %q does not name %q", args, msg, w)
					}
				}
				if len(args) == 4 {
					if left, _ := os.ReadDir(args[3]); len(left) != 0 {
						t.Errorf("habench %v left results behind: %v", args, left)
					}
				}
			}
		})
	}
	noClusters(t, state)
}

// TestLongRunNeedsYesLong: a scenario estimated over 24 h is a WARNING on the dry run's
// first line (exit 0) and refused by the run (exit 2, one line, nothing written) unless
// --yes-long is given; with it the run goes on to its next check (here the missing
// installation), so the confirmation is what let it through.
func TestLongRunNeedsYesLong(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "long.yaml")
	body := "name: x\ntopologies: [{name: inlong, kind: single, flavor: mariadb, installation: {kind: rootfs, path: /nonexistent/inlong}}]\n" +
		"workload: {test: oltp_read_write, options: {time: 100}}\nsweep: {repeats: 1000}\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := habench(t, state, "run", f, "--dry-run")
	first, _, _ := strings.Cut(r.stdout, "\n")
	if r.code != 0 || !strings.HasPrefix(first, "WARNING: estimated 28h20m3s (1.2 days), over 24 h") {
		t.Errorf("dry run: exit %d, first line %q; want exit 0 and the WARNING with the estimate", r.code, first)
	}
	results := filepath.Join(dir, "results")
	r = habench(t, state, "run", f, "--results", results)
	msg := strings.TrimSpace(r.stderr)
	if r.code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, `estimate "28h20m3s": over 24 h: give --yes-long`) {
		t.Errorf("run: exit %d, stderr %q; want exit 2 and one line with the estimate", r.code, r.stderr)
	}
	if _, err := os.Stat(results); err == nil {
		t.Error("the refused run created its results directory")
	}
	r = habench(t, state, "run", f, "--results", results, "--yes-long")
	if r.code != 2 || !strings.Contains(r.stderr, "/nonexistent/inlong") {
		t.Errorf("run --yes-long: exit %d, stderr %q; want the installation refused (the long-run check passed)", r.code, r.stderr)
	}
	noClusters(t, state)
}

// TestHugeAndBinaryFiles: a 30 MB file is refused by its size without being read, and
// binary junk (or a device) by its first byte that is not text, each in one line with exit
// 2, for scenarios (run, --dry-run) and topology files (deploy -f).
func TestHugeAndBinaryFiles(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	junk := make([]byte, 30_000_000)
	for i := range junk {
		junk[i] = byte(i*7919 + i>>8)
	}
	if err := os.WriteFile(huge, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin.yaml")
	if err := os.WriteFile(bin, junk[:4096], 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", huge}, `scenario "` + huge + `": 30.0 MB: not a scenario file (the limit is 1 MiB)`},
		{[]string{"run", huge, "--dry-run"}, `30.0 MB: not a scenario file (the limit is 1 MiB)`},
		{[]string{"deploy", "-f", huge}, `30.0 MB: not a topology file (the limit is 1 MiB)`},
		{[]string{"run", "/dev/zero", "--dry-run"}, `scenario "/dev/zero": over 1 MiB: not a scenario file`},
		{[]string{"run", bin, "--dry-run"}, `line 1: control byte 0x00 (and `},
		{[]string{"deploy", "-f", bin}, `line 1: control byte 0x00 (and `},
	} {
		r := habench(t, state, c.args...)
		msg := strings.TrimSpace(r.stderr)
		if r.code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
			t.Errorf("habench %v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	noClusters(t, state)
}
