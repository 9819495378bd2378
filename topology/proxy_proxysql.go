package topology

import (
	"fmt"
	"time"
)

// ProxySQL is the proxy `proxy: {type: proxysql, binary: PATH}`: the user's ProxySQL 2.x
// (habench installs none; proxy.binary is required). Its ports, from the proxy member's:
// the write endpoint and the read endpoint (two mysql interfaces, a query rule per port
// sends each to its hostgroup), and its admin interface (SQL, where habench reads its
// servers' state). ProxySQL's own monitor follows the topology: its Galera, Group
// Replication or read_only hostgroups (package proxy, ProxySQLText).
const ProxySQL = "proxysql"

// ProxySQLMinCheckInterval is the shortest proxy.check_interval ProxySQL takes: its
// monitor's intervals are 100 ms at least.
const ProxySQLMinCheckInterval = 100 * time.Millisecond

func init() {
	RegisterProxy(ProxyDef{
		Type:     ProxySQL,
		Summary:  "ProxySQL (the user's binary): its own monitor of Galera, Group Replication or read_only hostgroups, a write and a read port",
		Program:  ProxySQL,
		Ports:    []string{"write", "read", "admin"},
		Untried:  "configuration generated and unit-tested, not run on a real ProxySQL here",
		Validate: validateProxySQL,
	})
}

// validateProxySQL requires proxy.binary (habench does not install ProxySQL) and a check
// interval ProxySQL's monitor takes. Error: a *FieldError.
func validateProxySQL(s *Spec) error {
	p := s.Proxy
	if p.Binary == "" {
		return &FieldError{"proxy.binary", "", "required for proxy proxysql: the path of your proxysql (habench does not install it)"}
	}
	if p.CheckInterval < ProxySQLMinCheckInterval {
		return &FieldError{"proxy.check_interval", p.CheckInterval, fmt.Sprintf("ProxySQL's monitor takes at least %dms", ProxySQLMinCheckInterval.Milliseconds())}
	}
	return nil
}
