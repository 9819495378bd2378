package proxy

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/topology"
)

// ProxySQL's hostgroups in habench's configuration (ProxySQLText): the write port's
// queries go to the writer hostgroup, the read port's to the reader hostgroup; ProxySQL's
// monitor moves the servers between them (and the backup writer and offline hostgroups
// of Galera and Group Replication) as it judges the topology.
const (
	ProxySQLWriterHostgroup       = 10
	ProxySQLBackupWriterHostgroup = 11
	ProxySQLReaderHostgroup       = 20
	ProxySQLOfflineHostgroup      = 30
)

// ProxySQLMaxTransactionsBehind is max_transactions_behind of the Galera and Group
// Replication hostgroups: high enough that a node is judged by its membership state, not
// by its apply queue (HAProxy's checks do the same; with 0 a node with any queue would be
// shunned, and under a benchmark's load every node has one now and then).
const ProxySQLMaxTransactionsBehind = 1_000_000

// ProxySQLConfig is what ProxySQLText writes proxysql.cnf from.
type ProxySQLConfig struct {
	// Cluster names the cluster in the file's first line; Kind is the topology's kind
	// (topology.Kind.Is picks Galera, Group Replication, or read_only for the others).
	Cluster string
	Kind    topology.Kind
	// Backends are the servers in the write endpoint's order: the first gets the highest
	// weight (ProxySQL makes the heaviest Galera node the writer).
	Backends []Backend
	// User and Password are the benchmark user: the account clients log in with through
	// the proxy (mysql_users) and the one ProxySQL's monitor logs in with.
	User, Password string
	// CheckInterval is the monitor's interval for each check (connect, ping, and the
	// kind's: Galera, Group Replication or read_only), in ms in the file; at least
	// topology.ProxySQLMinCheckInterval.
	CheckInterval time.Duration
	// Fall is the failed checks in a row that take a server out (the monitor's
	// max_timeout_count and ping_max_failures; ProxySQL takes 1 to 10 for Galera's and
	// Group Replication's), Rise sets how long a shunned server waits before it is tried
	// again (shun_recovery_time_sec: Rise check intervals, at least 1 s). Each at least 1.
	Fall, Rise int
	// Write, Read and Admin are the listen addresses ("host:port") of the write and read
	// mysql interfaces and of the admin interface; Read "" has no read endpoint.
	Write, Read, Admin string
	// AdminUser and AdminPassword are the admin interface's account (admin_credentials;
	// not the benchmark user: ProxySQL refuses an admin user that is a mysql user).
	AdminUser, AdminPassword string
	// Dir is ProxySQL's datadir (its database file and proxysql.log), an absolute path.
	Dir string
}

// check validates c; an error is one line naming the field and its value.
func (c ProxySQLConfig) check() error {
	if err := checkBackends(c.Backends); err != nil {
		return err
	}
	switch {
	case c.CheckInterval < topology.ProxySQLMinCheckInterval:
		return fmt.Errorf("proxysql check interval %s: want at least %s", c.CheckInterval, topology.ProxySQLMinCheckInterval)
	case c.Fall < 1 || c.Rise < 1:
		return fmt.Errorf("proxysql fall %d, rise %d: want at least 1 each", c.Fall, c.Rise)
	case c.User == "" || c.AdminUser == "" || c.User == c.AdminUser:
		return fmt.Errorf("proxysql users %q and admin %q: want two different names", c.User, c.AdminUser)
	case !strings.HasPrefix(c.Dir, "/"):
		return fmt.Errorf("proxysql datadir %q: want an absolute path", c.Dir)
	}
	for _, a := range []struct{ name, v string }{{"write", c.Write}, {"read", c.Read}, {"admin", c.Admin}} {
		if a.v == "" && a.name == "read" {
			continue
		}
		if err := checkListen(a.name, a.v); err != nil {
			return err
		}
	}
	return nil
}

