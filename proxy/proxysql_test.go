package proxy

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/habench/habench/topology"
)

func testProxySQL(kind topology.Kind) ProxySQLConfig {
	return ProxySQLConfig{
		Cluster: "t1", Kind: kind,
		Backends: []Backend{{"n1", "10.233.7.11", 3306}, {"n2", "10.233.7.12", 3306}, {"n3", "10.233.7.13", 3306}},
		User:     "sbtest", Password: `pa"ss\word`, CheckInterval: 200 * time.Millisecond, Fall: 3, Rise: 2,
		Write: "10.233.7.14:3306", Read: "10.233.7.14:3307", Admin: "10.233.7.14:3308",
		AdminUser: "habench_admin", AdminPassword: "secret", Dir: "/var/lib/habench/t1/proxy",
	}
}

// libconfig is a small parser of libconfig's grammar (what ProxySQL reads its file
// with): settings `name = value` or `name : value` ended by ; , or nothing, values
// scalars (quoted strings with \" and \\, integers, true/false), groups {...} and lists
// (...). A group is a map[string]any, a list a []any, an integer an int64. It fails on
// anything else, so the generated file's syntax is checked.
type libconfig struct {
	s   string
	pos int
}

func (p *libconfig) skip() {
	for p.pos < len(p.s) {
		switch c := p.s[p.pos]; {
		case c == '#':
			for p.pos < len(p.s) && p.s[p.pos] != '\n' {
				p.pos++
			}
		case unicode.IsSpace(rune(c)):
			p.pos++
		default:
			return
		}
	}
}

func (p *libconfig) errf(f string, a ...any) error {
	return fmt.Errorf("offset %d (%q): %s", p.pos, p.s[p.pos:min(len(p.s), p.pos+20)], fmt.Sprintf(f, a...))
}

// settings parses settings until end (0: the end of the text).
func (p *libconfig) settings(end byte) (map[string]any, error) {
	out := map[string]any{}
	for {
		p.skip()
		if p.pos == len(p.s) || p.s[p.pos] == end {
			if end != 0 && p.pos == len(p.s) {
				return nil, p.errf("missing %c", end)
			}
			return out, nil
		}
		start := p.pos
		for p.pos < len(p.s) && (p.s[p.pos] == '_' || p.s[p.pos] == '-' || unicode.IsLetter(rune(p.s[p.pos])) || unicode.IsDigit(rune(p.s[p.pos]))) {
			p.pos++
		}
		name := p.s[start:p.pos]
		p.skip()
		if name == "" || p.pos == len(p.s) || (p.s[p.pos] != '=' && p.s[p.pos] != ':') {
			return nil, p.errf("want name = value")
		}
		p.pos++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, p.errf("setting %s twice", name)
		}
		out[name] = v
		p.skip()
		if p.pos < len(p.s) && (p.s[p.pos] == ';' || p.s[p.pos] == ',') {
			p.pos++
		}
	}
}

