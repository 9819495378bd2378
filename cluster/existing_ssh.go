package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// sshHosts caches one *host.SSH per set of parameters, so every Cluster.Host call for a
// node returns the same value (and the process keeps one master connection per host).
var sshHosts sync.Map // string -> *host.SSH

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
	h := &host.SSH{Dest: dest, User: sp.User, Port: sp.Port, Identity: sp.Identity, Config: sp.Config, Options: sp.Options}
	if NetworkGuard() {
		h.Check = guardSSH
	}
	key := fmt.Sprintf("%q %q %d %q %q %q %v", h.Dest, h.User, h.Port, h.Identity, h.Config, h.Options, h.Check != nil)
	v, _ := sshHosts.LoadOrStore(key, h)
	return v.(*host.SSH)
}

// guardSSH is the test harness's network guard for SSH: the destination must resolve, by
// the ssh configuration alone (ssh -G), to an address CheckDestination allows, directly.
func guardSSH(r host.Resolved) error {
	if r.Proxy != "" {
		return fmt.Errorf("%s: refused under %s=1 (no proxies)", r.Proxy, NetworkGuardEnv)
	}
	if net.ParseIP(r.HostName) == nil {
		return fmt.Errorf("ssh host name %q: want an IP address: under %s=1 (the test harness's network guard) habench resolves no names", r.HostName, NetworkGuardEnv)
	}
	return CheckDestination(r.HostName)
}

// absSSHSpec returns sp with ~/ and relative paths of Identity and Config made absolute
// (a registration is used from any directory), checking that the files exist. Errors are
// *topology.FieldError on ssh.identity or ssh.config.
func absSSHSpec(sp *topology.SSHSpec) (*topology.SSHSpec, error) {
	if sp == nil {
		return nil, nil
	}
	out := *sp
	out.Hosts = append([]string(nil), sp.Hosts...)
	out.Options = append([]string(nil), sp.Options...)
	for _, f := range []struct {
		field string
		p     *string
	}{{"ssh.identity", &out.Identity}, {"ssh.config", &out.Config}} {
		if *f.p == "" {
			continue
		}
		p := *f.p
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, &topology.FieldError{Field: f.field, Value: p, Reason: err.Error()}
			}
			p = filepath.Join(home, rest)
		}
		p, err := filepath.Abs(p)
		if err != nil {
			return nil, &topology.FieldError{Field: f.field, Value: *f.p, Reason: err.Error()}
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return nil, &topology.FieldError{Field: f.field, Value: *f.p, Reason: "no such file"}
		}
		*f.p = p
	}
	return &out, nil
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
