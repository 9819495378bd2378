package links

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
)

// linkAccess is how this package impairs a cluster's links, chosen by c.Links() (linksOf):
// in the nodes' network namespaces on this machine (nsLinks: kernel netem, else the
// userspace link) or with tc on the nodes' hosts over SSH (sshLinks). ApplyStanding,
// Apply, clearStanding, Leftovers and Measure are one code path each that
// asks it for what differs.
type linkAccess interface {
	// size is the number of endpoints (the cluster's members).
	size() int
	// reach checks that every node's host answers; nothing changes.
	reach(ctx context.Context) error
	// ready checks, before anything changes, that spec can be applied as a standing
	// impairment: nothing of an earlier one is left, every host has what it needs.
	ready(ctx context.Context, spec *netem.Spec) error
	// measure measures every directed pair's round trip (spec nil: the plain links).
	measure(ctx context.Context, spec *netem.Spec, samples int, timeout time.Duration) ([]netem.LinkRTT, error)
	// applyStanding applies spec (checked by ready) as c's standing impairment, recording
	// st (its Backend, the link process or the hosts) before anything changes.
	applyStanding(ctx context.Context, c *cluster.Cluster, st *Standing, spec *netem.Spec, lp Process) error
	// applyRun applies spec for a run and measures the achieved round trips (samples
	// handshakes, at most timeout each); the backend's Close removes it. On error nothing
	// is left applied.
	applyRun(ctx context.Context, c *cluster.Cluster, spec *netem.Spec, samples int, timeout time.Duration) (netem.Backend, string, []netem.LinkRTT, error)
	// clearRun removes what a crashed run's record (runLinksFile) names; nothing is
	// recorded in the namespaces (their qdiscs go with clearResidue).
	clearRun() error
	// clearResidue removes what of a standing or crashed impairment is left that no
	// record names (habench's qdiscs on the namespaces' interfaces).
	clearResidue() error
	// leftovers lists what of an impairment is still on the nodes' interfaces or hosts.
	leftovers() []string
}

// linksOf returns how c's links are impaired. Errors: c's provider does not offer links
// (*cluster.UnsupportedError: a loopback sandbox, an existing cluster without ssh:), or
// a node cannot be an endpoint (Endpoints, RemoteEndpoints).
func linksOf(c *cluster.Cluster) (linkAccess, error) {
	if err := c.Refuse(cluster.OpLinks, ""); err != nil {
		return nil, err
	}
	switch c.Links() {
	case cluster.LinksNamespaces:
		eps, err := Endpoints(c)
		if err != nil {
			return nil, err
		}
		return &nsLinks{eps: eps}, nil
	case cluster.LinksSSH:
		eps, err := RemoteEndpoints(c)
		if err != nil {
			return nil, err
		}
		return &sshLinks{c: c, eps: eps}, nil
	}
	return nil, fmt.Errorf("cluster %s: its provider %s impairs links over %q, which this habench cannot do", c.Name, c.Provider().Name(), c.Links())
}

// Measure measures the round trip of every directed pair of c's members, samples
// handshakes each, at most timeout per handshake, with spec's impairments (nil: none)
// for what is requested: from inside the namespaces, or from the nodes' hosts over SSH.
// Errors: as linksOf, or a measurement that failed.
func Measure(ctx context.Context, c *cluster.Cluster, spec *netem.Spec, samples int, timeout time.Duration) ([]netem.LinkRTT, error) {
	la, err := linksOf(c)
	if err != nil {
		return nil, err
	}
	return la.measure(ctx, spec, samples, timeout)
}

// nsLinks: one network namespace per node on this machine.
type nsLinks struct{ eps []netem.Endpoint }

func (l *nsLinks) size() int                   { return len(l.eps) }
func (l *nsLinks) reach(context.Context) error { return nil }

func (l *nsLinks) ready(context.Context, *netem.Spec) error {
	for _, e := range l.eps {
		if found, err := netem.Residue(e); err != nil || len(found) > 0 {
			return fmt.Errorf("node %s: impairments left that clear could not remove (%s%s)", e.Name, strings.Join(found, ", "), errOrEmpty(err))
		}
	}
	return nil
}

func (l *nsLinks) measure(ctx context.Context, spec *netem.Spec, samples int, timeout time.Duration) ([]netem.LinkRTT, error) {
	return netem.MeasureRTT(ctx, l.eps, spec, samples, timeout)
}

