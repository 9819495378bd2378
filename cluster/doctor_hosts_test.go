package cluster

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/habench/habench/topology"
)

// TestDoctorParsers: listeners from ss and /proc/net/tcp, server versions, and the peer
// probes' output turned into one problem per peer and cause.
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
	out := `10.0.0.2 4567 1 bash: connect: Connection refused
10.0.0.2 4568 124 
10.0.0.2 4444 124 
10.0.0.3 4567 0 
10.0.0.3 4568 1 bash: line 1: /dev/tcp/10.0.0.3/4568: No route to host
`
	want := []string{"to 10.0.0.2 port 4444,4568: filtered (no answer in 2 s)", "to 10.0.0.3 port 4568: no route"}
	if got := peerProblems(out, 5); !reflect.DeepEqual(got, want) {
		t.Errorf("peerProblems: %q, want %q", got, want)
	}
	if got := peerProblems("10.0.0.2 4567 0 \n", 2); len(got) != 1 || !strings.Contains(got[0], "1 of 2 port probes") {
		t.Errorf("a missing probe line: %q", got)
	}
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
