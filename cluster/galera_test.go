package cluster_test

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/habench/habench/internal/testenv/prereq"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// waitFor polls cond every 100 ms until it returns nil or d passes (then fails the test
// with cond's last error).
func waitFor(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func galeraStatus(t *testing.T, c *cluster.Cluster, n *cluster.Node) cluster.GaleraStatus {
	t.Helper()
	db, err := c.OpenAdmin(n)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, err := cluster.ReadGaleraStatus(context.Background(), db)
	if err != nil {
		t.Fatalf("node %s: %v", n.Name, err)
	}
	return g
}

// TestGaleraDeployWriteRestart deploys a 3-node MariaDB Galera cluster and checks every node
// is Synced in a Primary component of 3, that a write on any node shows on the others with
// the same GTID position everywhere, that the deploy-only provider setting is gone, and that
// a stopped node rejoins by IST after missing writes; destroy leaves nothing behind.
func TestGaleraDeployWriteRestart(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "gad"), topology.Galera, 3, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("galera x3 Synced in %v (network %s)", time.Since(start).Round(time.Millisecond), c.Network)
	dbs := map[string]*sql.DB{}
	for _, n := range c.Nodes {
		if n.Role != topology.RoleNode {
			t.Errorf("%s role %s", n.Name, n.Role)
		}
		if g := galeraStatus(t, c, n); !g.Synced() || g.ClusterSize != 3 {
			t.Errorf("node %s: %s", n.Name, g)
		}
		db, err := c.OpenAdmin(n)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[n.Name] = db
		var popts string
		if err := db.QueryRowContext(ctx, "SELECT @@wsrep_provider_options").Scan(&popts); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(popts, "evs.join_retrans_period = PT1S") || !strings.Contains(popts, "gmcast.listen_addr = tcp://"+n.Host+":4567") {
			t.Errorf("node %s provider options: join period not restored or wrong listen address: %s", n.Name, popts)
		}
		// The joiners started from the seed: no full state transfer, an IST only, and the
		// cluster's method (rsync) back for their next one.
		var method string
		if err := db.QueryRowContext(ctx, "SELECT @@wsrep_sst_method").Scan(&method); err != nil || method != "rsync" {
			t.Errorf("node %s: wsrep_sst_method %q (%v), want rsync back after the deploy", n.Name, method, err)
		}
		log, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
		if n.Name != "n1" && (!strings.Contains(string(log), "wsrep_sst_"+cluster.NoopSSTMethod+" --role 'joiner'") ||
			strings.Contains(string(log), "wsrep_sst_rsync") || !strings.Contains(string(log), "Receiving IST")) {
			t.Errorf("node %s did not join from the seed by IST:\n%s", n.Name, grepLines(string(log), "SST", "IST"))
		}
	}
	// Every node is writable: a table created on n2 and a row written on n3 show on n1.
	if _, err := dbs["n2"].ExecContext(ctx, "CREATE DATABASE probe"); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs["n2"].ExecContext(ctx, "CREATE TABLE probe.t (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	// n3 applies n2's DDL asynchronously: wsrep_sync_wait=4 makes the INSERT wait until
	// n3 has applied everything committed before it (without it, "Table doesn't exist").
	c3, err := dbs["n3"].Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET SESSION wsrep_sync_wait=4", "INSERT INTO probe.t VALUES (1, 1)"} {
		if _, err := c3.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	c3.Close()
	// wsrep_sync_wait=1: the read waits until n1 has applied everything committed before it.
	conn, err := dbs["n1"].Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait=1"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT v FROM probe.t WHERE id=1").Scan(&v); err != nil || v != 1 {
		t.Fatalf("row written on n3 not on n1: %v", err)
	}
	conn.Close()
	// The same GTID position on every node (wsrep_gtid_mode with one domain per cluster).
	waitFor(t, 10*time.Second, "GTID positions equal", func() error {
		var first string
		for _, n := range c.Nodes {
			var pos string
			if err := dbs[n.Name].QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
				return err
			}
			if !strings.HasPrefix(pos, itoa(topology.WsrepGTIDDomain(c.Name))+"-") {
				return errorf("node %s gtid_binlog_pos %q not in the cluster's domain", n.Name, pos)
			}
			if first == "" {
				first = pos
			} else if pos != first {
				return errorf("node %s at %q, n1 at %q", n.Name, pos, first)
			}
		}
		return nil
	})

	// n3 stops, misses writes, and rejoins by IST.
	n3 := c.Node("n3")
	dbs["n3"].Close()
	if err := s.StopNode(c, "n3"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "n1 sees 2 nodes", func() error {
		if g := galeraStatus(t, c, c.Node("n1")); g.ClusterSize != 2 || !g.Synced() {
			return errorf("n1: %s", g)
		}
		return nil
	})
	if _, err := dbs["n1"].ExecContext(ctx, "INSERT INTO probe.t VALUES (2, 2)"); err != nil {
		t.Fatal(err)
	}
	if err := s.StartNode(ctx, c, "n3"); err != nil {
		t.Fatal(err)
	}
	if g := galeraStatus(t, c, n3); !g.Synced() || g.ClusterSize != 3 {
		t.Errorf("restarted n3: %s", g)
	}
	log, _ := os.ReadFile(filepath.Join(n3.Dir, "error.log"))
	restart := string(log[strings.LastIndex(string(log), "Starting MariaDB"):])
	// With IST the SST script only hands over the position ("rsync IST completed"); a full
	// snapshot would say "rsync SST completed".
	if !regexp.MustCompile(`IST received`).MatchString(restart) || !strings.Contains(restart, "rsync IST completed on joiner") || strings.Contains(restart, "rsync SST completed") {
		t.Errorf("n3 did not rejoin by IST alone; its log since the restart:\n%s", grepLines(restart, "SST"))
	}
	db3, _ := c.OpenAdmin(n3)
	if err := db3.QueryRowContext(ctx, "SELECT v FROM probe.t WHERE id=2").Scan(&v); err != nil || v != 2 {
		t.Errorf("n3 lacks the row written while it was down: %v", err)
	}
	db3.Close()

	// The whole cluster stopped, n1 last (its grastate.dat says safe_to_bootstrap: 1). A
	// node that did not stop last refuses to bootstrap and names n1; n1 bootstraps a new
	// Primary component and the others join it.
	for _, db := range dbs {
		db.Close()
	}
	for _, n := range []string{"n2", "n3", "n1"} {
		if err := s.StopNode(c, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.StartNode(ctx, c, "n2"); err == nil || !strings.Contains(err.Error(), "start n1 first") {
		t.Fatalf("n2 started first after n1 stopped last: %v, want a refusal naming n1", err)
	}
	if c.Node("n2").Running() {
		t.Fatal("n2 runs after its refused start")
	}
	t0 := time.Now()
	for _, n := range []string{"n1", "n2", "n3"} {
		if err := s.StartNode(ctx, c, n); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("whole cluster stopped, started again (n1 bootstraps): %v", time.Since(t0).Round(time.Millisecond))
	for _, n := range c.Nodes {
		if g := galeraStatus(t, c, n); !g.Synced() || g.ClusterSize != 3 {
			t.Errorf("node %s after the full restart: %s", n.Name, g)
		}
	}
	db2, _ := c.OpenAdmin(c.Node("n2"))
	defer db2.Close()
	if err := db2.QueryRowContext(ctx, "SELECT COUNT(*) FROM probe.t").Scan(&v); err != nil || v != 2 {
		t.Errorf("n2 after the full restart: %d rows (%v), want 2", v, err)
	}

	if err := s.Destroy(ctx, c.Name); err != nil {
		t.Fatal(err)
	}
	if left := cluster.Leftovers(s, c); len(left) > 0 {
		t.Fatalf("left behind after destroy: %s", strings.Join(left, ", "))
	}
}

// TestGaleraDestroyDuringStateTransfer interrupts a deploy while a joiner receives its
// snapshot (the joiner's rsync daemon runs; joiners by full state transfer,
// GaleraJoinBySST): the failed deploy must remove the servers, the SST scripts and the
// rsync daemon, the namespaces and the directories.
func TestGaleraDestroyDuringStateTransfer(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	s.GaleraJoinBySST = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "gax"), topology.Galera, 3, topology.MariaDB)
	dctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	done := make(chan error, 1)
	go func() {
		_, err := s.Deploy(dctx, spec)
		done <- err
	}()
	// The joiner's rsync daemon is started with --config <state>/clusters/<name>/n2/data/rsync_sst.conf.
	conf := filepath.Join(s.StateDir, "clusters", spec.Name, "n2", "data", "rsync_sst.conf")
	seen := false
	deadline := time.Now().Add(90 * time.Second)
	for !seen && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("deploy ended before the state transfer was seen: %v", err)
		default:
		}
		seen = len(pidsWithArg(conf)) > 0
		time.Sleep(20 * time.Millisecond)
	}
	if !seen {
		t.Fatal("never saw the joiner's rsync daemon")
	}
	interrupt()
	if err := <-done; err == nil {
		t.Fatal("interrupted deploy succeeded")
	}
	if left := pidsWithArg(conf); len(left) > 0 {
		t.Errorf("rsync daemon(s) %v survived the failed deploy", left)
	}
	c := &cluster.Cluster{Name: spec.Name}
	if left := cluster.Leftovers(s, c); len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, ", "))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// restartTail is the last 40 lines of a log excerpt.
