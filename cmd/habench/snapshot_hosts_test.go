package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/topology"
)

// TestSnapshotsOnHosts (habench run --snapshots --hosts, issue 22): on 3 lab hosts a
// scenario with a 3-node async and a 3-node Galera MariaDB topology makes one data
// snapshot (one prepare, on the first host, kept under HOST_DIR/snapshots), both
// deployments start from it and the run's writes leave the same CHECKSUM TABLE on every
// node; the second deployment prepares nothing; destroying the clusters leaves the
// snapshot; `snapshot list --hosts` shows it, `run --snapshot NAME` with another shape is
// refused in one line, `snapshot rm --hosts` removes it, and
// every host is then as it was (processes, ports, qdiscs, host directory).
func TestSnapshotsOnHosts(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 3, testhost.Options{SSH: true})
	state, hostDir, names, before := labDirs(t, lab)
	hostsArgs := []string{"--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir}
	seed := time.Now().UnixNano()%1_000_000_000 + 1
	scen := filepath.Join(t.TempDir(), "snaps.yaml")
	// Each topology on ports of its own: with --keep both stay up for the checks.
	on := fmt.Sprintf("provider: hosts, hosts: [%s], host_dir: %s, ssh: {config: %s}", strings.Join(names, ", "), hostDir, lab.SSHConfig)
	y := fmt.Sprintf(`name: snaphosts
topologies:
  - {name: shasync, kind: async, nodes: 3, flavor: mariadb, base_port: 24306, %s}
  - {name: shgalera, kind: galera, nodes: 3, flavor: mariadb, base_port: 25306, %s}
snapshots: true
workload:
  test: oltp_read_write
  options: {tables: 2, table-size: 2000, time: 2, threads: 2, rand-seed: %d}
`, on, on, seed)
	if err := os.WriteFile(scen, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := runLong(t, 4*time.Minute, state, "run", scen, "--results", t.TempDir(), "--quiet", "--keep")
	t.Logf("run --snapshots --hosts: exit %d in %.1f s\n%s", r.code, time.Since(start).Seconds(), r.stdout)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stdout, "making a data snapshot"); n != 1 {
		t.Errorf("%d snapshots made, want 1 (one installation and shape)", n)
	}
	if n := strings.Count(r.stdout, "data from snapshot "); n != 2 {
		t.Errorf("%d deployments from a snapshot, want 2", n)
	}
	checkSnapshotNodes(t, state, "shasync", "shgalera")
	for _, c := range []string{"shasync", "shgalera"} {
		if d := habench(t, state, "destroy", c); d.code != 0 {
			t.Errorf("destroy %s: exit %d\n%s", c, d.code, d.stderr)
		}
	}
	// The snapshot outlives the clusters, on every host (here one shared directory).
	snaps, _ := filepath.Glob(filepath.Join(hostDir, "snapshots", "*", "snapshot.json"))
	if len(snaps) != 1 {
		t.Fatalf("after destroy: snapshots %q, want one", snaps)
	}
	name := filepath.Base(filepath.Dir(snaps[0]))
	l := habench(t, state, append([]string{"snapshot", "list"}, hostsArgs...)...)
	if l.code != 0 || strings.Count(l.stdout, name) != 3 || !strings.Contains(l.stdout, "mariadb") || strings.Count(l.stdout, " ok\n") != 3 {
		t.Errorf("snapshot list --hosts: exit %d, want %s on each of 3 hosts, its state ok\n%s%s", l.code, name, l.stdout, l.stderr)
	}
	// Another shape is refused before anything is deployed, in one line with both values.
	scen2 := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(scen2, []byte(strings.Replace(y, "table-size: 2000", "table-size: 3000", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := habench(t, state, "run", scen2, "--snapshot", name, "--results", t.TempDir(), "--quiet")
	line := strings.TrimSpace(ref.stderr)
	if ref.code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, `shape.table-size "2000", this deployment wants "3000"`) {
		t.Errorf("run --snapshot %s with another table-size: exit %d, stderr %q; want exit 2 and one line with both values", name, ref.code, line)
	}
	checkDamagedHostSnapshot(t, state, y, hostDir, name, names, lab.SSHConfig)
	rm := habench(t, state, append([]string{"snapshot", "rm", name}, hostsArgs...)...)
	if rm.code != 0 || !strings.Contains(rm.stdout, names[0]+": removed "+name) {
		t.Errorf("snapshot rm --hosts: exit %d\n%s%s", rm.code, rm.stdout, rm.stderr)
	}
	t.Logf("snapshot rm --hosts:\n%s", rm.stdout)
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after the run and snapshot rm:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}

// checkDamagedHostSnapshot (issue 31): snapshot name on the hosts (hostDir, shared by the
// lab's hosts) with its largest table file removed, then cut short, is refused by a run of
// scenario y naming it (--snapshot), before anything is deployed: exit 2, one line naming
// the snapshot, the host, the file and `habench snapshot rm NAME --hosts ...`; `snapshot
// list --hosts` shows each host's copy damaged, with the file (review 31).
func checkDamagedHostSnapshot(t *testing.T, state, y, hostDir, name string, hosts []string, sshConfig string) {
	t.Helper()
	// The check every deployment from it makes, timed on the intact snapshot: the three
	// hosts at once, each a find and a sha256sum over ssh.
	spec := topology.Spec{Name: "shcheck", Kind: topology.Async, Nodes: 3, Flavor: topology.MariaDB, Provider: topology.ProviderHosts,
		HostsSpec: topology.HostsSpec{Hosts: hosts, HostDir: hostDir}}
	spec.SSH = &topology.SSHSpec{Config: sshConfig}
	sb := &cluster.Store{StateDir: state}
	ctx := context.Background()
	snap, err := sb.LoadSnapshot(ctx, spec, name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		t0 := time.Now()
		if err := sb.VerifySnapshot(ctx, spec, snap); err != nil {
			t.Fatalf("the intact snapshot: %v", err)
		}
		t.Logf("checking snapshot %s (%d entries) on %d hosts, round %d: %v", name, len(snap.Files), len(hosts), i+1, time.Since(t0).Round(time.Millisecond))
	}
	data := filepath.Join(hostDir, "snapshots", name, "data")
	var big string
	var size int64
	filepath.Walk(filepath.Join(data, "sbtest"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > size {
			big, size = p, fi.Size()
		}
		return nil
	})
	if big == "" {
		t.Fatalf("no table file in %s", data)
	}
	rel, _ := filepath.Rel(data, big)
	scen := filepath.Join(t.TempDir(), "damaged.yaml")
	if err := os.WriteFile(scen, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what   string
		damage func() error
		want   string
	}{
		{"removed", func() error { return os.Rename(big, big+".away") }, fmt.Sprintf("data/%s is missing (%d bytes when the snapshot was made)", rel, size)},
		{"truncated", func() error { os.Rename(big+".away", big); return os.Truncate(big, 16384) }, fmt.Sprintf("data/%s has 16384 bytes, %d when the snapshot was made", rel, size)},
	} {
		if err := c.damage(); err != nil {
			t.Fatal(err)
		}
		r := habench(t, state, "run", scen, "--snapshot", name, "--results", t.TempDir(), "--quiet")
		line := strings.TrimSpace(r.stderr)
		want := fmt.Sprintf("snapshot %q: damaged on %s: %s; nothing was deployed from it: remove it with `habench snapshot rm %s --hosts %s --host-dir %s`",
			name, hosts[0], c.want, name, strings.Join(hosts, ","), hostDir)
		if r.code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, want) {
			t.Errorf("run --snapshot %s with a file %s on the hosts: exit %d, stderr %q; want exit 2 and one line with %q", name, c.what, r.code, line, want)
		}
		l := habench(t, state, "snapshot", "list", "--hosts", strings.Join(hosts, ","), "--ssh-config", sshConfig, "--host-dir", hostDir)
		if strings.Count(l.stdout, " damaged: "+c.want+"\n") != len(hosts) {
			t.Errorf("snapshot list --hosts with a file %s: exit %d, want each host's copy damaged: %s\n%s%s", c.what, l.code, c.want, l.stdout, l.stderr)
		}
		noClusters(t, state)
	}
}

// checkSnapshotNodes waits up to 20 s for every node of each cluster to have the same
// CHECKSUM TABLE of sbtest1 and sbtest2.
func checkSnapshotNodes(t *testing.T, state string, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	sb := &cluster.Store{StateDir: state}
	for _, name := range names {
		c, err := sb.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		var last []string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			last = last[:0]
			for _, n := range c.Nodes {
				last = append(last, nodeChecksums(ctx, c, n))
			}
			if strings.Count(strings.Join(last, " "), last[0]) == len(last) && !strings.HasPrefix(last[0], "error") {
				break
			}
		}
		if strings.Count(strings.Join(last, " "), last[0]) != len(last) || strings.HasPrefix(last[0], "error") {
			t.Errorf("%s: CHECKSUM TABLE per node %q, want one value on all", name, last)
		} else {
			t.Logf("%s: CHECKSUM TABLE on %d nodes: %s", name, len(last), last[0])
		}
	}
}

