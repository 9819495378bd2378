package topology

import "strings"

// Percona is Percona Server for MySQL.
const Percona Flavor = "percona"

func init() {
	RegisterFlavor(FlavorDef{
		Flavor: Percona, Aliases: []string{"ps", "percona-server"}, Title: "Percona Server", Order: 30,
		Base: MySQL, Newest: V(9, 7, 0),
		Caps: func(c *Capabilities) {
			c.GRFlowControlStats = false // component_group_replication_flow_control_stats: MySQL community only
		},
		Rank: 10,
		Recognize: func(e FlavorEvidence) bool {
			return strings.Contains(strings.ToLower(e.Comment), "percona") || strings.Contains(strings.ToLower(e.Version), "percona server")
		},
		Install: FlavorInstall{Servers: []string{"mysqld"}, MySQLX: true},
		// A sandbox group of Percona Server (the group kind lists it; KindDef.Flavors).
	})
}