func restartTail(s string) string {
	l := strings.Split(s, "\n")
	if len(l) > 40 {
		l = l[len(l)-40:]
	}
	return strings.Join(l, "\n")
}

// pidsWithArg returns the processes with exactly arg among their arguments.
func pidsWithArg(arg string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// grepLines returns the lines of s that contain any of subs.
func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestGaleraMariabackupSST: joiners receive their snapshot by mariabackup (galera.sst;
// by full state transfer, GaleraJoinBySST) with the donor's credentials habench sets
// (wsrep_sst_auth root without a password over the socket), and the whole cluster
// reaches Synced.
func TestGaleraMariabackupSST(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/mariabackup"); err != nil {
		prereq.Missing(t, "mariabackup not installed (apt-get install mariadb-backup, or `make deps`)")
	}
	s := testenv.Store(t)
	s.GaleraJoinBySST = true
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "gam"), topology.Galera, 3, topology.MariaDB)
	spec.Galera.SST = topology.SSTMariabackup
	start := time.Now()
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("galera x3 with mariabackup SST Synced in %v", time.Since(start).Round(time.Millisecond))
	for _, n := range c.Nodes {
		if g := galeraStatus(t, c, n); !g.Synced() || g.ClusterSize != 3 {
			t.Errorf("node %s: %s", n.Name, g)
		}
	}
	for _, n := range c.Nodes[1:] {
		log, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
		if !strings.Contains(string(log), "wsrep_sst_mariabackup --role 'joiner'") || !strings.Contains(string(log), "SST received") {
			t.Errorf("node %s did not join by mariabackup SST:\n%s", n.Name, grepLines(string(log), "SST"))
		}
	}
	// A donor's SST script archives its log in its node's directory ([sst]
	// sst-log-archive-dir), which destroy removes, not in /tmp/sst_log_archive.
	if logs, _ := filepath.Glob(filepath.Join(filepath.Dir(c.Nodes[0].Dir), "n*", "sst_log_archive", "mariabackup.backup.log.*")); len(logs) == 0 {
		t.Error("no donor's SST log archive in its node's directory (sst_log_archive)")
	}
}

