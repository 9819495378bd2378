package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/habench/habench/topology"
)

// Deploy creates the directories, network and processes of spec, bootstraps replication
// and waits until the topology is healthy. spec is defaulted and validated first; errors
// in it are *topology.FieldError. On any failure everything created is removed again.
func (s *Store) Deploy(ctx context.Context, spec topology.Spec) (c *Cluster, err error) {
	if spec.Provider != "" && spec.Provider != topology.ProviderSandbox {
		return s.Provide(ctx, spec) // another provider's spec: that provider makes it
	}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := checkPrograms(spec); err != nil { // a proxy's binary: refused before anything is made
		return nil, err
	}
	deployedByUs(spec.Name, s.stateDir())
	defer func() {
		if err != nil {
			destroyedByUs(spec.Name) // a failed deploy removes what it made
		}
	}()
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = 90 * time.Second
	}
	mode, err := s.networkMode()
	if err != nil {
		return nil, err
	}
	bins, err := s.checkedInstallation(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.clustersDir(), 0o755); err != nil {
		return nil, err
	}
	// One machine-wide lock covers choosing names, subnets and ports and creating the
	// network, so sandboxes of different state directories never collide.
	unlock, err := lockFile(globalLockPath(), false)
	if err != nil {
		return nil, err
	}
	release := func() {
		if unlock != nil {
			unlock()
			unlock = nil
		}
	}
	defer release()
	c, err = s.allocate(spec, bins, mode)
	if err != nil {
		return nil, err
	}
	log := s.log().With("cluster", c.Name)
	defer func() {
		if err != nil {
			log.Debug("deploy failed, removing what was created", "err", err)
			cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if derr := s.destroy(cctx, c); derr != nil {
				err = errors.Join(err, fmt.Errorf("cleanup after failed deploy: %w", derr))
			}
			c = nil
		}
	}()
	start := time.Now()
	if mode == NetNamespaces {
		if err := setupNetwork(c); err != nil {
			return c, err
		}
		// Addresses are now taken; loopback ports are only taken once the servers bind,
		// so loopback deploys keep the lock until then.
		release()
	}
	plan, up, err := s.prepareAndLaunch(ctx, c, spec, bins, start)
	if serr := c.save(); serr != nil {
		up.abandon()
		err = errors.Join(err, serr)
	}
	if err != nil {
		return c, err
	}
	if mode != NetNamespaces {
		// Loopback ports are taken once the servers bind: every server up, then the lock
		// goes (unless plan steps start servers too).
		if err := up.all(); err != nil {
			return c, err
		}
		if !anyStartedBySteps(plan, c) {
			release()
		}
	}
	if err := s.completeDeploy(ctx, c, plan, up); err != nil {
		up.abandon()
		return c, err
	}
	release()
	c.State = "ready"
	if err := c.save(); err != nil {
		return c, err
	}
	log.Info("deployed", "kind", spec.Kind, "nodes", len(c.Nodes), "network", mode, "elapsed", time.Since(start).Round(time.Millisecond))
	return c, nil
}

// networkMode is s.Network resolved: auto (or "") picks netns where namespaces are
// usable, else loopback; netns where they are not and any other value are field errors.
func (s *Store) networkMode() (string, error) {
	mode := s.Network
	switch mode {
	case "", "auto":
		mode = NetLoopback
		if NetNamespacesUsable() == "" {
			mode = NetNamespaces
		}
	case NetNamespaces:
		if why := NetNamespacesUsable(); why != "" {
			return "", &topology.FieldError{Field: "network", Value: mode, Reason: why}
		}
	case NetLoopback:
	default:
		return "", &topology.FieldError{Field: "network", Value: mode, Reason: "want auto, netns or loopback"}
	}
	return mode, nil
}