func (p *libconfig) value() (any, error) {
	p.skip()
	if p.pos == len(p.s) {
		return nil, p.errf("want a value")
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		p.pos++
		g, err := p.settings('}')
		p.pos++
		return g, err
	case c == '(':
		p.pos++
		var list []any
		for {
			p.skip()
			if p.pos < len(p.s) && p.s[p.pos] == ')' {
				p.pos++
				return list, nil
			}
			if len(list) > 0 {
				if p.s[p.pos] != ',' {
					return nil, p.errf("want , between list elements")
				}
				p.pos++
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
	case c == '"':
		var b strings.Builder
		for p.pos++; p.pos < len(p.s); p.pos++ {
			switch p.s[p.pos] {
			case '\\':
				p.pos++
				b.WriteByte(p.s[p.pos])
			case '"':
				p.pos++
				return b.String(), nil
			case '\n':
				return nil, p.errf("newline in a string")
			default:
				b.WriteByte(p.s[p.pos])
			}
		}
		return nil, p.errf("unterminated string")
	}
	start := p.pos
	for p.pos < len(p.s) && (unicode.IsLetter(rune(p.s[p.pos])) || unicode.IsDigit(rune(p.s[p.pos])) || p.s[p.pos] == '-') {
		p.pos++
	}
	switch w := p.s[start:p.pos]; w {
	case "true", "false":
		return w == "true", nil
	default:
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil {
			return nil, p.errf("not a value: %q", w)
		}
		return n, nil
	}
}

// parseProxySQL generates c's file and parses it.
func parseProxySQL(t *testing.T, c ProxySQLConfig) (string, map[string]any) {
	t.Helper()
	text, err := ProxySQLText(c)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := (&libconfig{s: text}).settings(0)
	if err != nil {
		t.Fatalf("not libconfig: %v\n%s", err, text)
	}
	return text, cfg
}

// one is the single group of list setting name in cfg.
func one(t *testing.T, cfg map[string]any, name string) map[string]any {
	t.Helper()
	l, ok := cfg[name].([]any)
	if !ok || len(l) != 1 {
		t.Fatalf("%s: %#v, want a list of one group", name, cfg[name])
	}
	return l[0].(map[string]any)
}

// want checks that group g has each setting of w (ints as int64).
func want(t *testing.T, what string, g map[string]any, w map[string]any) {
	t.Helper()
	for k, v := range w {
		if i, ok := v.(int); ok {
			v = int64(i)
		}
		if !reflect.DeepEqual(g[k], v) {
			t.Errorf("%s %s = %#v, want %#v", what, k, g[k], v)
		}
	}
}

// TestProxySQLTextGalera checks the file for a Galera cluster: libconfig syntax, the
// admin and mysql interfaces, the monitor's Galera settings from the check interval,
// every server in the writer hostgroup with the first the heaviest, the benchmark user
// (its password escaped), mysql_galera_hostgroups with one writer and the backup writers
// as readers, and one query rule per port.
func TestProxySQLTextGalera(t *testing.T) {
	text, cfg := parseProxySQL(t, testProxySQL(topology.Galera))
	want(t, "top", cfg, map[string]any{"datadir": "/var/lib/habench/t1/proxy", "errorlog": "/var/lib/habench/t1/proxy/proxysql.log"})
	want(t, "admin_variables", cfg["admin_variables"].(map[string]any), map[string]any{
		"admin_credentials": "habench_admin:secret", "mysql_ifaces": "10.233.7.14:3308"})
	want(t, "mysql_variables", cfg["mysql_variables"].(map[string]any), map[string]any{
		"interfaces": "10.233.7.14:3306;10.233.7.14:3307", "monitor_username": "sbtest", "monitor_password": `pa"ss\word`,
		"monitor_enabled": true, "monitor_galera_healthcheck_interval": 200, "monitor_galera_healthcheck_timeout": 500,
		"monitor_galera_healthcheck_max_timeout_count": 3, "monitor_ping_interval": 200, "monitor_ping_max_failures": 3,
		"shun_recovery_time_sec": 1, "connect_timeout_server": 2000})
	for _, k := range []string{"monitor_read_only_interval", "monitor_groupreplication_healthcheck_interval"} {
		if _, ok := cfg["mysql_variables"].(map[string]any)[k]; ok {
			t.Errorf("galera's file sets %s", k)
		}
	}
	servers := cfg["mysql_servers"].([]any)
	if len(servers) != 3 {
		t.Fatalf("mysql_servers: %d, want 3", len(servers))
	}
	for i, s := range servers {
		want(t, fmt.Sprintf("mysql_servers[%d]", i), s.(map[string]any), map[string]any{
			"address": fmt.Sprintf("10.233.7.1%d", i+1), "port": 3306, "hostgroup": ProxySQLWriterHostgroup, "weight": 1000 - i})
	}
	want(t, "mysql_users", one(t, cfg, "mysql_users"), map[string]any{"username": "sbtest", "password": `pa"ss\word`, "default_hostgroup": 10, "active": 1})
	want(t, "mysql_galera_hostgroups", one(t, cfg, "mysql_galera_hostgroups"), map[string]any{
		"writer_hostgroup": 10, "backup_writer_hostgroup": 11, "reader_hostgroup": 20, "offline_hostgroup": 30,
		"active": 1, "max_writers": 1, "writer_is_also_reader": 2, "max_transactions_behind": ProxySQLMaxTransactionsBehind})
	for _, k := range []string{"mysql_group_replication_hostgroups", "mysql_replication_hostgroups"} {
		if _, ok := cfg[k]; ok {
			t.Errorf("galera's file has %s", k)
		}
	}
	rules := cfg["mysql_query_rules"].([]any)
	if len(rules) != 2 {
		t.Fatalf("mysql_query_rules: %d rules, want 2:\n%s", len(rules), text)
	}
	want(t, "rule 1", rules[0].(map[string]any), map[string]any{"rule_id": 1, "active": 1, "proxy_port": 3306, "destination_hostgroup": 10, "apply": 1})
	want(t, "rule 2", rules[1].(map[string]any), map[string]any{"rule_id": 2, "active": 1, "proxy_port": 3307, "destination_hostgroup": 20, "apply": 1})
}

// TestProxySQLTextKinds checks the hostgroup table and monitor settings of a group and of
// source and replicas, and a file without a read endpoint.
func TestProxySQLTextKinds(t *testing.T) {
	_, cfg := parseProxySQL(t, testProxySQL(topology.Group))
	want(t, "mysql_group_replication_hostgroups", one(t, cfg, "mysql_group_replication_hostgroups"), map[string]any{
		"writer_hostgroup": 10, "backup_writer_hostgroup": 11, "reader_hostgroup": 20, "offline_hostgroup": 30,
		"active": 1, "max_writers": 1, "writer_is_also_reader": 2})
	want(t, "group's mysql_variables", cfg["mysql_variables"].(map[string]any), map[string]any{
		"monitor_groupreplication_healthcheck_interval": 200, "monitor_groupreplication_healthcheck_max_timeout_count": 3})
	if _, ok := cfg["mysql_galera_hostgroups"]; ok {
		t.Error("group's file has mysql_galera_hostgroups")
	}

	for _, k := range []topology.Kind{"async", "semisync", "single"} {
		_, cfg := parseProxySQL(t, testProxySQL(k))
		want(t, string(k)+" mysql_replication_hostgroups", one(t, cfg, "mysql_replication_hostgroups"), map[string]any{
			"writer_hostgroup": 10, "reader_hostgroup": 20, "check_type": "read_only"})
		want(t, string(k)+" mysql_variables", cfg["mysql_variables"].(map[string]any), map[string]any{
			"monitor_read_only_interval": 200, "monitor_read_only_max_timeout_count": 3, "monitor_writer_is_also_reader": false})
	}

	c := testProxySQL(topology.Galera)
	c.Read, c.Fall, c.Rise, c.CheckInterval = "", 20, 30, 150*time.Millisecond
	_, cfg = parseProxySQL(t, c)
	want(t, "no read: mysql_galera_hostgroups", one(t, cfg, "mysql_galera_hostgroups"), map[string]any{"writer_is_also_reader": 0})
	want(t, "no read: mysql_variables", cfg["mysql_variables"].(map[string]any), map[string]any{
		"interfaces": "10.233.7.14:3306", "monitor_galera_healthcheck_max_timeout_count": 10, "monitor_ping_max_failures": 20,
		"shun_recovery_time_sec": 5, "monitor_galera_healthcheck_interval": 150})
	if n := len(cfg["mysql_query_rules"].([]any)); n != 1 {
		t.Errorf("no read: %d query rules, want 1", n)
	}
}

// TestProxySQLTextRefuses checks that a field that cannot go in the file is refused in
// one line naming it.
func TestProxySQLTextRefuses(t *testing.T) {
	for _, tc := range []struct {
		change func(*ProxySQLConfig)
		want   string
	}{
		{func(c *ProxySQLConfig) { c.Backends = nil }, "proxy backends: none"},
		{func(c *ProxySQLConfig) { c.Backends[1].Host = `10.0.0.1",x` }, `proxy backend n2 host "10.0.0.1\",x"`},
		{func(c *ProxySQLConfig) { c.CheckInterval = 50 * time.Millisecond }, "proxysql check interval 50ms"},
		{func(c *ProxySQLConfig) { c.AdminUser = c.User }, `proxysql users "sbtest" and admin "sbtest"`},
		{func(c *ProxySQLConfig) { c.Read = "10.0.0.1" }, `proxy read address "10.0.0.1"`},
		{func(c *ProxySQLConfig) { c.Dir = "rel" }, `proxysql datadir "rel"`},
	} {
		c := testProxySQL(topology.Galera)
		c.Backends = append([]Backend(nil), c.Backends...)
		tc.change(&c)
		_, err := ProxySQLText(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %v, want one line with %q", err, tc.want)
		}
	}
}

// TestProxySQLServers maps connection pool rows (as stats_mysql_connection_pool has them)
// to the proxy's servers: the writer hostgroup's to "write", the reader hostgroup's to
// "read", ProxySQL's statuses to HAProxy's words, a backend absent from a hostgroup DOWN
// there, unknown servers left out; WriteServer and Summary read them as HAProxy's.
func TestProxySQLServers(t *testing.T) {
	backends := testProxySQL(topology.Galera).Backends
	rows := []ProxySQLPoolRow{
		{10, "10.233.7.12", 3306, "ONLINE", 4},        // n2 is the writer now
		{11, "10.233.7.11", 3306, "ONLINE", 0},        // n1 a backup writer
		{20, "10.233.7.11", 3306, "ONLINE", 2},        // ... and a reader
		{20, "10.233.7.13", 3306, "SHUNNED", 0},       // n3 shunned as a reader
		{30, "10.233.7.13", 3306, "OFFLINE_HARD", 0},  // ... and in the offline hostgroup
		{10, "10.233.7.99", 3306, "ONLINE", 1},        // not a backend
		{20, "10.233.7.12", 3306, "OFFLINE_SOFT", 1},  // n2 draining as a reader
		{10, "10.233.7.13", 3307, "ONLINE", 9},        // another port: not n3
		{20, "10.233.7.11", 3306, "SOMETHING_NEW", 0}, // overrides n1's reader row: kept as it is
	}
	got := ProxySQLServers(rows, backends, true)
	type row struct {
		backend, name, status string
		sessions              int
	}
	var short []row
	for _, s := range got {
		short = append(short, row{s.Backend, s.Name, s.Status, s.Sessions})
	}
	wantRows := []row{
		{"write", "n1", "DOWN", 0}, {"write", "n2", "UP", 4}, {"write", "n3", "DOWN", 0},
		{"read", "n1", "SOMETHING_NEW", 0}, {"read", "n2", "MAINT", 1}, {"read", "n3", "DOWN", 0},
	}
	if !reflect.DeepEqual(short, wantRows) {
		t.Errorf("servers:\n got %v\nwant %v", short, wantRows)
	}
	if got[0].CheckStatus != "ABSENT" || got[4].CheckStatus != "OFFLINE_SOFT" || got[5].CheckDesc != "SHUNNED in hostgroup 20" {
		t.Errorf("check words: %q, %q, %q", got[0].CheckStatus, got[4].CheckStatus, got[5].CheckDesc)
	}
	if w := WriteServer(got); w != "n2" {
		t.Errorf("WriteServer %q, want n2", w)
	}
	rows[8].Status = "ONLINE"
	if s := Summary(ProxySQLServers(rows, backends, true)); s != "write n2, read 1 up: n1" {
		t.Errorf("Summary %q", s)
	}
	if s := ProxySQLServers(rows, backends, false); len(s) != 3 || s[2].Backend != "write" {
		t.Errorf("without read: %v", s)
	}
	if s := Summary(ProxySQLServers(nil, backends, false)); s != "write none up" {
		t.Errorf("no rows: Summary %q", s)
	}
}
