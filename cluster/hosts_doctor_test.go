package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// TestDoctorParsers: listeners from ss and /proc/net/tcp, server versions, and the peer
// probes' output turned into one problem per peer and cause (a target killed at the end of
// the wait just after it answered keeps its answer; EHOSTUNREACH, ENETUNREACH and a
// blackhole route's EINVAL are "no route").
func TestDoctorParsers(t *testing.T) {
	ss := `LISTEN 0      80           0.0.0.0:3306      0.0.0.0:*    users:(("mariadbd",pid=812,fd=20))
LISTEN 0      128        198.18.1.11:22        0.0.0.0:*    users:(("sshd",pid=90,fd=3),("sshd",pid=91,fd=3))
LISTEN 0      4096            [::]:4567          [::]:*
`
	if got, want := parseSSListen(ss), map[int]string{3306: "mariadbd", 22: "sshd", 4567: ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("parseSSListen: %v, want %v", got, want)
	}
	proc := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000   105        0 1 1 0 100 0 0 10 0
   1: 0100007F:11D7 0100007F:0CEA 01 00000000:00000000 00:00000000 00000000   105        0 1 1 0 100 0 0 10 0
`
	if got := listeningPorts(proc); !reflect.DeepEqual(got, map[int]bool{3306: true}) {
		t.Errorf("listeningPorts: %v, want only 3306 (the other is an established connection)", got)
	}
	for _, c := range [][3]string{
		{"/usr/sbin/mariadbd", "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)", "mariadbd 10.11.19-MariaDB"},
		{"/opt/mysql/bin/mysqld", "/opt/mysql/bin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)", "mysqld 8.0.36"},
		{"/usr/sbin/mysqld", "Segmentation fault", "mysqld (version unknown: Segmentation fault)"},
	} {
		if got := serverVersion(c[0], c[1]); got != c[2] {
			t.Errorf("serverVersion(%q): %q, want %q", c[1], got, c[2])
		}
	}
	out := `bash: line 6: /dev/tcp/10.0.0.2/4567: Connection refused
10.0.0.2 4567 1 3
10.0.0.3 4567 0 1
bash: line 6: /dev/tcp/10.0.0.3/4568: No route to host
bash: line 6: /dev/tcp/10.0.0.3/4444: Connection refused
10.0.0.3 4444 1 2
10.0.0.3 4568 1 -
10.0.0.2 4568 124 3004
10.0.0.2 4444 124 3004
10.0.0.3 4444 124 3004
bash: line 6: /dev/tcp/10.0.0.4/4567: Invalid argument
10.0.0.4 4567 1 0
bash: line 6: /dev/tcp/10.0.0.5/4567: Network is unreachable
10.0.0.5 4567 1 0
`
	probes := parseProbes(out)
	if len(probes) != 8 || probes[0].Ms != 3 || probes[3].Ms != -1 || probes[2].result() != "refused" || probes[4].result() != "filtered" || probes[3].Msg != "No route to host" {
		t.Errorf("parseProbes: %+v (a target killed after it answered keeps its answer)", probes)
	}
	// EINVAL is a blackhole route's answer, ENETUNREACH no route at all: both "no route".
	want := []string{"to 10.0.0.3 port 4568: no route", "to 10.0.0.2 port 4444,4568: filtered (no answer in 3 s)", "to 10.0.0.4 port 4567: no route", "to 10.0.0.5 port 4567: no route"}
	if got := peerProblems(probes, 8); !reflect.DeepEqual(got, want) {
		t.Errorf("peerProblems: %q, want %q", got, want)
	}
	if got := peerProblems(parseProbes("10.0.0.2 4567 0 1\n"), 2); len(got) != 1 || !strings.Contains(got[0], "1 of 2 port probes") {
		t.Errorf("a missing probe line: %q", got)
	}
	// The command to check by hand carries doctor's ssh options, quoted for the shell.
	h := &host.SSH{Dest: "db1", Config: "/etc/my ssh/config", User: "dba", Port: 2222, Identity: "/k/id", Options: []string{"StrictHostKeyChecking=no"}}
	wantHand := `ssh -F '/etc/my ssh/config' -l dba -p 2222 -i /k/id -o 'StrictHostKeyChecking=no' db1 'timeout 3 bash --norc -c "exec 3<>/dev/tcp/10.0.0.3/4567"`
	if got := ProbeByHand(h.UserArgs(), h.Dest, "10.0.0.3", 4567); !strings.HasPrefix(got, wantHand) {
		t.Errorf("ProbeByHand: %s\nwant it to start with %s", got, wantHand)
	}
}