// checkedInstallation resolves spec's installation to binaries (once per store) and lets the kind check
// them (CheckInstallation).
func (s *Store) checkedInstallation(ctx context.Context, spec topology.Spec) (*Binaries, error) {
	bins, err := s.Installation(ctx, spec.Installation, spec.Flavor)
	if err != nil {
		return nil, err
	}
	if f := OpsOf(spec.Kind).CheckInstallation; f != nil {
		if err := f(bins, spec); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

// setupNetwork creates c's bridge and one namespace per member on it.
func setupNetwork(c *Cluster) error {
	if err := setupBridge(c.Name, c.SubnetIdx); err != nil {
		return err
	}
	for i, n := range c.Members() {
		if err := setupNode(c.Name, n.Name, i+1, n.Host); err != nil {
			return err
		}
	}
	return nil
}

// nodePlan builds the kind's plan for c's addresses and finds what the nodes' data
// directories are made from: the installation's template datadir, and for a Galera
// cluster deployed from a seed (seedFor) the seed.
func (s *Store) nodePlan(ctx context.Context, c *Cluster, spec topology.Spec, bins *Binaries) (plan topology.Plan, tmpl string, seed *galeraSeed, err error) {
	plan, err = topology.BuildPlan(spec, bins.Caps(), func(node string) (string, int) {
		n := c.Node(node)
		return n.Host, n.Port
	})
	if err != nil {
		return plan, "", nil, err
	}
	tmpl, err = s.template(ctx, bins)
	if err != nil {
		return plan, "", nil, err
	}
	if s.snapshot != nil && s.snapshot.GaleraPosition != "" && isGaleraKind(c.Spec.Kind) {
		usersAfterJoins(&plan)
	}
	seed, err = s.seedFor(ctx, c, tmpl)
	if err != nil {
		return plan, "", nil, err
	}
	if seed != nil {
		seedJoins(&plan)
	}
	return plan, tmpl, seed, nil
}

// anyStartedBySteps reports whether a plan step starts one of c's nodes.
func anyStartedBySteps(plan topology.Plan, c *Cluster) bool {
	for _, n := range c.Nodes {
		if plan.StartedBySteps(n.Name) {
			return true
		}
	}
	return false
}

// completeDeploy runs the plan's steps (replication, bootstrap), the kind's AfterPlan and
// starts the auxiliary processes (arbitrator), saving the state after each of these.
func (s *Store) completeDeploy(ctx context.Context, c *Cluster, plan topology.Plan, up *launched) error {
	if err := s.runPlanWith(ctx, c, plan, s.startStepNode, up); err != nil {
		return err
	}
	if err := up.all(); err != nil { // a node no step used
		return err
	}
	if f := c.ops().AfterPlan; f != nil {
		if err := f(ctx, c); err != nil {
			return err
		}
	}
	for _, n := range c.Aux {
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return err
		}
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

// allocate reserves the name, subnet or ports, and writes the first state file, so that
// from here on destroy can find every resource deploy creates.
func (s *Store) allocate(spec topology.Spec, bins *Binaries, mode string) (*Cluster, error) {
	dir := s.clusterDir(spec.Name)
	if _, err := os.Stat(dir); err == nil {
		return nil, &topology.FieldError{Field: "name", Value: spec.Name, Reason: fmt.Sprintf("a cluster with this name exists (habench destroy %s)", spec.Name)}
	}
	existing, err := s.List()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		Name: spec.Name, ProviderName: topology.ProviderSandbox, Spec: spec, Binaries: bins, Network: mode,
		User: topology.BenchUser, Password: topology.BenchPassword, State: "deploying",
		Created: time.Now().UTC(), path: filepath.Join(dir, "state.json"),
	}
	if mode == NetNamespaces {
		if left := leftoverNetwork(spec.Name); len(left) > 0 {
			return nil, &topology.FieldError{Field: "name", Value: spec.Name, Reason: "network objects of that name exist: " + strings.Join(left, ", ")}
		}
		used := map[int]bool{}
		for _, e := range existing {
			used[e.SubnetIdx] = true
		}
		for i := 1; i < 250 && c.SubnetIdx == 0; i++ {
			if !used[i] && !onSandboxBridge(net.ParseIP(nodeAddress(i, 1))) && !subnetOnHost(i) {
				c.SubnetIdx = i
			}
		}
		if c.SubnetIdx == 0 {
			return nil, fmt.Errorf("no free 10.233.x.0/24 subnet for a new sandbox")
		}
	} else {
		base := s.BasePort
		if base == 0 {
			base = 23306
		}
		// The servers' ports, then the aux members' (allocateAux).
		members := spec.Nodes + auxPorts(spec)
		if base < 1024 || base+members-1 > 65535 {
			return nil, &topology.FieldError{Field: "base-port", Value: base, Reason: fmt.Sprintf("want 1024 to %d for %d node(s)", 65536-members, members)}
		}
		taken := map[int]string{}
		for _, e := range existing {
			if e.Network == NetLoopback {
				for _, p := range loopbackPorts(e) {
					taken[p] = e.Name
				}
			}
		}
		for i := 0; i < members; i++ {
			p := base + i
			if other, ok := taken[p]; ok {
				return nil, &topology.FieldError{Field: "port", Value: p, Reason: "already used by sandbox " + other}
			}
			if !portFree("127.0.0.1", p) {
				return nil, &topology.FieldError{Field: "port", Value: p, Reason: "already in use on 127.0.0.1"}
			}
			if f := OpsOf(spec.Kind).ExtraPorts; f != nil && i < spec.Nodes {
				for _, xp := range f(spec, p) {
					if !portFree("127.0.0.1", xp) {
						return nil, &topology.FieldError{Field: "port", Value: xp, Reason: fmt.Sprintf("a port the node on %d needs (%s) is already in use on 127.0.0.1", p, spec.Kind)}
					}
				}
			}
		}
	}
	serverBase := s.serverClusterDir(bins, spec.Name)
	for i := 1; i <= spec.Nodes; i++ {
		name := topology.NodeName(i)
		serverDir := filepath.Join(serverBase, name)
		n := &Node{Name: name, ServerID: i, ServerDir: serverDir, Dir: bins.HostPath(serverDir)}
		n.Socket = filepath.Join(n.Dir, "mysqld.sock")
		if len(n.Socket) > 100 {
			return nil, &topology.FieldError{Field: "state-dir", Value: s.StateDir, Reason: fmt.Sprintf("socket path %s is longer than the 100 bytes a unix socket allows; choose a shorter state directory", n.Socket)}
		}
		if mode == NetNamespaces {
			n.Host, n.Port, n.Netns = nodeAddress(c.SubnetIdx, i), 3306, netnsName(spec.Name, name)
		} else {
			base := s.BasePort
			if base == 0 {
				base = 23306
			}
			n.Host, n.Port = "127.0.0.1", base+i-1
		}
		c.Nodes = append(c.Nodes, n)
	}
	s.allocateAux(c, spec, mode)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := c.save(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// serverClusterDir is the cluster's directory as the servers see it: under the state
// directory for host installations; inside a root filesystem a short path
// /habench/<hash of the state dir>/<cluster>, so socket paths stay under the unix limit.
func (s *Store) serverClusterDir(bins *Binaries, name string) string {
	if bins == nil || bins.Root == "" {
		return s.clusterDir(name)
	}
	h := fnv.New32a()
	h.Write([]byte(s.stateDir()))
	return fmt.Sprintf("/habench/%08x/%s", h.Sum32(), name)
}

// subnetOnHost reports whether 10.233.idx.0/24 is configured on any interface already.
func subnetOnHost(idx int) bool {
	out, _ := exec.Command("ip", "-o", "addr").Output()
	return strings.Contains(string(out), fmt.Sprintf(" %s%d.", subnetPrefix, idx))
}

// globalLockPath is the machine-wide allocation lock (/run/habench.lock as root).
func globalLockPath() string {
	if os.Geteuid() == 0 {
		return "/run/habench.lock"
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("habench-%d.lock", os.Geteuid()))
}

// allocateAux adds spec's aux nodes (topology.KindDef.Aux) to c after its servers: in
// netns mode the next addresses of the subnet, in loopback mode 127.0.0.1 and the ports
// after the servers'.
func (s *Store) allocateAux(c *Cluster, spec topology.Spec, mode string) {
	port := len(c.Nodes) // the next loopback port's offset from the base
	for j, a := range spec.AuxNodes() {
		i := len(c.Nodes) + j + 1
		n := &Node{Name: a.Name, Role: a.Role, Program: a.Program, Dir: filepath.Join(s.clusterDir(spec.Name), a.Name)}
		n.ServerDir = n.Dir
		if mode == NetNamespaces {
			n.Host, n.Netns = nodeAddress(c.SubnetIdx, i), netnsName(spec.Name, a.Name)
			if a.Ports > 0 {
				n.Port = 3306
			}
		} else {
			base := s.BasePort
			if base == 0 {
				base = 23306
			}
			n.Host, n.Port = "127.0.0.1", base+port
			port += max(a.Ports, 1)
		}
		c.Aux = append(c.Aux, n)
	}
}

// loopbackPorts are the ports c's members take on loopback: a server's, and each port of
// an aux member (topology.AuxNode.Ports, at least one).
func loopbackPorts(c *Cluster) []int {
	var out []int
	for _, n := range c.Nodes {
		out = append(out, n.Port)
	}
	for _, a := range c.Spec.AuxNodes() {
		if n := c.Member(a.Name); n != nil {
			for k := range max(a.Ports, 1) {
				out = append(out, n.Port+k)
			}
		}
	}
	return out
}

// auxPorts is how many loopback ports spec's aux members take (at least one each).
func auxPorts(spec topology.Spec) int {
	n := 0
	for _, a := range spec.AuxNodes() {
		n += max(a.Ports, 1)
	}
	return n
}

// runPlan executes the bootstrap steps in order over the admin sockets.
func (s *Store) runPlan(ctx context.Context, c *Cluster, plan topology.Plan) error {
	return s.runPlanWith(ctx, c, plan, s.startStepNode, nil)
}

// startStepNode starts node n for a plan step (with its plan's StartArgs) and records its
// PID in the state file at once. A server that refuses an option is a *topology.FieldError.
func (s *Store) startStepNode(ctx context.Context, c *Cluster, plan topology.Plan, n *Node) error {
	err := s.startNode(ctx, c, n, plan.StartArgs(n.Name)...)
	if serr := c.save(); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}
