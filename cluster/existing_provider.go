package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// existingProvider is a cluster somebody else runs, registered with `habench register`
// (Store.Register, existing_register.go): habench connects to its servers as the
// registered user; with an ssh: section it also reaches their hosts (tc for links, /proc
// for host metrics, and the section's fault commands to kill, stop and start a server).
// It never deploys, restarts for knobs, promotes, rewrites option files or destroys
// servers.
type existingProvider struct{}

// Provide registers the servers spec's dsns name (Store.Register).
func (existingProvider) Provide(ctx context.Context, s *Store, spec topology.Spec) (*Cluster, error) {
	return s.Register(ctx, spec)
}

func init() { RegisterProvider(existingProvider{}) }

func (existingProvider) Name() string   { return topology.ProviderExisting }
func (existingProvider) Deployed() bool { return false }

const noSSHWhy = "it has no ssh: access to its hosts (register it with --ssh, or ssh: in the file)"

func (existingProvider) Why(c *Cluster, op Op) string {
	switch op {
	case OpStartNode, OpStopNode, OpKillNode:
		if c.Spec.SSH == nil {
			return noSSHWhy + ": faults run the ssh: section's commands on them"
		}
		return ""
	case OpLinks:
		if c.Spec.SSH == nil {
			return noSSHWhy + ": links are impaired with tc over SSH"
		}
		return ""
	case OpHostAccess:
		if c.Spec.SSH == nil {
			return noSSHWhy
		}
		return ""
	case OpRestartNode:
		return "its servers are not habench's to restart (knobs are limited to what SET GLOBAL changes; habench fault restart runs the ssh: section's stop and start)"
	}
	return "not on servers it does not run"
}

// AdminDSN is the registered user over TCP through the guarded dialer.
func (existingProvider) AdminDSN(c *Cluster, n *Node) string {
	return guardedDSN(n.Host, n.Port, c.User, c.Password)
}

// Host is the node's host over SSH, nil without an ssh: section.
func (existingProvider) Host(c *Cluster, n *Node) host.Host {
	if h := c.sshHost(n); h != nil {
		return h
	}
	return nil
}

// HostName is the host's own name (nodes whose hosts have the same name are one machine).
func (p existingProvider) HostName(c *Cluster, n *Node) string {
	if h := p.Host(c, n); h != nil {
		return h.Name()
	}
	return n.Host
}

// NodeRunning: habench does not run the process, so it cannot tell.
func (existingProvider) NodeRunning(*Cluster, *Node) (bool, bool) { return false, false }

func (existingProvider) Links(c *Cluster) LinkAccess {
	if c.Spec.SSH != nil {
		return LinksSSH
	}
	return LinksNone
}

func (existingProvider) NetworkDescription(*Cluster) string {
	return "existing cluster: its network is not habench's, no impairment"
}

// StopNode runs the ssh: section's stop command on the node's host and waits (30 s)
// until the server refuses connections.
func (p existingProvider) StopNode(ctx context.Context, _ *Store, c *Cluster, n *Node) error {
	return p.faultCommand(ctx, c, n, "stop")
}

// KillNode runs the ssh: section's kill command and waits until the server is gone.
func (p existingProvider) KillNode(ctx context.Context, _ *Store, c *Cluster, n *Node) error {
	return p.faultCommand(ctx, c, n, "kill")
}

// StartNode runs the ssh: section's start command and waits (90 s) until the server
// accepts connections.
func (p existingProvider) StartNode(ctx context.Context, _ *Store, c *Cluster, n *Node) error {
	return p.faultCommand(ctx, c, n, "start")
}

// faultCommand runs step's command of the ssh: section (topology.FaultCommands, the
// defaults where empty) on n's host, then waits for the server to go away or come back.
func (p existingProvider) faultCommand(ctx context.Context, c *Cluster, n *Node, step string) error {
	h := p.Host(c, n)
	if h == nil || c.Spec.SSH == nil {
		op := map[string]Op{"stop": OpStopNode, "kill": OpKillNode, "start": OpStartNode}[step]
		return c.Refuse(op, step+" node "+n.Name)
	}
	cmd := c.Spec.SSH.Faults.Command(step)
	if _, err := h.Run(ctx, "sh", "-c", cmd); err != nil {
		return fmt.Errorf("node %s (%s): %s: %w", n.Name, h.Name(), cmd, err)
	}
	return WaitServer(ctx, c, n, step == "start")
}

func (existingProvider) ReadOptionFile(c *Cluster, n *Node) (string, error) {
	return "", c.Refuse(OpOptionFiles, "")
}

func (existingProvider) WriteOptionFile(c *Cluster, n *Node, _ string) error {
	return c.Refuse(OpOptionFiles, "")
}

// Destroy forgets the registration; the servers are not touched.
func (existingProvider) Destroy(_ context.Context, s *Store, c *Cluster) error {
	return s.forgetState(c)
}

// WaitServer waits until n's server accepts connections (up) or refuses them (down):
// up to 90 s for up, 30 s for down. The error names the node and the limit.
func WaitServer(ctx context.Context, c *Cluster, n *Node, up bool) error {
	limit := 30 * time.Second
	if up {
		limit = 90 * time.Second
	}
	deadline := time.Now().Add(limit)
	for {
		db, err := c.OpenAdmin(n)
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err = db.PingContext(pctx)
			cancel()
			db.Close()
		}
		if (err == nil) == up {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			state := map[bool]string{true: "accept connections", false: "go away"}[up]
			return fmt.Errorf("node %s: the server did not %s within %v", n.Name, state, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
