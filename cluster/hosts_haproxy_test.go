package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/proxy"
	"github.com/habench/habench/topology"
)

// HAProxy on a host binds its endpoints to the host's address when it is an IP address,
// to all the host's addresses when it is a name (which the host may resolve to a loopback
// address of its own); its check server listens on 127.0.0.1 there either way.
func TestHostHAProxyEndpoints(t *testing.T) {
	for _, c := range []struct{ host, write, stats string }{
		{"198.18.1.11", "198.18.1.11:23307", "198.18.1.11:23309"},
		{"db1.example", ":23307", ":23309"},
	} {
		px := &Node{Name: topology.ProxyName, Role: topology.RoleProxy, Program: topology.HAProxy, Host: c.host, Port: 23307}
		cl := &Cluster{Name: "hp", Spec: topology.Spec{Name: "hp", Kind: topology.Galera, Nodes: 2,
			Proxy: topology.ProxySpec{Type: topology.HAProxy, CheckInterval: time.Second, Fall: 3, Rise: 2, Read: new(bool)}},
			Aux: []*Node{px}}
		backends := []proxy.Backend{{Name: "n1", Host: "198.18.1.11", Port: 23306}, {Name: "n2", Host: "198.18.1.12", Port: 23306}}
		cfg := hostHAProxyEndpoints(cl, px, backends)
		if cfg.Write != c.write || cfg.Stats != c.stats || cfg.Check != "127.0.0.1:23310" {
			t.Errorf("host %s: write %q stats %q check %q, want %q %q 127.0.0.1:23310", c.host, cfg.Write, cfg.Stats, cfg.Check, c.write, c.stats)
		}
		text, err := proxy.HAProxyText(cfg)
		if err != nil || !strings.Contains(text, "bind "+c.write+"\n") {
			t.Errorf("host %s: %v\n%s", c.host, err, text)
		}
	}
}
