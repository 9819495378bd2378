package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/topology"
)

// TestCopyHostSnapshot: a snapshot directory on lab host 1 is streamed through this
// machine to host 2 (tar over the two SSH sessions' standard output and input), recorded
// there before it is created, complete (snapshot.json, data with its file modes); a
// second copy finds it and does nothing; removeHostSnapshot removes exactly what the
// record lists, and a directory there without a record is refused. The lab's hosts share
// this machine's filesystem: the two sides are two host directories.
func TestCopyHostSnapshot(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 2, testhost.Options{SSH: true})
	h1, h2 := sshHostFor(nil, lab.Hosts[0].Name), sshHostFor(nil, lab.Hosts[1].Name)
	h1.Config, h2.Config = lab.SSHConfig, lab.SSHConfig
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := t.TempDir()
	src := snapshotLayout(filepath.Join(base, "a"), "mariadb-11.8.3-0123abcd")
	dst := snapshotLayout(filepath.Join(base, "b"), src.Node)
	if err := claimHostSnapshotDir(ctx, h1, src); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(src.nodeDir(), "data")
	big := strings.Repeat("row ", 1<<20) // 4 MiB: more than one pipe buffer
	for p, c := range map[string]string{"ibdata1": big, "sbtest/sbtest1.ibd": "t1"} {
		os.MkdirAll(filepath.Dir(filepath.Join(data, p)), 0o750)
		if err := os.WriteFile(filepath.Join(data, p), []byte(c), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	snap := &Snapshot{Name: src.Node, Created: time.Now().UTC().Truncate(time.Second)}
	if err := saveSnapshot(src.nodeDir(), snap); err != nil {
		t.Fatal(err)
	}
	// The two sides of a copy are the same path on real hosts; here they differ.
	if err := claimHostSnapshotDir(ctx, h2, dst); err != nil {
		t.Fatal(err)
	}
	if err := copyHostDir(ctx, h1, src.nodeDir(), h2, dst.nodeDir(), "data", "snapshot.json"); err != nil {
		t.Fatal(err)
	}
	got, err := readHostSnapshot(ctx, h2, dst.HostDir, dst.Node)
	if err != nil || !got.Created.Equal(snap.Created) {
		t.Fatalf("copy: snapshot.json %+v %v", got, err)
	}
	b, err := os.ReadFile(filepath.Join(dst.nodeDir(), "data", "ibdata1"))
	if err != nil || string(b) != big {
		t.Errorf("copy: ibdata1 %d bytes (%v), want %d", len(b), err, len(big))
	}
	if fi, err := os.Stat(filepath.Join(dst.nodeDir(), "data", "sbtest", "sbtest1.ibd")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("copy: sbtest1.ibd %v %v, want mode 0640", fi, err)
	}
	rec, err := readHostRecord(ctx, h2, dst)
	if err != nil || strings.Join(rec.Created, ",") != strings.Join([]string{dst.HostDir, dst.clusterDir(), dst.nodeDir()}, ",") {
		t.Errorf("record on host 2: %+v %v", rec, err)
	}
	// A complete copy with the same snapshot.json is kept as it is.
	if err := copyHostSnapshot(ctx, h1, h2, dst, snap); err != nil {
		t.Errorf("second copy: %v", err)
	}
	for _, l := range []hostLayout{src, dst} {
		if ok, err := removeHostSnapshot(ctx, h1, l); !ok || err != nil {
			t.Errorf("remove %s: %v %v", l.nodeDir(), ok, err)
		}
		if _, err := os.Stat(l.HostDir); err == nil {
			t.Errorf("remove: %s still there", l.HostDir)
		}
	}
	foreign := snapshotLayout(filepath.Join(base, "c"), src.Node)
	os.MkdirAll(foreign.nodeDir(), 0o755)
	if err := claimHostSnapshotDir(ctx, h2, foreign); err == nil || !strings.Contains(err.Error(), "did not create it") {
		t.Errorf("claim of a directory habench did not create: %v", err)
	}
	if ok, err := removeHostSnapshot(ctx, h2, foreign); ok || err != nil {
		t.Errorf("remove without a record: %v %v, want false, nil", ok, err)
	}
	if _, err := os.Stat(foreign.nodeDir()); err != nil {
		t.Errorf("a directory habench did not create was removed: %v", err)
	}
}

// TestHostSnapshotsNameReserved: HOST_DIR/snapshots holds the snapshots, so no cluster on
// hosts may be named snapshots: deploy and destroy --hosts refuse it in one line naming
// the field, before any host is reached.
func TestHostSnapshotsNameReserved(t *testing.T) {
	s := &Store{StateDir: t.TempDir()}
	spec := topology.Spec{Name: HostSnapshotsDir, Kind: topology.Async, Nodes: 2, Flavor: topology.MariaDB,
		Provider: topology.ProviderHosts, HostsSpec: topology.HostsSpec{Hosts: []string{"127.0.0.1"}}}
	_, err := s.checkHostsSpec(spec)
	var fe *topology.FieldError
	if !errors.As(err, &fe) || fe.Field != "name" || !strings.Contains(err.Error(), "snapshots") {
		t.Errorf("deploy of a cluster named snapshots on hosts: %v", err)
	}
	_, err = s.DestroyFromHosts(context.Background(), HostSnapshotsDir, []string{"127.0.0.1"}, "/var/lib/habench-hosts", nil)
	if !errors.As(err, &fe) || fe.Field != "name" || !strings.Contains(err.Error(), "snapshot rm") {
		t.Errorf("destroy snapshots --hosts: %v", err)
	}
}
