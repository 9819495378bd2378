package topology

import (
	"strings"
	"testing"
)

func TestFlavorRegistry(t *testing.T) {
	if errs := FlavorRegistrationErrors(); len(errs) != 0 {
		t.Fatalf("refused registrations: %v", errs)
	}
	if got := Flavors(); len(got) < 4 || got[0] != MySQL || got[1] != MariaDB {
		t.Fatalf("flavors %v: want mysql, mariadb first and at least 4", got)
	}
	for in, want := range map[string]Flavor{"MySQL": MySQL, " mariadb ": MariaDB, "ps": Percona, "percona-server": Percona, "pxc": PXC, "percona-xtradb-cluster": PXC} {
		if got, err := ParseFlavor(in); err != nil || got != want {
			t.Errorf("ParseFlavor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseFlavor("oracle")
	if err == nil || !strings.Contains(err.Error(), `"oracle"`) || !strings.Contains(err.Error(), "mysql, mariadb") {
		t.Errorf("unknown flavor error %v", err)
	}
	// A second registration of a name or alias is refused and recorded.
	before := len(flavorErrs)
	RegisterFlavor(FlavorDef{Flavor: "ps", Title: "x"})
	RegisterFlavor(FlavorDef{Flavor: "y"})
	if len(flavorErrs) != before+2 || flavorDefs["ps"] != nil || flavorDefs["y"] != nil {
		t.Errorf("duplicate or untitled registration accepted: %v", flavorErrs[before:])
	}
	flavorErrs = flavorErrs[:before]

	if !Percona.Is(MySQL) || !PXC.Is(MySQL) || MariaDB.Is(MySQL) || MySQL.Is(Percona) || Flavor("x").Is(MySQL) {
		t.Error("Flavor.Is: Percona and PXC are MySQL-like, MariaDB and an unknown flavor are not")
	}
	if got := FlavorTitle("percona", "8.0.36"); got != "Percona Server 8.0.36" {
		t.Errorf("title %q", got)
	}
	if got := FlavorTitle("oracle", "1.2"); got != "oracle 1.2" {
		t.Errorf("unregistered title %q", got)
	}
}

func TestRecognizeFlavor(t *testing.T) {
	rows := []struct {
		e    FlavorEvidence
		want Flavor
	}{
		{FlavorEvidence{Version: "10.11.19-MariaDB-0+deb12u1", Comment: "Debian 12"}, MariaDB},
		{FlavorEvidence{Version: "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"}, MariaDB},
		{FlavorEvidence{Version: "9.7.4", Comment: "MySQL Community Server - GPL"}, MySQL},
		{FlavorEvidence{Version: "/usr/sbin/mysqld  Ver 9.7.4 for Linux on x86_64 (MySQL Community Server - GPL)"}, MySQL},
		{FlavorEvidence{Version: "8.0.36-28", Comment: "Percona Server (GPL), Release 28, Revision 47601f19"}, Percona},
		{FlavorEvidence{Version: "/usr/sbin/mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)"}, Percona},
		{FlavorEvidence{Version: "8.0.36-28.1", Comment: "Percona XtraDB Cluster (GPL), Release rel28, Revision bfb687f, WSREP version 26.1.4.3"}, PXC},
		{FlavorEvidence{Version: "5.1.2", Comment: ""}, MySQL},
	}
	for _, r := range rows {
		if got := RecognizeFlavor(r.e); got != r.want {
			t.Errorf("RecognizeFlavor(%+v) = %s, want %s", r.e, got, r.want)
		}
	}
}

func TestSandboxFlavors(t *testing.T) {
	if got := sandboxFlavors(Async); got != "mysql or mariadb" {
		t.Errorf("async sandbox flavors %q", got)
	}
	if got := sandboxFlavors(Group); !strings.Contains(got, "percona") {
		t.Errorf("group sandbox flavors %q: percona missing", got)
	}
	s := Spec{Name: "x", Kind: Galera, Flavor: MySQL}
	s.Defaults()
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), "mariadb (MariaDB)") {
		t.Errorf("galera on mysql: %v", err)
	}
	m := Spec{Name: "x", Kind: Galera, Flavor: MariaDB, Galera: GaleraOptions{SST: "xtrabackup-v2"}}
	m.Defaults()
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "want rsync or mariabackup") {
		t.Errorf("galera mariadb with xtrabackup-v2: %v", err)
	}
	d := Spec{Name: "x", Kind: Galera, Flavor: MariaDB}
	d.Defaults()
	if d.Galera.SST != SSTRsync || d.Installation.Kind != InstallSystem {
		t.Errorf("mariadb galera defaults: sst %q installation %q", d.Galera.SST, d.Installation.Kind)
	}
	y := Spec{Name: "x", Kind: Async, Flavor: MySQL}
	y.Defaults()
	if y.Installation.Kind != InstallRootfs || y.Installation.Path != DefaultRootfs {
		t.Errorf("mysql defaults: installation %+v", y.Installation)
	}
}
