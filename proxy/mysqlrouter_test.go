package proxy

import (
	"reflect"
	"strings"
	"testing"
)

func testRouter() RouterConfig {
	return RouterConfig{
		Cluster:  "t1",
		Backends: []Backend{{"n2", "10.233.7.12", 3306}, {"n1", "10.233.7.11", 3306}, {"n3", "10.233.7.13", 3306}},
		Write:    "10.233.7.14:3306", Read: "10.233.7.14:3307", HTTP: "10.233.7.14:3308",
		Dir: "/var/lib/habench/t1/proxy", PasswdFile: "/var/lib/habench/t1/proxy/mysqlrouter.pwd",
	}
}

// parseINI parses Router's configuration syntax: [section] or [section:key] headers,
// name=value lines, # comments; it fails on any other line and on a section or option
// given twice.
func parseINI(t *testing.T, text string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	var cur map[string]string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			name := line[1 : len(line)-1]
			if _, dup := out[name]; dup || name == "" {
				t.Fatalf("line %d: section %q empty or twice", i+1, name)
			}
			cur = map[string]string{}
			out[name] = cur
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || cur == nil || k == "" {
				t.Fatalf("line %d: %q: want name=value in a section", i+1, line)
			}
			if _, dup := cur[k]; dup {
				t.Fatalf("line %d: option %s twice", i+1, k)
			}
			cur[k] = v
		}
	}
	return out
}

