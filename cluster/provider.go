package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// Op is an operation on a cluster's servers that a provider may or may not offer. Its
// text reads after "habench does not" / "cannot" in an *UnsupportedError.
type Op string

// The operations callers ask a provider for.
const (
	// OpStartNode, OpStopNode, OpKillNode and OpRestartNode act on a node's server process.
	OpStartNode   Op = "start node"
	OpStopNode    Op = "stop node"
	OpKillNode    Op = "kill node"
	OpRestartNode Op = "restart node"
	// OpPromote makes a replica the source (Store.Promote): it rewrites option files.
	OpPromote Op = "promote node"
	// OpOptionFiles reads and writes a node's option file (knobs that need a restart).
	OpOptionFiles Op = "read or write option files"
	// OpLinks impairs the links between nodes (delay, loss, partitions).
	OpLinks Op = "impair links"
	// OpHostAccess runs commands and reads files on a node's host (tc, /proc).
	OpHostAccess Op = "reach the nodes' hosts"
)

// LinkAccess is how a provider impairs the links between a cluster's nodes.
type LinkAccess string

const (
	// LinksNone: the provider cannot impair links (Why(OpLinks) says why).
	LinksNone LinkAccess = ""
	// LinksNamespaces: one network namespace per node on this machine (kernel netem or
	// the userspace link, links/standing.go).
	LinksNamespaces LinkAccess = "namespaces"
	// LinksSSH: tc on each node's host over SSH (the tc-ssh backend, links/remote.go).
	LinksSSH LinkAccess = "ssh"
)

// Provider is what provides the servers of a cluster: the local sandbox (namespaces or
// loopback ports on this machine, sandbox_provider.go), the user's hosts over SSH
// (hosts_provider.go), a cluster somebody else runs (registered, existing_provider.go).
// A provider's files are named NAME_*.go, and NAME_provider.go calls RegisterProvider
// from init; what providers share lives in files named after what it does. Callers never ask which provider a cluster has: they ask
// it for an operation, and an operation it does not offer is an *UnsupportedError made
// by Refuse. s is the store of the cluster's state directory (stop grace, ready timeout,
// logger).
type Provider interface {
	// Name is the provider's name in state files and specs (topology.Provider*).
	Name() string
	// Why is "" when the provider offers op on c, else the reason it does not (a clause
	// that completes "cluster NAME: habench does not OP: ...").
	Why(c *Cluster, op Op) string
	// Deployed reports whether habench made c's servers: then their processes,
	// directories and option files are habench's, the roles in c's state file are the
	// ones habench set (a promote updates them), and habench's own server options
	// (SandboxServerOptions) were part of each node's option file.
	Deployed() bool
	// AdminDSN is a go-sql-driver DSN with administrative rights on node n.
	AdminDSN(c *Cluster, n *Node) string
	// Host is access to the machine node n runs on; nil when the provider has none.
	Host(c *Cluster, n *Node) host.Host
	// HostName is the name node n's machine-wide samples carry: nodes with the same
	// HostName share one machine (every local sandbox node is "local").
	HostName(c *Cluster, n *Node) string
	// NodeRunning reports whether node n's server process runs; known is false when the
	// provider does not run the process (it cannot tell: ask the server).
	NodeRunning(c *Cluster, n *Node) (running, known bool)
	// Links says how c's links are impaired (LinksNone when they cannot be).
	Links(c *Cluster) LinkAccess
	// NetworkDescription is one line for the manifest on c's network.
	NetworkDescription(c *Cluster) string
	// StopNode shuts node n down cleanly (*StopEscalatedError when it took SIGKILL),
	// KillNode crashes it, StartNode starts it and waits until it is back in its topology.
	StopNode(ctx context.Context, s *Store, c *Cluster, n *Node) error
	KillNode(ctx context.Context, s *Store, c *Cluster, n *Node) error
	StartNode(ctx context.Context, s *Store, c *Cluster, n *Node) error
	// ReadOptionFile and WriteOptionFile read and replace node n's option file (read at
	// its next start).
	ReadOptionFile(c *Cluster, n *Node) (string, error)
	WriteOptionFile(c *Cluster, n *Node, content string) error
	// Provide makes the cluster spec describes, in s's state directory: deploys its
	// servers and waits until the topology is healthy (a sandbox), or connects to them and
	// records what it found (a registration). On error nothing is left behind; bad input
	// is a *topology.FieldError.
	Provide(ctx context.Context, s *Store, spec topology.Spec) (*Cluster, error)
	// Destroy removes what habench made for c (for a registration: the registration).
	Destroy(ctx context.Context, s *Store, c *Cluster) error
}

