package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/topology"
)

// TestPXCGaleraInstallationCheck checks what a PXC basedir must hold for a galera sandbox:
// the wsrep_sst_<method> script and PXC's own XtraBackup under bin/pxc_extra, and that a
// method the version lacks is refused naming it. The files are empty executables: only
// their places are checked, nothing is run.
func TestPXCGaleraInstallationCheck(t *testing.T) {
	if _, err := os.Stat("/usr/bin/socat"); err != nil {
		if _, err := os.Stat("/usr/bin/nc"); err != nil {
			t.Fatal("neither socat nor nc in /usr/bin (installed by `make deps`)")
		}
	}
	dir := t.TempDir()
	touch := func(rel string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	touch("bin/mysqld")
	touch("lib/libgalera_smm.so")
	touch("bin/wsrep_sst_xtrabackup-v2")
	bins := &Binaries{Installation: topology.Installation{Kind: topology.InstallBasedir, Path: dir}, Flavor: topology.PXC,
		Version: topology.V(8, 0, 36), Basedir: dir, Server: filepath.Join(dir, "bin", "mysqld")}
	bins.WsrepProvider = bins.findWsrepProvider()
	if bins.WsrepProvider != filepath.Join(dir, "lib", "libgalera_smm.so") {
		t.Fatalf("provider %q", bins.WsrepProvider)
	}
	spec := topology.Spec{Name: "p", Kind: topology.Galera, Nodes: 3, Flavor: topology.PXC, Installation: bins.Installation}
	spec.Defaults()

	err := checkGaleraInstallation(bins, spec)
	if err == nil || !strings.Contains(err.Error(), "no xtrabackup") {
		t.Fatalf("without PXC's xtrabackup: %v", err)
	}
	touch("bin/pxc_extra/pxb-8.0/bin/xtrabackup")
	if err := checkGaleraInstallation(bins, spec); err != nil {
		t.Fatalf("with bin/pxc_extra/pxb-8.0/bin/xtrabackup: %v", err)
	}

	spec.Galera.SST = topology.SSTRsync
	if err := checkGaleraInstallation(bins, spec); err == nil || !strings.Contains(err.Error(), "Percona XtraDB Cluster 8.0.36 has no rsync") {
		t.Errorf("rsync on PXC 8.0: %v", err)
	}
	spec.Galera.SST = "clone"
	if err := checkGaleraInstallation(bins, spec); err == nil || !strings.Contains(err.Error(), "has no clone") {
		t.Errorf("clone on PXC 8.0.36: %v", err)
	}
	bins.Version = topology.V(8, 0, 41)
	if err := checkGaleraInstallation(bins, spec); err == nil || !strings.Contains(err.Error(), "no wsrep_sst_clone script") {
		t.Errorf("clone on PXC 8.0.41 without its script: %v", err)
	}
	touch("bin/wsrep_sst_clone")
	if err := checkGaleraInstallation(bins, spec); err != nil {
		t.Errorf("clone on PXC 8.0.41: %v", err)
	}
	if got := installedFlavor("/opt/pxc/bin/mysqld  Ver 8.0.36-28.1 for Linux on x86_64 (Percona XtraDB Cluster (GPL), Release rel28, Revision bfb687f, WSREP version 26.1.4.3)", "/opt/pxc/bin/mysqld"); !got.Is(topology.PXC) {
		t.Errorf("PXC mysqld --version recognised as %s", got)
	}
	if got := installedFlavor("/usr/sbin/mysqld  Ver 9.7.4 for Linux on x86_64 (MySQL Community Server - GPL)", "/usr/sbin/mysqld"); got.Is(topology.PXC) {
		t.Error("a MySQL binary accepted as PXC")
	}
	// The binary's path is not evidence: a MySQL in a basedir named after MariaDB is a MySQL.
	if got := installedFlavor("/opt/mariadb-vs/bin/mysqld  Ver 9.7.4 for Linux on x86_64 (MySQL Community Server - GPL)", "/opt/mariadb-vs/bin/mysqld"); got != topology.MySQL {
		t.Errorf("MySQL in a mariadb-named basedir recognised as %s", got)
	}
}
