package cluster

import (
	"context"
	"fmt"

	"github.com/habench/habench/host"
	"github.com/habench/habench/proxy"
	"github.com/habench/habench/topology"
)

// Program runs the process of an aux node (Cluster.Aux: a member that is not a SQL
// server, like a Galera arbitrator). A kind that has aux nodes registers their Program
// from its own file (RegisterProgram); the sandbox gives every aux node an address (its
// own network namespace in netns mode), a directory, and a place in links, partitions
// and faults, and calls the Program to start it and to describe its health.
type Program struct {
	// Start starts n's process (in n.Netns, detached in its own session so that it
	// outlives habench), records n.PID and n.StartTicks, and returns once n is part of
	// the topology (an arbitrator counted in the cluster size). Required.
	Start func(ctx context.Context, s *Store, c *Cluster, n *Node) error
	// Health is n's one-line health for status, for a running process (nil: "running").
	Health func(ctx context.Context, c *Cluster, n *Node) string
	// State, for a proxy, reads its servers' state now: one proxy.Server per endpoint
	// ("write", "read") and node, in the endpoint's order (nil func: not a proxy). Error:
	// the proxy cannot be asked. A run reads it every 100 ms; it should answer within that.
	State func(ctx context.Context, c *Cluster, n *Node) ([]proxy.Server, error)
	// Check says what the program lacks on this machine for spec (a proxy's binary not
	// found), before anything of spec is deployed (nil: nothing to check). Error: one
	// line naming the field and its value, a *topology.FieldError.
	Check func(spec topology.Spec) error
	// Config, for a proxy, is its configuration in effect: the file it was started with,
	// or before a start the one it would be started with (nil: it has none to show).
	Config func(c *Cluster, n *Node) (string, error)
	// Version, for a proxy, is its program's own words on its version ("HAProxy version
	// 2.6.12 ..."), "" when it cannot be asked (nil: never).
	Version func(c *Cluster) string
	// OnHost, for a program that also runs on the user's hosts (provider hosts), checks on
	// aux member n's host h, before anything of the cluster is made on any host, what the
	// program needs there besides a free directory (its binary: a *topology.FieldError
	// naming the host when it is not there), and returns the TCP ports it will listen on
	// there, which the deploy checks are free. It may record what it found in c's state
	// (c.Hosts.Programs). nil: the program does not run on hosts, and a deploy there is
	// refused before anything is made.
	OnHost func(ctx context.Context, c *Cluster, n *Node, h host.Host) (ports []int, err error)
}

var programs = map[string]*Program{}

// RegisterProgram adds the Program called name (topology.AuxNode.Program). A name
// registered twice, or one without Start, is refused and recorded in RegistrationErrors.
func RegisterProgram(name string, p Program) {
	if _, dup := programs[name]; dup || p.Start == nil {
		kindOpsErrs = append(kindOpsErrs, fmt.Sprintf("program %q: registered twice or without Start", name))
		return
	}
	programs[name] = &p
}

// program returns n's Program, or an error naming the node and the program.
func program(n *Node) (*Program, error) {
	p, ok := programs[n.Program]
	if !ok {
		return nil, fmt.Errorf("node %s: program %q is not part of this habench", n.Name, n.Program)
	}
	return p, nil
}

// checkPrograms runs the Check of every aux member's Program of spec (its kind's and its
// proxy's): a deploy calls it before it makes anything. Error: the first Check's, or a
// program that is not part of this habench.
func checkPrograms(spec topology.Spec) error {
	for _, a := range spec.AuxNodes() {
		p, ok := programs[a.Program]
		if !ok {
			return fmt.Errorf("member %s: program %q is not part of this habench", a.Name, a.Program)
		}
		if p.Check != nil {
			if err := p.Check(spec); err != nil {
				return err
			}
		}
	}
	return nil
}

// Members returns every member of c: its SQL servers (Nodes), then its aux nodes.
func (c *Cluster) Members() []*Node {
	return append(append([]*Node(nil), c.Nodes...), c.Aux...)
}

// Member returns the member called name, SQL server or aux node, or nil.
func (c *Cluster) Member(name string) *Node {
	for _, n := range c.Members() {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// IsAux reports whether n is an aux node (not a SQL server).
func (n *Node) IsAux() bool { return n.Program != "" }

// startAux starts aux node n with its Program.
func (s *Store) startAux(ctx context.Context, c *Cluster, n *Node) error {
	p, err := program(n)
	if err != nil {
		return err
	}
	if err := p.Start(ctx, s, c, n); err != nil {
		return fmt.Errorf("node %s (%s): %w", n.Name, n.Program, err)
	}
	return nil
}

// auxHealth is Health for an aux node.
func (c *Cluster) auxHealth(ctx context.Context, n *Node) string {
	if running, _ := c.NodeRunning(n); !running {
		return n.Program + " not running"
	}
	p, err := program(n)
	if err != nil {
		return err.Error()
	}
	if p.Health == nil {
		return "running"
	}
	return p.Health(ctx, c, n)
}
