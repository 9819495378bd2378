package cluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/habench/habench/proxy"
	"github.com/habench/habench/topology"
)

// Proxy returns c's proxy member (topology.ProxySpec, the aux node topology.ProxyName),
// or nil when c has none.
func (c *Cluster) Proxy() *Node {
	n := c.Member(topology.ProxyName)
	if n == nil || n.Role != topology.RoleProxy {
		return nil
	}
	return n
}

// ProxyPort returns the port of the proxy's endpoint called name (one of its
// topology.ProxyDef.Ports: "write", "read", "stats", "check" for HAProxy), counted from
// the proxy member's Port; 0 when c has no proxy or the proxy no such endpoint.
func (c *Cluster) ProxyPort(name string) int {
	n := c.Proxy()
	if n == nil {
		return 0
	}
	d := topology.ProxyOf(c.Spec.Proxy.Type)
	if d == nil {
		return 0
	}
	i := slices.Index(d.Ports, name)
	if i < 0 {
		return 0
	}
	return n.Port + i
}

// ProxyWriter is the node c's proxy's write endpoint sends connections to now
// (proxy.WriteServer of ProxyState), nil when c has no proxy, none is up there, or the
// proxy cannot say.
func (c *Cluster) ProxyWriter(ctx context.Context) *Node {
	ss, err := c.ProxyState(ctx)
	if err != nil {
		return nil
	}
	return c.Node(proxy.WriteServer(ss))
}

// ProxyState reads c's proxy's servers' state now (its Program's State). Error: c has no
// proxy, its program cannot say, or the proxy does not answer.
func (c *Cluster) ProxyState(ctx context.Context) ([]proxy.Server, error) {
	n := c.Proxy()
	if n == nil {
		return nil, fmt.Errorf("cluster %s has no proxy", c.Name)
	}
	p, err := program(n)
	if err != nil {
		return nil, err
	}
	if p.State == nil {
		return nil, fmt.Errorf("cluster %s: proxy %s cannot tell its servers' state", c.Name, c.Spec.Proxy.Type)
	}
	return p.State(ctx, c, n)
}
