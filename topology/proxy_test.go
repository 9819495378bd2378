package topology

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A proxy is written as its type alone or as a map, takes HAProxy's defaults, and is a
// member called proxy after the kind's own (with its ports), which sites must place.
func TestProxySpec(t *testing.T) {
	s, err := ParseSpecYAML([]byte("name: x\nkind: galera-arbitrator\nflavor: mariadb\nnodes: 2\nproxy: haproxy\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	p := s.Proxy
	if p.Type != HAProxy || p.CheckInterval != time.Second || p.Fall != 3 || p.Rise != 2 || !p.HasRead() {
		t.Errorf("proxy: haproxy defaults to %+v, want haproxy, 1s, fall 3, rise 2, a read endpoint", p)
	}
	aux := s.AuxNodes()
	if len(aux) != 2 || aux[0].Name != ArbitratorName || aux[1] != (AuxNode{Name: ProxyName, Role: RoleProxy, Program: HAProxy, Ports: 4}) {
		t.Errorf("aux members %+v: want the arbitrator, then the proxy with 4 ports", aux)
	}
	if got := strings.Join(s.MemberNames(), ","); got != "n1,n2,arb,proxy" {
		t.Errorf("members %s, want n1,n2,arb,proxy", got)
	}
	s, err = ParseSpecYAML([]byte("name: x\nkind: group\nflavor: mysql\nproxy: {type: haproxy, check_interval: 200ms, fall: 1, read: false}\nsites: {dc1: [n1, n2, proxy], dc2: [n3]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if p := s.Proxy; p.CheckInterval != 200*time.Millisecond || p.Fall != 1 || p.Rise != 2 || p.HasRead() {
		t.Errorf("proxy map gives %+v, want 200ms, fall 1, rise 2, no read endpoint", p)
	}
	if s, _ := ParseSpecYAML([]byte("name: x\nkind: async\nflavor: mariadb\n")); len(s.AuxNodes()) != 0 || !s.Proxy.IsZero() {
		t.Errorf("no proxy: aux %+v, proxy %+v", s.AuxNodes(), s.Proxy)
	}
}

// What a proxy cannot be is refused before anything is deployed, naming the field.
func TestProxyRefused(t *testing.T) {
	for _, c := range []struct{ yaml, field, value string }{
		{"kind: group\nflavor: mysql\nproxy: nginx\n", "proxy.type", "nginx"},
		{"kind: group\nflavor: mysql\nproxy: {type: haproxy, check_interval: 0s}\n", "proxy.check_interval", "0s"},
		{"kind: group\nflavor: mysql\nproxy: {type: haproxy, check_interval: 1ms}\n", "proxy.check_interval", "1ms"},
		{"kind: group\nflavor: mysql\nproxy: {type: haproxy, fall: 500}\n", "proxy.fall", "500"},
		// A negative value is named as written; a 0 written is refused as 0, not defaulted.
		{"kind: group\nflavor: mysql\nproxy: {type: haproxy, fall: -2}\n", "proxy.fall", "-2"},
		{"kind: group\nflavor: mysql\nproxy: {type: haproxy, check_interval: -1s}\n", "proxy.check_interval", "-1s"},
		{"kind: group\nflavor: mysql\nproxy: {type: haproxy, rise: -1}\n", "proxy.rise", "-1"},
		{"kind: group\nflavor: mysql\nproxy: {type: haproxy, fall: 0}\n", "proxy.fall", "0"},
		{"kind: group\nflavor: mysql\nproxy: {type: haproxy, rise: 0}\n", "proxy.rise", "0"},
		{"kind: single\nflavor: mariadb\nproxy: {type: haproxy, read: true}\n", "proxy.read", "true"},
		{"kind: async\nflavor: mariadb\nproxy: haproxy\nsites: {dc1: [n1, n2], dc2: [n3]}\n", "sites", "proxy"},
		{"provider: existing\ndsns: [\"u:p@tcp(127.0.0.1:3306)/\"]\nproxy: haproxy\n", "proxy", "haproxy"},
		// On provider hosts: HAProxy only, its binary a path on its host, not alone in a
		// site, its ports under 65536.
		{"provider: hosts\nhosts: [db1, db2, db3]\nkind: galera\nflavor: mariadb\nproxy: {type: proxysql, binary: /usr/bin/proxysql}\n", "proxy", "proxysql"},
		{"provider: hosts\nhosts: [db1, db2, db3]\nkind: galera\nflavor: mariadb\nproxy: {type: haproxy, binary: haproxy}\n", "proxy.binary", "haproxy"},
		{"provider: hosts\nhosts: [db1, db2, db3]\nkind: galera\nflavor: mariadb\nproxy: haproxy\nsites: {dc1: [n1, n2, n3], app: [proxy]}\n", "sites.app", "proxy"},
		{"provider: hosts\nhosts: [db1, db2, db3]\nkind: galera\nflavor: mariadb\nbase_port: 65532\nproxy: haproxy\n", "base_port", "65532"},
	} {
		s, err := ParseSpecYAML([]byte("name: x\n" + c.yaml))
		if err == nil {
			err = s.Validate()
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Error(), `"`+c.value+`"`) {
			t.Errorf("%q: %v, want a FieldError on %s naming %q", c.yaml, err, c.field, c.value)
		}
	}
}

// A proxy's health checks: the fields given replace the spec's, label a table's value in
// order, and are checked against the spec's ranges.
func TestProxyChecks(t *testing.T) {
	p := ProxySpec{Type: HAProxy, CheckInterval: time.Second, Fall: 3, Rise: 2}
	o := ProxyChecks{CheckInterval: 200 * time.Millisecond, Fall: 2}
	if got := p.With(o); got.Checks() != (ProxyChecks{200 * time.Millisecond, 2, 2}) || got.Type != HAProxy {
		t.Errorf("With: %+v, want 200ms fall 2 rise 2", got)
	}
	if p.With(ProxyChecks{}) != p || !(ProxyChecks{}).IsZero() || o.IsZero() {
		t.Error("the zero ProxyChecks changes the spec, or is not zero")
	}
	for o, want := range map[ProxyChecks]string{o: "check 200ms fall 2", {Rise: 1}: "rise 1", {CheckInterval: 2 * time.Second}: "check 2s", {}: ""} {
		if o.String() != want {
			t.Errorf("%+v: %q, want %q", o, o.String(), want)
		}
	}
	for _, c := range []struct {
		o            ProxyChecks
		field, value string
	}{
		{ProxyChecks{CheckInterval: 5 * time.Millisecond}, "sweep.via.proxy.check_interval", "5ms"},
		{ProxyChecks{CheckInterval: ZeroGivenInterval}, "sweep.via.proxy.check_interval", "0s"},
		{ProxyChecks{CheckInterval: -time.Second}, "sweep.via.proxy.check_interval", "-1s"},
		{ProxyChecks{Fall: 101}, "sweep.via.proxy.fall", "101"},
		{ProxyChecks{Fall: -2}, "sweep.via.proxy.fall", "-2"},
		{ProxyChecks{Rise: ZeroGivenCount}, "sweep.via.proxy.rise", "0"},
		{ProxyChecks{Rise: -1}, "sweep.via.proxy.rise", "-1"},
	} {
		err := c.o.Validate("sweep.via.proxy")
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Error(), `"`+c.value+`"`) {
			t.Errorf("%+v: %v, want a FieldError on %s naming %q", c.o, err, c.field, c.value)
		}
	}
	if err := (ProxyChecks{CheckInterval: MinCheckInterval, Fall: 100, Rise: 1}).Validate("proxy"); err != nil {
		t.Errorf("the bounds: %v", err)
	}
}

// On provider hosts a proxy is the next member after the others in host order, or, in a
// site, on the host of the first member its site lists, in the next slot there.
func TestProxyOnHostsPlacement(t *testing.T) {
	for _, c := range []struct {
		yaml       string
		host, slot int
	}{
		// 3 nodes on 3 hosts: the proxy is member 4, on host 1 after n1.
		{"kind: galera\nnodes: 3\nhosts: [a, b, c]\n", 0, 1},
		// The arbitrator on host 3, the proxy on host 1.
		{"kind: galera-arbitrator\nnodes: 2\nhosts: [a, b, c]\n", 0, 1},
		// 2 nodes on 3 hosts: the proxy on the third, alone there.
		{"kind: semisync\nnodes: 2\nhosts: [a, b, c]\n", 2, 0},
		// In the application's site with n2 and n3: on n2's host, not n1's (far).
		{"kind: galera\nnodes: 3\nhosts: [a, b, c]\nsites: {far: [n1], app: [n2, n3, proxy]}\n", 1, 1},
		// 4 nodes on 2 hosts, the proxy with n3 (host a, which has n1 and n3): slot 2.
		{"kind: galera\nnodes: 4\nhosts: [a, b]\nsites: {one: [n1, n2], two: [n3, proxy, n4]}\n", 0, 2},
		// With the arbitrator in its site, the arbitrator's host (c) counts it.
		{"kind: galera-arbitrator\nnodes: 2\nhosts: [a, b, c]\nsites: {dc1: [n1, n2], dc3: [arb, proxy]}\n", 2, 1},
	} {
		s, err := ParseSpecYAML([]byte("name: x\nprovider: hosts\nflavor: mariadb\nproxy: haproxy\n" + c.yaml))
		if err == nil {
			s.Defaults()
			err = s.Validate()
		}
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		aux := s.AuxNodes()
		if h, slot := s.AuxHostOf(len(aux) - 1); h != c.host || slot != c.slot {
			t.Errorf("%q: proxy on host %d slot %d, want host %d slot %d", c.yaml, h, slot, c.host, c.slot)
		}
	}
}
