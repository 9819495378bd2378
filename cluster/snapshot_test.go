package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

var (
	testInst  = SnapshotInstallation{Flavor: "mysql", Version: "9.7.0", Root: "/r", Server: "/usr/sbin/mysqld"}
	testShape = DataShape{"tables": "2", "table-size": "1000", "rand-seed": "0"}
)

// TestSnapshotName: the same installation and shape always give the same name, another
// version or shape another one.
func TestSnapshotName(t *testing.T) {
	a := SnapshotName(testInst, testShape)
	if !strings.HasPrefix(a, "mysql-9.7.0-") || validSnapshotName(a) != nil {
		t.Fatalf("name %q", a)
	}
	if b := SnapshotName(testInst, DataShape{"rand-seed": "0", "table-size": "1000", "tables": "2"}); b != a {
		t.Errorf("same shape: %q != %q", b, a)
	}
	other := testInst
	other.Version = "9.7.1"
	if SnapshotName(other, testShape) == a {
		t.Error("another version gave the same name")
	}
	if SnapshotName(testInst, DataShape{"tables": "2", "table-size": "1001", "rand-seed": "0"}) == a {
		t.Error("another table-size gave the same name")
	}
	for _, bad := range []string{"", "../x", "a/b", "A"} {
		if validSnapshotName(bad) == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

// TestSnapshotMatch: a snapshot is refused for another installation or shape in one line
// naming the field and both values.
func TestSnapshotMatch(t *testing.T) {
	s := &Snapshot{Name: "snap1", Installation: testInst, Shape: testShape}
	if err := s.Match(testInst, DataShape{"tables": "2", "table-size": "1000", "rand-seed": "0"}); err != nil {
		t.Fatalf("same: %v", err)
	}
	maria := testInst
	maria.Flavor = "mariadb"
	cases := []struct {
		inst  SnapshotInstallation
		shape DataShape
		want  []string
	}{
		{maria, testShape, []string{"installation.flavor", `"mysql"`, `"mariadb"`}},
		{testInst, DataShape{"tables": "8", "table-size": "1000", "rand-seed": "0"}, []string{"shape.tables", `"2"`, `"8"`}},
		{testInst, DataShape{"tables": "2", "table-size": "1000", "rand-seed": "0", "loaders": "2"}, []string{"shape.loaders", `""`, `"2"`}},
	}
	for _, c := range cases {
		err := s.Match(c.inst, c.shape)
		var fe *topology.FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("%v: got %v, want a field error", c.want, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "snap1") {
			t.Errorf("not one line naming the snapshot: %q", msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q does not contain %s", msg, w)
			}
		}
	}
}

// TestSnapshotStore: a saved snapshot is listed with its size and removed; a directory
// being made (.NAME.tmp) is not listed; an unknown name is fs.ErrNotExist.
func TestSnapshotStore(t *testing.T) {
	t.Setenv("HABENCH_CACHE_DIR", t.TempDir())
	name := SnapshotName(testInst, testShape)
	dir := filepath.Join(SnapshotsDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "ibdata1"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := saveSnapshot(dir, &Snapshot{Name: name, Installation: testInst, Shape: testShape}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(SnapshotsDir(), ".other.tmp"), 0o755)
	ss, err := ListSnapshots()
	if err != nil || len(ss) != 1 || ss[0].Name != name || ss[0].Shape["tables"] != "2" {
		t.Fatalf("list: %v %+v", err, ss)
	}
	if n, err := ss[0].Size(); err != nil || n < 64<<10 {
		t.Errorf("size %d %v, want at least 64 KiB", n, err)
	}
	if err := RemoveSnapshot(name); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSnapshot(name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after rm: %v", err)
	}
	if err := RemoveSnapshot("../etc"); err == nil {
		t.Error("bad name removed")
	}
}

// TestScrubIdentity: the server's and replication's identity goes, the data stays.
func TestScrubIdentity(t *testing.T) {
	d := t.TempDir()
	gone := []string{"auto.cnf", "binlog.000001", "binlog.index", "mysql-bin.000002", "relay.000001", "grastate.dat", "galera.cache", "master.info"}
	kept := []string{"ibdata1", "mysql.ibd", "undo_001"}
	for _, f := range append(append([]string{}, gone...), kept...) {
		os.WriteFile(filepath.Join(d, f), nil, 0o644)
	}
	os.Mkdir(filepath.Join(d, "sbtest"), 0o755)
	if err := scrubIdentity(d); err != nil {
		t.Fatal(err)
	}
	for _, f := range gone {
		if _, err := os.Stat(filepath.Join(d, f)); err == nil {
			t.Errorf("%s kept", f)
		}
	}
	for _, f := range append(kept, "sbtest") {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			t.Errorf("%s removed", f)
		}
	}
}

// TestSnapshotRefusal: kinds without snapshots, providers without a SnapshotStore
// (existing clusters) and on-disk options prepare as before; the hosts provider has one.
func TestSnapshotRefusal(t *testing.T) {
	ok := topology.Spec{Kind: topology.Group, Options: map[string]string{"innodb_buffer_pool_size": "1G"}}
	if why := SnapshotRefusal(ok); why != "" {
		t.Errorf("group refused: %s", why)
	}
	if why := SnapshotRefusal(topology.Spec{Kind: topology.Galera, Provider: topology.ProviderHosts}); why != "" {
		t.Errorf("galera on hosts refused: %s", why)
	}
	for _, s := range []topology.Spec{
		{Kind: topology.GroupDR},
		{Kind: topology.GroupDR, Provider: topology.ProviderHosts},
		{Kind: topology.Async, Provider: topology.ProviderExisting},
		{Kind: topology.Galera, Options: map[string]string{"innodb-page-size": "4k"}},
		{Kind: topology.Single, Options: map[string]string{"loose_character_set_server": "latin1"}},
	} {
		if SnapshotRefusal(s) == "" {
			t.Errorf("%+v not refused", s)
		}
	}
}

// TestGaleraState: every node gets the same position; only the bootstrap node is
// safe to bootstrap, as galeraStartArgs reads it back.
func TestGaleraState(t *testing.T) {
	u := "838b2ba1-27a2-43f3-b12b-500f7cb16788"
	for _, boot := range []bool{true, false} {
		st := GaleraState(u+":12", boot)
		safe, seqno := parseGrastate([]byte(st))
		if safe != boot || seqno != 12 || !strings.Contains(st, "uuid:    "+u) {
			t.Errorf("bootstrap %v: %q parsed as safe %v seqno %d", boot, st, safe, seqno)
		}
		p := filepath.Join(t.TempDir(), "grastate.dat")
		os.WriteFile(p, []byte(st), 0o644)
		if pos, err := galeraPosition(p); err != nil || pos != u+":12" {
			t.Errorf("position %q %v", pos, err)
		}
	}
	p := filepath.Join(t.TempDir(), "grastate.dat")
	os.WriteFile(p, []byte("uuid: "+u+"\nseqno: -1\n"), 0o644)
	if _, err := galeraPosition(p); err == nil {
		t.Error("seqno -1 accepted as a position")
	}
}

// TestUsersAfterJoins: with a snapshot, a Galera plan creates its users after every node
// has started; the other steps keep their order.
func TestUsersAfterJoins(t *testing.T) {
	p := topology.Plan{Steps: []topology.Step{
		{Node: "n1", Desc: "bootstrap a new cluster", Start: true},
		{Node: "n1", Desc: "create users"},
		{Node: "n2", Desc: "join", Start: true},
		{Node: "n3", Desc: "join", Start: true},
		{Node: "n1", Desc: "restore"},
	}}
	usersAfterJoins(&p)
	var got []string
	for _, st := range p.Steps {
		got = append(got, st.Node+" "+st.Desc)
	}
	want := "n1 bootstrap a new cluster,n2 join,n3 join,n1 create users,n1 restore"
	if strings.Join(got, ",") != want {
		t.Errorf("steps %v, want %s", got, want)
	}
}

// TestSnapshotFiles (issue 31): a snapshot's file list as made here (listSnapshotFiles)
// and as a host makes it (hostSnapshotFilesScript, run here by sh: find and sha256sum)
// agree; a deployment refuses it, in one line naming it, the first file that differs and
// `habench snapshot rm NAME`, when a file was removed, truncated, changed in place (a
// small one) or added, and its state (`snapshot list`) says so; the intact snapshot
// passes ("ok"). A damaged copy on a host other than the first (where it was made) is
// to be removed from that host only. A snapshot with no list at all (an older habench's)
// is "unchecked", not damaged.
func TestSnapshotFiles(t *testing.T) {
	t.Setenv("HABENCH_CACHE_DIR", t.TempDir())
	name := SnapshotName(testInst, testShape)
	dir := filepath.Join(SnapshotsDir(), name)
	data := filepath.Join(dir, "data")
	files := map[string]int{"ibdata1": SnapshotSumMax + 1, "mysql/db.frm": 900, "sbtest/sbtest1.ibd": 5 * 16384, "sbtest/db.opt": 65, "sbtest/sbtest 2.frm": 10}
	for p, n := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(data, p)), 0o755)
		if err := os.WriteFile(filepath.Join(data, p), []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(data, "empty"), 0o755)
	list, err := listSnapshotFiles(data)
	if err != nil || len(list) != len(files)+3 { // + mysql, sbtest, empty
		t.Fatalf("list: %v %+v", err, list)
	}
	out, err := exec.Command("sh", "-c", hostSnapshotFilesScript, "sh", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	hostList, err := parseHostSnapshotFiles(string(out))
	if err != nil || !reflect.DeepEqual(hostList, list) {
		t.Fatalf("the host's list differs from this machine's: %v\n%+v\n%+v", err, hostList, list)
	}
	for _, f := range list {
		if f.Type == "f" && (f.SHA256 == "") != (f.Size > SnapshotSumMax) {
			t.Errorf("%s (%d bytes): sum %q, want one for files up to %d bytes only", f.Path, f.Size, f.SHA256, SnapshotSumMax)
		}
	}
	if err := saveSnapshot(dir, &Snapshot{Name: name, Installation: testInst, Shape: testShape, Files: list}); err != nil {
		t.Fatal(err)
	}
	snap, err := LoadSnapshot(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.verifyLocal(); err != nil {
		t.Fatalf("intact snapshot: %v", err)
	}
	if st := snap.LocalState(); st != "ok" {
		t.Errorf("intact snapshot's state: %q, want ok", st)
	}
	damage := []struct {
		what   string
		damage func(p string) error
		undo   func(p string) error
		file   string
		want   string
	}{
		{"removed", func(p string) error { return os.Rename(p, p+".away") }, func(p string) error { return os.Rename(p+".away", p) },
			"sbtest/sbtest1.ibd", "data/sbtest/sbtest1.ibd is missing (81920 bytes when the snapshot was made)"},
		{"truncated", func(p string) error { return os.Truncate(p, 16384) }, func(p string) error { return os.Truncate(p, 5*16384) },
			"sbtest/sbtest1.ibd", "data/sbtest/sbtest1.ibd has 16384 bytes, 81920 when the snapshot was made"},
		{"changed", func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("y", 900)), 0o644) }, func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("x", 900)), 0o644) },
			"mysql/db.frm", "data/mysql/db.frm changed since the snapshot was made (same size, another SHA-256)"},
		{"added", func(p string) error { return os.WriteFile(p, nil, 0o644) }, os.Remove,
			"sbtest/sbtest3.ibd", "data/sbtest/sbtest3.ibd was not there when the snapshot was made (0 bytes now)"},
	}
	for _, d := range damage {
		p := filepath.Join(data, d.file)
		if err := d.damage(p); err != nil {
			t.Fatal(err)
		}
		err := snap.verifyLocal()
		var fe *topology.FieldError
		msg := fmt.Sprint(err)
		if !errors.As(err, &fe) || fe.Field != "snapshot" || strings.Contains(msg, "\n") || !strings.Contains(msg, `snapshot "`+name+`": damaged: `+d.want) ||
			!strings.Contains(msg, "habench snapshot rm "+name) {
			t.Errorf("%s %s: %v; want one line with %q and the rm command", d.what, d.file, err, d.want)
		}
		if st := snap.LocalState(); st != "damaged: "+d.want {
			t.Errorf("%s %s: state %q, want %q", d.what, d.file, st, "damaged: "+d.want)
		}
		if d.what == "removed" {
			checkHostCopyAdvice(t, snap, d.want)
		}
		if err := d.undo(p); err != nil {
			t.Fatal(err)
		}
		if err := snap.verifyLocal(); err != nil {
			t.Fatalf("after undoing the %s file: %v", d.what, err)
		}
	}
	snap.Files = nil
	want := fmt.Sprintf("snapshot %q: unchecked (made by an older habench), without the list of its files a deployment checks it by: nothing was deployed from it: remove it with `habench snapshot rm %s`", name, name)
	if err := snap.verifyLocal(); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "damaged") {
		t.Errorf("a snapshot without a file list: %v, want %q", err, want)
	}
	if st := snap.LocalState(); st != SnapshotUnchecked {
		t.Errorf("a snapshot without a file list: state %q, want %q", st, SnapshotUnchecked)
	}
}