// nodeChecksums is "sum1,sum2" of sbtest.sbtest1 and sbtest2 on n, or "error ...".
func nodeChecksums(ctx context.Context, c *cluster.Cluster, n *cluster.Node) string {
	db, err := c.OpenAdmin(n)
	if err != nil {
		return "error " + err.Error()
	}
	defer db.Close()
	return testserver.TableChecksums(ctx, db, "sbtest.sbtest1", "sbtest.sbtest2")
}

// TestGroupSnapshotOnRootfsHosts: group with a MySQL root filesystem on 3 lab hosts starts
// from a snapshot kept inside ROOT/HOST_DIR/snapshots (the servers run chrooted there);
// every member has the same CHECKSUM TABLE after the run, and `snapshot rm --all --hosts
// --host-dir ROOT/HOST_DIR` leaves the hosts as they were.
func TestGroupSnapshotOnRootfsHosts(t *testing.T) {
	t.Parallel()
	root := "/var/cache/habench/rootfs/mysql-sid"
	if _, err := os.Stat(root + "/usr/sbin/mysqld"); err != nil {
		if os.Getenv("HABENCH_REQUIRE_SERVERS") == "1" {
			t.Fatalf("no MySQL root filesystem (make rootfs): %v", err)
		}
		t.Skipf("no MySQL root filesystem (make rootfs): %v", err)
	}
	lab := testhost.New(t, 3, testhost.Options{SSH: true})
	state := stateDir(t)
	// Under root the chrooted servers see hostDir; the hosts see root+hostDir.
	hostDir := fmt.Sprintf("/tmp/snaph-grp-%d", os.Getpid())
	t.Cleanup(func() { os.RemoveAll(hostDir); os.RemoveAll(root + hostDir) })
	var names []string
	before := make([]string, len(lab.Hosts))
	for i, h := range lab.Hosts {
		names = append(names, h.Name)
		before[i] = hostState(t, h, root+hostDir)
	}
	on := fmt.Sprintf("provider: hosts, hosts: [%s], host_dir: %s, ssh: {config: %s}, installation: {kind: rootfs, path: %s}",
		strings.Join(names, ", "), hostDir, lab.SSHConfig, root)
	scen := filepath.Join(t.TempDir(), "group.yaml")
	y := fmt.Sprintf(`name: snapgroup
topologies:
  - {name: shgroup, kind: group, nodes: 3, flavor: mysql, %s}
snapshots: true
workload:
  test: oltp_read_write
  options: {tables: 2, table-size: 2000, time: 2, threads: 2, rand-seed: %d}
`, on, time.Now().UnixNano()%1_000_000_000+1)
	if err := os.WriteFile(scen, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runLong(t, 4*time.Minute, state, "run", scen, "--results", t.TempDir(), "--quiet", "--keep")
	if r.code != 0 || !strings.Contains(r.stdout, "data from snapshot mysql-") {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	snaps, _ := filepath.Glob(filepath.Join(root+hostDir, "snapshots", "*", "snapshot.json"))
	if len(snaps) != 1 {
		t.Errorf("snapshots under %s: %q, want one", root+hostDir, snaps)
	}
	checkSnapshotNodes(t, state, "shgroup")
	if d := habench(t, state, "destroy", "shgroup"); d.code != 0 {
		t.Errorf("destroy: exit %d\n%s", d.code, d.stderr)
	}
	rm := habench(t, state, "snapshot", "rm", "--all", "--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", root+hostDir)
	if rm.code != 0 || !strings.Contains(rm.stdout, names[0]+": removed mysql-") {
		t.Errorf("snapshot rm --all --hosts: exit %d\n%s%s", rm.code, rm.stdout, rm.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, root+hostDir); after != before[i] {
			t.Errorf("%s after the run and snapshot rm:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}
