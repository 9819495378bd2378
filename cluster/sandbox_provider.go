package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/topology"
)

// sandboxProvider is the local sandbox: servers habench starts on this machine, one
// network namespace per node (NetNamespaces) or loopback ports (NetLoopback); Store.Deploy
// makes them. It offers every operation; links need the namespaces.
type sandboxProvider struct{}

func init() { RegisterProvider(sandboxProvider{}) }

func (sandboxProvider) Name() string   { return topology.ProviderSandbox }
func (sandboxProvider) Deployed() bool { return true }

func (sandboxProvider) Why(c *Cluster, op Op) string {
	if op == OpLinks && c.Network != NetNamespaces {
		return fmt.Sprintf("network %q: its nodes share 127.0.0.1, there is no link between them to impair (links need network %q, which needs root)", c.Network, NetNamespaces)
	}
	return ""
}

// AdminDSN is root over the node's unix socket (no network).
func (sandboxProvider) AdminDSN(_ *Cluster, n *Node) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "unix"
	cfg.Addr = n.Socket
	cfg.Timeout = 5 * time.Second
	cfg.InterpolateParams = true
	return cfg.FormatDSN()
}

// Host is this machine, inside the node's network namespace if it has one.
func (sandboxProvider) Host(_ *Cluster, n *Node) host.Host { return host.Local{Netns: n.Netns} }

// HostName is "local": every sandbox node shares this machine, whatever its namespace.
func (sandboxProvider) HostName(*Cluster, *Node) string { return "local" }

func (sandboxProvider) NodeRunning(_ *Cluster, n *Node) (bool, bool) { return n.Running(), true }

func (sandboxProvider) Links(c *Cluster) LinkAccess {
	if c.Network == NetNamespaces {
		return LinksNamespaces
	}
	return LinksNone
}

func (sandboxProvider) NetworkDescription(c *Cluster) string {
	if c.Network == NetNamespaces {
		return fmt.Sprintf("one network namespace per node on bridge hb-%s, 10.233.%d.0/24", c.Name, c.SubnetIdx)
	}
	return "all nodes on 127.0.0.1, no impairment"
}

// StopNode: SIGTERM, then SIGKILL after s.StopGrace (default DefaultStopGrace).
func (sandboxProvider) StopNode(_ context.Context, s *Store, _ *Cluster, n *Node) error {
	grace := s.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	return stopProcess(n, grace)
}

// KillNode: SIGKILL, checked 10 s later.
func (sandboxProvider) KillNode(_ context.Context, _ *Store, _ *Cluster, n *Node) error {
	if !signalAndWait(n.PID, n.StartTicks, syscall.SIGKILL, 10*time.Second) {
		return fmt.Errorf("node %s: pid %d still running 10 s after SIGKILL", n.Name, n.PID)
	}
	return nil
}

// StartNode starts the node's process with its kind's start arguments and rejoins it
// (Store.StartNode), recording the new process in the state file.
func (sandboxProvider) StartNode(ctx context.Context, s *Store, c *Cluster, n *Node) error {
	if ourProcess(n.PID, n.StartTicks) {
		return nil
	}
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = 90 * time.Second
	}
	if n.IsAux() {
		err := s.startAux(ctx, c, n)
		if serr := c.save(); serr != nil {
			err = errors.Join(err, serr)
		}
		return err
	}
	return s.startAndRejoin(ctx, c, n, s.startNode)
}

func (sandboxProvider) ReadOptionFile(c *Cluster, n *Node) (string, error) {
	b, err := os.ReadFile(c.OptionFile(n))
	return string(b), err
}

// WriteOptionFile replaces the option file atomically.
func (sandboxProvider) WriteOptionFile(c *Cluster, n *Node, content string) error {
	return atomicfile.WriteFile(c.OptionFile(n), []byte(content), 0o644)
}

// Provide deploys spec's servers on this machine (Store.Deploy).
func (sandboxProvider) Provide(ctx context.Context, s *Store, spec topology.Spec) (*Cluster, error) {
	return s.Deploy(ctx, spec)
}

// Destroy kills the servers and removes the network and directories (Store.destroy).
func (sandboxProvider) Destroy(ctx context.Context, s *Store, c *Cluster) error {
	return s.destroy(ctx, c)
}
