package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"time"

	"runtime"

	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/netem"
	"github.com/habench/habench/sampler"
	"github.com/vishvananda/netns"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/internal/testserver"
)

// guardOff is the environment entry that lifts the test harness's network guard for one
// command (TestMain turns it on for every other).
const guardOff = cluster.NetworkGuardEnv + "=0"

// TestRegisterOutsideSandboxBridges (servers outside habench's sandboxes): a MariaDB server in a
// namespace this test builds, on a bridge that is not one of habench's (198.18.N.11), is
// registered and benchmarked, under the network guard too (a namespace on this machine).
// The same server reached through a gateway route (198.18.N.200 via 198.18.N.11, an address
// on the namespace's lo) is refused under the guard, before any connection, and registered
// and benchmarked without it; so is sysbench --mysql-host.
func TestRegisterOutsideSandboxBridges(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 1, testhost.Options{MariaDB: true})
	h, gwAddr := lab.Hosts[0], lab.Addr(200)
	h.Run(t, "ip", "addr", "add", gwAddr+"/32", "dev", "lo")
	if out, err := exec.Command("ip", "route", "add", gwAddr+"/32", "via", h.Addr).CombinedOutput(); err != nil {
		t.Fatalf("ip route add: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "route", "del", gwAddr+"/32").Run() })
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
	gw := "root:@tcp(" + gwAddr + ":3306)/"
	r = do(nil, "register", "--name", "sshg2", "--dsn", gw)
	if line := strings.TrimSpace(r.stderr); r.code != 2 || strings.Contains(line, "\n") ||
		!strings.Contains(line, "dsns[0]") || !strings.Contains(line, "routed via gateway "+h.Addr) || !strings.Contains(line, cluster.NetworkGuardEnv+"=1") {
		t.Errorf("register through a gateway under the guard: exit %d, stderr %q", r.code, line)
	}
	if st := must(nil, "status"); strings.Contains(st.stdout, "sshg2") {
		t.Errorf("refused registration left a cluster:\n%s", st.stdout)
	}
	r = do(nil, append([]string{"sysbench", "oltp_read_write", "prepare", "--mysql-host", gwAddr, "--mysql-user", "root", "--mysql-db", "sbx"}, opts...)...)
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
	r = must([]string{guardOff}, append([]string{"sysbench", "oltp_read_write", "prepare", "--mysql-host", gwAddr, "--mysql-user", "root", "--mysql-db", "sbx"}, opts...)...)
	t.Logf("sysbench --mysql-host "+gwAddr+" without the guard:\n%s", r.stdout)
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
	t.Parallel()
	lab := testhost.New(t, 2, testhost.Options{SSH: true, MariaDB: true, Replicate: true})
	state := stateDir(t)
	dsns := []string{"--dsn", "root:@tcp(" + lab.Hosts[0].Addr + ":3306)/", "--dsn", "root:@tcp(" + lab.Hosts[1].Addr + ":3306)/"}
	reg := func(name string, extra ...string) result {
		return habench(t, state, append(append([]string{"register", "--name", name}, dsns...), extra...)...)
	}
	r := reg("sshr1", "--ssh-config", lab.SSHConfig, "--ssh-host", lab.Hosts[0].Name, "--ssh-host", lab.Hosts[1].Name)
	// HOST names each node's host as habench reaches it; DIR says the servers are not habench's.
	hostRow := func(node, host string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + node + `\s+\S+\s+\S+\s+` + regexp.QuoteMeta(host) + `\s+-\s+- \(existing\)$`)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "registered existing cluster sshr1: async, 2 node(s)") ||
		!hostRow("n2", "ssh "+lab.Hosts[1].Name).MatchString(r.stdout) {
		t.Fatalf("register with --ssh-config: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	kh := "UserKnownHostsFile=" + lab.KnownHosts
	r = reg("sshr2", "--ssh-user", "root", "--ssh-port", "22", "--ssh-identity", lab.Key, "--ssh-option", kh, "--ssh-option", "IdentitiesOnly=yes")
	if r.code != 0 || !hostRow("n1", "ssh root@"+lab.Hosts[0].Addr+":22").MatchString(r.stdout) {
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
		{[]string{"--ssh-config", lab.SSHConfig, "--ssh-host", lab.Hosts[0].Name, "--ssh-host", lab.Addr(99)}, 1,
			[]string{"node n2", "ssh " + lab.Addr(99), "cannot connect"}},
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
	// doctor: one line per registered host, saying what tc impairments there lack.
	d := habench(t, state, "doctor")
	want := []string{" no ", "no sch_netem in the kernel", "rate limits and partitions work"}
	if netem.KernelAvailable() == nil {
		want = []string{" yes ", "tc, CAP_NET_ADMIN, htb/u32 and sch_netem"}
	}
	for _, h := range lab.Hosts {
		line := ""
		for _, l := range strings.Split(d.stdout, "\n") {
			if strings.HasPrefix(l, "host of sshr1/") && strings.Contains(l, "(ssh "+h.Name+")") {
				line = l
			}
		}
		ok := line != ""
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			t.Errorf("doctor's line for %s: %q, want %q; output:\n%s", h.Name, line, want, d.stdout)
		}
	}
	t.Logf("doctor:\n%s", d.stdout)
	habench(t, state, "destroy", "sshr1")
	habench(t, state, "destroy", "sshr2")
}

// sshLab builds two hosts with sshd and an async MariaDB pair, gives each qdiscs of its
// own (clsact with a filter on eth0, a tbf root on another interface), and returns the lab
// and a check that every host's qdiscs, classes and filters equal what they were then.
func sshLab(t *testing.T) (*testhost.Lab, func(when string)) {
	lab := testhost.New(t, 2, testhost.Options{SSH: true, MariaDB: true, Replicate: true})
	var before []string
	for _, h := range lab.Hosts {
		h.Run(t, "tc", "qdisc", "add", "dev", "eth0", "clsact")
		h.Run(t, "tc", "filter", "add", "dev", "eth0", "egress", "protocol", "ip", "prio", "7", "u32", "match", "ip", "dst", "198.18.1.99/32", "flowid", "1:1")
		h.Run(t, "ip", "link", "add", "own0", "type", "veth", "peer", "name", "own1")
		h.Run(t, "tc", "qdisc", "add", "dev", "own0", "root", "handle", "8001:", "tbf", "rate", "1mbit", "burst", "32k", "latency", "50ms")
		before = append(before, h.TCState(t))
	}
	return lab, func(when string) {
		t.Helper()
		for i, h := range lab.Hosts {
			if now := h.TCState(t); now != before[i] {
				t.Errorf("%s: %s's qdiscs differ from before:\nbefore:\n%s\nnow:\n%s", when, h.Name, before[i], now)
			}
		}
	}
}

// waitOurQdisc waits (at most 30 s) until habench's root qdisc is on h's eth0.
func waitOurQdisc(t *testing.T, h *testhost.Host, cmd *exec.Cmd, stderr fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(h.Run(t, "tc", "-j", "qdisc", "show", "dev", "eth0"), `"handle":"4862:"`) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no qdisc of habench's on %s after 30s: %s", h.Name, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signalAndWait sends sig to cmd and waits (at most 1 min) for it to exit.
func signalAndWait(t *testing.T, cmd *exec.Cmd, sig os.Signal) error {
	t.Helper()
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%v: habench did not exit in 1 min", sig)
	}
	return nil
}

// TestRunLinksOverSSH: `sysbench run --links` on an existing cluster with ssh applies tc
// on its hosts for the run, records it in the manifest (applied_by run), samples each
// host's CPU over SSH, and leaves the hosts as they were after the run, after SIGINT, and
// after kill -9 plus `netem clear`; a scenario with links on the same servers runs too.
func TestRunLinksOverSSH(t *testing.T) {
	t.Parallel()
	lab, same := sshLab(t)
	h1 := lab.Hosts[0]
	state := stateDir(t)
	must := func(args ...string) result {
		t.Helper()
		r := habench(t, state, args...)
		if r.code != 0 {
			t.Fatalf("habench %s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}
	must("register", "--name", "sshl", "--dsn", "root:@tcp("+h1.Addr+":3306)/", "--dsn", "root:@tcp("+lab.Hosts[1].Addr+":3306)/",
		"--ssh-config", lab.SSHConfig, "--ssh-host", h1.Name, "--ssh-host", lab.Hosts[1].Name)
	opts := []string{"--tables", "1", "--table-size", "200"}
	must(append([]string{"sysbench", "oltp_read_only", "prepare", "--cluster", "sshl"}, opts...)...)
	res := filepath.Join(t.TempDir(), "run")
	r := must(append([]string{"sysbench", "oltp_read_only", "run", "--cluster", "sshl", "--links", "rate 10mbit", "--time", "6", "--results", res}, opts...)...)
	man := readJSON(t, filepath.Join(runDir(t, res), "manifest.json"))
	imp, _ := man["links"].(map[string]any)["impairment"].(map[string]any)
	if imp == nil || imp["backend"] != netem.BackendRemote || imp["applied_by"] != "run" || len(imp["rtt"].([]any)) != 2 {
		t.Errorf("manifest links: %v\n%s", man["links"], r.stdout)
	}
	same("after a run with --links")
	// The hosts' clocks, measured at the start of the run: about 0 (the lab's hosts share
	// this machine's clock), within their uncertainty.
	if mh, _ := man["hosts"].([]any); len(mh) != 2 {
		t.Errorf("manifest hosts: %v", man["hosts"])
	} else {
		for _, x := range mh {
			off, ok1 := x.(map[string]any)["offset_ms"].(float64)
			unc, ok2 := x.(map[string]any)["uncertainty_ms"].(float64)
			if !ok1 || !ok2 || unc <= 0 || math.Abs(off) > unc+1 {
				t.Errorf("manifest host %v: want offset_ms about 0 within uncertainty_ms", x)
			}
		}
	}
	// Host metrics over SSH: each node's host is read (its /proc through the shell habench
	// keeps open there) during the run. How many CPU samples a 6 s run gets depends on
	// this machine's load (the sampler gives each tick 800 ms), so only reads are required.
	sum := readJSON(t, filepath.Join(runDir(t, res), "summary.json"))
	hosts, _ := sum["hosts"].([]any)
	if len(hosts) != 2 {
		t.Errorf("summary hosts: %v", sum["hosts"])
	}
	csv, err := os.ReadFile(filepath.Join(runDir(t, res), "samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range hosts {
		hm := x.(map[string]any)
		t.Logf("host %v: %v CPU samples, CPU busy mean %v, run queue mean %v", hm["host"], hm["samples"], hm["cpu_busy_mean"], hm["procs_running_mean"])
		name := fmt.Sprint(hm["host"])
		if !slices.ContainsFunc(lab.Hosts[:2], func(h *testhost.Host) bool { return name == "ssh "+h.Name }) || !strings.Contains(string(csv), ","+sampler.HostNode(name)+","+sampler.MetricHostProcsRunning+",") {
			t.Errorf("host %s: no %s read over SSH in samples.csv; stderr:\n%s", name, sampler.MetricHostProcsRunning, r.stderr)
		}
	}
	record := filepath.Join(state, "clusters", "sshl", "links-run.json")
	for _, sig := range []os.Signal{os.Interrupt, os.Kill} {
		cmd := exec.Command(habenchBin, append([]string{"sysbench", "oltp_read_only", "run", "--cluster", "sshl", "--links", "rate 10mbit", "--time", "60"}, opts...)...)
		cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "Threads started!") {
					close(started)
					break
				}
			}
			io.Copy(io.Discard, stdout)
		}()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitOurQdisc(t, h1, cmd, &stderr)
		select { // into the workload, the links applied
		case <-started:
			time.Sleep(time.Second)
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatalf("%v: the workload did not start in 1 min: %s", sig, stderr.String())
		}
		err = signalAndWait(t, cmd, sig)
		t.Logf("%v: %v, stderr %q", sig, err, strings.TrimSpace(stderr.String()))
		if sig == os.Interrupt {
			same("after SIGINT of a run with --links")
			if _, err := os.Stat(record); !os.IsNotExist(err) {
				t.Errorf("%s after SIGINT: %v", record, err)
			}
			continue
		}
		if _, err := os.Stat(record); err != nil {
			t.Errorf("no record of the killed run's impairments: %v", err)
		}
		r = must("netem", "clear", "sshl")
		if !strings.Contains(r.stdout, "cleared the impairments a killed run left on the hosts") {
			t.Errorf("clear after kill -9 of a run: %s", r.stdout)
		}
		same("after kill -9 of a run with --links and netem clear")
		if _, err := os.Stat(record); !os.IsNotExist(err) {
			t.Errorf("%s after clear: %v", record, err)
		}
	}
	must(append([]string{"sysbench", "oltp_read_only", "cleanup", "--cluster", "sshl"}, opts...)...)

	// A scenario whose topology is the same servers (dsns with ssh:) and links: habench run.
	scen := filepath.Join(t.TempDir(), "s.yaml")
	body := fmt.Sprintf(`name: sshscen
topologies:
  - name: sshs
    provider: existing
    dsns: ["root:@tcp(%s:3306)/", "root:@tcp(%s:3306)/"]
    ssh: {config: %s, hosts: [%s, %s]}
links: {link: {"n1->n2": "rate 10mbit"}}
workload:
  test: oltp_read_only
  options: {tables: 1, table-size: 200, threads: 1, time: 2}
`, h1.Addr, lab.Hosts[1].Addr, lab.SSHConfig, h1.Name, lab.Hosts[1].Name)
	if err := os.WriteFile(scen, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	sres := filepath.Join(t.TempDir(), "scen")
	must("run", scen, "--results", sres)
	found := 0
	filepath.Walk(sres, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Name() == "manifest.json" {
			m := readJSON(t, p)
			if imp, _ := m["links"].(map[string]any)["impairment"].(map[string]any); imp != nil && imp["backend"] == netem.BackendRemote {
				found++
			}
		}
		return nil
	})
	if found != 1 {
		t.Errorf("habench run: %d cell manifest(s) with tc-ssh links, want 1", found)
	}
	same("after habench run with links")
	must("destroy", "sshl")
}

// sink listens on addr inside namespace ns and reports, for each connection, the bytes
// received and the time between the first and the last byte.
type sink struct {
	ln  net.Listener
	got chan [2]float64 // bytes, seconds
}

func newSink(t *testing.T, ns, addr string) *sink {
	t.Helper()
	s := &sink{got: make(chan [2]float64, 4)}
	// Not netem.InNetns: it ends its thread, and a server this test process started from
	// that thread would get its Pdeathsig (SIGKILL). This thread goes back and lives on.
	err := func() error {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			return err
		}
		defer orig.Close()
		target, err := netns.GetFromName(ns)
		if err != nil {
			runtime.UnlockOSThread()
			return err
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			return err
		}
		s.ln, err = net.Listen("tcp4", addr)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		} // else the thread stays locked and ends with the test process
		return err
	}()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ln.Close() })
	go func() {
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				var n int
				var first, last time.Time
				for {
					k, err := c.Read(buf)
					if k > 0 {
						if n == 0 {
							first = time.Now()
						}
						n += k
						last = time.Now()
					}
					if err != nil {
						break
					}
				}
				s.got <- [2]float64{float64(n), last.Sub(first).Seconds()}
			}()
		}
	}()
	return s
}

