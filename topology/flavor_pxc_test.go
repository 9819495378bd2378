package topology

import (
	"strings"
	"testing"
)

// TestPXCCapabilities checks PXC's capability table at its documented version boundaries.
func TestPXCCapabilities(t *testing.T) {
	type row struct {
		v     Version
		check func(Capabilities) bool
		want  bool
		what  string
	}
	rows := []row{
		{V(5, 7, 18), func(c Capabilities) bool { return c.WsrepApplierThreadsVar() == "wsrep_slave_threads" }, true, "wsrep_slave_threads on 5.7"},
		{V(8, 0, 25), func(c Capabilities) bool { return c.WsrepApplierThreadsVar() == "wsrep_slave_threads" }, true, "wsrep_slave_threads before 8.0.26"},
		{V(8, 0, 26), func(c Capabilities) bool { return c.WsrepApplierThreadsVar() == "wsrep_applier_threads" }, true, "wsrep_applier_threads from 8.0.26"},
		{V(8, 4, 0), func(c Capabilities) bool { return c.Galera && c.PXCStrictMode && c.PXCMaintMode }, true, "Galera, pxc_strict_mode, pxc_maint_mode"},
		{V(5, 7, 15), func(c Capabilities) bool { return c.PXCMaintMode }, false, "no pxc_maint_mode before 5.7.16"},
		{V(5, 7, 16), func(c Capabilities) bool { return c.PXCMaintMode }, true, "pxc_maint_mode from 5.7.16"},
		{V(8, 0, 36), func(c Capabilities) bool { return c.GroupReplication || c.GRSwitchMode || c.GRFlowControlStats }, false, "no Group Replication"},
		{V(8, 0, 36), func(c Capabilities) bool {
			return c.GTIDKind == GTIDMySQL && c.SourceTerms && c.LogReplicaUpdates() == "log_replica_updates"
		}, true, "MySQL GTIDs and names (Percona Server base)"},
		{V(5, 7, 18), func(c Capabilities) bool {
			return c.LogReplicaUpdates() == "log_slave_updates" && c.StartReplica() == "START SLAVE"
		}, true, "5.7 names"},
		{V(8, 0, 36), func(c Capabilities) bool { return c.WsrepProviderPlugin }, false, "wsrep_provider_options, not MariaDB's provider plugin"},
		{V(8, 0, 36), func(c Capabilities) bool {
			return c.SetProviderOption("gcs.fc_limit", "64") == "SET GLOBAL wsrep_provider_options='gcs.fc_limit=64'"
		}, true, "provider options at run time"},
	}
	for _, r := range rows {
		if got := r.check(CapabilitiesFor(PXC, r.v)); got != r.want {
			t.Errorf("PXC %s: got %v, want %v (%s)", r.v, got, r.want, r.what)
		}
	}
	if c := CapabilitiesFor(PXC, Version{}); c.Version != V(8, 4, 0) || !c.WsrepApplierThreads {
		t.Errorf("unknown version: %s, applier %v; want the newest line 8.4", c.Version, c.WsrepApplierThreads)
	}
	if !PXC.Is(Percona) || !PXC.Is(MySQL) || !PXC.MySQLLike() || PXC.Is(MariaDB) {
		t.Error("PXC is a Percona Server, a MySQL, not a MariaDB")
	}
	d := FlavorOf(PXC)
	for _, c := range []struct {
		sst  string
		v    Version
		want bool
	}{
		{SSTXtrabackup, V(5, 7, 18), true}, {SSTXtrabackup, V(8, 4, 0), true},
		{SSTRsync, V(5, 7, 44), true}, {SSTRsync, V(8, 0, 36), false},
		{"clone", V(8, 0, 40), false}, {"clone", V(8, 0, 41), true},
	} {
		m, ok := d.SSTMethod(c.sst)
		if !ok || m.Available(c.v) != c.want {
			t.Errorf("PXC %s SST %s: known %v, available %v; want %v", c.v, c.sst, ok, m.Available(c.v), c.want)
		}
	}
	if _, ok := d.SSTMethod(SSTMariabackup); ok {
		t.Error("PXC has no mariabackup SST")
	}
}

