package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotCommands: list says where there are none and shows a stored one with its
// shape and size; rm needs names or --all (usage, exit 2), refuses an unknown name in one
// line, and removes.
func TestSnapshotCommands(t *testing.T) {
	cache := t.TempDir()
	env := "HABENCH_CACHE_DIR=" + cache
	r := execute(t, []string{habenchBin, "snapshot", "list"}, env)
	if r.code != 0 || !strings.Contains(r.stdout, "no snapshots in "+filepath.Join(cache, "snapshots")) {
		t.Fatalf("empty list: %d %q %q", r.code, r.stdout, r.stderr)
	}
	dir := filepath.Join(cache, "snapshots", "mysql-9.7.0-0000abcd")
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	os.WriteFile(filepath.Join(dir, "data", "ibdata1"), make([]byte, 1<<20), 0o644)
	os.WriteFile(filepath.Join(dir, "snapshot.json"), []byte(`{"name": "mysql-9.7.0-0000abcd", "installation": {"flavor": "mysql", "version": "9.7.0", "server": "/usr/sbin/mysqld"},
"shape": {"tables": "2", "table-size": "1000"}, "created": "2026-12-02T17:00:00Z", "prepare_s": 1.5}`), 0o644)
	r = execute(t, []string{habenchBin, "snapshot", "list"}, env)
	if r.code != 0 || !strings.Contains(r.stdout, "mysql-9.7.0-0000abcd") || !strings.Contains(r.stdout, "table-size=1000 tables=2") ||
		!strings.Contains(r.stdout, "1.0 MiB") || !strings.Contains(r.stdout, "2026-12-02T17:00:00Z") {
		t.Errorf("list: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r = execute(t, []string{habenchBin, "snapshot", "rm"}, env); r.code != 2 {
		t.Errorf("rm without names: exit %d %q", r.code, r.stderr)
	}
	if r = execute(t, []string{habenchBin, "snapshot", "rm", "nosuch"}, env); r.code == 0 || !strings.Contains(r.stderr, `snapshot "nosuch"`) {
		t.Errorf("rm nosuch: exit %d %q", r.code, r.stderr)
	}
	if r = execute(t, []string{habenchBin, "snapshot", "rm", "--all"}, env); r.code != 0 || !strings.Contains(r.stdout, "removed mysql-9.7.0-0000abcd") {
		t.Errorf("rm --all: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("snapshot still there after rm --all")
	}
}
