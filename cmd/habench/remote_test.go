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

// TestRegisterWithSSH: an async pair in test-built namespaces, each with an sshd, is
// registered with ssh access through an ssh_config file (-F) and Host aliases, and with
// user/identity/options flags instead; status names each node's ssh host. A refused key,
// a host without sshd, a wrong number of --ssh-host and a missing identity file are one
// line each naming the node or the field, and register nothing.
func TestRegisterWithSSH(t *testing.T) {
	lab := testhost.New(t, 2, testhost.Options{SSH: true, MariaDB: true, Replicate: true})
	state := stateDir(t)
	dsns := []string{"--dsn", "root:@tcp(" + lab.Hosts[0].Addr + ":3306)/", "--dsn", "root:@tcp(" + lab.Hosts[1].Addr + ":3306)/"}
	reg := func(name string, extra ...string) result {
		return habench(t, state, append(append([]string{"register", "--name", name}, dsns...), extra...)...)
	}
	r := reg("sshr1", "--ssh-config", lab.SSHConfig, "--ssh-host", lab.Hosts[0].Name, "--ssh-host", lab.Hosts[1].Name)
	if r.code != 0 || !strings.Contains(r.stdout, "registered existing cluster sshr1: async, 2 node(s)") ||
		!strings.Contains(r.stdout, "(existing, ssh "+lab.Hosts[1].Name+")") {
		t.Fatalf("register with --ssh-config: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	kh := "UserKnownHostsFile=" + lab.KnownHosts
	r = reg("sshr2", "--ssh-user", "root", "--ssh-port", "22", "--ssh-identity", lab.Key, "--ssh-option", kh, "--ssh-option", "IdentitiesOnly=yes")
	if r.code != 0 || !strings.Contains(r.stdout, "(existing, ssh root@"+lab.Hosts[0].Addr+":22)") {
		t.Fatalf("register with --ssh-user/--ssh-identity: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	other := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--ssh-user", "root", "--ssh-identity", other, "--ssh-option", kh, "--ssh-option", "IdentitiesOnly=yes"}, 1,
			[]string{"node n1", "ssh root@" + lab.Hosts[0].Addr, "cannot connect", "Permission denied"}},
		{[]string{"--ssh-config", lab.SSHConfig, "--ssh-host", lab.Hosts[0].Name, "--ssh-host", "198.18.1.99"}, 1,
			[]string{"node n2", "ssh 198.18.1.99", "cannot connect"}},
		{[]string{"--ssh-host", lab.Hosts[0].Name}, 2, []string{"ssh.hosts", "1 host(s) for 2 node(s)"}},
		{[]string{"--ssh-identity", "/nonexistent/key"}, 2, []string{"ssh.identity", "/nonexistent/key", "no such file"}},
		{[]string{"--ssh-port", "70000"}, 2, []string{"ssh.port", "70000"}},
	} {
		r := reg("sshr3", append(c.args, "--ssh-option", "ConnectTimeout=3")...)
		line := strings.TrimSpace(r.stderr)
		ok := r.code == c.code && !strings.Contains(line, "\n")
		for _, w := range c.want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			t.Errorf("register %s: exit %d, stderr %q; want exit %d, one line with %q", strings.Join(c.args, " "), r.code, line, c.code, c.want)
		}
	}
	if st := habench(t, state, "status"); strings.Contains(st.stdout, "sshr3") {
		t.Errorf("a refused registration left a cluster:\n%s", st.stdout)
	}
	habench(t, state, "destroy", "sshr1")
	habench(t, state, "destroy", "sshr2")
}