// cfgString is s as a libconfig string: in double quotes, with \ and " escaped.
func cfgString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// portOf is the port of a "host:port" address that checkListen accepted.
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// ProxySQLText returns proxysql.cnf (libconfig syntax, what ProxySQL reads at its first
// start or with --initial) for c: the datadir and error log; the admin interface on
// c.Admin; the mysql interfaces on c.Write and c.Read with the monitor's settings from
// c.CheckInterval, Fall and Rise; every backend in the writer hostgroup (the monitor moves
// them); the benchmark user; the hostgroup table of the kind (mysql_galera_hostgroups,
// mysql_group_replication_hostgroups, else mysql_replication_hostgroups by read_only); and
// one query rule per port: the write port's queries to the writer hostgroup, the read
// port's to the reader hostgroup. Error: a field of c that cannot go in the file (one line
// naming it and its value).
func ProxySQLText(c ProxySQLConfig) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# habench: ProxySQL for cluster %s (%s), written by habench; untried on a real ProxySQL here.\n", c.Cluster, c.Kind)
	fmt.Fprintf(&b, "datadir=%s\nerrorlog=%s\n\n", cfgString(c.Dir), cfgString(strings.TrimSuffix(c.Dir, "/")+"/proxysql.log"))
	fmt.Fprintf(&b, "admin_variables=\n{\n\tadmin_credentials=%s\n\tmysql_ifaces=%s\n}\n\n", cfgString(c.AdminUser+":"+c.AdminPassword), cfgString(c.Admin))
	proxysqlVariables(&b, c)
	b.WriteString("\n# Every server starts in the writer hostgroup; the monitor moves each where it belongs.\nmysql_servers=\n(\n")
	for i, s := range c.Backends {
		sep := ","
		if i == len(c.Backends)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "\t{ address=%s, port=%d, hostgroup=%d, weight=%d, comment=%s }%s\n",
			cfgString(s.Host), s.Port, ProxySQLWriterHostgroup, 1000-i, cfgString(s.Name), sep)
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "mysql_users=\n(\n\t{ username=%s, password=%s, default_hostgroup=%d, transaction_persistent=1, active=1 }\n)\n\n",
		cfgString(c.User), cfgString(c.Password), ProxySQLWriterHostgroup)
	proxysqlHostgroups(&b, c)
	b.WriteString("\n# Routing by the port a client connected to.\nmysql_query_rules=\n(\n")
	fmt.Fprintf(&b, "\t{ rule_id=1, active=1, proxy_port=%d, destination_hostgroup=%d, apply=1, comment=\"write port\" }", portOf(c.Write), ProxySQLWriterHostgroup)
	if c.Read != "" {
		fmt.Fprintf(&b, ",\n\t{ rule_id=2, active=1, proxy_port=%d, destination_hostgroup=%d, apply=1, comment=\"read port\" }", portOf(c.Read), ProxySQLReaderHostgroup)
	}
	b.WriteString("\n)\n")
	return b.String(), nil
}

// proxysqlVariables writes mysql_variables: the interfaces, timeouts, the monitor's
// account, intervals (ms), timeouts and failure counts for c's kind.
func proxysqlVariables(b *strings.Builder, c ProxySQLConfig) {
	ifaces := c.Write
	if c.Read != "" {
		ifaces += ";" + c.Read
	}
	ms := c.CheckInterval.Milliseconds()
	timeout := CheckTimeout(c.CheckInterval).Milliseconds()
	maxTimeouts := min(c.Fall, 10)
	shun := max(int64(1), int64((time.Duration(c.Rise)*c.CheckInterval+time.Second-1)/time.Second))
	fmt.Fprintf(b, "mysql_variables=\n{\n\tinterfaces=%s\n", cfgString(ifaces))
	fmt.Fprintf(b, "\tconnect_timeout_server=%d\n\tdefault_query_timeout=%d\n\tshun_recovery_time_sec=%d\n",
		ConnectTimeout.Milliseconds(), IdleTimeout.Milliseconds(), shun)
	fmt.Fprintf(b, "\tmonitor_enabled=true\n\tmonitor_username=%s\n\tmonitor_password=%s\n", cfgString(c.User), cfgString(c.Password))
	fmt.Fprintf(b, "\tmonitor_connect_interval=%d\n\tmonitor_connect_timeout=%d\n", ms, timeout)
	fmt.Fprintf(b, "\tmonitor_ping_interval=%d\n\tmonitor_ping_timeout=%d\n\tmonitor_ping_max_failures=%d\n", ms, timeout, c.Fall)
	switch {
	case c.Kind.Is(topology.Galera):
		fmt.Fprintf(b, "\tmonitor_galera_healthcheck_interval=%d\n\tmonitor_galera_healthcheck_timeout=%d\n\tmonitor_galera_healthcheck_max_timeout_count=%d\n", ms, timeout, maxTimeouts)
	case c.Kind.Is(topology.Group):
		fmt.Fprintf(b, "\tmonitor_groupreplication_healthcheck_interval=%d\n\tmonitor_groupreplication_healthcheck_timeout=%d\n\tmonitor_groupreplication_healthcheck_max_timeout_count=%d\n", ms, timeout, maxTimeouts)
	default:
		// The writer is not a reader: the read port goes to the replicas only.
		fmt.Fprintf(b, "\tmonitor_read_only_interval=%d\n\tmonitor_read_only_timeout=%d\n\tmonitor_read_only_max_timeout_count=%d\n\tmonitor_writer_is_also_reader=false\n", ms, timeout, c.Fall)
	}
	b.WriteString("}\n")
}