// TestGaleraRootfsMariaDB deploys Galera from the optional root filesystem with Debian sid's
// MariaDB (`make rootfs-mariadb`; skipped without it, also under HABENCH_REQUIRE_SERVERS):
// the servers run chrooted with /proc in a private mount namespace (the SST scripts need
// it), the deploy-only join period is restored through the provider's system variable
// (MariaDB 11), and destroy leaves no mount behind.
func TestGaleraRootfsMariaDB(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server test skipped in -short mode")
	}
	root := cluster.DefaultMariaDBRootfs
	if _, err := os.Stat(filepath.Join(root, "usr/sbin/mariadbd")); err != nil {
		// A skip also under HABENCH_REQUIRE_SERVERS: this root filesystem is optional by
		// design (make rootfs-mariadb, not part of make deps).
		t.Skipf("%s not built (make rootfs-mariadb; optional, not part of make deps, so skipped even under HABENCH_REQUIRE_SERVERS)", root)
	}
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := topology.Spec{Name: testenv.Name(t, "gar"), Kind: topology.Galera, Nodes: 3, Flavor: topology.MariaDB,
		Installation: topology.Installation{Kind: topology.InstallRootfs, Path: root}}
	start := time.Now()
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: galera x3 Synced in %v", c.Binaries.VersionText, time.Since(start).Round(time.Millisecond))
	for _, n := range c.Nodes {
		if g := galeraStatus(t, c, n); !g.Synced() || g.ClusterSize != 3 {
			t.Errorf("node %s: %s", n.Name, g)
		}
		db, _ := c.OpenAdmin(n)
		var period string
		err := db.QueryRowContext(ctx, "SELECT @@wsrep_provider_evs_join_retrans_period").Scan(&period)
		db.Close()
		if f, _ := strconv.ParseFloat(period, 64); c.Capabilities().WsrepProviderPlugin && (err != nil || f != 1) {
			t.Errorf("node %s: join period %q (%v), want the default 1 s back", n.Name, period, err)
		}
	}
	if err := s.Destroy(ctx, c.Name); err != nil {
		t.Fatal(err)
	}
	if left := cluster.Leftovers(s, c); len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), root+"/proc") {
		t.Errorf("/proc still mounted in %s", root)
	}
}
