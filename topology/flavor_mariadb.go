package topology

import (
	"strings"
	"time"
)

// MariaDB is MariaDB Server (with Galera as MariaDB Galera Cluster).
const MariaDB Flavor = "mariadb"

func init() {
	RegisterFlavor(FlavorDef{
		Flavor: MariaDB, Title: "MariaDB", Order: 20, Newest: V(11, 8, 0),
		Caps: mariadbCaps,
		Rank: 30,
		Recognize: func(e FlavorEvidence) bool {
			return strings.Contains(strings.ToLower(e.Version), "mariadb") || strings.Contains(strings.ToLower(e.Comment), "mariadb")
		},
		Install: FlavorInstall{Servers: []string{"mariadbd", "mysqld"}, InstallDB: true, InitWsrepOff: true,
			Rootfs: DefaultMariaDBRootfs, SystemHint: "apt-get install mariadb-server galera-4"},
		AllKinds: true,
		Estimates: FlavorEstimates{DeployBase: 500 * time.Millisecond, DeployPerNode: 600 * time.Millisecond,
			PrepareRows: 120000, PrepareRowsReplicated: 50000, RestartPerNode: 1500 * time.Millisecond},
		Galera: &GaleraFlavor{SST: []SSTMethod{
			{Name: SSTRsync, Tool: "rsync", Package: "rsync"},
			// mariabackup's SST script sleeps about 10 s per joiner.
			{Name: SSTMariabackup, Tool: "mariabackup", Package: "mariadb-backup", Stream: true, Auth: true},
		}},
	})
}

// mariadbCaps is MariaDB's capability table.
func mariadbCaps(c *Capabilities) {
	v := c.Version
	c.ServerBinary = "mysqld"
	if v.AtLeast(V(10, 5, 2)) {
		c.ServerBinary = "mariadbd"
	}
	c.InstallDBBinary = "mysql_install_db"
	if v.AtLeast(V(10, 4, 6)) {
		c.InstallDBBinary = "mariadb-install-db"
	}
	c.ReplicaStatements = v.AtLeast(V(10, 5, 1))
	c.GTIDKind = GTIDMariaDB
	c.SemiSyncBuiltin = v.AtLeast(V(10, 3, 3))
	c.SemiSyncWaitPoint = v.AtLeast(V(10, 3, 3))
	c.Galera = v.AtLeast(V(10, 1, 0))
	c.WsrepProviderPlugin = v.AtLeast(V(11, 0, 0))
}
