package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
)

// TestSnapshotCommands: list says where there are none and shows a stored one with its
// shape, size and state (made by an older habench, without a list of its files:
// unchecked); rm needs names or --all (usage, exit 2), refuses an unknown name in one
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
		!strings.Contains(r.stdout, "1.0 MiB") || !strings.Contains(r.stdout, "2026-12-02T17:00:00Z") || !strings.Contains(r.stdout, "STATE") ||
		!strings.Contains(r.stdout, "2026-12-02T17:00:00Z  unchecked (made by an older habench)\n") {
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
// one line naming the field and the value (issue 22); so is a damaged one (issue 31).
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
	checkDamagedSnapshotRefused(t, f, cache, state, res, name)
}

// checkDamagedSnapshotRefused (issue 31): a snapshot of the scenario's installation and
// shape whose file was removed, or cut short, after it was made is refused before
// anything is deployed or written, exit 2, in one line naming it, the file and `habench
// snapshot rm NAME`: named with --snapshot, and found by a run with snapshots: true; the
// dry run refuses it the same way, and `snapshot list` shows it damaged, with the file
// (review 31). Then checkUncheckedSnapshot.
func checkDamagedSnapshotRefused(t *testing.T, scen, cache, state, res, cluster1 string) {
	t.Helper()
	b, err := os.ReadFile(scen)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.ParseScenario(b)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	bins, err := (&cluster.Store{}).SpecBinaries(context.Background(), plan.Deployments[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	cell := plan.Cells[0]
	inst, shape := cluster.InstallationOf(bins), scenario.DataShape(cell.Test, cell.Options)
	name := cluster.SnapshotName(inst, shape)
	dir := filepath.Join(cache, "snapshots", name)
	var files []cluster.SnapshotFile
	for _, f := range []struct {
		path string
		size int
	}{{"ibdata1", cluster.SnapshotSumMax + 100}, {"sbtest", -1}, {"sbtest/sbtest1.frm", 900}, {"sbtest/sbtest1.ibd", 96 << 10}} {
		p := filepath.Join(dir, "data", f.path)
		if f.size < 0 {
			os.MkdirAll(p, 0o755)
			files = append(files, cluster.SnapshotFile{Path: f.path, Type: "d"})
			continue
		}
		body := []byte(strings.Repeat("r", f.size))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		sf := cluster.SnapshotFile{Path: f.path, Type: "f", Size: int64(f.size)}
		if f.size <= cluster.SnapshotSumMax {
			sf.SHA256 = fmt.Sprintf("%x", sha256.Sum256(body))
		}
		files = append(files, sf)
	}
	js, _ := json.Marshal(cluster.Snapshot{Name: name, Installation: inst, Shape: shape, Created: time.Now().UTC(), Files: files})
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	ibd := filepath.Join(dir, "data", "sbtest", "sbtest1.ibd")
	snapOn := filepath.Join(t.TempDir(), "snapshots.yaml")
	if err := os.WriteFile(snapOn, append(b, []byte("snapshots: true\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what   string
		damage func() error
		args   []string
		want   string
	}{
		{"removed", func() error { return os.Remove(ibd) }, []string{scen, "--snapshot", name}, "data/sbtest/sbtest1.ibd is missing (98304 bytes when the snapshot was made)"},
		{"truncated", func() error { return os.WriteFile(ibd, make([]byte, 16384), 0o644) }, []string{snapOn}, "data/sbtest/sbtest1.ibd has 16384 bytes, 98304 when the snapshot was made"},
	} {
		if err := c.damage(); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`snapshot %q: damaged: %s; nothing was deployed from it: remove it with `+"`habench snapshot rm %s`", name, c.want, name)
		for _, dry := range []bool{false, true} {
			argv := append(append([]string{habenchBin, "run"}, c.args...), "--results", res)
			if dry {
				argv = append(argv, "--dry-run")
			}
			r := execute(t, argv, "HABENCH_CACHE_DIR="+cache, "HABENCH_STATE_DIR="+state)
			msg := strings.TrimSpace(r.stderr)
			if r.code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
				t.Errorf("a snapshot with a file %s (dry run %v): exit %d, stderr %q; want exit 2 and one line with %q", c.what, dry, r.code, msg, want)
			}
		}
		if line := snapshotListLine(t, cache, name); !strings.HasSuffix(line, "damaged: "+c.want) {
			t.Errorf("snapshot list, a file %s: %q, want it to end with %q", c.what, line, "damaged: "+c.want)
		}
		noClusters(t, state, cluster1)
	}
	if entries, _ := os.ReadDir(res); len(entries) != 0 {
		t.Errorf("results written before the refusal of a damaged snapshot: %v", entries)
	}
	js, _ = json.Marshal(cluster.Snapshot{Name: name, Installation: inst, Shape: shape, Created: time.Now().UTC()}) // no file list
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	checkUncheckedSnapshot(t, scen, snapOn, cache, state, name, cluster1)
}

// snapshotListLine is snapshot name's line of `habench snapshot list` (cache: its
// HABENCH_CACHE_DIR), spaces trimmed.
func snapshotListLine(t *testing.T, cache, name string) string {
	t.Helper()
	r := execute(t, []string{habenchBin, "snapshot", "list"}, "HABENCH_CACHE_DIR="+cache)
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return strings.TrimSpace(l)
		}
	}
	t.Errorf("snapshot list: exit %d, no line for %s:\n%s%s", r.code, name, r.stdout, r.stderr)
	return ""
}