// proxysqlHostgroups writes the kind's hostgroup table: Galera's and Group Replication's
// with one writer (max_writers 1), the other healthy writable nodes backup writers, and
// with a read endpoint those backup writers also readers (writer_is_also_reader 2: every
// Galera node is writable, so with 0 the reader hostgroup would stay empty; a group's
// secondaries are read-only and readers either way); else the replication pair by
// read_only.
func proxysqlHostgroups(b *strings.Builder, c ProxySQLConfig) {
	alsoReader := 0
	if c.Read != "" {
		alsoReader = 2
	}
	table := ""
	switch {
	case c.Kind.Is(topology.Galera):
		table = "mysql_galera_hostgroups"
	case c.Kind.Is(topology.Group):
		table = "mysql_group_replication_hostgroups"
	default:
		fmt.Fprintf(b, "mysql_replication_hostgroups=\n(\n\t{ writer_hostgroup=%d, reader_hostgroup=%d, check_type=\"read_only\", comment=%s }\n)\n",
			ProxySQLWriterHostgroup, ProxySQLReaderHostgroup, cfgString(c.Cluster))
		return
	}
	fmt.Fprintf(b, "%s=\n(\n\t{\n\t\twriter_hostgroup=%d\n\t\tbackup_writer_hostgroup=%d\n\t\treader_hostgroup=%d\n\t\toffline_hostgroup=%d\n",
		table, ProxySQLWriterHostgroup, ProxySQLBackupWriterHostgroup, ProxySQLReaderHostgroup, ProxySQLOfflineHostgroup)
	fmt.Fprintf(b, "\t\tactive=1\n\t\tmax_writers=1\n\t\twriter_is_also_reader=%d\n\t\tmax_transactions_behind=%d\n\t\tcomment=%s\n\t}\n)\n",
		alsoReader, ProxySQLMaxTransactionsBehind, cfgString(c.Cluster))
}

// ProxySQLPoolQuery is what habench asks ProxySQL's admin interface for its servers'
// state: one row per server and hostgroup (ProxySQLPoolRow's fields, in order).
const ProxySQLPoolQuery = "SELECT hostgroup, srv_host, srv_port, status, ConnUsed FROM stats_mysql_connection_pool"

// ProxySQLPoolRow is one row of ProxySQL's stats_mysql_connection_pool (ProxySQLPoolQuery).
type ProxySQLPoolRow struct {
	Hostgroup int
	Host      string
	Port      int
	// Status is ONLINE, SHUNNED, OFFLINE_SOFT, OFFLINE_HARD or SHUNNED_REPLICATION_LAG.
	Status string
	// ConnUsed is the server's connections in use by clients now.
	ConnUsed int
}

// proxysqlStatus is a ProxySQL server status in HAProxy's words (Server.Status): ONLINE
// is UP, SHUNNED (by the monitor or by connection errors, and for replication lag) is
// DOWN, OFFLINE_SOFT and OFFLINE_HARD (taken out: no new connections) are MAINT; another
// word is kept as it is (neither up nor down).
func proxysqlStatus(s string) string {
	switch s {
	case "ONLINE":
		return "UP"
	case "SHUNNED", "SHUNNED_REPLICATION_LAG":
		return "DOWN"
	case "OFFLINE_SOFT", "OFFLINE_HARD":
		return "MAINT"
	}
	return s
}

// ProxySQLServers maps ProxySQL's connection pool rows to the proxy's servers, as
// HAProxy's statistics give them: for each backend in order, a "write" row (its state in
// the writer hostgroup) and, with read, a "read" row (its state in the reader hostgroup).
// A backend that is not in that hostgroup now (the monitor moved it to the backup writer
// or offline hostgroup) is "DOWN" there, as a node that fails HAProxy's check of that
// endpoint is. Sessions are ConnUsed; CheckStatus is ProxySQL's own word ("ABSENT" when
// the server is not in the hostgroup), CheckDesc says which hostgroup. Rows of servers
// that are not backends (ProxySQL may discover a group's members) are left out.
func ProxySQLServers(rows []ProxySQLPoolRow, backends []Backend, read bool) []Server {
	type key struct {
		hg   int
		addr string
	}
	byKey := map[key]ProxySQLPoolRow{}
	for _, r := range rows {
		byKey[key{r.Hostgroup, net.JoinHostPort(r.Host, strconv.Itoa(r.Port))}] = r
	}
	endpoints := []struct {
		name string
		hg   int
	}{{"write", ProxySQLWriterHostgroup}}
	if read {
		endpoints = append(endpoints, struct {
			name string
			hg   int
		}{"read", ProxySQLReaderHostgroup})
	}
	var out []Server
	for _, e := range endpoints {
		for _, b := range backends {
			s := Server{Backend: e.name, Name: b.Name, Status: "DOWN", CheckStatus: "ABSENT", CheckDesc: fmt.Sprintf("not in hostgroup %d", e.hg)}
			if r, ok := byKey[key{e.hg, b.Addr()}]; ok {
				s.Status, s.Sessions, s.CheckStatus = proxysqlStatus(r.Status), r.ConnUsed, r.Status
				s.CheckDesc = fmt.Sprintf("%s in hostgroup %d", r.Status, e.hg)
			}
			out = append(out, s)
		}
	}
	return out
}
