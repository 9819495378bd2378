package topology

// MySQL is Oracle MySQL community.
const MySQL Flavor = "mysql"

func init() {
	RegisterFlavor(FlavorDef{
		Flavor: MySQL, Title: "MySQL", Order: 10, Newest: V(9, 7, 0),
		Caps: mysqlCaps,
		// No Recognize: a server no other flavor recognises is a MySQL (RecognizeFlavor).
		Install:  FlavorInstall{Servers: []string{"mysqld"}, MySQLX: true, DefaultKind: InstallRootfs, Rootfs: DefaultRootfs},
		AllKinds: true,
	})
}

// mysqlCaps is Oracle MySQL's capability table, which the flavors built on MySQL start from.
func mysqlCaps(c *Capabilities) {
	v := c.Version
	c.ServerBinary = "mysqld"
	c.SourceTerms = v.AtLeast(V(8, 0, 23))
	c.ReplicaStatements = v.AtLeast(V(8, 0, 22))
	c.ReplicaStatusColumns = v.AtLeast(V(8, 0, 22))
	c.BinaryLogStatus = v.AtLeast(V(8, 2, 0))
	c.ResetBinaryLogs = v.AtLeast(V(8, 2, 0))
	c.ReplicaVarNames = v.AtLeast(V(8, 0, 26))
	c.GTIDKind = GTIDMySQL
	c.CachingSHA2 = v.AtLeast(V(8, 0, 4))
	c.SemiSyncSourceTerms = v.AtLeast(V(8, 0, 26))
	c.SemiSyncWaitCount = v.AtLeast(V(5, 7, 3))
	c.SemiSyncWaitPoint = v.AtLeast(V(5, 7, 2))
	c.GroupReplication = v.AtLeast(V(5, 7, 17))
	c.GRNeedsChecksumNone = c.GroupReplication && !v.AtLeast(V(8, 0, 21))
	c.GRNeedsLegacyRepos = c.GroupReplication && !v.AtLeast(V(8, 0, 2))
	c.GRStreamPrivilege = v.AtLeast(V(8, 0, 27))
	c.GRSwitchMode = v.AtLeast(V(8, 0, 13))
	c.Clone = v.AtLeast(V(8, 0, 17))
	c.GRFlowControlStats = v.AtLeast(V(9, 7, 0))
}