// ProviderOf returns the provider a spec names (spec.Provider; "" is the local sandbox),
// or a *topology.FieldError on "provider" for a name no provider has.
func ProviderOf(spec topology.Spec) (Provider, error) {
	name := spec.Provider
	if name == "" {
		name = topology.ProviderSandbox
	}
	p, ok := providers[name]
	if !ok {
		return nil, &topology.FieldError{Field: "provider", Value: spec.Provider, Reason: "want one of " + strings.Join(ProviderNames(), ", ")}
	}
	return p, nil
}

// UnsupportedError is what every provider returns for an operation it does not offer:
// the one place that says so. It is bad input (the caller asked for something the
// cluster cannot do), and unwraps to a *topology.FieldError on "cluster".
type UnsupportedError struct {
	Cluster  string
	Provider string
	Op       Op
	// What is the operation as the caller asked for it ("stop node n2"); Op's text when "".
	What string
	Why  string
}

func (e *UnsupportedError) Error() string { return e.field().Error() }

func (e *UnsupportedError) field() *topology.FieldError {
	what := e.What
	if what == "" {
		what = string(e.Op)
	}
	return &topology.FieldError{Field: "cluster", Value: e.Cluster, Reason: fmt.Sprintf("%s: habench does not %s: %s", e.Provider, what, e.Why)}
}

// Unwrap makes errors.As(err, **topology.FieldError) true: callers report it as bad input.
func (e *UnsupportedError) Unwrap() error { return e.field() }

// providers is the registry: name -> provider.
var providers = map[string]Provider{}

// RegisterProvider adds p under p.Name(); called from each provider file's init. A second
// provider of the same name is a programming error, kept for TestProvidersRegistered.
func RegisterProvider(p Provider) {
	if _, dup := providers[p.Name()]; dup {
		providerErrs = append(providerErrs, "provider "+p.Name()+" registered twice")
		return
	}
	providers[p.Name()] = p
}

var providerErrs []string