// checkUncheckedSnapshot (review 31): snapshot name, of the scenario's installation and
// shape but made by an older habench (no list of its files), is "unchecked", not damaged:
// named with --snapshot it is refused so, exit 2, and `snapshot list` says so; a run with
// snapshots: true (snapOn) makes it again, with a NOTE (the dry run's too), and runs from
// it: exit 0, the new one listed as ok.
func checkUncheckedSnapshot(t *testing.T, scen, snapOn, cache, state, name, cluster1 string) {
	t.Helper()
	env := []string{"HABENCH_CACHE_DIR=" + cache, "HABENCH_STATE_DIR=" + state}
	r := execute(t, []string{habenchBin, "run", scen, "--snapshot", name, "--results", t.TempDir()}, env...)
	want := fmt.Sprintf("snapshot %q: unchecked (made by an older habench), without the list of its files a deployment checks it by: nothing was deployed from it: remove it with `habench snapshot rm %s`", name, name)
	if msg := strings.TrimSpace(r.stderr); r.code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Errorf("--snapshot of an older habench's snapshot: exit %d, stderr %q; want exit 2 and one line with %q", r.code, msg, want)
	}
	if line := snapshotListLine(t, cache, name); !strings.HasSuffix(line, "unchecked (made by an older habench)") {
		t.Errorf("snapshot list, an older habench's snapshot: %q", line)
	}
	note := fmt.Sprintf("NOTE: snapshot %s is unchecked (made by an older habench), without the list of its files a deployment checks it by: it is made again", name)
	if r = execute(t, []string{habenchBin, "run", snapOn, "--dry-run"}, env...); r.code != 0 || !strings.Contains(r.stdout, note) {
		t.Errorf("dry run with snapshots: true and an older habench's snapshot: exit %d, want %q\n%s%s", r.code, note, r.stdout, r.stderr)
	}
	r = execute(t, []string{habenchBin, "run", snapOn, "--results", t.TempDir(), "--quiet"}, env...)
	if r.code != 0 || !strings.Contains(r.stdout, note) || !strings.Contains(r.stdout, "making a data snapshot") {
		t.Fatalf("run with snapshots: true and an older habench's snapshot: exit %d, want %q and the snapshot made again\n%s%s", r.code, note, r.stdout, r.stderr)
	}
	if line := snapshotListLine(t, cache, name); !strings.HasSuffix(line, " ok") {
		t.Errorf("snapshot list, the snapshot made again: %q, want ok", line)
	}
	noClusters(t, state, cluster1)
}
