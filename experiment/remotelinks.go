package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	spec, err := BuildLinks(req, c)
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

// runLinksFile records, in the cluster's directory, what a run with links (--links,
// scenario links) created on an existing cluster's hosts: written before the first tc
// command and removed when the run's links are cleared, so that `netem clear` after a
// crashed run (kill -9) knows where to look.
const runLinksFile = "links-run.json"

// CrashedRunLinks reports whether a run's impairments on c's hosts are recorded while no
// run holds links: a run that was killed before it could clear them (`netem clear` does).
func CrashedRunLinks(c *cluster.Cluster) bool {
	_, err := os.Stat(filepath.Join(c.Dir(), runLinksFile))
	return err == nil && !RunLinksActive(c)
}

// remoteBackend is a run's impairments on an existing cluster's hosts (netem.Backend).
type remoteBackend struct {
	c   *cluster.Cluster
	eps []netem.RemoteEndpoint
}

// applyRemoteRun is applyLinks for an existing cluster with ssh access: every host is
// checked before anything changes (as for netem apply), the round trips are measured
// before and after, and the returned backend's Close removes exactly what was created
// (also after SIGINT: it has its own time limit). On error nothing is left applied.
func applyRemoteRun(ctx context.Context, c *cluster.Cluster, spec *netem.Spec) (netem.Backend, *LinkReport, error) {
	eps, err := RemoteEndpoints(c)
	if err != nil {
		return nil, nil, err
	}
	if err := c.CheckSSH(ctx); err != nil {
		return nil, nil, err
	}
	b := &remoteBackend{c: c, eps: eps}
	// A crashed run's leftovers (its record) go first.
	if err := b.Close(); err != nil {
		return nil, nil, fmt.Errorf("clear a previous run's impairments: %w", err)
	}
	base, err := netem.MeasureRemote(ctx, eps, nil, 10, 2*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("measure links before applying: %w", err)
	}
	if err := b.Update(spec); err != nil {
		return nil, nil, err
	}
	rtts, err := netem.MeasureRemote(ctx, eps, spec, 20, 3*time.Second)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("measure after apply (%s): %w", netem.BackendRemote, err), b.Close())
	}
	rep := linkReport(netem.BackendRemote, spec, base, rtts)
	rep.AppliedBy = "run"
	rep.Applied = time.Now().UTC()
	return b, rep, nil
}

// Update implements netem.Backend: it removes the run's impairments and applies spec's
// (nil: none), checking every host first. On error nothing is left applied.
func (b *remoteBackend) Update(spec *netem.Spec) error {
	if err := b.Close(); err != nil {
		return err
	}
	if spec == nil || len(spec.Links) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	plans, err := netem.PlanRemote(ctx, b.eps, spec)
	if err != nil {
		return err
	}
	if err := netem.CheckPlans(ctx, plans); err != nil {
		return fmt.Errorf("nothing changed on any host: %w", err)
	}
	rec := &StandingLinks{Cluster: b.c.Name, Backend: netem.BackendRemote, Applied: time.Now().UTC()}
	for _, hp := range plans {
		if len(hp.Plan.Devs) > 0 {
			rec.Hosts = append(rec.Hosts, RemoteHostRecord{Node: hp.Node, Host: hp.Host.Name(), Devs: hp.Plan.Devs})
		}
	}
	if err := writeRecord(filepath.Join(b.c.Dir(), runLinksFile), rec); err != nil {
		return err
	}
	if err := netem.ApplyPlans(ctx, plans); err != nil {
		return errors.Join(err, b.Close())
	}
	return nil
}

// Close implements netem.Backend: it removes what the run's record names from the hosts
// and then the record. Idempotent.
func (b *remoteBackend) Close() error {
	return clearRunRemote(b.c)
}

// clearRunRemote removes what runLinksFile names from c's hosts, then the file.
func clearRunRemote(c *cluster.Cluster) error {
	p := filepath.Join(c.Dir(), runLinksFile)
	raw, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var rec StandingLinks
	if err := json.Unmarshal(raw, &rec); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if err := clearRemote(c, &rec); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
