package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testhost"
)

// TestGaleraArbitratorOnHosts (habench deploy -f, provider hosts, kind galera-arbitrator,
// proxy: haproxy): a deploy whose proxy.binary is not on the proxy's host is refused in
// one line, nothing made; then 2 MariaDB Galera nodes, garbd and HAProxy on 3 lab hosts (the
// arbitrator on the next host after the data nodes, the proxy on the next, host 1, beside
// n1) are healthy after the deploy (both nodes Synced in a Primary component of 3, garbd
// Primary with 3 members, the proxy's line in status with its writer and read server),
// status names each member's host, garbd's and HAProxy's processes are in their records
// on their hosts and run in host 1's namespace for the proxy, beside the health-check
// server run from habench's copy in the proxy's directory there; the write endpoint on
// host 1's address reaches the writer; a short sysbench run through the proxy (--via
// proxy) works and its manifest has the proxy's endpoints on host 1 and its version;
// garbd and HAProxy killed and started again (fault kill|start arb, proxy) are a member
// and a serving proxy again, both nodes stopped cleanly and started again bootstrap from
// n2 (marked safe_to_bootstrap on its host, garbd restarted around the bootstrap), and
// destroy leaves every host as it was (no process, copy or directory of habench's).
func TestGaleraArbitratorOnHosts(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 3, testhost.Options{SSH: true})
	state, hostDir, names, before := labDirs(t, lab)
	topo := filepath.Join(t.TempDir(), "k18a1.yaml")
	yaml := fmt.Sprintf("name: k18a1\nprovider: hosts\nkind: galera-arbitrator\nnodes: 2\nflavor: mariadb\nhosts: [%s]\nhost_dir: %s\nssh: {config: %s}\nproxy: {type: haproxy, check_interval: 200ms}\n",
		strings.Join(names, ", "), hostDir, lab.SSHConfig)
	// A proxy's haproxy not on its host: refused in one line, nothing made on any host.
	if err := os.WriteFile(topo, []byte(strings.Replace(yaml, "check_interval: 200ms", "binary: /nonexistent/haproxy", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := habench(t, state, "deploy", "-f", topo); r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 ||
		!strings.Contains(r.stderr, `proxy.binary "/nonexistent/haproxy": a proxy on a host without haproxy: none on ssh `+names[0]) {
		t.Errorf("deploy with no haproxy on the proxy's host: exit %d, want one line naming proxy.binary and %s:\n%s", r.code, names[0], r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after the refused deploy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
	if err := os.WriteFile(topo, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := habench(t, state, "--log-level", "debug", "deploy", "-f", topo)
	if r.code != 0 {
		t.Fatalf("deploy galera-arbitrator with a proxy on hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("galera-arbitrator (2 nodes + garbd + haproxy) healthy on 3 hosts after %.1fs", time.Since(start).Seconds())
	healthy := func(when string) {
		t.Helper()
		nodesOnHostsHealthy(t, state, "k18a1", lab.Hosts[:2], "Synced, Primary, cluster size 3", when)
		// The proxy marks a node started last up after its checks pass (rise 2 of 200 ms):
		// its line is asked again for up to 10 s.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			st := habench(t, state, "status", "k18a1")
			arb, px := false, false
			for _, l := range strings.Split(st.stdout, "\n") {
				arb = arb || (isMemberLine(l, "arb") && strings.Contains(l, "ssh "+names[2]) && strings.Contains(l, "garbd running, Primary, cluster size 3"))
				px = px || (isMemberLine(l, "proxy") && strings.Contains(l, "ssh "+names[0]) && strings.Contains(l, lab.Hosts[0].Addr+":23307") &&
					(strings.Contains(l, "haproxy running, write n1, read 1 up: n2") || strings.Contains(l, "haproxy running, write n2, read 1 up: n1")))
			}
			if !arb {
				t.Errorf("%s: arb on %s is not a Primary member of 3:\n%s", when, names[2], st.stdout)
			}
			if px || !arb {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: the proxy on %s at %s:23307 has not a writer and a read server up within 10 s:\n%s", when, names[0], lab.Hosts[0].Addr, st.stdout)
				return
			}
		}
	}
	healthy("after deploy")
	if b, err := os.ReadFile(filepath.Join(hostDir, "k18a1", "arb.habench.json")); err != nil || !strings.Contains(string(b), `"pid"`) {
		t.Errorf("arb's record on %s: %v %s", names[2], err, b)
	}
	proxyOnHost(t, state, hostDir, lab.Hosts[0], "after deploy")
	opts := []string{"--tables", "1", "--table-size", "200"}
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_write", "prepare", "--cluster", "k18a1"}, opts...)...); r.code != 0 {
		t.Errorf("sysbench prepare: exit %d\n%s", r.code, r.stderr)
	}
	res := filepath.Join(t.TempDir(), "res")
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_write", "run", "--cluster", "k18a1", "--via", "proxy", "--rate", "50", "--time", "2", "--results", res}, opts...)...); r.code != 0 {
		t.Errorf("sysbench run through the proxy: exit %d\n%s", r.code, r.stderr)
	} else {
		// The proxy watch read HAProxy's statistics on host 1 throughout; the host
		// sampler read its process's CPU there.
		sum := readJSON(t, filepath.Join(runDir(t, res), "summary.json"))
		sp, _ := sum["proxy"].(map[string]any)
		if sum["tps"].(float64) <= 0 || sp["error"] != nil || sp["poll_errors"] != nil || fmt.Sprint(sp["write_servers"]) != "[n1]" || sp["cpu_cores"] == nil {
			t.Errorf("run on hosts through the proxy: tps %v, proxy %v", sum["tps"], sp)
		}
		m := readJSON(t, filepath.Join(runDir(t, res), "manifest.json"))
		mp, _ := m["proxy"].(map[string]any)
		if mp["write"] != lab.Hosts[0].Addr+":23307" || mp["stats"] != lab.Hosts[0].Addr+":23309" || !strings.HasPrefix(fmt.Sprint(mp["version"]), "HAProxy version ") ||
			!strings.Contains(fmt.Sprint(mp["config"]), "bind "+lab.Hosts[0].Addr+":23307") {
			t.Errorf("manifest.json's proxy: %v", mp)
		}
	}
	for _, m := range []string{"arb", "proxy"} {
		for _, f := range []string{"kill", "start"} {
			if r := habench(t, state, "fault", f, m, "--cluster", "k18a1"); r.code != 0 {
				t.Errorf("fault %s %s: exit %d\n%s%s", f, m, r.code, r.stdout, r.stderr)
			}
		}
	}
	healthy("after arb and the proxy were killed and started")
	proxyOnHost(t, state, hostDir, lab.Hosts[0], "after the proxy was killed and started")
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

// proxyOnHost checks cluster k18a1's proxy on lab host h: its record there has HAProxy's
// PID, which runs haproxy in h's namespace, and the copy of habench in the proxy's
// directory; the health-check server runs from that copy in h's namespace; a new
// connection to the write endpoint on h's address reaches the writer the proxy names.
func proxyOnHost(t *testing.T, state, hostDir string, h *testhost.Host, when string) {
	t.Helper()
	dir := filepath.Join(hostDir, "k18a1", "proxy")
	var rec cluster.HostRecord
	if b, err := os.ReadFile(dir + ".habench.json"); err != nil || json.Unmarshal(b, &rec) != nil || rec.PID <= 0 {
		t.Fatalf("%s: the proxy's record on %s: %v %s", when, h.Name, err, b)
	}
	netnsOf := func(pid int) string {
		out, _ := exec.Command("ip", "netns", "identify", strconv.Itoa(pid)).Output()
		return strings.TrimSpace(string(out))
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rec.PID))
	if !strings.Contains(string(cmd), "haproxy\x00-db\x00-f\x00"+dir+"/haproxy.cfg") || netnsOf(rec.PID) != h.Name {
		t.Errorf("%s: pid %d (the proxy's record) is %q in namespace %q, want haproxy in %s", when, rec.PID, cmd, netnsOf(rec.PID), h.Name)
	}
	if !slices.Equal(rec.Copies, []string{dir + "/habench"}) {
		t.Errorf("%s: the proxy's record lists the copies %v, want %s/habench", when, rec.Copies, dir)
	}
	var checks []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), dir+"/habench\x00proxy-check\x00") {
			pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f, "/proc/"), "/cmdline"))
			checks = append(checks, netnsOf(pid))
		}
	}
	if !slices.Equal(checks, []string{h.Name}) {
		t.Errorf("%s: check servers run from %s/habench in namespaces %q, want one in %s", when, dir, checks, h.Name)
	}
	c, err := (&cluster.Store{StateDir: state}).Load("k18a1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := c.ProxyWriter(ctx)
	if w == nil {
		t.Fatalf("%s: the proxy names no writer", when)
	}
	ids := map[int]string{}
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			t.Fatal(err)
		}
		var id int
		err = db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id)
		db.Close()
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		ids[id] = n.Name
	}
	db, err := sql.Open("mysql", c.BenchDSN(&cluster.Node{Host: h.Addr, Port: c.ProxyPort("write")}, "")+"&timeout=2s&readTimeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int
	if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil || ids[id] != w.Name || len(ids) != 2 {
		t.Errorf("%s: the write endpoint %s:%d reached %q (server id %d of %v: %v), want the writer %s", when, h.Addr, c.ProxyPort("write"), ids[id], id, ids, err, w.Name)
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