// TestPXCGaleraPlan checks the option lines a PXC galera sandbox gets.
func TestPXCGaleraPlan(t *testing.T) {
	s := Spec{Name: "p1", Kind: Galera, Nodes: 3, Flavor: PXC, Installation: Installation{Kind: InstallBasedir, Path: "/opt/pxc"}}
	s.Defaults()
	if s.Galera.SST != SSTXtrabackup {
		t.Fatalf("default SST %q, want xtrabackup-v2", s.Galera.SST)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("pxc galera on a basedir: %v", err)
	}
	s.Options = map[string]string{"wsrep_slave_threads": "8", "pxc_strict_mode": "PERMISSIVE"}
	caps := CapabilitiesFor(PXC, V(8, 0, 36))
	caps.WsrepProvider = "/opt/pxc/lib/libgalera_smm.so"
	p, err := BuildPlan(s, caps, addrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 3 {
		t.Fatalf("%d nodes", len(p.Nodes))
	}
	for _, n := range p.Nodes {
		for name, want := range map[string]string{
			"wsrep_sst_method": SSTXtrabackup, "wsrep_provider": "/opt/pxc/lib/libgalera_smm.so",
			"gtid_mode": "ON", "enforce_gtid_consistency": "ON", "log_replica_updates": "ON",
			"pxc_encrypt_cluster_traffic": "OFF", "wsrep_applier_threads": "8",
		} {
			if v, _ := opt(n, name); v != want {
				t.Errorf("%s: %s = %q, want %q", n.Name, name, v, want)
			}
		}
		// The plan's ENFORCING comes first, the user's PERMISSIVE last (the last line wins).
		var strict []string
		for _, o := range n.Options {
			if o.Name == "pxc_strict_mode" {
				strict = append(strict, o.Value)
			}
		}
		if strings.Join(strict, ",") != "ENFORCING,PERMISSIVE" {
			t.Errorf("%s: pxc_strict_mode lines %v, want ENFORCING then the user's PERMISSIVE", n.Name, strict)
		}
		for _, absent := range []string{"wsrep_sst_auth", "wsrep_gtid_mode", "wsrep_gtid_domain_id", "gtid_domain_id", "wsrep_slave_threads"} {
			if v, ok := opt(n, absent); ok {
				t.Errorf("%s: %s = %q on PXC 8.0", n.Name, absent, v)
			}
		}
	}
	// PXC 5.7: xtrabackup-v2 logs in with wsrep_sst_auth, no cluster-traffic option, the
	// applier threads under their old name.
	p57, err := BuildPlan(s, CapabilitiesFor(PXC, V(5, 7, 18)), addrs)
	if err != nil {
		t.Fatal(err)
	}
	n := p57.Nodes[1]
	if v, _ := opt(n, "wsrep_sst_auth"); v != "root:" {
		t.Errorf("5.7 wsrep_sst_auth %q", v)
	}
	if v, ok := opt(n, "pxc_encrypt_cluster_traffic"); ok {
		t.Errorf("5.7 pxc_encrypt_cluster_traffic %q", v)
	}
	if v, _ := opt(n, "wsrep_slave_threads"); v != "8" {
		t.Errorf("5.7 wsrep_slave_threads %q", v)
	}
	if v, _ := opt(n, "log_slave_updates"); v != "ON" {
		t.Errorf("5.7 log_slave_updates %q", v)
	}
}

// TestPXCSpec checks what a PXC spec accepts and refuses.
func TestPXCSpec(t *testing.T) {
	cases := []struct {
		s    Spec
		want string // "" for valid
	}{
		{Spec{Name: "p", Kind: Galera, Flavor: "percona-xtradb-cluster", Installation: Installation{Kind: InstallBasedir, Path: "/opt/pxc"}, Galera: GaleraOptions{SST: "clone"}}, ""},
		{Spec{Name: "p", Kind: Galera, Flavor: PXC}, "installation.path"},
		{Spec{Name: "p", Kind: Galera, Flavor: PXC, Installation: Installation{Kind: InstallSystem}}, ""},
		{Spec{Name: "p", Kind: Galera, Flavor: PXC, Installation: Installation{Kind: InstallSystem}, Galera: GaleraOptions{SST: SSTMariabackup}}, "want xtrabackup-v2, clone or rsync"},
		{Spec{Name: "p", Kind: Async, Flavor: PXC, Installation: Installation{Kind: InstallSystem}}, "flavor"},
		{Spec{Name: "p", Kind: Group, Flavor: PXC, Installation: Installation{Kind: InstallSystem}}, "Group Replication needs mysql or percona"},
	}
	for i, c := range cases {
		s := c.s
		s.Defaults()
		err := s.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("case %d: %v", i, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("case %d: error %v, want one naming %q", i, err, c.want)
		}
	}
	m := Spec{Name: "m", Kind: Galera, Flavor: MySQL}
	m.Defaults()
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "pxc (Percona XtraDB Cluster)") {
		t.Errorf("galera on mysql: %v, want it to name pxc", err)
	}
}

// TestPXCRecognized checks discovery: by @@version_comment, by mysqld --version, and by
// pxc_strict_mode alone; a MariaDB Galera node stays MariaDB.
func TestPXCRecognized(t *testing.T) {
	for _, e := range []FlavorEvidence{
		{Version: "8.0.36-28.1", Comment: "Percona XtraDB Cluster (GPL), Release rel28, Revision bfb687f, WSREP version 26.1.4.3"},
		{Version: "/opt/pxc/bin/mysqld  Ver 8.0.36-28.1 for Linux on x86_64 (Percona XtraDB Cluster (GPL), Release rel28, Revision bfb687f, WSREP version 26.1.4.3)"},
		{Version: "8.0.36-28.1", Comment: "Source distribution", Vars: map[string]string{"pxc_strict_mode": "ENFORCING"}},
	} {
		if got := RecognizeFlavor(e); got != PXC {
			t.Errorf("RecognizeFlavor(%+v) = %s, want pxc", e, got)
		}
	}
	if got := RecognizeFlavor(FlavorEvidence{Version: "10.11.19-MariaDB-0+deb12u1", Comment: "Debian 12", Vars: map[string]string{}}); got != MariaDB {
		t.Errorf("MariaDB Galera recognised as %s", got)
	}
	if got := RecognizeFlavor(FlavorEvidence{Version: "8.0.36-28", Comment: "Percona Server (GPL), Release 28"}); got != Percona {
		t.Errorf("Percona Server recognised as %s", got)
	}
	if ev := EvidenceVars(); len(ev) == 0 || ev[0] != "pxc_strict_mode" {
		t.Errorf("evidence vars %v", ev)
	}
	if got := FlavorTitle("pxc", "8.0.36"); got != "Percona XtraDB Cluster 8.0.36" {
		t.Errorf("title %q", got)
	}
	if c := FlavorCaveats([]string{"mariadb", "pxc", "pxc"}); len(c) != 1 || !strings.Contains(c[0], "not been run against a real PXC") {
		t.Errorf("caveats %q", c)
	}
}
