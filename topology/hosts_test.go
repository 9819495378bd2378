package topology

import (
	"fmt"
	"strings"
	"testing"
)

// TestHostsSpec: a hosts spec takes its defaults (host_dir, base_port, a system
// installation for either flavor), places nodes round the hosts, and each bad field is a
// *FieldError naming it; group-dr, galera-arbitrator and a multi-primary group validate on
// hosts, a kind missing from HostsKinds is refused on kind.
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
		{func(s *Spec) { s.Installation = Installation{Kind: "tarball", Path: "/r"} }, "installation.kind"},
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
	// Every kind deploys on hosts; one missing from HostsKinds is refused on kind.
	for _, k := range []Spec{
		{Name: "hh3", Kind: GroupDR, Nodes: 6, Flavor: MySQL},
		{Name: "hh4", Kind: GaleraArbitrator, Nodes: 2, Flavor: MariaDB},
		{Name: "hh5", Kind: Group, Nodes: 3, Flavor: MySQL, Group: GroupOptions{Mode: GroupMultiPrimary}},
	} {
		k.Provider, k.HostsSpec = ProviderHosts, HostsSpec{Hosts: []string{"db1", "db2", "db3"}}
		k.Defaults()
		if err := k.Validate(); err != nil {
			t.Errorf("%s on hosts: %v", k.Kind, err)
		}
	}
	delete(HostsKinds, Async)
	err := s.Validate()
	HostsKinds[Async] = true
	if fe, ok := err.(*FieldError); !ok || fe.Field != "kind" {
		t.Errorf("a kind not in HostsKinds: want a FieldError on kind, got %v", err)
	}
	y, err := ParseSpecYAML([]byte("name: hh2\nkind: semisync\nflavor: mariadb\nprovider: hosts\nhosts: [198.18.1.11, 198.18.1.12]\nhost_dir: /tmp/hb\nbase_port: 24000\nssh:\n  user: root\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := y.Validate(); err != nil || strings.Join(y.Hosts, ",") != "198.18.1.11,198.18.1.12" || y.HostDir != "/tmp/hb" || y.BasePort != 24000 || y.SSH.User != "root" {
		t.Errorf("yaml: %+v, %v", y.HostsSpec, err)
	}
}

// TestGaleraHostsPlan: a Galera cluster on hosts uses the standard Galera ports on each
// host's address when every host has one node, the SQL port + 10000/20000/30000 when a
// host has several (each node its own), and a base_port whose offsets pass 65535 is a
// *FieldError on base_port.
func TestGaleraHostsPlan(t *testing.T) {
	spec := func(nodes, base int) Spec {
		s := Spec{Name: "hg1", Kind: Galera, Nodes: nodes, Flavor: MariaDB, Provider: ProviderHosts,
			HostsSpec: HostsSpec{Hosts: []string{"db1", "db2", "db3"}, BasePort: base}}
		s.Defaults()
		return s
	}
	addrs := map[string]string{"db1": "10.0.0.1", "db2": "10.0.0.2", "db3": "10.0.0.3"}
	option := func(np NodePlan, name string) string {
		for _, o := range np.Options {
			if o.Name == name {
				return o.Value
			}
		}
		return ""
	}
	for _, c := range []struct {
		nodes                         int
		node                          int
		nodeAddr, receive, clusterAdd string
	}{
		{3, 2, "10.0.0.2:4567", "10.0.0.2:4444", "gcomm://10.0.0.1:4567,10.0.0.2:4567,10.0.0.3:4567"},
		{4, 4, "10.0.0.1:33307", "10.0.0.1:53307", "gcomm://10.0.0.1:33306,10.0.0.2:33306,10.0.0.3:33306,10.0.0.1:33307"},
	} {
		s := spec(c.nodes, 0)
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		p, err := BuildPlan(s, Capabilities{}, func(node string) (string, int) {
			var i int
			fmt.Sscanf(node, "n%d", &i)
			h, slot := s.HostOf(i)
			return addrs[s.Hosts[h]], s.BasePort + slot
		})
		if err != nil {
			t.Fatal(err)
		}
		np := p.Nodes[c.node-1]
		if got := option(np, "wsrep_node_address"); got != c.nodeAddr {
			t.Errorf("%d nodes: n%d wsrep_node_address %q, want %q", c.nodes, c.node, got, c.nodeAddr)
		}
		if got := option(np, "wsrep_sst_receive_address"); got != c.receive {
			t.Errorf("%d nodes: n%d wsrep_sst_receive_address %q, want %q", c.nodes, c.node, got, c.receive)
		}
		if got := option(np, "wsrep_cluster_address"); got != c.clusterAdd {
			t.Errorf("%d nodes: wsrep_cluster_address %q, want %q", c.nodes, got, c.clusterAdd)
		}
		_, slot := s.HostOf(c.node)
		g := GaleraHostPorts(s, s.BasePort+slot)
		if want := fmt.Sprintf("%s:%d", strings.Split(c.nodeAddr, ":")[0], g.Group); want != c.nodeAddr {
			t.Errorf("%d nodes: GaleraHostPorts group %d disagrees with the plan's %s", c.nodes, g.Group, c.nodeAddr)
		}
	}
	one, two := spec(3, 40000), spec(4, 40000)
	if err := one.Validate(); err != nil {
		t.Errorf("one node per host, base_port 40000: %v", err)
	}
	err := two.Validate()
	if fe, ok := err.(*FieldError); !ok || fe.Field != "base_port" {
		t.Errorf("two nodes on a host, base_port 40000: want a FieldError on base_port, got %v", err)
	}
}

