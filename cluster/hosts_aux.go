package cluster

// Aux nodes on the user's hosts (galera-arbitrator's garbd): placed on the hosts after the
// SQL nodes, recorded on their host like a node (HostRecord, HOST_DIR/CLUSTER/arb.habench.json)
// before their directory and process exist, started detached in their own session over SSH,
// and removed by destroy like a node (hosts_deploy.go: destroyHosts walks every member).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// garbdCandidates are where garbd is looked for on a host (galera-arbitrator-4 installs
// /usr/bin/garbd).
var garbdCandidates = []string{"/usr/bin/garbd", "/usr/sbin/garbd", "/usr/local/bin/garbd"}

// planHostsAux places spec's aux nodes (topology.Spec.AuxNodes) on the hosts: aux node j
// is member Nodes+j+1 of the placement (topology.HostsSpec.HostOf: the next host in order
// after the SQL nodes, wrapping round; a proxy in a site goes on the host of a member of
// its site, topology.Spec.AuxHostOf), in HOST_DIR/CLUSTER/NAME, with the port of that
// slot as its base port (garbd listens on the Galera group port derived from it:
// topology.ArbitratorAddrs; a proxy on its consecutive ports from it). It checks on each
// host what the member's Program needs there (its OnHost: the program's binary, its
// ports) and that the member's directory, record and ports are free; nothing is created.
// addrs are the hosts' addresses (spec.Hosts order). Refusals are *topology.FieldError
// naming the host.
func planHostsAux(ctx context.Context, c *Cluster, spec topology.Spec, addrs []string) error {
	for j, a := range spec.AuxNodes() {
		hi, slot := spec.AuxHostOf(j)
		dir := path.Join(c.Hosts.HostDir, spec.Name, a.Name)
		n := &Node{Name: a.Name, Role: a.Role, Program: a.Program, Host: addrs[hi], Port: spec.BasePort + slot, Dir: dir, ServerDir: dir}
		c.Aux = append(c.Aux, n)
		c.Hosts.Dests = append(c.Hosts.Dests, spec.Hosts[hi])
		h := c.hostsSSH(n)
		prog, ok := programs[a.Program]
		if !ok || prog.OnHost == nil {
			return &topology.FieldError{Field: "kind", Value: spec.Kind, Reason: fmt.Sprintf("its member %s runs %s, which habench does not run on hosts", a.Name, a.Program)}
		}
		ports, err := prog.OnHost(ctx, c, n, h)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		p, err := probeHost(ctx, h, c.layout(n))
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		l := c.layout(n)
		switch {
		case p.NodeDir:
			return &topology.FieldError{Field: "host_dir", Value: spec.HostDir, Reason: fmt.Sprintf("%s exists on %s (node %s) and this deploy did not create it: habench touches nothing it did not make (habench destroy %s, or another host_dir)", l.nodeDir(), h.Name(), n.Name, c.Name)}
		case p.Record:
			return &topology.FieldError{Field: "host_dir", Value: spec.HostDir, Reason: fmt.Sprintf("%s exists on %s: a cluster %s of another habench state directory lives there (habench destroy %s there)", l.record(), h.Name(), c.Name, c.Name)}
		}
		for _, port := range ports {
			if p.Listening[port] {
				return &topology.FieldError{Field: "base_port", Value: spec.BasePort, Reason: fmt.Sprintf("port %d that %s (%s) needs is in use on %s", port, n.Name, a.Program, h.Name())}
			}
		}
	}
	return nil
}

// planHostGarbd is garbd's Program.OnHost: garbd is on n's host (garbdCandidates), and
// the port it listens on there.
func planHostGarbd(ctx context.Context, c *Cluster, n *Node, h host.Host) ([]int, error) {
	found, err := firstFilesOn(ctx, h, garbdCandidates)
	if err != nil {
		return nil, err
	}
	if found[0] == "" {
		return nil, &topology.FieldError{Field: "kind", Value: c.Spec.Kind, Reason: fmt.Sprintf("no garbd on %s (looked for %s; package galera-arbitrator-4); habench installs nothing on a host", h.Name(), strings.Join(garbdCandidates, ", "))}
	}
	port, err := garbdListenPort(c, n)
	if err != nil {
		return nil, err
	}
	return []int{port}, nil
}