// checkHostCopyAdvice: snap's directory, with a file removed (want), checked as the
// hosts provider checks its copies (verifyHostSnapshot, the host this machine): on the
// first host, where it was made and the copies come from, remove the snapshot from every
// host; on another host (a copy streamed there), remove that host's copy only.
func checkHostCopyAdvice(t *testing.T, snap *Snapshot, want string) {
	t.Helper()
	hostDir := filepath.Dir(SnapshotsDir()) // the snapshot's directory is HOST_DIR/snapshots/NAME
	l := snapshotLayout(hostDir, snap.Name)
	spec := topology.Spec{HostsSpec: topology.HostsSpec{Hosts: []string{"db1", "db2", "db3"}}}
	for _, c := range []struct{ dest, fix string }{
		{"db1", fmt.Sprintf("remove it with `habench snapshot rm %s --hosts db1,db2,db3 --host-dir %s` (a run with snapshots: true makes a new one)", snap.Name, hostDir)},
		{"db2", fmt.Sprintf("remove db2's copy with `habench snapshot rm %s --hosts db2 --host-dir %s` (the next deployment copies it there again from db1)", snap.Name, hostDir)},
	} {
		err := verifyHostSnapshot(context.Background(), host.Local{}, c.dest, l, snap, spec)
		w := fmt.Sprintf("snapshot %q: damaged on %s: %s; nothing was deployed from it: %s", snap.Name, c.dest, want, c.fix)
		if err == nil || err.Error() != w {
			t.Errorf("a damaged copy on %s: %v\nwant %s", c.dest, err, w)
		}
	}
}