// applyStanding: kernel netem qdiscs where the kernel has it, else the userspace link in
// a detached link process started with lp.
func (l *nsLinks) applyStanding(ctx context.Context, c *cluster.Cluster, st *Standing, spec *netem.Spec, lp Process) error {
	if netem.KernelAvailable() == nil {
		st.Backend = netem.BackendKernel
		// Recorded first: a crash between here and the end still leaves clear a record.
		if err := writeStanding(c, st); err != nil {
			return err
		}
		_, err := netem.NewKernel(l.eps, spec)
		return err
	}
	st.Backend = netem.BackendUserspace
	if err := writeStanding(c, st); err != nil {
		return err
	}
	if err := startLinkProcess(ctx, c, st, lp); err != nil {
		return err
	}
	return writeStanding(c, st)
}

func (l *nsLinks) applyRun(ctx context.Context, _ *cluster.Cluster, spec *netem.Spec, samples int, timeout time.Duration) (netem.Backend, string, []netem.LinkRTT, error) {
	return netem.Apply(ctx, l.eps, spec, samples, timeout)
}

func (l *nsLinks) clearRun() error { return nil }

// clearResidue removes habench's qdiscs left on the nodes' interfaces (standing kernel
// impairments, or a crashed run's).
func (l *nsLinks) clearResidue() error {
	var errs []error
	for _, e := range l.eps {
		found, err := netem.Residue(e)
		if err != nil {
			continue // a namespace that is gone holds nothing
		}
		for _, f := range found {
			if strings.HasPrefix(f, "qdisc ") {
				if err := netem.ClearKernel([]netem.Endpoint{e}); err != nil {
					errs = append(errs, fmt.Errorf("%s: remove qdiscs: %w", e.Name, err))
				}
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (l *nsLinks) leftovers() []string {
	var left []string
	for _, e := range l.eps {
		found, _ := netem.Residue(e) // a namespace that is gone holds nothing
		for _, f := range found {
			left = append(left, e.Name+": "+f)
		}
	}
	return left
}

// sshLinks: tc on each node's host over SSH (netem.PlanRemote); what habench creates on
// a host is recorded before the first tc command, and only that is removed.
type sshLinks struct {
	c     *cluster.Cluster
	eps   []netem.RemoteEndpoint
	plans []netem.RemoteHostPlan // made by ready
}

func (l *sshLinks) size() int                       { return len(l.eps) }
func (l *sshLinks) reach(ctx context.Context) error { return l.c.CheckSSH(ctx) }

// ready plans the tc commands on every host and checks them (tc, rights, sch_netem where
// delay, jitter or loss is asked for, a drop filter for partitions, no root qdisc of the
// host's own on an interface to impair) before anything changes on any host.
func (l *sshLinks) ready(ctx context.Context, spec *netem.Spec) error {
	plans, err := netem.PlanRemote(ctx, l.eps, spec)
	if err != nil {
		return err
	}
	if err := netem.CheckPlans(ctx, plans); err != nil {
		return fmt.Errorf("nothing changed on any host: %w", err)
	}
	l.plans = plans
	return nil
}

func (l *sshLinks) measure(ctx context.Context, spec *netem.Spec, samples int, timeout time.Duration) ([]netem.LinkRTT, error) {
	return netem.MeasureRemote(ctx, l.eps, spec, samples, timeout)
}

func (l *sshLinks) applyStanding(ctx context.Context, c *cluster.Cluster, st *Standing, _ *netem.Spec, _ Process) error {
	st.Backend = netem.BackendRemote
	st.Hosts = hostRecords(l.plans)
	// Recorded first: a crash between here and the end still leaves clear a record.
	if err := writeStanding(c, st); err != nil {
		return err
	}
	return netem.ApplyPlans(ctx, l.plans)
}

// applyRun applies spec as remoteBackend.Update does (recorded first), or with the
// link agents where a host lacks sch_netem (useAgents), and measures.
func (l *sshLinks) applyRun(ctx context.Context, c *cluster.Cluster, spec *netem.Spec, samples int, timeout time.Duration) (netem.Backend, string, []netem.LinkRTT, error) {
	var b netem.Backend
	name := netem.BackendRemote
	agents, err := l.useAgents(ctx, spec)
	if err != nil {
		return nil, name, nil, err
	}
	if agents {
		name = netem.BackendHostAgent
		var nodes, hosts []string
		for _, e := range l.eps {
			nodes, hosts = append(nodes, e.Name), append(hosts, e.Host.Name())
		}
		if link, why := AgentRefusal(nodes, hosts, spec); why != "" {
			return nil, name, nil, &topology.FieldError{Field: "links", Value: link, Reason: why + "; nothing applied"}
		}
		eps, err := agentEndpoints(c, l.eps)
		if err != nil {
			return nil, name, nil, err
		}
		if b, err = netem.StartHostAgents(ctx, c.Name, eps, spec); err != nil {
			return nil, name, nil, err
		}
	} else {
		rb := &remoteBackend{c: c, eps: l.eps}
		if err := rb.Update(spec); err != nil {
			return nil, name, nil, err
		}
		b = rb
	}
	rtts, err := l.measure(ctx, spec, samples, timeout)
	if err != nil {
		return nil, name, nil, errors.Join(fmt.Errorf("measure after apply (%s): %w", name, err), b.Close())
	}
	return b, name, rtts, nil
}

// useAgents reports whether spec goes to the link agents (netem.StartHostAgents): it
// asks for delay, jitter or loss and the hosts' checks choose them (netem.HostsBackend: a
// host lacks sch_netem but has a TUN device). The agents then carry the whole spec
// (partitions and rates too): one backend per run.
// Only for a cluster habench deployed on the hosts (the agent's binary goes to the node
// directories); an existing cluster keeps tc-ssh and its "no sch_netem" refusal.
// Error: a host that cannot be checked.
func (l *sshLinks) useAgents(ctx context.Context, spec *netem.Spec) (bool, error) {
	if spec == nil || !slices.ContainsFunc(slices.Collect(maps.Values(spec.Links)), netem.NeedsNetem) {
		return false, nil
	}
	for _, n := range l.c.Members() {
		if l.c.HostNodeDir(n) == "" {
			return false, nil
		}
	}
	seen := map[string]bool{}
	var checks []netem.HostCheck
	for _, e := range l.eps {
		if seen[e.Host.Name()] {
			continue
		}
		seen[e.Host.Name()] = true
		hc, err := netem.CheckHost(ctx, e.Host)
		if err != nil {
			return false, fmt.Errorf("node %s (%s): %w", e.Name, e.Host.Name(), err)
		}
		checks = append(checks, hc)
	}
	return netem.HostsBackend(checks) == netem.BackendHostAgent, nil
}

// AgentRefusal says why spec cannot go to the link agents when nodes[i] runs on
// hosts[i], and the link ("n1->n2") it refuses ("", "" when it can): an agent runs per host and impairs the traffic from its host
// to each peer host's address with one impairment (its first node's), so a link between
// two nodes on one host cannot be impaired, and nodes sharing a host must need the same
// impairment toward (and from) each node on another host.
func AgentRefusal(nodes, hosts []string, spec *netem.Spec) (string, string) {
	type pair struct{ from, to string }
	first := map[pair]netem.Link{}
	for i, a := range nodes {
		for j, b := range nodes {
			if i == j || i >= len(hosts) || j >= len(hosts) {
				continue
			}
			imp := spec.Get(a, b)
			if hosts[i] == hosts[j] {
				if !imp.IsZero() {
					return a + "->" + b, fmt.Sprintf("link %s->%s is impaired (%s) but %s and %s run on the same host %s: the link agent impairs traffic between hosts only", a, b, imp, a, b, hosts[i])
				}
				continue
			}
			k := pair{hosts[i], hosts[j]}
			l, seen := first[k]
			if !seen {
				first[k] = netem.Link{From: a, To: b}
				continue
			}
			if other := spec.Get(l.From, l.To); other != imp {
				return a + "->" + b, fmt.Sprintf("links %s->%s (%s) and %s->%s (%s) differ but both go from host %s to host %s: the link agent applies one impairment per pair of hosts", l.From, l.To, other, a, b, imp, hosts[i], hosts[j])
			}
		}
	}
	return "", ""
}

// agentEndpoints adds to eps each node's directory on its host (the agent's binary goes
// there, and destroy removes it with every process under it).
func agentEndpoints(c *cluster.Cluster, eps []netem.RemoteEndpoint) ([]netem.AgentEndpoint, error) {
	var out []netem.AgentEndpoint
	for _, e := range eps {
		n := c.Member(e.Name)
		if n == nil {
			return nil, fmt.Errorf("node %s: not in cluster %s", e.Name, c.Name)
		}
		dir := c.HostNodeDir(n)
		if dir == "" {
			return nil, fmt.Errorf("node %s: no habench directory on its host for the link agent (a cluster deployed with --hosts has one)", e.Name)
		}
		out = append(out, netem.AgentEndpoint{RemoteEndpoint: e, Dir: dir})
	}
	return out, nil
}

func (l *sshLinks) clearRun() error { return clearRunRemote(l.c) }

// clearResidue: nothing; what habench created on the hosts is removed by its record.
func (l *sshLinks) clearResidue() error { return nil }

func (l *sshLinks) leftovers() []string { return remoteLeftovers(l.c) }

// hostRecords lists, per host plan, the interfaces that will carry habench's root qdisc.
func hostRecords(plans []netem.RemoteHostPlan) []RemoteHostRecord {
	var out []RemoteHostRecord
	for _, hp := range plans {
		if len(hp.Plan.Devs) > 0 {
			out = append(out, RemoteHostRecord{Node: hp.Node, Host: hp.Host.Name(), Devs: hp.Plan.Devs})
		}
	}
	return out
}