// TestProbeScript (issue 31): the peer probe, run here as doctor runs it on a host (env,
// bash --norc --noprofile), in the environment sshd gives a command (SSH_CLIENT set, no
// SHLVL) with shell start-up files that take 3 s (~/.bashrc, which bash reads for commands
// sshd starts, and BASH_ENV; this machine's root .bashrc, pyenv init, takes 2.5 s): a
// listening loopback port is open and a closed one refused, every answer within the wait,
// none filtered. The old probe, a `bash -c` per port under `timeout 2`, read those files in
// every probe and called every port filtered. In a locale that translates the C library's
// messages (German here), a refused port is still refused (the probe runs with LC_ALL=C).
// Real connects to 127.0.0.1.
func TestProbeScript(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().(*net.TCPAddr)
	closed.Close() // refused from now on
	open := l.Addr().(*net.TCPAddr)
	home := t.TempDir()
	slow := filepath.Join(home, "slow.sh")
	for _, f := range []string{slow, filepath.Join(home, ".bashrc")} {
		if err := os.WriteFile(f, []byte("sleep 3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var targets []string
	for i := 0; i < 19; i++ { // as many as doctor sends one host for two peers
		targets = append(targets, fmt.Sprintf("127.0.0.%d %d", i+1, closedAddr.Port))
	}
	targets = append(targets, fmt.Sprintf("127.0.0.1 %d", open.Port))
	argv := probeArgv(ProbeWait, targets)
	cmd := exec.Command(argv[0], argv[1:]...)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SHLVL=") && !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "BASH_ENV=") && !strings.HasPrefix(e, "LC_ALL=") && !strings.HasPrefix(e, "LANGUAGE=") {
			env = append(env, e)
		}
	}
	// A host whose locale translates the C library's messages (LC_ALL forwarded by ssh, or
	// the host's own; C.UTF-8 with LANGUAGE=de gives German here): "Connection refused"
	// must still read as refused.
	cmd.Env = append(env, "HOME="+home, "BASH_ENV="+slow, "SSH_CLIENT=198.18.1.1 50000 22", "LC_ALL=C.UTF-8", "LANGUAGE=de")
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	probes := parseProbes(string(out))
	if bad := peerProblems(probes, len(targets)); len(bad) > 0 || took >= ProbeWait {
		t.Errorf("probes of a refused and an open loopback port: problems %q after %v, want none within %v\n%s", bad, took.Round(time.Millisecond), ProbeWait, out)
	}
	for _, p := range probes {
		if want := map[bool]string{true: "open", false: "refused"}[p.Port == open.Port]; p.result() != want {
			t.Errorf("port %d: %s (%q), want %s", p.Port, p.result(), p.Msg, want)
		}
	}
	t.Logf("%d probes in %v", len(probes), took.Round(time.Millisecond))
}

// TestCheckHostsInput: bad input is one FieldError naming the field, before any connection.
func TestCheckHostsInput(t *testing.T) {
	t.Setenv(NetworkGuardEnv, "1")
	for _, c := range []struct {
		o     HostsCheck
		field string
	}{
		{HostsCheck{}, "hosts"},
		{HostsCheck{Hosts: []string{"127.0.0.1", "db1"}}, "hosts[1]"},
		{HostsCheck{Hosts: []string{"-oProxyCommand=x"}}, "hosts[0]"},
		{HostsCheck{Hosts: []string{"127.0.0.1"}, BasePort: 65534}, "base_port"},
		{HostsCheck{Hosts: []string{"127.0.0.1"}, HostDir: "var/lib"}, "host_dir"},
		{HostsCheck{Hosts: []string{"127.0.0.1"}, SSH: &topology.SSHSpec{Config: "/nonexistent/ssh_config"}}, "ssh.config"},
	} {
		_, err := CheckHosts(context.Background(), c.o)
		var fe *topology.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want a FieldError on %s", c.o, err, c.field)
		}
	}
}
