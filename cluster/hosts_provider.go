package cluster

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// hostsProvider deploys sandboxes on the user's own hosts over SSH (spec provider hosts,
// `habench deploy --hosts db1,db2,db3`): node i runs on hosts[(i-1) mod len(hosts)] with
// the server the host already has, in its own directory HOST_DIR/CLUSTER/NODE and on its
// own port; what habench creates on a host is recorded on that host first
// (HostRecord), and Destroy removes exactly that. Deploy and destroy: hosts_deploy.go; the
// host-side primitives: hosts_node.go.
type hostsProvider struct{}

func init() { RegisterProvider(hostsProvider{}) }

// HostsState is what the hosts provider keeps in a cluster's state file.
type HostsState struct {
	// HostDir is habench's directory on every host as the host sees it
	// (topology.HostsSpec.HostDir, under the root filesystem for a rootfs installation).
	HostDir string `json:"host_dir"`
	// Dests are the ssh destinations of the members, in Cluster.Members order (the SQL
	// nodes, then the aux nodes).
	Dests []string `json:"dests"`
	// AdminUser and AdminPassword are the administrative account habench creates on every
	// node (random password, this file only): habench's SQL reaches the nodes over TCP.
	AdminUser     string `json:"admin_user"`
	AdminPassword string `json:"admin_password"`
	// Servers are each host's server and its version (`mysqld --version`), by ssh destination.
	Servers map[string]string `json:"servers,omitempty"`
	// Programs are the programs aux members run on their hosts (a proxy's haproxy), as
	// found there before the deploy, by member name.
	Programs map[string]HostProgram `json:"programs,omitempty"`
}

func (hostsProvider) Name() string   { return topology.ProviderHosts }
func (hostsProvider) Deployed() bool { return true }

func (hostsProvider) Why(c *Cluster, op Op) string {
	switch op {
	case OpPromote:
		return "not on hosts yet (a promote rewrites option files on this machine)"
	}
	return ""
}

// AdminDSN is the cluster's admin account over TCP through the guarded dialer.
func (hostsProvider) AdminDSN(c *Cluster, n *Node) string {
	if c.Hosts == nil {
		return guardedDSN(n.Host, n.Port, c.User, c.Password)
	}
	return guardedDSN(n.Host, n.Port, c.Hosts.AdminUser, c.Hosts.AdminPassword)
}

// Host is node n's host over SSH (one master connection per host for the process).
func (hostsProvider) Host(c *Cluster, n *Node) host.Host {
	if h := c.hostsSSH(n); h != nil {
		return h
	}
	return nil
}

// HostName is the node's ssh host ("ssh db1"): nodes placed on one host share it.
func (p hostsProvider) HostName(c *Cluster, n *Node) string {
	if h := c.hostsSSH(n); h != nil {
		return h.Name()
	}
	return n.Host
}

// NodeRunning asks the host whether the recorded process still runs: one read of its
// /proc/PID/stat over the host's reader session (known is false when the host cannot be
// reached; a read the host refused, cat's error, means it is gone).
func (hostsProvider) NodeRunning(c *Cluster, n *Node) (bool, bool) {
	h := c.hostsSSH(n)
	if h == nil || n.PID <= 0 {
		return false, h != nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	t, alive, err := hostStat(ctx, h, n.PID)
	if err != nil {
		var gone *host.ExitError
		return false, errors.As(err, &gone)
	}
	return alive && (n.StartTicks == 0 || t == n.StartTicks), true
}

func (hostsProvider) Links(*Cluster) LinkAccess { return LinksSSH }

func (hostsProvider) NetworkDescription(c *Cluster) string {
	var hosts []string
	if c.Spec.IsHosts() {
		hosts = c.Spec.Hosts
	}
	return "the user's hosts over SSH: " + strings.Join(hosts, ", ")
}

// StopNode: SIGTERM on the host, then SIGKILL after s.StopGrace (default DefaultStopGrace).
func (hostsProvider) StopNode(ctx context.Context, s *Store, c *Cluster, n *Node) error {
	grace := s.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	h := c.hostsSSH(n)
	if h == nil {
		return fmt.Errorf("node %s: no host", n.Name)
	}
	if hostSignal(ctx, h, n.PID, n.StartTicks, "TERM", grace) {
		return nil
	}
	if hostSignal(ctx, h, n.PID, n.StartTicks, "KILL", 5*time.Second) {
		return &StopEscalatedError{Node: n.Name, PID: n.PID, Grace: grace}
	}
	return fmt.Errorf("node %s: pid %d on %s survived SIGTERM and SIGKILL", n.Name, n.PID, h.Name())
}

// KillNode: SIGKILL on the host, checked 10 s later.
func (hostsProvider) KillNode(ctx context.Context, _ *Store, c *Cluster, n *Node) error {
	h := c.hostsSSH(n)
	if h == nil {
		return fmt.Errorf("node %s: no host", n.Name)
	}
	if !hostSignal(ctx, h, n.PID, n.StartTicks, "KILL", 10*time.Second) {
		return fmt.Errorf("node %s: pid %d on %s still running 10 s after SIGKILL", n.Name, n.PID, h.Name())
	}
	return nil
}

// StartNode starts the node's server again on its host with its kind's start arguments,
// records the new process (state file and the host's record) and waits until it accepts
// connections and has rejoined its topology.
func (hostsProvider) StartNode(ctx context.Context, s *Store, c *Cluster, n *Node) error {
	h := c.hostsSSH(n)
	if h == nil {
		return fmt.Errorf("node %s: no host", n.Name)
	}
	if hostProcessOurs(ctx, h, n.PID, n.StartTicks) {
		return nil
	}
	if n.IsAux() {
		return s.startAux(ctx, c, n)
	}
	return s.startAndRejoin(ctx, c, n, s.startHostNode)
}

// ReadOptionFile reads the node's my.cnf on its host.
func (hostsProvider) ReadOptionFile(c *Cluster, n *Node) (string, error) {
	h := c.hostsSSH(n)
	if h == nil {
		return "", fmt.Errorf("node %s: no host", n.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := h.ReadFile(ctx, path.Join(n.Dir, "my.cnf"))
	return string(b), err
}

// WriteOptionFile replaces the node's my.cnf on its host atomically.
func (hostsProvider) WriteOptionFile(c *Cluster, n *Node, content string) error {
	h := c.hostsSSH(n)
	if h == nil {
		return fmt.Errorf("node %s: no host", n.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return hostWriteFile(ctx, h, path.Join(n.Dir, "my.cnf"), []byte(content), 0o644)
}

// Provide deploys spec's servers on its hosts (Store.deployHosts).
func (hostsProvider) Provide(ctx context.Context, s *Store, spec topology.Spec) (*Cluster, error) {
	return s.deployHosts(ctx, spec)
}

// Destroy removes, on every host, what the host's records list, then the state directory.
func (hostsProvider) Destroy(ctx context.Context, s *Store, c *Cluster) error {
	return s.destroyHosts(ctx, c)
}

// hostsSSH returns node n's host over SSH: its destination (HostsState.Dests) with the
// spec's ssh: options, the same value on every call; nil when the state has no host for n.
func (c *Cluster) hostsSSH(n *Node) *host.SSH {
	if c.Hosts == nil {
		return nil
	}
	for i, o := range c.Members() {
		if o == n && i < len(c.Hosts.Dests) {
			return sshHostFor(c.Spec.SSH, c.Hosts.Dests[i])
		}
	}
	return nil
}
