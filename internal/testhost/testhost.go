// Package testhost builds "remote hosts" for tests on this machine: network namespaces
// (not habench's hb-* sandboxes) on a bridge of their own in the root namespace, each with
// an address from a 198.18.N.0/24 (the benchmarking range, RFC 2544), optionally an sshd and a
// MariaDB server. Everything is removed by t.Cleanup, also when the test fails.
package testhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/internal/testmachine"

	"github.com/habench/habench/internal/testserver"
)

// Lab is a bridge with hosts on it. The root namespace is 198.18.N.1 on the bridge; host
// k (1-based) is 198.18.N.(10+k) on its eth0. N (Subnet) is handed out by testmachine,
// unique on the machine while the test runs, and names the lab's bridge (hbt-lN), hosts
// (hbt-lN-k) and veths (hbt-lNvk), so labs of tests running at the same time never meet.
type Lab struct {
	Subnet int
	Bridge string
	Hosts  []*Host
	Dir    string // temp dir: keys, ssh config, sshd configs and logs
	// SSHConfig is an ssh_config(5) file with a Host entry per host (its name, e.g.
	// "hbt-l3-1"): HostName, User root, the lab's key, a known_hosts of its own.
	SSHConfig string
	// Key is the private key sshd accepts for root.
	Key string
	// KnownHosts is the lab's known_hosts file (host keys of every sshd).
	KnownHosts string
}

// Host is one namespace.
type Host struct {
	Name  string // also the namespace's name
	Addr  string // IPv4 address on eth0
	Veth  string // the root-side end, a port of the bridge
	DB    *testserver.Server
	sshd  *exec.Cmd
	index int
}

// Options choose what each host runs.
type Options struct {
	SSH     bool // an sshd on Addr:22 accepting Lab.Key for root
	MariaDB bool // a MariaDB server on 0.0.0.0:3306 in the namespace
	// Replicate makes host 1's server (binary log on) the source of every other host's
	// (asynchronous replication as root), server_id k on host k.
	Replicate bool
	// SSHEnv are more NAME=VALUE variables sshd sets in every session (SetEnv, beside
	// SHLVL=1), e.g. a BASH_ENV that makes some shells slow to start, as a user's start-up
	// files can on real hosts.
	SSHEnv []string
}