// ProviderNames lists the registered providers, sorted.
func ProviderNames() []string {
	var out []string
	for n := range providers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ProviderRegistrationErrors lists registrations that were refused (empty when all is well).
func ProviderRegistrationErrors() []string { return slices.Clone(providerErrs) }

// Provider returns the provider of c (its state file's "provider"; "" is the local
// sandbox, as in state files written before providers were named). A name no provider
// has (a state file from a newer habench) gets a provider that refuses everything.
func (c *Cluster) Provider() Provider {
	name := c.ProviderName
	if name == "" {
		name = topology.ProviderSandbox
	}
	if p, ok := providers[name]; ok {
		return p
	}
	return unknownProvider{name: name}
}

// Refuse returns nil when c's provider offers op, else its *UnsupportedError; what is the
// operation as the user asked for it ("stop node n2"), op's text when "".
func (c *Cluster) Refuse(op Op, what string) error {
	p := c.Provider()
	why := p.Why(c, op)
	if why == "" {
		return nil
	}
	return &UnsupportedError{Cluster: c.Name, Provider: providerNoun(p.Name()), Op: op, What: what, Why: why}
}

// Offers reports whether c's provider offers op.
func (c *Cluster) Offers(op Op) bool { return c.Provider().Why(c, op) == "" }

// Deployed reports whether habench made c's servers (Provider.Deployed).
func (c *Cluster) Deployed() bool { return c.Provider().Deployed() }

// NodeRunning reports whether node n's server runs, when c's provider knows (Provider.NodeRunning).
func (c *Cluster) NodeRunning(n *Node) (running, known bool) {
	return c.Provider().NodeRunning(c, n)
}

// NodeDown reports whether node n's server is known not to run (a provider that does not
// run the process never knows that: false).
func (c *Cluster) NodeDown(n *Node) bool {
	running, known := c.NodeRunning(n)
	return known && !running
}

// Links says how c's links are impaired (Provider.Links).
func (c *Cluster) Links() LinkAccess { return c.Provider().Links(c) }

// providerNoun names a provider in messages.
func providerNoun(name string) string {
	switch name {
	case topology.ProviderExisting:
		return "an existing cluster (registered with habench register, not deployed by habench)"
	case topology.ProviderSandbox:
		return "a local sandbox"
	}
	return "provider " + name
}

// unknownProvider stands for a provider name this habench does not know: it refuses
// every operation and destroys nothing but the state directory.
type unknownProvider struct{ name string }

func (u unknownProvider) Name() string { return u.name }
func (u unknownProvider) Why(*Cluster, Op) string {
	return fmt.Sprintf("this habench knows providers %s only", strings.Join(ProviderNames(), ", "))
}
func (unknownProvider) Deployed() bool { return false }
func (unknownProvider) AdminDSN(c *Cluster, n *Node) string {
	return guardedDSN(n.Host, n.Port, c.User, c.Password)
}
func (unknownProvider) Host(*Cluster, *Node) host.Host                 { return nil }
func (unknownProvider) HostName(_ *Cluster, n *Node) string            { return n.Host }
func (unknownProvider) NodeRunning(*Cluster, *Node) (bool, bool)       { return false, false }
func (unknownProvider) Links(*Cluster) LinkAccess                      { return LinksNone }
func (u unknownProvider) NetworkDescription(*Cluster) string           { return "provider " + u.name }
func (unknownProvider) ReadOptionFile(*Cluster, *Node) (string, error) { return "", nil }
func (u unknownProvider) refuse(c *Cluster, op Op, n *Node) error {
	return &UnsupportedError{Cluster: c.Name, Provider: providerNoun(u.name), Op: op, What: string(op) + " " + n.Name, Why: u.Why(c, op)}
}
func (u unknownProvider) WriteOptionFile(c *Cluster, n *Node, _ string) error {
	return u.refuse(c, OpOptionFiles, n)
}
func (u unknownProvider) StopNode(_ context.Context, _ *Store, c *Cluster, n *Node) error {
	return u.refuse(c, OpStopNode, n)
}
func (u unknownProvider) KillNode(_ context.Context, _ *Store, c *Cluster, n *Node) error {
	return u.refuse(c, OpKillNode, n)
}
func (u unknownProvider) StartNode(_ context.Context, _ *Store, c *Cluster, n *Node) error {
	return u.refuse(c, OpStartNode, n)
}
func (u unknownProvider) Provide(context.Context, *Store, topology.Spec) (*Cluster, error) {
	return nil, &topology.FieldError{Field: "provider", Value: u.name, Reason: u.Why(nil, "")}
}
func (unknownProvider) Destroy(_ context.Context, s *Store, c *Cluster) error {
	return s.forgetState(c)
}

// startAndRejoin starts node n's server with start (the provider's way of starting a
// process, given the kind's start arguments: KindOps.StartArgs), then rejoins it to its
// topology (KindOps.Rejoin, e.g. a group member's START GROUP_REPLICATION), records the
// new process in the state file and runs KindOps.Rejoined. The first error is returned,
// joined with a failed state file write.
func (s *Store) startAndRejoin(ctx context.Context, c *Cluster, n *Node, start func(context.Context, *Cluster, *Node, ...string) error) error {
	ops := c.ops()
	var extra []string
	if ops.StartArgs != nil {
		var err error
		if extra, err = ops.StartArgs(c, n); err != nil {
			return err
		}
	}
	err := start(ctx, c, n, extra...)
	if err == nil && ops.Rejoin != nil {
		err = ops.Rejoin(ctx, s, c, n)
	}
	if serr := c.save(); serr != nil {
		err = errors.Join(err, serr)
	}
	if err == nil && ops.Rejoined != nil {
		err = ops.Rejoined(ctx, s, c, n)
	}
	return err
}
