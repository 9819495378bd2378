package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testhost"
)

// TestGaleraArbitratorOnHosts (habench deploy --kind galera-arbitrator --hosts): 2 MariaDB
// Galera nodes and garbd on 3 lab hosts (the arbitrator on the next host after the data
// nodes) are healthy after the deploy (both nodes Synced in a Primary component of 3,
// garbd Primary with 3 members), status names each member's host, garbd's process is in
// its record on its host, a short sysbench run works, garbd killed and started again
// (fault kill|start arb) is a member again, both nodes stopped cleanly and started again
// bootstrap from n2 (marked safe_to_bootstrap on its host, garbd restarted around the
// bootstrap), and destroy leaves every host as it was.
func TestGaleraArbitratorOnHosts(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 3, testhost.Options{SSH: true})
	state, hostDir, names, before := labDirs(t, lab)
	start := time.Now()
	r := habench(t, state, "--log-level", "debug", "deploy", "--name", "k18a1", "--kind", "galera-arbitrator", "--nodes", "2", "--flavor", "mariadb",
		"--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir)
	if r.code != 0 {
		t.Fatalf("deploy galera-arbitrator --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("galera-arbitrator (2 nodes + garbd) healthy on 3 hosts after %.1fs", time.Since(start).Seconds())
	healthy := func(when string) {
		t.Helper()
		nodesOnHostsHealthy(t, state, "k18a1", lab.Hosts[:2], "Synced, Primary, cluster size 3", when)
		st := habench(t, state, "status", "k18a1")
		ok := false
		for _, l := range strings.Split(st.stdout, "\n") {
			ok = ok || (isMemberLine(l, "arb") && strings.Contains(l, "ssh "+names[2]) && strings.Contains(l, "garbd running, Primary, cluster size 3"))
		}
		if !ok {
			t.Errorf("%s: arb on %s is not a Primary member of 3:\n%s", when, names[2], st.stdout)
		}
	}
	healthy("after deploy")
	if b, err := os.ReadFile(filepath.Join(hostDir, "k18a1", "arb.habench.json")); err != nil || !strings.Contains(string(b), `"pid"`) {
		t.Errorf("arb's record on %s: %v %s", names[2], err, b)
	}
	opts := []string{"--tables", "1", "--table-size", "200"}
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_write", "prepare", "--cluster", "k18a1"}, opts...)...); r.code != 0 {
		t.Errorf("sysbench prepare: exit %d\n%s", r.code, r.stderr)
	}
	res := filepath.Join(t.TempDir(), "res")
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_write", "run", "--cluster", "k18a1", "--time", "2", "--results", res}, opts...)...); r.code != 0 {
		t.Errorf("sysbench run: exit %d\n%s", r.code, r.stderr)
	} else if sum := readJSON(t, filepath.Join(runDir(t, res), "summary.json")); sum["tps"].(float64) <= 0 {
		t.Errorf("run on hosts: tps %v", sum["tps"])
	}
	for _, f := range []string{"kill", "start"} {
		if r := habench(t, state, "fault", f, "arb", "--cluster", "k18a1"); r.code != 0 {
			t.Errorf("fault %s arb: exit %d\n%s%s", f, r.code, r.stdout, r.stderr)
		}
	}
	healthy("after arb was killed and started")
	// Every node stopped cleanly while garbd ran: no node is safe_to_bootstrap; n2 (the
	// last to stop, the highest seqno) is marked safe on its host and bootstraps, garbd is
	// killed for the bootstrap and started again, n1 joins.
	t0 := time.Now()
	for _, f := range [][2]string{{"stop", "n1"}, {"stop", "n2"}, {"start", "n2"}, {"start", "n1"}} {
		t1 := time.Now()
		if r := habench(t, state, "fault", f[0], f[1], "--cluster", "k18a1"); r.code != 0 {
			t.Fatalf("fault %s %s: exit %d\n%s%s", f[0], f[1], r.code, r.stdout, r.stderr)
		}
		t.Logf("fault %s %s: %.1fs", f[0], f[1], time.Since(t1).Seconds())
	}
	t.Logf("both nodes stopped and started again in %.1fs", time.Since(t0).Seconds())
	healthy("after every node stopped cleanly and started again")
	t1 := time.Now()
	if r := habench(t, state, "destroy", "k18a1"); r.code != 0 {
		t.Fatalf("destroy: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("destroy %.1fs; deploy to destroyed %.1fs", time.Since(t1).Seconds(), time.Since(start).Seconds())
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}

// TestGroupDROnHosts (habench deploy --kind group-dr --hosts): a single-primary group of 3
// MySQL members and 3 DR replicas on 3 lab hosts, two nodes per host (n1 and n4 on host 1,
// ...; the second on base port + 1), the server from the MySQL root filesystem on the
// hosts; after the deploy the members are ONLINE and every DR replica replicates from
// the group's primary (n1), a row written on the primary reaches each DR replica, and
// destroy leaves every host as it was.
func TestGroupDROnHosts(t *testing.T) {
	t.Parallel()
	l := newRootfsHostsLab(t, 3, "k18dr")
	lab, state, root, hostDir, names, before, snapshot := l.lab, l.state, l.root, l.hostDir, l.names, l.before, l.snapshot
	start := time.Now()
	r := habench(t, state, "--log-level", "debug", "deploy", "--name", "k18d1", "--kind", "group-dr", "--nodes", "6", "--flavor", "mysql", "--installation", "rootfs:"+root,
		"--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir)
	if r.code != 0 {
		t.Fatalf("deploy group-dr --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("group-dr (3 members + 3 DR replicas) healthy on 3 hosts after %.1fs", time.Since(start).Seconds())
	nodesOnHostsHealthy(t, state, "k18d1", lab.Hosts, "ONLINE", "after deploy")
	st := habench(t, state, "status", "k18d1")
	for i, h := range lab.Hosts {
		ok := false
		for _, l := range strings.Split(st.stdout, "\n") {
			ok = ok || (isMemberLine(l, fmt.Sprintf("n%d", i+4)) && strings.Contains(l, fmt.Sprintf("%s:23307", h.Addr)) && strings.Contains(l, "ssh "+h.Name) && strings.Contains(l, "from n1"))
		}
		if !ok {
			t.Errorf("status: n%d is not a DR replica of n1 at %s:23307 on %s:\n%s", i+4, h.Addr, h.Name, st.stdout)
		}
	}
	// A row written on the primary reaches every DR replica through its channel.
	c, err := (&cluster.Store{StateDir: state}).Load("k18d1")
	if err != nil {
		t.Fatal(err)
	}
	open := func(node string) *sql.DB {
		t.Helper()
		db, err := c.OpenAdmin(c.Node(node))
		if err != nil {
			t.Fatalf("%s: %v", node, err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	for _, q := range []string{"CREATE DATABASE k18", "CREATE TABLE k18.t (id INT PRIMARY KEY)", "INSERT INTO k18.t VALUES (42)"} {
		if _, err := open("n1").Exec(q); err != nil {
			t.Fatalf("n1: %s: %v", q, err)
		}
	}
	t0 := time.Now()
	for i := 4; i <= 6; i++ {
		node, db := fmt.Sprintf("n%d", i), open(fmt.Sprintf("n%d", i))
		var id int
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if err = db.QueryRow("SELECT id FROM k18.t").Scan(&id); err == nil {
				break
			}
		}
		if id != 42 {
			t.Errorf("%s: the row written on n1 did not arrive within 20 s: id %d, %v", node, id, err)
		}
	}
	t.Logf("the row reached n4, n5 and n6 within %.2fs", time.Since(t0).Seconds())
	t1 := time.Now()
	if r := habench(t, state, "destroy", "k18d1"); r.code != 0 {
		t.Fatalf("destroy: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("destroy %.1fs; deploy to destroyed %.1fs", time.Since(t1).Seconds(), time.Since(start).Seconds())
	for i, h := range lab.Hosts {
		if after := snapshot(h); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}
