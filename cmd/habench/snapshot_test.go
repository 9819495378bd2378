package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
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

// TestRunSnapshotPreflight: a snapshot named with --snapshot that does not exist, or was
// made with another installation, is refused before anything is deployed or written, in
// one line naming the field and the value (issue 22).
func TestRunSnapshotPreflight(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	cache, state, res := t.TempDir(), stateDir(t), t.TempDir()
	dir := filepath.Join(cache, "snapshots", "mysql-9.7.0-0000abcd")
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	os.WriteFile(filepath.Join(dir, "snapshot.json"), []byte(`{"name": "mysql-9.7.0-0000abcd", "installation": {"flavor": "mysql", "version": "9.7.0", "server": "/usr/sbin/mysqld"},
"shape": {"tables": "1", "table-size": "1000"}, "created": "2026-12-02T17:00:00Z"}`), 0o644)
	name := testenv.Name(t, "snp")
	f := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(f, []byte("name: snp\ntopologies:\n  - {name: "+name+", kind: async, nodes: 2, flavor: mariadb}\n"+
		"workload:\n  test: oltp_read_only\n  options: {tables: 1, table-size: 1000, threads: 1, time: 2}\n"), 0o644)
	for _, c := range []struct{ snapshot, want string }{
		{"nosuch", `snapshot "nosuch": no such snapshot`},
		{"mysql-9.7.0-0000abcd", `snapshot "mysql-9.7.0-0000abcd": made with installation.flavor "mysql", this deployment wants "mariadb"`},
	} {
		r := execute(t, []string{habenchBin, "run", f, "--results", res, "--snapshot", c.snapshot}, "HABENCH_CACHE_DIR="+cache, "HABENCH_STATE_DIR="+state)
		msg := strings.TrimSpace(r.stderr)
		if r.code == 0 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") > 0 {
			t.Errorf("--snapshot %s: exit %d, stderr %q, want one line with %q", c.snapshot, r.code, r.stderr, c.want)
		}
		noClusters(t, state, name)
	}
	if entries, _ := os.ReadDir(res); len(entries) != 0 {
		t.Errorf("results written before the refusal: %v", entries)
	}
}
