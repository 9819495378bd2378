package experiment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
)

// RemoteHostRecord is what habench creates on one node's host for standing impairments
// over SSH: the interfaces that carry its root qdisc (netem.TCMajor). It is written to the
// record before the first tc command, so `netem clear` after a crash knows where to look;
// clear removes a root only where it carries habench's handle.
type RemoteHostRecord struct {
	Node string   `json:"node"`
	Host string   `json:"host"` // host.Host.Name(), for messages
	Devs []string `json:"devs"`
}

// RemoteEndpoints returns the existing cluster's nodes with their SSH hosts. Error: a
// node without host access (the cluster was registered without ssh).
func RemoteEndpoints(c *cluster.Cluster) ([]netem.RemoteEndpoint, error) {
	var eps []netem.RemoteEndpoint
	for _, n := range c.Nodes {
		h := c.Host(n)
		if h == nil {
			return nil, fmt.Errorf("cluster %s: node %s has no host access: impairing an existing cluster's links needs ssh (habench register --ssh ..., or ssh: in the file)", c.Name, n.Name)
		}
		eps = append(eps, netem.RemoteEndpoint{Name: n.Name, Host: h, Addr: n.Host, Port: n.Port})
	}
	return eps, nil
}

// applyStandingRemote is ApplyStanding for an existing cluster with ssh access: tc on the
// nodes' hosts (netem.PlanRemote). Every host is reached and checked (tc, rights,
// sch_netem where delay, jitter or loss is asked for, a drop filter for partitions, no
// root qdisc of the host's own on an interface to impair) before anything changes on any
// host; what it creates is recorded first; on any error (and on ctx ending: SIGINT) it
// is removed again, so every host is left as it was.
func applyStandingRemote(ctx context.Context, c *cluster.Cluster, req netem.Request) (st *StandingLinks, err error) {
	eps, err := RemoteEndpoints(c)
	if err != nil {
		return nil, err
	}
	if len(eps) < 2 {
		return nil, &netem.RequestError{Field: "cluster", Value: c.Name, Err: fmt.Errorf("has %d node(s): there is no link between nodes to impair", len(eps))}
	}
	spec, err := req.Build(NodeNames(c))
	if err != nil {
		return nil, err
	}
	unlock, err := lockStanding(c)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if RunLinksActive(c) {
		return nil, fmt.Errorf("cluster %s: a run with links is going on; its impairments end with it, apply after it", c.Name)
	}
	if err := c.CheckSSH(ctx); err != nil {
		return nil, err
	}
	if err := clearStanding(c, nil); err != nil {
		return nil, fmt.Errorf("clear the previous impairments: %w", err)
	}
	plans, err := netem.PlanRemote(ctx, eps, spec)
	if err != nil {
		return nil, err
	}
	if err := netem.CheckPlans(ctx, plans); err != nil {
		return nil, fmt.Errorf("nothing changed on any host: %w", err)
	}
	base, err := netem.MeasureRemote(ctx, eps, nil, 10, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("measure links before applying: %w", err)
	}
	st = &StandingLinks{Cluster: c.Name, Request: req, Applied: time.Now().UTC(), Backend: netem.BackendRemote}
	for _, hp := range plans {
		if len(hp.Plan.Devs) > 0 {
			st.Hosts = append(st.Hosts, RemoteHostRecord{Node: hp.Node, Host: hp.Host.Name(), Devs: hp.Plan.Devs})
		}
	}
	// Recorded first: a crash between here and the end still leaves clear a record.
	if err := writeStanding(c, st); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if cerr := clearStanding(c, nil); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean up: %w", cerr))
			}
		}
	}()
	if err := netem.ApplyPlans(ctx, plans); err != nil {
		return nil, err
	}
	rtts, err := netem.MeasureRemote(ctx, eps, spec, 20, 3*time.Second)
	if err != nil {
		return nil, fmt.Errorf("measure after apply (%s): %w", st.Backend, err)
	}
	st.Report = linkReport(st.Backend, spec, base, rtts)
	st.Report.Request = req.String()
	st.Report.AppliedBy = "netem apply"
	st.Report.Applied = st.Applied
	if err := writeStanding(c, st); err != nil {
		return nil, err
	}
	return st, nil
}

// clearRemote removes what the record says habench created on the nodes' hosts, touching
// nothing else (netem.ClearRemote), with its own time limit: it also runs after SIGINT.
func clearRemote(c *cluster.Cluster, st *StandingLinks) error {
	if st == nil || len(st.Hosts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for _, r := range st.Hosts {
		n := c.Node(r.Node)
		if n == nil {
			errs = append(errs, fmt.Errorf("node %s (recorded on %s): not in cluster %s", r.Node, r.Host, c.Name))
			continue
		}
		h := c.Host(n)
		if h == nil {
			errs = append(errs, fmt.Errorf("node %s: no host access to remove habench's qdiscs from %s", r.Node, r.Host))
			continue
		}
		if err := netem.ClearRemote(ctx, h, r.Devs); err != nil {
			errs = append(errs, fmt.Errorf("node %s (%s): %w", r.Node, h.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// remoteLeftovers lists habench's root qdiscs on the hosts of an existing cluster with
// ssh access (any interface); empty without access or after clear.
func remoteLeftovers(c *cluster.Cluster) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var left []string
	for _, n := range c.Nodes {
		h := c.Host(n)
		if h == nil {
			continue
		}
		found, err := netem.RemoteResidue(ctx, h)
		if err != nil {
			left = append(left, fmt.Sprintf("%s (%s): cannot check: %v", n.Name, h.Name(), err))
		}
		for _, f := range found {
			left = append(left, fmt.Sprintf("%s (%s): %s", n.Name, h.Name(), f))
		}
	}
	return left
}
