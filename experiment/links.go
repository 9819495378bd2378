package experiment

import (
	"fmt"
	"net/netip"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
)

// LinkEndpoints returns the userspace-link endpoints of a sandbox deployed with one network
// namespace per node. Errors: a loopback-mode cluster (its nodes share 127.0.0.1, there is
// no link to impair) or a node without an IPv4 host address.
func LinkEndpoints(c *cluster.Cluster) ([]netem.Endpoint, error) {
	if c.Network != cluster.NetNamespaces {
		return nil, fmt.Errorf("cluster %s: network %q: impairments need network %q", c.Name, c.Network, cluster.NetNamespaces)
	}
	var eps []netem.Endpoint
	for _, n := range c.Nodes {
		a, err := netip.ParseAddr(n.Host)
		if err != nil || !a.Is4() || n.Netns == "" {
			return nil, fmt.Errorf("cluster %s node %s: host %q netns %q: want an IPv4 address in a namespace", c.Name, n.Name, n.Host, n.Netns)
		}
		eps = append(eps, netem.Endpoint{Name: n.Name, Netns: n.Netns, Addr: a})
	}
	return eps, nil
}
