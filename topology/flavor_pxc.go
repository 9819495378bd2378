package topology

import "strings"

// PXC is Percona XtraDB Cluster: not deployable yet, its capability table only.
const PXC Flavor = "pxc"

func init() {
	RegisterFlavor(FlavorDef{
		Flavor: PXC, Aliases: []string{"percona-xtradb-cluster"}, Title: "pxc", Order: 40,
		Base: MySQL, Newest: V(9, 7, 0),
		Caps: func(c *Capabilities) {
			c.GRFlowControlStats = false
			c.Galera = true
			c.WsrepApplierThreads = c.Version.AtLeast(V(8, 0, 26))
			c.PXCStrictMode = c.Version.AtLeast(V(5, 7, 0))
		},
		Rank: 20,
		Recognize: func(e FlavorEvidence) bool {
			return strings.Contains(strings.ToLower(e.Comment), "xtradb cluster")
		},
		Install: FlavorInstall{Servers: []string{"mysqld"}, MySQLX: true},
	})
}
