package topology

import "strings"

// PXC is Percona XtraDB Cluster: Percona Server for MySQL with Galera (wsrep) built in.
// habench deploys it as kind galera from the user's binaries (a basedir, or the system's
// packages) and recognises it on an existing cluster. Nothing here has been run against a
// real PXC (no PXC package is reachable where habench is developed): the table below is
// from Percona's documentation, see docs/topologies.md "Percona XtraDB Cluster".
const PXC Flavor = "pxc"

// SSTXtrabackup is PXC's default state transfer: Percona XtraBackup streamed with socat.
const SSTXtrabackup = "xtrabackup-v2"

func init() {
	RegisterFlavor(FlavorDef{
		Flavor: PXC, Aliases: []string{"percona-xtradb-cluster"}, Title: "Percona XtraDB Cluster", Order: 40,
		Base: Percona, Newest: V(8, 4, 0),
		Caps: pxcCaps,
		Rank: 20,
		// @@version_comment "Percona XtraDB Cluster (GPL), Release rel28, ..., WSREP version
		// 26.1.4.3" (and the same in mysqld --version), or a pxc_strict_mode variable (a
		// server whose comment was rebuilt). wsrep_provider_name says "Galera" on MariaDB
		// as well, so it does not tell PXC apart.
		Recognize: func(e FlavorEvidence) bool {
			if strings.Contains(strings.ToLower(e.Comment), "xtradb cluster") || strings.Contains(strings.ToLower(e.Version), "xtradb cluster") {
				return true
			}
			_, strict := e.Vars["pxc_strict_mode"]
			return strict
		},
		EvidenceVars: []string{"pxc_strict_mode"},
		Install: FlavorInstall{Servers: []string{"mysqld"}, MySQLX: true, InitWsrepOff: true,
			DefaultKind: InstallBasedir, SystemHint: "install percona-xtradb-cluster-server from Percona's repository, or give a basedir"},
		SandboxKinds: []Kind{Galera},
		Galera: &GaleraFlavor{
			SST: []SSTMethod{
				// PXC 8.x runs its own XtraBackup from bin/pxc_extra/pxb-<line>/bin; 5.7 the
				// percona-xtrabackup-24 package's, with wsrep_sst_auth (removed in 8.0).
				{Name: SSTXtrabackup, Tool: "xtrabackup", Package: "percona-xtradb-cluster (pxc_extra) or percona-xtrabackup-24", Stream: true,
					ToolPaths: []string{"pxc_extra/pxb-8.4/bin/xtrabackup", "pxc_extra/pxb-8.0/bin/xtrabackup", "xtrabackup"},
					Auth:      true, AuthUntil: V(8, 0, 0)},
				// Clone SST: tech preview from PXC 8.0.41, streams with nc.
				{Name: "clone", Stream: true, From: V(8, 0, 41)},
				// rsync SST: PXC 5.7 only (8.0 removed it).
				{Name: SSTRsync, Tool: "rsync", Package: "rsync", Until: V(8, 0, 0)},
			},
			NodeOptions: pxcNodeOptions,
		},
		Caveat: "Percona XtraDB Cluster support is built from Percona's documentation and has not been run against a real PXC by habench (docs/topologies.md).",
	})
}

// pxcCaps is PXC's table on top of Percona Server's.
func pxcCaps(c *Capabilities) {
	v := c.Version
	c.Galera = true
	// Group Replication is not part of PXC (a Galera server): no group kinds.
	c.GroupReplication, c.GRNeedsChecksumNone, c.GRNeedsLegacyRepos, c.GRStreamPrivilege, c.GRSwitchMode = false, false, false, false, false
	c.WsrepApplierThreads = v.AtLeast(V(8, 0, 26)) // wsrep_slave_threads before
	c.PXCStrictMode = v.AtLeast(V(5, 7, 0))
	c.PXCMaintMode = v.AtLeast(V(5, 7, 16))
}

// pxcNodeOptions are the option lines a PXC galera node gets besides the common wsrep ones:
// pxc_strict_mode=ENFORCING (PXC's default, written so a report's options show it; the
// user's options.pxc_strict_mode comes later and wins), and from 8.0
// pxc_encrypt_cluster_traffic=OFF: 8.0 turns it ON by default and then needs the same CA
// and certificates on every node, which joiners started with an empty datadir do not have.
func pxcNodeOptions(spec Spec, caps Capabilities, node int) []Option {
	var o []Option
	if caps.PXCStrictMode {
		o = append(o, Option{"pxc_strict_mode", "ENFORCING"})
	}
	if caps.Version.AtLeast(V(8, 0, 0)) {
		o = append(o, Option{"pxc_encrypt_cluster_traffic", "OFF"})
	}
	return o
}