// Require fails (HABENCH_REQUIRE_SERVERS=1) or skips the test when the lab cannot be
// built here: not root, no ip, or (with ssh) no sshd/ssh-keygen.
func Require(t testing.TB, o Options) {
	t.Helper()
	if testing.Short() {
		t.Skip("namespace test skipped in -short mode")
	}
	var why string
	switch {
	case os.Geteuid() != 0:
		why = "not root: network namespaces need CAP_NET_ADMIN"
	case !exists("/usr/sbin/ip") && !exists("/sbin/ip"):
		why = "ip missing (apt-get install iproute2)"
	case o.SSH && !exists("/usr/sbin/sshd"):
		why = "/usr/sbin/sshd missing (apt-get install openssh-server; make deps)"
	case o.SSH && !exists("/usr/bin/ssh"):
		why = "/usr/bin/ssh missing (apt-get install openssh-client)"
	case o.MariaDB && testserver.Available() != "":
		why = testserver.Available()
	}
	prereq.Need(t, why)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// New builds a lab of n hosts (1 to 8).
func New(t testing.TB, n int, o Options) *Lab {
	t.Helper()
	Require(t, o)
	if n < 1 || n > 8 {
		t.Fatalf("testhost.New: %d hosts, want 1 to 8", n)
	}
	testmachine.Share(t)
	subnet := testmachine.Subnet(t)
	l := &Lab{Subnet: subnet, Bridge: fmt.Sprintf("hbt-l%d", subnet), Dir: t.TempDir()}
	// Last cleanup but the temp dir: ssh clients and masters that still name the lab's
	// files (a master left by a habench the test killed) end, with their control dirs.
	t.Cleanup(func() { l.killClients() })
	run(t, "ip", "link", "add", l.Bridge, "type", "bridge")
	t.Cleanup(func() { exec.Command("ip", "link", "del", l.Bridge).Run() })
	run(t, "ip", "addr", "add", fmt.Sprintf("198.18.%d.1/24", subnet), "dev", l.Bridge)
	run(t, "ip", "link", "set", l.Bridge, "up")
	for k := 1; k <= n; k++ {
		h := &Host{Name: fmt.Sprintf("hbt-l%d-%d", subnet, k), Addr: l.Addr(10 + k),
			Veth: fmt.Sprintf("hbt-l%dv%d", subnet, k), index: k}
		run(t, "ip", "netns", "add", h.Name)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", h.Name).Run() })
		// Runs before the namespace goes (cleanups run last first): whatever still runs in
		// it dies, e.g. sshd's per-connection children, which outlive the listener.
		t.Cleanup(func() { killIn(h.Name) })
		run(t, "ip", "link", "add", h.Veth, "type", "veth", "peer", "name", "eth0", "netns", h.Name)
		t.Cleanup(func() { exec.Command("ip", "link", "del", h.Veth).Run() })
		run(t, "ip", "link", "set", h.Veth, "master", l.Bridge, "up")
		h.Run(t, "ip", "addr", "add", h.Addr+"/24", "dev", "eth0")
		h.Run(t, "ip", "link", "set", "eth0", "up")
		h.Run(t, "ip", "link", "set", "lo", "up")
		l.Hosts = append(l.Hosts, h)
	}
	if o.SSH {
		l.startSSH(t, o)
	}
	if o.MariaDB {
		for _, h := range l.Hosts {
			var extra []string
			if o.Replicate {
				extra = []string{fmt.Sprintf("--server-id=%d", h.index), "--log-bin=mysql-bin", "--log-slave-updates"}
			}
			h.DB = testserver.StartMariaDBAt(t, testserver.Listen{Netns: h.Name, Host: "0.0.0.0", Port: 3306}, extra...)
			h.DB.Host = h.Addr
			db := h.DB
			t.Cleanup(func() {
				if t.Failed() {
					log, _ := os.ReadFile(filepath.Join(db.Dir, "error.log"))
					lines := strings.Split(strings.TrimSpace(string(log)), "\n")
					t.Logf("%s: last lines of mariadbd's error.log:\n%s", h.Name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
				}
			})
		}
		if o.Replicate {
			for _, h := range l.Hosts[1:] {
				db := h.DB.Open(t, "")
				testserver.Exec(t, db, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=3306, MASTER_USER='root', MASTER_USE_GTID=slave_pos", l.Hosts[0].Addr), "START SLAVE")
			}
			for _, h := range l.Hosts[1:] {
				db := h.DB.Open(t, "")
				deadline := time.Now().Add(30 * time.Second)
				for {
					var io, sq string
					rows, err := db.Query("SHOW SLAVE STATUS")
					if err == nil {
						cols, _ := rows.Columns()
						if rows.Next() {
							vals := make([]any, len(cols))
							for i := range vals {
								vals[i] = new(*string)
							}
							rows.Scan(vals...)
							for i, c := range cols {
								if p := *(vals[i].(**string)); p != nil && c == "Slave_IO_Running" {
									io = *p
								} else if p != nil && c == "Slave_SQL_Running" {
									sq = *p
								}
							}
						}
						rows.Close()
					}
					if io == "Yes" && sq == "Yes" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: replication not running after 30s (io %q sql %q, err %v)", h.Name, io, sq, err)
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
		}
	}
	// First cleanup: this test process's own ssh masters to the lab's hosts (host.SSH
	// values the test used) end while the hosts are still there; other tests' stay.
	t.Cleanup(func() { host.CloseMatching(l.isHost) })
	return l
}

// isHost reports whether an ssh destination ("name", "user@addr") is one of the lab's hosts.
func (l *Lab) isHost(dest string) bool {
	if i := strings.LastIndexByte(dest, '@'); i >= 0 {
		dest = dest[i+1:]
	}
	for _, h := range l.Hosts {
		if dest == h.Name || dest == h.Addr {
			return true
		}
	}
	return false
}

// Addr returns 198.18.N.x, address x of the lab's subnet (1: the root namespace on the
// bridge, 10+k: host k; other values are free for a test's own use).
func (l *Lab) Addr(x int) string { return fmt.Sprintf("198.18.%d.%d", l.Subnet, x) }

// Run runs argv in the host's namespace and returns its output; it fails the test on error.
func (h *Host) Run(t testing.TB, argv ...string) string {
	t.Helper()
	return run(t, append([]string{"ip", "netns", "exec", h.Name}, argv...)...)
}

// TCState returns every qdisc, class and filter (root, ingress and egress) of every
// interface in the host, from `tc -j ... show`: the state tests compare before and after.
func (h *Host) TCState(t testing.TB) string {
	t.Helper()
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal([]byte(h.Run(t, "ip", "-j", "link", "show")), &links); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range links {
		for _, q := range [][]string{{"qdisc", "show", "dev", l.Name}, {"class", "show", "dev", l.Name},
			{"filter", "show", "dev", l.Name}, {"filter", "show", "dev", l.Name, "ingress"}, {"filter", "show", "dev", l.Name, "egress"}} {
			out, err := exec.Command("ip", append([]string{"netns", "exec", h.Name, "tc", "-j"}, q...)...).CombinedOutput()
			fmt.Fprintf(&b, "%s: %s %v\n", strings.Join(q, " "), strings.TrimSpace(string(out)), err)
		}
	}
	return b.String()
}

func run(t testing.TB, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, errb.String())
	}
	return out.String()
}

// startSSH makes a client key, a host key, and starts sshd -D in every namespace.
func (l *Lab) startSSH(t testing.TB, o Options) {
	t.Helper()
	l.Key = filepath.Join(l.Dir, "id_ed25519")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "habench-test", "-f", l.Key)
	hostKey := filepath.Join(l.Dir, "host_ed25519")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
	pub, err := os.ReadFile(l.Key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(l.Dir, "authorized_keys")
	if err := os.WriteFile(auth, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	// sshd refuses to start without its privilege separation directory (the package's
	// service creates it at boot; it is empty and harmless).
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	l.KnownHosts = filepath.Join(l.Dir, "known_hosts")
	var known, conf strings.Builder
	for _, h := range l.Hosts {
		cfg := filepath.Join(l.Dir, h.Name+".sshd_config")
		body := strings.Join([]string{
			"ListenAddress " + h.Addr + ":22",
			"HostKey " + hostKey,
			"PidFile " + filepath.Join(l.Dir, h.Name+".sshd.pid"),
			"AuthorizedKeysFile " + auth,
			"PermitRootLogin prohibit-password",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"UsePAM no",
			"StrictModes no",
			"MaxStartups 50",
			"ClientAliveInterval 5",
			"ClientAliveCountMax 2",
			"MaxSessions 50",
			"LogLevel VERBOSE",
			// bash sources ~/.bashrc for commands run by sshd unless SHLVL says it is not
			// the first shell: this machine's root .bashrc (pyenv init: a second or more,
			// and a lock that one killed session leaves for the next 60 s) is not the
			// lab host's to run.
			"SetEnv " + strings.Join(append([]string{"SHLVL=1"}, o.SSHEnv...), " "),
		}, "\n") + "\n"
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(l.Dir, h.Name+".sshd.log"))
		if err != nil {
			t.Fatal(err)
		}
		h.sshd = exec.Command("ip", "netns", "exec", h.Name, "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
		h.sshd.Stdout, h.sshd.Stderr = logf, logf
		if err := h.sshd.Start(); err != nil {
			t.Fatal(err)
		}
		sshd := h.sshd
		t.Cleanup(func() {
			sshd.Process.Kill()
			sshd.Wait()
			logf.Close()
		})
		fmt.Fprintf(&known, "%s %s", h.Addr, hostPub)
		fmt.Fprintf(&conf, "Host %s\n  HostName %s\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n\n",
			h.Name, h.Addr, l.Key, l.KnownHosts)
	}
	if err := os.WriteFile(l.KnownHosts, []byte(known.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	l.SSHConfig = filepath.Join(l.Dir, "ssh_config")
	if err := os.WriteFile(l.SSHConfig, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, h := range l.Hosts {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", h.Addr+":22", time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(l.Dir, h.Name+".sshd.log"))
				t.Fatalf("sshd in %s not listening after 10s: %v\n%s", h.Name, err, log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// killIn kills every process in the named network namespace (SIGKILL, then waits up to
// 5 s for them to go).
func killIn(ns string) {
	var want syscall.Stat_t
	if syscall.Stat(filepath.Join("/run/netns", ns), &want) != nil {
		return
	}
	in := func() []int {
		var pids []int
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join(p, "ns", "net"), &st) == nil && st.Ino == want.Ino && st.Dev == want.Dev {
				var pid int
				fmt.Sscanf(filepath.Base(p), "%d", &pid)
				if pid > 0 && pid != os.Getpid() {
					pids = append(pids, pid)
				}
			}
		}
		return pids
	}
	for _, pid := range in() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(5 * time.Second); len(in()) > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// killClients ends the ssh processes whose command line names a file of the lab or one of
// its hosts (by name, address or user@address, as a test's own ssh_config may: masters of
// killed habench processes, and those left for the next process under
// host.ControlDirEnv) and removes their per-process ControlPath directories. SIGTERM
// first, so a master removes its socket from a shared directory (a killed one leaves it
// for a later lab on the same address to find), SIGKILL after 2 s.
func (l *Lab) killClients() {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "ssh" || !bytes.Contains(b, []byte(l.Dir)) && !slices.ContainsFunc(args, l.namesHost) {
			continue
		}
		var pid int
		fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
		if pid > 0 && syscall.Kill(pid, syscall.SIGTERM) == nil {
			pids = append(pids, pid)
		}
		for _, a := range args {
			if cp, ok := strings.CutPrefix(a, "ControlPath="); ok && strings.HasPrefix(cp, os.TempDir()+"/hbssh-") {
				os.RemoveAll(filepath.Dir(cp))
			}
		}
	}
	for deadline := time.Now().Add(2 * time.Second); len(pids) > 0; {
		pids = slices.DeleteFunc(pids, func(pid int) bool { return syscall.Kill(pid, 0) != nil })
		if len(pids) > 0 && time.Now().After(deadline) {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// namesHost reports whether ssh argument a is one of the lab's hosts as a destination:
// its name, its address or user@address.
func (l *Lab) namesHost(a string) bool {
	if _, addr, ok := strings.Cut(a, "@"); ok {
		a = addr
	}
	for _, h := range l.Hosts {
		if a == h.Name || a == h.Addr {
			return true
		}
	}
	return false
}

// SSHLog returns host h's sshd log (for failure messages).
func (l *Lab) SSHLog(h *Host) string {
	b, _ := os.ReadFile(filepath.Join(l.Dir, h.Name+".sshd.log"))
	return string(b)
}

// ProcessesIn returns the processes in network namespace ns whose command line contains
// text, as "pid: command line" (arguments space-separated). Fatal when ns cannot be read.
func ProcessesIn(t testing.TB, ns, text string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", ns, err)
	}
	var found []string
	for _, pid := range strings.Fields(string(out)) {
		b, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err == nil && strings.Contains(string(b), text) {
			found = append(found, pid+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}
