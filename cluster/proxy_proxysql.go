package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/proxy"
	"github.com/habench/habench/topology"
)

// ProxySQL as a sandbox member (topology.ProxySQL): the user's binary (proxy.binary,
// checked before anything is deployed) started in the proxy's namespace in the
// foreground, in a session of its own, with habench's proxysql.cnf (proxy.ProxySQLText)
// or a copy of the user's proxy.config; n.PID is ProxySQL's. Its servers' state is read
// on its admin interface (proxy.ProxySQLPoolQuery). Untried on a real ProxySQL here.
func init() {
	RegisterProgram(topology.ProxySQL, Program{
		Start: startProxySQL, Health: proxysqlHealth, State: proxysqlState,
		Check: func(spec topology.Spec) error { _, err := userProxyBinary(spec.Proxy, topology.ProxySQL); return err },
		Config: func(c *Cluster, n *Node) (string, error) {
			return proxyConfigShown(c, n, proxysqlConfigFile, proxysqlText(c, n))
		},
		Version: func(c *Cluster) string { return proxysqlVersion(c) },
	})
}

// The proxy's files in its directory (also ProxySQL's datadir: proxysql.db, proxysql.log).
const (
	proxysqlConfigFile = "proxysql.cnf" // the configuration in effect, mode 0600 (passwords)
	proxysqlOutFile    = "proxysql.out" // ProxySQL's standard output and error
)

// ProxySQLAdminUser is the account of ProxySQL's admin interface habench configures (its
// password is the benchmark user's); ProxySQL refuses an admin user that is also a mysql
// user, so it is not the benchmark user.
const ProxySQLAdminUser = "habench_admin"

// proxysqlText returns the function that writes habench's proxysql.cnf for c now (the
// writer first).
func proxysqlText(c *Cluster, n *Node) func() (string, error) {
	return func() (string, error) {
		p := c.Spec.Proxy
		cfg := proxy.ProxySQLConfig{
			Cluster: c.Name, Kind: c.Spec.Kind, Backends: proxyBackends(context.Background(), c),
			User: c.User, Password: c.Password, CheckInterval: p.CheckInterval, Fall: p.Fall, Rise: p.Rise,
			Write: proxyAddr(c, n.Host, "write"), Admin: proxyAddr(c, n.Host, "admin"),
			AdminUser: ProxySQLAdminUser, AdminPassword: c.Password, Dir: n.Dir,
		}
		if p.HasRead() {
			cfg.Read = proxyAddr(c, n.Host, "read")
		}
		return proxy.ProxySQLText(cfg)
	}
}

// startProxySQL is the Program's Start: it writes proxysql.cnf into n.Dir and starts the
// user's ProxySQL on it (-f: in the foreground, -e: no restarting child, --initial: the
// file, not a database file of an earlier start), then waits until its writer hostgroup
// has a server ONLINE (with the user's configuration: until its write port accepts).
// Errors: no proxy.binary, the file, the process exits first, the timeout.
func startProxySQL(ctx context.Context, s *Store, c *Cluster, n *Node) error {
	if c.Hosts != nil {
		return fmt.Errorf("a proxy on the user's hosts is not supported yet")
	}
	bin, err := userProxyBinary(c.Spec.Proxy, topology.ProxySQL)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	if err := proxyConfigFile(c, n, proxysqlConfigFile, proxysqlText(c, n)); err != nil {
		return err
	}
	args := []string{"-f", "-e", "--initial", "--no-version-check", "-c", filepath.Join(n.Dir, proxysqlConfigFile), "-D", n.Dir}
	return startProxyProcess(ctx, s, c, n, proxyLaunch{name: "proxysql", bin: bin, args: args, log: proxysqlOutFile,
		ready: func(ctx context.Context) string {
			if c.Spec.Proxy.Config != "" {
				return writeEndpointAccepts(c, n)
			}
			ss, err := proxysqlState(ctx, c, n)
			if err != nil {
				return "admin interface: " + err.Error()
			}
			if sum := proxy.Summary(ss); strings.HasPrefix(sum, "write none") {
				return sum
			}
			return ""
		}})
}

// proxysqlState is the Program's State: ProxySQL's connection pool read on its admin
// interface (1 s timeout) as proxy.Server rows (proxy.ProxySQLServers). Error: the admin
// interface does not answer or refuses the login (with the user's proxy.config, whose
// admin account habench does not know), a row does not scan.
func proxysqlState(ctx context.Context, c *Cluster, n *Node) ([]proxy.Server, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	RegisterGuardedDialer()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = ProxySQLAdminUser, c.Password, GuardedNet, proxyAddr(c, n.Host, "admin")
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = time.Second, time.Second, time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, proxy.ProxySQLPoolQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var pool []proxy.ProxySQLPoolRow
	for rows.Next() {
		var r proxy.ProxySQLPoolRow
		if err := rows.Scan(&r.Hostgroup, &r.Host, &r.Port, &r.Status, &r.ConnUsed); err != nil {
			return nil, fmt.Errorf("stats_mysql_connection_pool: %w", err)
		}
		pool = append(pool, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var backends []proxy.Backend
	for _, m := range c.Nodes {
		backends = append(backends, proxy.Backend{Name: m.Name, Host: m.Host, Port: m.Port})
	}
	return proxy.ProxySQLServers(pool, backends, c.Spec.Proxy.HasRead()), nil
}

// proxysqlHealth is the proxy's line in status: "proxysql running, write n1, read 2 up:
// n2, n3", or why its admin interface did not say.
func proxysqlHealth(ctx context.Context, c *Cluster, n *Node) string {
	ss, err := proxysqlState(ctx, c, n)
	if err != nil {
		return "proxysql running, admin interface: " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	return "proxysql running, " + proxy.Summary(ss)
}

// proxysqlVersion is the first line of `proxysql --version` of proxy.binary, "" when it
// cannot be run.
func proxysqlVersion(c *Cluster) string {
	bin, err := userProxyBinary(c.Spec.Proxy, topology.ProxySQL)
	if err != nil {
		return ""
	}
	return programFirstLine(bin, "--version")
}
