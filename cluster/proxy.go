package cluster

import (
	"context"
	"slices"

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

// ProxyWriter is the node c's proxy's write endpoint sends connections to now, nil when c
// has no proxy, none is up there, or the proxy cannot say.
func (c *Cluster) ProxyWriter(ctx context.Context) *Node {
	n := c.Proxy()
	if n == nil {
		return nil
	}
	p, err := program(n)
	if err != nil || p.Writer == nil {
		return nil
	}
	return c.Node(p.Writer(ctx, c, n))
}
