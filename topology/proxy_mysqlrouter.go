package topology

// MySQLRouter is the proxy `proxy: {type: mysqlrouter, binary: PATH}`: the user's MySQL
// Router (habench installs none; proxy.binary is required) with a static routing
// configuration, since Router's bootstrap reads an InnoDB Cluster's metadata schema,
// which habench's topologies do not have. Its ports, from the proxy member's: the write
// route (first-available over the nodes, the writer at the start first), the read route
// (round-robin over the others) and its HTTP server (the REST API where habench reads its
// routes).
const MySQLRouter = "mysqlrouter"

func init() {
	RegisterProxy(ProxyDef{
		Type:    MySQLRouter,
		Summary: "MySQL Router (the user's binary) with static routes: a write route first-available over the nodes, a read route round-robin over the others",
		Program: MySQLRouter,
		Ports:   []string{"write", "read", "http"},
		Untried: "configuration generated and unit-tested, not run on a real MySQL Router here; static routing does not follow a group's election " +
			"(first-available moves on only when a node refuses connections), routing that does needs Router bootstrapped from an InnoDB Cluster",
		NoChecks: "MySQL Router's static routes have no health checks (check_interval, fall and rise do not apply)",
		Validate: func(s *Spec) error {
			if s.Proxy.Binary == "" {
				return &FieldError{"proxy.binary", "", "required for proxy mysqlrouter: the path of your mysqlrouter (habench does not install it)"}
			}
			return nil
		},
	})
}