// throughput sends n bytes from host from to the sink with bash on from, and returns the
// rate the sink saw in bytes per second.
func (s *sink) throughput(t *testing.T, from *testhost.Host, n int) float64 {
	t.Helper()
	from.Run(t, "bash", "-c", fmt.Sprintf("head -c %d /dev/zero > /dev/tcp/%s", n, strings.Replace(s.ln.Addr().String(), ":", "/", 1)))
	select {
	case g := <-s.got:
		if int(g[0]) != n {
			t.Fatalf("sink got %v bytes, want %d", g[0], n)
		}
		return g[0] / max(g[1], 1e-6)
	case <-time.After(30 * time.Second):
		t.Fatal("sink: nothing received in 30s")
	}
	return 0
}

// TestNetemOverSSH (impairments with tc over SSH): on an async pair whose hosts are namespaces
// reached over SSH, each with qdiscs of its own (clsact with a filter on eth0, a tbf root
// on another interface), `netem apply` limits the rate n1->n2 with htb (measured by a bulk
// transfer), records the achieved round trips in links.json and in a run's manifest, and
// `netem clear` leaves both hosts' qdiscs, classes and filters exactly as before. So do a
// partition, an apply interrupted by SIGINT, and an apply killed with SIGKILL followed by
// `netem clear`. Refused before anything changes on any host: delay on a kernel without
// sch_netem, and a host with a root qdisc of its own on the interface to impair.
func TestNetemOverSSH(t *testing.T) {
	t.Parallel()
	lab, same := sshLab(t)
	h1, h2 := lab.Hosts[0], lab.Hosts[1]
	before := []string{h1.TCState(t), h2.TCState(t)}
	state := stateDir(t)
	must := func(args ...string) result {
		t.Helper()
		r := habench(t, state, args...)
		if r.code != 0 {
			t.Fatalf("habench %s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}
	must("register", "--name", "sshn", "--dsn", "root:@tcp("+h1.Addr+":3306)/", "--dsn", "root:@tcp("+h2.Addr+":3306)/",
		"--ssh-config", lab.SSHConfig, "--ssh-host", h1.Name, "--ssh-host", h2.Name)
	opts := []string{"--tables", "1", "--table-size", "200"}
	must(append([]string{"sysbench", "oltp_read_only", "prepare", "--cluster", "sshn"}, opts...)...)
	sk := newSink(t, h2.Name, h2.Addr+":24100")
	plain := sk.throughput(t, h1, 200000)

	// A rate limit through htb: applied, measured, in links.json and a run's manifest.
	r := must("netem", "apply", "--cluster", "sshn", "--link", "n1->n2=rate 1mbit")
	t.Logf("netem apply:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "tc-ssh backend") || !strings.Contains(r.stdout, "n1->n2") {
		t.Errorf("apply output:\n%s", r.stdout)
	}
	limited := sk.throughput(t, h1, 200000)
	t.Logf("n1->n2 bulk transfer: %.0f B/s unimpaired, %.0f B/s at rate 1mbit (125000 B/s)", plain, limited)
	if limited < 0.6*125000 || limited > 1.4*125000 || plain < 10*limited {
		t.Errorf("rate 1mbit: %.0f B/s (unimpaired %.0f B/s), want about 125000", limited, plain)
	}
	if back := newSink(t, h1.Name, h1.Addr+":24101").throughput(t, h2, 200000); back < 5*limited {
		t.Errorf("n2->n1 is not impaired, yet carried only %.0f B/s", back)
	}
	if q := h1.Run(t, "tc", "-j", "qdisc", "show", "dev", "eth0"); !strings.Contains(q, `"handle":"4862:"`) || !strings.Contains(q, "clsact") {
		t.Errorf("n1's eth0 after apply: %s", q)
	}
	links := readJSON(t, filepath.Join(state, "clusters", "sshn", "links.json"))
	if links["backend"] != netem.BackendRemote || len(links["hosts"].([]any)) != 1 || len(links["report"].(map[string]any)["rtt"].([]any)) != 2 {
		t.Errorf("links.json: %v", links)
	}
	res := filepath.Join(t.TempDir(), "run")
	must(append([]string{"sysbench", "oltp_read_only", "run", "--cluster", "sshn", "--time", "2", "--results", res}, opts...)...)
	man := readJSON(t, filepath.Join(runDir(t, res), "manifest.json"))
	imp, _ := man["links"].(map[string]any)["impairment"].(map[string]any)
	if imp == nil || imp["backend"] != netem.BackendRemote || imp["links"].(map[string]any)["n1->n2"] != "rate 125000bps" {
		t.Errorf("manifest links: %v", man["links"])
	}
	r = must("netem", "clear", "sshn")
	if !strings.Contains(r.stdout, "cleared --link") {
		t.Errorf("clear output: %s", r.stdout)
	}
	same("after apply and clear")

	// A partition: both directions cut (probes fail), then cleared.
	r = must("netem", "apply", "--cluster", "sshn", "--partition", "n2")
	if !strings.Contains(r.stdout, "partition") || !strings.Contains(r.stdout, "3 of 3 probes failed") {
		t.Errorf("partition apply:\n%s", r.stdout)
	}
	must("netem", "clear", "sshn")
	same("after partition and clear")

	// Delay needs sch_netem: refused before anything changes where the kernel lacks it
	// (this machine's), applied and measured where it has it.
	r = habench(t, state, "netem", "apply", "--cluster", "sshn", "--all", "1ms")
	if netem.KernelAvailable() != nil {
		if line := strings.TrimSpace(r.stderr); r.code == 0 || strings.Contains(line, "\n") || !strings.Contains(line, "nothing changed on any host") ||
			!strings.Contains(line, "node n1 (ssh "+h1.Name+"): no sch_netem in the kernel") || !strings.Contains(line, "node n2 (ssh "+h2.Name+"): no sch_netem") {
			t.Errorf("delay without sch_netem: exit %d, %q", r.code, line)
		}
	} else {
		if r.code != 0 || !strings.Contains(r.stdout, "n1->n2") {
			t.Errorf("delay with sch_netem: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		must("netem", "clear", "sshn")
	}
	same("after a delay request")
	// ... and a root qdisc of n2's own on its eth0.
	h2.Run(t, "tc", "qdisc", "add", "dev", "eth0", "root", "handle", "8002:", "tbf", "rate", "10mbit", "burst", "32k", "latency", "50ms")
	own := h2.TCState(t)
	r = habench(t, state, "netem", "apply", "--cluster", "sshn", "--all", "rate 1mbit")
	if line := strings.TrimSpace(r.stderr); r.code == 0 || strings.Contains(line, "\n") || !strings.Contains(line, "node n2 (ssh "+h2.Name+"): dev eth0 has a root qdisc of its own (tbf 8002:)") {
		t.Errorf("own root qdisc: exit %d, %q", r.code, line)
	}
	if h2.TCState(t) != own || h1.TCState(t) != before[0] {
		t.Errorf("a refused apply changed a host")
	}
	h2.Run(t, "tc", "qdisc", "del", "dev", "eth0", "root", "handle", "8002:")
	same("after the host's own root qdisc is gone")

	// Interrupted (SIGINT) while measuring a partition; killed (SIGKILL), then clear.
	for _, sig := range []os.Signal{os.Interrupt, os.Kill} {
		cmd := exec.Command(habenchBin, "netem", "apply", "--cluster", "sshn", "--partition", "n2")
		cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitOurQdisc(t, h1, cmd, &stderr)
		err := signalAndWait(t, cmd, sig)
		t.Logf("%v: %v, stderr %q", sig, err, strings.TrimSpace(stderr.String()))
		if sig == os.Interrupt {
			same("after SIGINT")
			if _, err := os.Stat(filepath.Join(state, "clusters", "sshn", "links.json")); !os.IsNotExist(err) {
				t.Errorf("links.json after SIGINT: %v", err)
			}
			continue
		}
		if h1.TCState(t) == before[0] {
			t.Errorf("SIGKILL: the qdiscs were already gone, the test proves nothing")
		}
		r = must("netem", "clear", "sshn")
		t.Logf("clear after SIGKILL: %s", strings.TrimSpace(r.stdout))
		same("after SIGKILL and netem clear")
	}

	// show --measure measures on the hosts; destroy (forget) removes standing impairments
	// from the hosts first.
	must("netem", "apply", "--cluster", "sshn", "--all", "rate 10mbit")
	r = must("netem", "show", "sshn", "--measure")
	if !strings.Contains(r.stdout, "measured now:") || strings.Count(r.stdout, "\nn1->n2") != 2 {
		t.Errorf("netem show --measure:\n%s", r.stdout)
	}
	must("destroy", "sshn")
	same("after destroy with impairments standing")
}

// TestFaultsOverSSH: habench fault on an existing cluster runs the ssh: section's fault
// commands on the node's host (here overridden: the lab's servers are not services):
// kill takes the replica's server away, start brings it back and it replicates again;
// a scenario on the cluster refuses a partition fault, and a cluster without ssh: is
// refused in one line.
func TestFaultsOverSSH(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 2, testhost.Options{SSH: true, MariaDB: true, Replicate: true})
	h1, h2 := lab.Hosts[0], lab.Hosts[1]
	state := stateDir(t)
	cmdDir := t.TempDir()
	// The server of the namespace the command runs in: its command line is kept for start.
	kill := `for p in $(pgrep -x mariadbd); do if [ "$(ip netns identify $p)" = "$(ip netns identify $$)" ]; then tr '\0' ' ' < /proc/$p/cmdline > ` + cmdDir + `/$(ip netns identify $$).cmd; kill -9 $p; fi; done`
	start := `rm -f ` + cmdDir + `/$(ip netns identify $$).pid; start-stop-daemon --start --background --no-close --make-pidfile --pidfile ` + cmdDir + `/$(ip netns identify $$).pid --startas /bin/sh -- -c "exec $(cat ` + cmdDir + `/$(ip netns identify $$).cmd)" >> ` + cmdDir + `/start.log 2>&1 < /dev/null`
	topo := filepath.Join(t.TempDir(), "ex.yaml")
	os.WriteFile(topo, []byte("name: sshf\nprovider: existing\ndsns:\n  - root:@tcp("+h1.Addr+":3306)/\n  - root:@tcp("+h2.Addr+":3306)/\n"+
		"ssh:\n  config: "+lab.SSHConfig+"\n  hosts: ["+h1.Name+", "+h2.Name+"]\n  faults:\n    kill: '"+strings.ReplaceAll(kill, "'", "''")+"'\n    start: '"+strings.ReplaceAll(start, "'", "''")+"'\n"), 0o644)
	if r := habench(t, state, "register", "-f", topo); r.code != 0 {
		t.Fatalf("register: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := h2.DB.Open(t, "")
	up := func() bool { return db.Ping() == nil }
	r := habench(t, state, "fault", "kill", "n2", "--cluster", "sshf")
	if r.code != 0 || !strings.Contains(r.stdout, "killed n2") {
		t.Fatalf("fault kill over ssh: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db.SetMaxIdleConns(0)
	if up() {
		t.Errorf("n2 still answers after fault kill")
	}
	saved, _ := os.ReadFile(filepath.Join(cmdDir, h2.Name+".cmd"))
	t.Logf("n2's command line, kept by the kill command: %s", saved)
	r = habench(t, state, "fault", "start", "n2", "--cluster", "sshf")
	if r.code != 0 || !up() {
		log, _ := os.ReadFile(filepath.Join(cmdDir, "start.log"))
		t.Fatalf("fault start over ssh: exit %d, up %v\n%s\n%s\nstart.log: %s", r.code, up(), r.stdout, r.stderr, log)
	}
	// Replication resumes: a row written on n1 arrives on n2.
	src := h1.DB.Open(t, "")
	testserver.Exec(t, src, "CREATE DATABASE IF NOT EXISTS fs", "CREATE TABLE IF NOT EXISTS fs.t (id INT PRIMARY KEY)", "INSERT INTO fs.t VALUES (1)")
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; n != 1; time.Sleep(200 * time.Millisecond) {
		db.QueryRow("SELECT COUNT(*) FROM fs.t").Scan(&n)
		if time.Now().After(deadline) {
			t.Fatal("n2 does not replicate after its restart over ssh")
		}
	}
	if r := habench(t, state, "fault", "partition", "n2", "--cluster", "sshf"); r.code != 2 || !strings.Contains(r.stderr, "on an existing cluster") {
		t.Errorf("partition fault on an existing cluster: exit %d %q", r.code, r.stderr)
	}
	if r := habench(t, state, "register", "--name", "nossh", "--dsn", "root:@tcp("+h1.Addr+":3306)/"); r.code != 0 {
		t.Fatalf("register without ssh: %s", r.stderr)
	}
	if r := habench(t, state, "fault", "kill", "n1", "--cluster", "nossh"); r.code != 2 || !strings.Contains(r.stderr, "no ssh: access") {
		t.Errorf("fault on a cluster without ssh: exit %d %q", r.code, r.stderr)
	}
	habench(t, state, "destroy", "sshf")
	habench(t, state, "destroy", "nossh")
}