// ensureHostMemberDir records aux member n on its host and creates its directory there,
// when that has not been done yet (the record is written first, createNodeDir).
func ensureHostMemberDir(ctx context.Context, c *Cluster, n *Node) error {
	h, l := c.hostsSSH(n), c.layout(n)
	if h == nil {
		return fmt.Errorf("node %s: no host", n.Name)
	}
	if _, err := readHostRecord(ctx, h, l); !errors.Is(err, errNoRecord) {
		return err
	}
	p, err := probeHost(ctx, h, l)
	if err != nil {
		return err
	}
	rec := &HostRecord{Cluster: c.Name, Node: n.Name, Port: n.Port, Controller: controllerName(), Time: time.Now().UTC()}
	return createNodeDir(ctx, h, l, p, rec)
}

// garbdListenPort is the port garbd of aux node n listens on (gmcast.listen_addr).
func garbdListenPort(c *Cluster, n *Node) (int, error) {
	_, listen, err := topology.ArbitratorAddrs(c.Spec, func(name string) (string, int) {
		if m := c.Node(name); m != nil {
			return m.Host, m.Port
		}
		return "", 0
	}, n.Host, n.Port)
	if err != nil {
		return 0, err
	}
	_, p, err := net.SplitHostPort(listen)
	if err != nil {
		return 0, fmt.Errorf("node %s: listen address %q: %w", n.Name, listen, err)
	}
	return strconv.Atoi(p)
}

// startHostAux starts the aux nodes of c on their hosts after the plan (deployHosts),
// saving the state after each.
func (s *Store) startHostAux(ctx context.Context, c *Cluster) error {
	for _, n := range c.Aux {
		err := s.startAux(ctx, c, n)
		if serr := c.save(); serr != nil {
			err = errors.Join(err, serr)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startHostGarbd is startGarbd on aux node n's host: it records the node on its host and
// creates its directory when that has not been done yet (the record is written first),
// removes garbd's last view (gvwstate.dat), starts garbd there in its own session (output
// in DIR/mysqld.out), records its PID and start ticks on the host and in the state file,
// and waits (ReadyTimeout, default 90 s) until garbd's log says it is a synced member of
// the group. Error when garbd exits first, with its log's last lines.
func (s *Store) startHostGarbd(ctx context.Context, c *Cluster, n *Node) error {
	if err := ensureHostMemberDir(ctx, c, n); err != nil {
		return err
	}
	h := c.hostsSSH(n)
	found, err := firstFilesOn(ctx, h, garbdCandidates)
	if err != nil {
		return err
	}
	if found[0] == "" {
		return fmt.Errorf("no garbd on %s (package galera-arbitrator-4)", h.Name())
	}
	args, err := GarbdArgs(c, n)
	if err != nil {
		return err
	}
	logStart := len(c.nodeFileText(n, "garbd.log"))
	pid, ticks, outStart, err := startHostProcess(ctx, h, n.Dir, []string{path.Join(n.Dir, "gvwstate.dat")}, append([]string{found[0]}, args...))
	if err != nil {
		return err
	}
	n.PID, n.StartTicks = pid, ticks
	// Recorded before the wait: garbd never exits by itself once it has no peer.
	if err := errors.Join(c.recordProcess(ctx, n), c.save()); err != nil {
		hostSignal(ctx, h, pid, ticks, "KILL", 5*time.Second)
		return err
	}
	return s.waitHostGarbd(ctx, c, n, logStart, outStart)
}

// waitHostGarbd waits until garbd of aux node n logs (from byte logStart of its log on) that
// it is a synced member of the group; error when it exits first or after ReadyTimeout.
func (s *Store) waitHostGarbd(ctx context.Context, c *Cluster, n *Node, logStart int, outStart int64) error {
	h := c.hostsSSH(n)
	timeout := s.ReadyTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	synced := regexp.MustCompile(`Member [0-9]+\.[0-9]+ \(` + regexp.QuoteMeta(n.Name) + `\) synced with group`)
	since := func() string {
		if t := c.nodeFileText(n, "garbd.log"); len(t) >= logStart {
			return t[logStart:]
		}
		return ""
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		log := since()
		if synced.MatchString(log) {
			return nil
		}
		if !hostProcessOurs(ctx, h, n.PID, n.StartTicks) {
			out := c.nodeFileText(n, "mysqld.out")
			if int64(len(out)) >= outStart {
				out = out[outStart:]
			}
			return fmt.Errorf("garbd exited on %s while joining: %s", h.Name(), strings.ReplaceAll(tail(since()+out, 3), "\n", "; "))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("garbd on %s not a synced member of group %s after %s: %s", h.Name(), c.Name, timeout, strings.ReplaceAll(tail(log, 3), "\n", "; "))
		}
	}
}
