package cluster

import (
	"context"
	"fmt"

	"github.com/habench/habench/host"
)

// sshHost returns node n's SSH host, or nil when the cluster has no ssh: access.
func (c *Cluster) sshHost(n *Node) *host.SSH {
	sp := c.Spec.SSH
	if sp == nil {
		return nil
	}
	dest := n.Host
	for i, o := range c.Nodes {
		if o == n && i < len(sp.Hosts) {
			dest = sp.Hosts[i]
		}
	}
	return sshHostFor(sp, dest)
}

// CheckSSH connects to every node's host over SSH (a master connection each, kept for
// the process) and runs `true`: before anything changes on any host, a host that cannot
// be reached or a refused key is one error naming the node and the host. nil without
// ssh: access or for a sandbox.
func (c *Cluster) CheckSSH(ctx context.Context) error {
	if c.Spec.SSH == nil {
		return nil
	}
	for _, n := range c.Nodes {
		h := c.sshHost(n)
		if _, err := h.Run(ctx, "true"); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return nil
}
