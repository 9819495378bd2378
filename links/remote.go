package links

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

// RemoteEndpoints returns c's members (servers, then aux nodes such as an arbitrator) with
// their hosts over SSH (c.Links() is cluster.LinksSSH). Error: a member without host
// access (an existing cluster registered without ssh).
func RemoteEndpoints(c *cluster.Cluster) ([]netem.RemoteEndpoint, error) {
	var eps []netem.RemoteEndpoint
	for _, n := range c.Members() {
		h := c.Host(n)
		if h == nil {
			return nil, fmt.Errorf("cluster %s: node %s has no host access: impairing an existing cluster's links needs ssh (habench register --ssh ..., or ssh: in the file)", c.Name, n.Name)
		}
		eps = append(eps, netem.RemoteEndpoint{Name: n.Name, Host: h, Addr: n.Host, Port: n.Port})
	}
	return eps, nil
}

// clearRemote removes what the record says habench created on the nodes' hosts, touching
// nothing else (netem.ClearRemote), with its own time limit: it also runs after SIGINT.
func clearRemote(c *cluster.Cluster, st *Standing) error {
	if st == nil || len(st.Hosts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for _, r := range st.Hosts {
		n := c.Member(r.Node)
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

// remoteLeftovers lists habench's root qdiscs on the hosts of c's members reached over
// SSH (any interface); empty without access or after clear.
func remoteLeftovers(c *cluster.Cluster) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var left []string
	for _, n := range c.Members() {
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
// scenario links) created on the nodes' hosts over SSH: written before the first tc
// command and removed when the run's links are cleared, so that `netem clear` after a
// crashed run (kill -9) knows where to look.
const runLinksFile = "links-run.json"

// CrashedRunLinks reports whether a run's impairments on c's hosts are recorded while no
// run holds links: a run that was killed before it could clear them (`netem clear` does).
func CrashedRunLinks(c *cluster.Cluster) bool {
	_, err := os.Stat(filepath.Join(c.Dir(), runLinksFile))
	return err == nil && !RunLinksActive(c)
}

// remoteBackend is a run's impairments on the nodes' hosts over SSH (netem.Backend).
type remoteBackend struct {
	c   *cluster.Cluster
	eps []netem.RemoteEndpoint
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
	rec := &Standing{Cluster: b.c.Name, Backend: netem.BackendRemote, Applied: time.Now().UTC(), Hosts: hostRecords(plans)}
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
	var rec Standing
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
