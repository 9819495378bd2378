package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testhost"
)

// TestGaleraArbitratorOnHosts (habench deploy --kind galera-arbitrator --hosts): 2 MariaDB
// Galera nodes and garbd on 3 lab hosts (the arbitrator on the next host after the data
// nodes) are healthy after the deploy (both nodes Synced in a Primary component of 3,
// garbd Primary with 3 members), status names each member's host, garbd's process is in
// its record on its host, a short sysbench run works, garbd killed and started again
// (fault kill|start arb) is a member again, and destroy leaves every host as it was.
func TestGaleraArbitratorOnHosts(t *testing.T) {
	lab := testhost.New(t, 3, testhost.Options{SSH: true, Subnet: 21})
	state := stateDir(t)
	hostDir := filepath.Join(t.TempDir(), "hb")
	var names []string
	before := make([]string, len(lab.Hosts))
	for i, h := range lab.Hosts {
		names = append(names, h.Name)
		before[i] = hostState(t, h, hostDir)
	}
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
	if r := habench(t, state, "destroy", "k18a1"); r.code != 0 {
		t.Fatalf("destroy: exit %d\n%s", r.code, r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}
