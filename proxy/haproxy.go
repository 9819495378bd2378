// Package proxy is what habench knows of a proxy in front of a topology's servers
// (topology.ProxySpec): HAProxy's configuration (HAProxyText), the health-check server
// HAProxy asks which server is the writer and which may serve reads (Checker, Serve),
// and HAProxy's statistics page (ReadStats); ProxySQL's proxysql.cnf (ProxySQLText) and
// MySQL Router's mysqlrouter.conf (RouterText), with their state as Server rows
// (ProxySQLServers, RouterServers). It runs nothing itself: package cluster starts the
// proxies and `habench proxy-check`, which serves a Checker.
package proxy

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// HAProxyConfig is what HAProxyText writes a configuration from.
type HAProxyConfig struct {
	// Cluster names the cluster in the file's first line.
	Cluster string
	// Backends are the servers in the write endpoint's order: the first is its server,
	// the others are backups used in this order. The health checks (Checker) pass one
	// writer at a time, so the write endpoint has one server at a time.
	Backends []Backend
	// CheckInterval is the time between two checks of one server (HAProxy's inter), at
	// least 1 ms; Fall and Rise the failed (passed) checks in a row that mark a server
	// down (up), at least 1.
	CheckInterval time.Duration
	Fall, Rise    int
	// Write, Read and Stats are the endpoints' listen addresses ("host:port"); Read ""
	// has no read endpoint.
	Write, Read, Stats string
	// Check is where the health-check server listens ("host:port"), as HAProxy reaches it.
	Check string
}

// StatsPath is the statistics page's path on the stats endpoint (HTML; StatsPath+";csv"
// is its CSV, what ReadStats reads).
const StatsPath = "/stats"

// Timeouts of the configuration: a benchmark's connection may sit idle between two
// phases, so the client and server timeouts are an hour; a server that does not accept a
// connection within ConnectTimeout is failed.
const (
	ConnectTimeout = 2 * time.Second
	IdleTimeout    = time.Hour
)

// check validates c; an error names the field and its value.
func (c HAProxyConfig) check() error {
	if err := checkBackends(c.Backends); err != nil {
		return err
	}
	if c.CheckInterval < time.Millisecond {
		return fmt.Errorf("proxy check interval %s: want at least 1ms", c.CheckInterval)
	}
	if c.Fall < 1 || c.Rise < 1 {
		return fmt.Errorf("proxy fall %d, rise %d: want at least 1 each", c.Fall, c.Rise)
	}
	for _, a := range []struct{ name, v string }{{"write", c.Write}, {"read", c.Read}, {"stats", c.Stats}, {"check", c.Check}} {
		if a.v == "" && a.name == "read" {
			continue
		}
		if err := checkListen(a.name, a.v); err != nil {
			return err
		}
	}
	return nil
}

// hatime is d in HAProxy's time format: whole hours, seconds or else milliseconds ("1h",
// "2s", "200ms").
func hatime(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// HAProxyText returns HAProxy's configuration for c (TCP mode): the write endpoint, one
// server at a time (the first of c.Backends, the others backup), checked with GET
// /write/NAME against the health-check server, the sessions on a server marked down
// closed; the read endpoint, round robin over the servers that pass GET /read/NAME (none
// without c.Read); the statistics page at StatsPath (CSV at StatsPath;csv, no refresh).
// Error: a field of c that
// cannot go in the file (one line naming it and its value).
func HAProxyText(c HAProxyConfig) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	chost, cport, _ := net.SplitHostPort(c.Check)
	var b strings.Builder
	fmt.Fprintf(&b, "# habench: HAProxy for cluster %s (TCP mode), written by habench; health checks by habench proxy-check on %s\n", c.Cluster, c.Check)
	// No maxconn: HAProxy derives it from its file descriptor limit. No log: a
	// benchmark's every connection would be a line; HAProxy in the foreground (-db)
	// writes its servers' state changes to its standard error.
	b.WriteString("global\n\n")
	b.WriteString("defaults\n    mode tcp\n")
	fmt.Fprintf(&b, "    timeout connect %s\n    timeout client %s\n    timeout server %s\n    timeout check %s\n",
		hatime(ConnectTimeout), hatime(IdleTimeout), hatime(IdleTimeout), hatime(3*CheckTimeout(c.CheckInterval)))
	check := fmt.Sprintf("check addr %s port %s inter %s fall %d rise %d on-marked-down shutdown-sessions", chost, cport, hatime(c.CheckInterval), c.Fall, c.Rise)
	b.WriteString("\n# The writer: one server at a time, the one GET /write/NAME passes; the others are\n# backups in this order. A server marked down has its sessions closed.\n")
	endpoint(&b, "write", c.Write, "first", "/write/", check, c.Backends, true)
	if c.Read != "" {
		b.WriteString("\n# The readers: round robin over the servers GET /read/NAME passes (not the writer).\n")
		endpoint(&b, "read", c.Read, "roundrobin", "/read/", check, c.Backends, false)
	}
	fmt.Fprintf(&b, "\n# Statistics: %s (HTML), %s;csv (what habench reads), no refresh.\n", StatsPath, StatsPath)
	fmt.Fprintf(&b, "listen stats\n    bind %s\n    mode http\n    timeout client 10s\n    timeout http-request 5s\n    stats enable\n    stats uri %s\n", c.Stats, StatsPath)
	return b.String(), nil
}

// endpoint writes one listen section: its bind, balance, the HTTP check of path+NAME and
// a server line per backend (the later ones backup when backups).
func endpoint(b *strings.Builder, name, bind, balance, path, check string, backends []Backend, backups bool) {
	fmt.Fprintf(b, "listen %s\n    bind %s\n    balance %s\n    option httpchk\n", name, bind, balance)
	fmt.Fprintf(b, "    http-check send meth GET uri-lf %s%%[srv_name]\n    http-check expect status 200\n", path)
	fmt.Fprintf(b, "    default-server %s\n", check)
	for i, s := range backends {
		fmt.Fprintf(b, "    server %s %s", s.Name, s.Addr())
		if backups && i > 0 {
			b.WriteString(" backup")
		}
		b.WriteString("\n")
	}
}
