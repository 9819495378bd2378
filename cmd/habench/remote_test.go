package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testhost"
)

// guardOff is the environment entry that lifts the test harness's network guard for one
// command (TestMain turns it on for every other).
const guardOff = cluster.NetworkGuardEnv + "=0"

// TestRegisterOutsideSandboxBridges (issue 10, acceptance 1): a MariaDB server in a
// namespace this test builds, on a bridge that is not one of habench's (198.18.1.11), is
// registered and benchmarked, under the network guard too (a namespace on this machine).
// The same server reached through a gateway route (198.18.1.200 via 198.18.1.11, an address
// on the namespace's lo) is refused under the guard, before any connection, and registered
// and benchmarked without it; so is sysbench --mysql-host.
func TestRegisterOutsideSandboxBridges(t *testing.T) {
	lab := testhost.New(t, 1, testhost.Options{MariaDB: true})
	h := lab.Hosts[0]
	h.Run(t, "ip", "addr", "add", "198.18.1.200/32", "dev", "lo")
	if out, err := exec.Command("ip", "route", "add", "198.18.1.200/32", "via", h.Addr).CombinedOutput(); err != nil {
		t.Fatalf("ip route add: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "route", "del", "198.18.1.200/32").Run() })
	state := stateDir(t)
	do := func(env []string, args ...string) result {
		t.Helper()
		return execute(t, append([]string{habenchBin}, args...), append([]string{"HABENCH_STATE_DIR=" + state}, env...)...)
	}
	must := func(env []string, args ...string) result {
		t.Helper()
		r := do(env, args...)
		if r.code != 0 {
			t.Fatalf("habench %s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}
	opts := []string{"--tables", "1", "--table-size", "200"}

	// Under the guard: the test's own namespace is on this machine.
	r := must(nil, "register", "--name", "sshg1", "--dsn", "root:@tcp("+h.Addr+":3306)/")
	if !strings.Contains(r.stdout, "registered existing cluster sshg1: single, 1 node(s)") {
		t.Errorf("register under the guard:\n%s", r.stdout)
	}
	must(nil, append([]string{"sysbench", "oltp_read_write", "prepare", "--cluster", "sshg1"}, opts...)...)
	res := filepath.Join(t.TempDir(), "guarded")
	must(nil, append([]string{"sysbench", "oltp_read_write", "run", "--cluster", "sshg1", "--time", "2", "--results", res}, opts...)...)
	if sum := readJSON(t, filepath.Join(runDir(t, res), "summary.json")); sum["tps"].(float64) <= 0 {
		t.Errorf("guarded run: tps %v", sum["tps"])
	}

	// Through a gateway: refused under the guard (one line, exit 2, nothing registered).
	gw := "root:@tcp(198.18.1.200:3306)/"
	r = do(nil, "register", "--name", "sshg2", "--dsn", gw)
	if line := strings.TrimSpace(r.stderr); r.code != 2 || strings.Contains(line, "\n") ||
		!strings.Contains(line, "dsns[0]") || !strings.Contains(line, "routed via gateway 198.18.1.11") || !strings.Contains(line, cluster.NetworkGuardEnv+"=1") {
		t.Errorf("register through a gateway under the guard: exit %d, stderr %q", r.code, line)
	}
	if st := must(nil, "status"); strings.Contains(st.stdout, "sshg2") {
		t.Errorf("refused registration left a cluster:\n%s", st.stdout)
	}
	r = do(nil, append([]string{"sysbench", "oltp_read_write", "prepare", "--mysql-host", "198.18.1.200", "--mysql-user", "root", "--mysql-db", "sbx"}, opts...)...)
	if line := strings.TrimSpace(r.stderr); r.code != 2 || !strings.Contains(line, "--mysql-host") || !strings.Contains(line, "routed via gateway") {
		t.Errorf("sysbench --mysql-host through a gateway under the guard: exit %d, stderr %q", r.code, line)
	}

	// Without the guard: the user's address, wherever it is.
	r = must([]string{guardOff}, "register", "--name", "sshg2", "--dsn", gw)
	if !strings.Contains(r.stdout, "registered existing cluster sshg2: single, 1 node(s)") {
		t.Errorf("register without the guard:\n%s", r.stdout)
	}
	res = filepath.Join(t.TempDir(), "unguarded")
	must([]string{guardOff}, append([]string{"sysbench", "oltp_read_write", "run", "--cluster", "sshg2", "--time", "2", "--results", res}, opts...)...)
	if sum := readJSON(t, filepath.Join(runDir(t, res), "summary.json")); sum["tps"].(float64) <= 0 {
		t.Errorf("unguarded run: tps %v", sum["tps"])
	}
	r = must([]string{guardOff}, append([]string{"sysbench", "oltp_read_write", "prepare", "--mysql-host", "198.18.1.200", "--mysql-user", "root", "--mysql-db", "sbx"}, opts...)...)
	t.Logf("sysbench --mysql-host 198.18.1.200 without the guard:\n%s", r.stdout)
	// The run on the registered cluster is refused once the guard is back on.
	r = do(nil, append([]string{"sysbench", "oltp_read_write", "run", "--cluster", "sshg2", "--time", "1"}, opts...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "routed via gateway") {
		t.Errorf("run on sshg2 under the guard: exit %d, stderr %q", r.code, r.stderr)
	}
	must(nil, "destroy", "sshg1")
	must(nil, "destroy", "sshg2")
}