// TestGroupHostsAllowlist: on hosts a group member admits the members' addresses and
// loopback (group_replication_ip_allowlist; the default admits private networks only),
// and a sandbox group sets no allowlist.
func TestGroupHostsAllowlist(t *testing.T) {
	s := Spec{Name: "hr1", Kind: Group, Nodes: 4, Flavor: MySQL, Provider: ProviderHosts, Installation: Installation{Kind: InstallRootfs},
		HostsSpec: HostsSpec{Hosts: []string{"db1", "db2", "db3"}}}
	s.Defaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	addr := func(node string) (string, int) {
		var i int
		fmt.Sscanf(node, "n%d", &i)
		h, slot := s.HostOf(i)
		return fmt.Sprintf("198.51.100.%d", h+1), s.BasePort + slot
	}
	allowlist := func(s Spec) string {
		p, err := BuildPlan(s, CapabilitiesFor(MySQL, Version{9, 7, 0}), addr)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Nodes[3].Options {
			if o.Name == "loose_group_replication_ip_allowlist" {
				return o.Value
			}
		}
		return ""
	}
	if got, want := allowlist(s), "198.51.100.1,198.51.100.2,198.51.100.3,127.0.0.1/8"; got != want {
		t.Errorf("hosts: allowlist %q, want %q", got, want)
	}
	s.Provider, s.HostsSpec = "", HostsSpec{}
	if got := allowlist(s); got != "" {
		t.Errorf("sandbox: allowlist %q, want none", got)
	}
}

// TestPlanCredentials: the accounts every kind's plan creates take the passwords of
// Spec.Credentials (the hosts provider's random ones), the replicas and group members
// connect with the replication one, and no statement carries the sandbox defaults; an
// empty Credentials keeps the sandbox defaults.
func TestPlanCredentials(t *testing.T) {
	addr := func(n string) (string, int) { return "198.51.100." + n[1:], 23306 }
	for _, c := range []struct {
		kind   Kind
		flavor Flavor
		nodes  int
	}{{Single, MariaDB, 1}, {Async, MariaDB, 3}, {SemiSync, MySQL, 3}, {Group, MySQL, 3}, {Galera, MariaDB, 3}} {
		s := Spec{Name: "cred", Kind: c.kind, Nodes: c.nodes, Flavor: c.flavor}
		caps := CapabilitiesFor(c.flavor, V(10, 11, 6))
		if c.flavor == MySQL {
			caps = CapabilitiesFor(c.flavor, V(9, 7, 0))
		}
		sqlOf := func(cred Credentials) string {
			s.Credentials = cred
			p, err := BuildPlan(s, caps, addr)
			if err != nil {
				t.Fatalf("%s: %v", c.kind, err)
			}
			var all []string
			for _, st := range p.Steps {
				all = append(all, st.SQL...)
			}
			return strings.Join(all, "\n")
		}
		got := sqlOf(Credentials{Bench: "b3nch5ecret", Repl: "r3pl5ecret"})
		if !strings.Contains(got, "'"+BenchUser+"'@'%' IDENTIFIED BY 'b3nch5ecret'") {
			t.Errorf("%s: the bench user is not created with the given password:\n%s", c.kind, got)
		}
		if c.nodes > 1 && c.kind != Galera && !strings.Contains(got, "r3pl5ecret") {
			t.Errorf("%s: the replication user's password is not used:\n%s", c.kind, got)
		}
		if strings.Contains(got, "BY '"+BenchPassword+"'") || strings.Contains(got, "BY '"+ReplPassword+"'") || strings.Contains(got, "PASSWORD='"+ReplPassword+"'") {
			t.Errorf("%s: a sandbox default password is left:\n%s", c.kind, got)
		}
		if def := sqlOf(Credentials{}); !strings.Contains(def, "IDENTIFIED BY '"+BenchPassword+"'") {
			t.Errorf("%s: no credentials: want the sandbox default:\n%s", c.kind, def)
		}
	}
}
