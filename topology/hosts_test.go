package topology

import (
	"strings"
	"testing"
)

// TestHostsSpec: a hosts spec takes its defaults (host_dir, base_port, a system
// installation for either flavor), places nodes round the hosts, and each bad field is a
// *FieldError naming it.
func TestHostsSpec(t *testing.T) {
	s := Spec{Name: "hh1", Kind: Async, Nodes: 4, Flavor: MySQL, Provider: ProviderHosts, HostsSpec: HostsSpec{Hosts: []string{"db1", "db2", "db3"}}}
	s.Defaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.HostDir != DefaultHostDir || s.BasePort != DefaultHostsBasePort || s.Installation.Kind != InstallSystem {
		t.Errorf("defaults: host_dir %q base_port %d installation %q", s.HostDir, s.BasePort, s.Installation.Kind)
	}
	for i, want := range [][2]int{{0, 0}, {1, 0}, {2, 0}, {0, 1}} {
		if h, slot := s.HostOf(i + 1); h != want[0] || slot != want[1] {
			t.Errorf("HostOf(%d) = %d, %d; want %v", i+1, h, slot, want)
		}
	}
	for _, c := range []struct {
		edit  func(*Spec)
		field string
	}{
		{func(s *Spec) { s.Hosts = nil }, "hosts"},
		{func(s *Spec) { s.Hosts = []string{"db1", "-oProxyCommand=x"} }, "hosts[1]"},
		{func(s *Spec) { s.Hosts = []string{"db1", "a b"} }, "hosts[1]"},
		{func(s *Spec) { s.SSH = &SSHSpec{Hosts: []string{"x"}} }, "ssh.hosts"},
		{func(s *Spec) { s.SSH = &SSHSpec{Port: 70000} }, "ssh.port"},
		{func(s *Spec) { s.HostDir = "relative/dir" }, "host_dir"},
		{func(s *Spec) { s.HostDir = "/" }, "host_dir"},
		{func(s *Spec) { s.HostDir = "/var/lib/x;rm" }, "host_dir"},
		{func(s *Spec) { s.BasePort = 80 }, "base_port"},
		{func(s *Spec) { s.BasePort = 65535 }, "base_port"},
		{func(s *Spec) { s.Installation = Installation{Kind: InstallRootfs, Path: "/r"} }, "installation.kind"},
		{func(s *Spec) { s.Kind = Group; s.Flavor = MySQL }, "kind"},
		{func(s *Spec) {
			s.Provider = ""
			s.Installation = Installation{Kind: InstallRootfs, Path: DefaultRootfs}
			s.SSH = nil
		}, "hosts"},
	} {
		bad := s
		bad.Hosts = append([]string(nil), s.Hosts...)
		c.edit(&bad)
		err := bad.Validate()
		fe, ok := err.(*FieldError)
		if !ok || fe.Field != c.field {
			t.Errorf("want a FieldError on %s, got %v", c.field, err)
		}
	}
	y, err := ParseSpecYAML([]byte("name: hh2\nkind: semisync\nflavor: mariadb\nprovider: hosts\nhosts: [198.18.1.11, 198.18.1.12]\nhost_dir: /tmp/hb\nbase_port: 24000\nssh:\n  user: root\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := y.Validate(); err != nil || strings.Join(y.Hosts, ",") != "198.18.1.11,198.18.1.12" || y.HostDir != "/tmp/hb" || y.BasePort != 24000 || y.SSH.User != "root" {
		t.Errorf("yaml: %+v, %v", y.HostsSpec, err)
	}
}