// TestRouterText checks mysqlrouter.conf: the write route first-available over the
// backends in order, the read route round-robin over all but the first, classic
// protocol, the REST API with rest_routing behind the realm and its password file; and a
// file without a read route.
func TestRouterText(t *testing.T) {
	text, err := RouterText(testRouter())
	if err != nil {
		t.Fatal(err)
	}
	ini := parseINI(t, text)
	for sec, want := range map[string]map[string]string{
		"DEFAULT": {"logging_folder": "", "runtime_folder": "/var/lib/habench/t1/proxy", "data_folder": "/var/lib/habench/t1/proxy"},
		"routing:write": {"bind_address": "10.233.7.14", "bind_port": "3306", "destinations": "10.233.7.12:3306,10.233.7.11:3306,10.233.7.13:3306",
			"routing_strategy": "first-available", "protocol": "classic", "connect_timeout": "2", "max_connect_errors": "1000000"},
		"routing:read": {"bind_address": "10.233.7.14", "bind_port": "3307", "destinations": "10.233.7.11:3306,10.233.7.13:3306",
			"routing_strategy": "round-robin", "protocol": "classic"},
		"http_server":               {"bind_address": "10.233.7.14", "port": "3308", "ssl": "0"},
		"http_auth_realm:habench":   {"backend": "habench", "method": "basic", "name": "habench"},
		"http_auth_backend:habench": {"backend": "file", "filename": "/var/lib/habench/t1/proxy/mysqlrouter.pwd"},
		"rest_api":                  {},
		"rest_routing":              {"require_realm": "habench"},
	} {
		got, ok := ini[sec]
		if !ok {
			t.Errorf("no [%s] section:\n%s", sec, text)
			continue
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("[%s] %s = %q, want %q", sec, k, g, v)
			}
		}
	}
	c := testRouter()
	c.Read = ""
	text, err = RouterText(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := parseINI(t, text)["routing:read"]; ok {
		t.Error("a read route without Read")
	}
	for _, tc := range []struct {
		change func(*RouterConfig)
		want   string
	}{
		{func(c *RouterConfig) { c.Backends = c.Backends[:1] }, `mysqlrouter read address "10.233.7.14:3307": a read route needs 2 or more backends, have 1`},
		{func(c *RouterConfig) { c.HTTP = "x" }, `proxy http address "x": want host:port`},
		{func(c *RouterConfig) { c.PasswdFile = "rel.pwd" }, `mysqlrouter password file "rel.pwd"`},
		{func(c *RouterConfig) { c.Backends = []Backend{{"n1", "h,x", 1}, {"n2", "h", 1}} }, `proxy backend n1 host "h,x"`},
	} {
		c := testRouter()
		tc.change(&c)
		if _, err := RouterText(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// TestRouterPasswdLine checks SHA-256 crypt against the specification's example and
// openssl passwd -5's output (a password longer than a digest, an empty one), and the
// refusals.
func TestRouterPasswdLine(t *testing.T) {
	for _, tc := range []struct{ password, salt, want string }{
		{"Hello world!", "saltstring", "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"}, // Drepper's specification
		{"pw", "ab/cd.EF", "$5$ab/cd.EF$sKR.c/7f4H/j8VPIggAxaN2ja.g1NGDzGvova6OuYbC"},               // openssl passwd -5 -salt ab/cd.EF pw
		{"a much longer password than thirty-two bytes, to wrap", "longsaltlongsalt", "$5$longsaltlongsalt$NltTctM8ewfRLphP.xKjpYEP8fLGF7XYGcaiJhU2.j2"},
	} {
		line, err := RouterPasswdLine("habench", tc.password, tc.salt)
		if err != nil || line != "habench:"+tc.want+"\n" {
			t.Errorf("%q salt %q: %q, %v; want habench:%s", tc.password, tc.salt, line, err, tc.want)
		}
	}
	for _, tc := range [][2]string{{"a:b", "salt"}, {"u", ""}, {"u", "has$dollar"}, {"u", "seventeen-chars-x"}} {
		if _, err := RouterPasswdLine(tc[0], "p", tc[1]); err == nil {
			t.Errorf("user %q salt %q: accepted", tc[0], tc[1])
		}
	}
}

// TestRouterServers maps REST API answers (built in the documented shape: {"items":
// [{"address", "port"}]} and {"items": [{"destinationAddress", ...}]}) to servers: one row
// per destination named after its backend, sessions counted per destination, the write
// route's server the one holding its connections (the first when none), the others
// backups; WriteServer and Summary read them.
func TestRouterServers(t *testing.T) {
	backends := testRouter().Backends
	var dests []RouterDestination
	if err := ParseRouterItems(strings.NewReader(`{"items": [{"address": "10.233.7.12", "port": 3306}, {"address": "10.233.7.11", "port": 3306}, {"address": "10.233.7.99", "port": 3306}]}`), &dests); err != nil {
		t.Fatal(err)
	}
	var conns []RouterConnection
	if err := ParseRouterItems(strings.NewReader(`{"items": [
		{"bytesFromServer": 10, "bytesToServer": 20, "sourceAddress": "10.233.7.1:5000", "destinationAddress": "10.233.7.11:3306", "timeStarted": "2026-01-01T00:00:00.000000Z"},
		{"sourceAddress": "10.233.7.1:5001", "destinationAddress": "10.233.7.11:3306"},
		{"sourceAddress": "10.233.7.1:5002", "destinationAddress": "10.233.7.12:3306"}]}`), &conns); err != nil {
		t.Fatal(err)
	}
	got := RouterServers("write", dests, conns, backends)
	type row struct {
		name, status string
		backup       bool
		sessions     int
	}
	var short []row
	for _, s := range got {
		short = append(short, row{s.Name, s.Status, s.Backup, s.Sessions})
		if s.Backend != "write" {
			t.Errorf("%s: backend %q", s.Name, s.Backend)
		}
	}
	if want := []row{{"n2", "UP", true, 1}, {"n1", "UP", false, 2}, {"10.233.7.99:3306", "UP", true, 0}}; !reflect.DeepEqual(short, want) {
		t.Errorf("write route:\n got %v\nwant %v", short, want)
	}
	if w := WriteServer(got); w != "n1" {
		t.Errorf("WriteServer %q, want n1 (it holds the route's connections)", w)
	}
	if w := WriteServer(RouterServers("write", dests, nil, backends)); w != "n2" {
		t.Errorf("no connections: WriteServer %q, want the first destination n2", w)
	}
	all := append(RouterServers("write", dests[:1], nil, backends), RouterServers("read", dests[1:2], conns, backends)...)
	if s := Summary(all); s != "write n2, read 1 up: n1" {
		t.Errorf("Summary %q", s)
	}
	if err := ParseRouterItems(strings.NewReader(`{"error": "unauthorized"}`), &dests); err == nil {
		t.Error("an answer without items accepted")
	}
	if err := ParseRouterItems(strings.NewReader(`<html>`), &dests); err == nil {
		t.Error("HTML accepted")
	}
}
