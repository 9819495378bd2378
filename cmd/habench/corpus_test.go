package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadScenarioCorpus runs every file of testdata/bad (hostile scenario files: wrong
// types, unknown keys and nodes, faults at impossible times or for the wrong kind, bad
// links, ...) through `habench run` and `habench run --dry-run`: each must be refused
// with exit 2 and one line naming what its first line's "# want: a|b|c" lists, before
// anything is deployed or written.
func TestBadScenarioCorpus(t *testing.T) {
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
