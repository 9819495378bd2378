package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// HostsAdminUser is the administrative account habench creates on every node it deploys
// on a user's host (with a random password kept in the state file).
const HostsAdminUser = "habench_admin"

// deployHosts deploys spec (provider hosts) on its hosts: it connects to every host,
// finds its server and checks that every node's directory and port are free (a refusal
// is one line, before anything is created anywhere), saves the state file, then on each
// host records and creates the node's directory, initialises its datadir, writes its
// option file, starts the servers and runs the topology's plan over TCP. On failure
// everything created is removed again.
func (s *Store) deployHosts(ctx context.Context, spec topology.Spec) (c *Cluster, err error) {
	if spec, err = s.checkHostsSpec(spec); err != nil {
		return nil, err
	}
	start := time.Now()
	c, probes, err := s.planHosts(ctx, spec)
	if err != nil {
		return nil, err
	}
	log := s.log().With("cluster", c.Name)
	log.Debug("hosts checked", "elapsed", time.Since(start).Round(time.Millisecond))
	if err := os.MkdirAll(s.clusterDir(c.Name), 0o755); err != nil {
		return nil, err
	}
	if err := c.save(); err != nil {
		os.RemoveAll(s.clusterDir(c.Name))
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	defer func() {
		if err != nil {
			log.Debug("deploy failed, removing what was created", "err", err)
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
			defer cancel()
			if derr := s.destroyHosts(cctx, c); derr != nil {
				err = errors.Join(err, fmt.Errorf("cleanup after failed deploy: %w", derr))
			}
			c = nil
		}
	}()
	if err := createHostNodeDirs(ctx, c, probes); err != nil {
		return c, err
	}
	log.Debug("node directories created", "elapsed", time.Since(start).Round(time.Millisecond))
	plan, err := topology.BuildPlan(c.planSpec(), c.Binaries.Caps(), func(node string) (string, int) {
		n := c.Node(node)
		return n.Host, n.Port
	})
	if err != nil {
		return c, err
	}
	if s.snapshot != nil && s.snapshot.GaleraPosition != "" && isGaleraKind(c.Spec.Kind) {
		usersAfterJoins(&plan)
	}
	if err := s.startHostNodes(ctx, c, plan, probes); err != nil {
		return c, err
	}
	if err := s.runPlanWith(ctx, c, plan, s.startHostStepNode, nil); err != nil {
		return c, err
	}
	if f := c.ops().AfterPlan; f != nil {
		if err := f(ctx, c); err != nil {
			return c, err
		}
	}
	if err := s.startHostAux(ctx, c); err != nil {
		return c, err
	}
	c.State = "ready"
	if err := c.save(); err != nil {
		return c, err
	}
	log.Info("deployed", "kind", c.Spec.Kind, "nodes", len(c.Nodes), "hosts", len(c.Spec.Hosts), "elapsed", time.Since(start).Round(time.Millisecond))
	return c, nil
}

// checkHostsSpec returns spec with its defaults and absolute ssh paths, after the checks
// that need no host: the spec is valid, its provider is hosts, no cluster has its name.
// Errors: *topology.FieldError naming the field.
func (s *Store) checkHostsSpec(spec topology.Spec) (topology.Spec, error) {
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		return spec, err
	}
	if !spec.IsHosts() {
		return spec, &topology.FieldError{Field: "provider", Value: spec.Provider, Reason: "want hosts"}
	}
	if spec.Name == HostSnapshotsDir {
		return spec, &topology.FieldError{Field: "name", Value: spec.Name, Reason: "on hosts HOST_DIR/" + HostSnapshotsDir + " keeps the data snapshots: choose another name"}
	}
	var err error
	if spec.SSH, err = absSSHSpec(spec.SSH); err != nil {
		return spec, err
	}
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = 90 * time.Second
	}
	if _, err := os.Stat(s.clusterDir(spec.Name)); err == nil {
		return spec, &topology.FieldError{Field: "name", Value: spec.Name, Reason: fmt.Sprintf("a cluster with this name exists (habench destroy %s)", spec.Name)}
	}
	return spec, nil
}

// createHostNodeDirs creates every node's directory on its host, recording it first, one
// node after the other: nodes sharing a host (or a file system) see each other's parent
// directories, and each records exactly what it creates. probes[i].UID gets the owner the
// node's directory was created for. Errors name the node.
func createHostNodeDirs(ctx context.Context, c *Cluster, probes []*hostProbe) error {
	for i, n := range c.Nodes {
		h := c.hostsSSH(n)
		p, err := probeHost(ctx, h, c.layout(n))
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		rec := &HostRecord{Cluster: c.Name, Node: n.Name, Port: n.Port, Controller: controllerName(), Time: time.Now().UTC(), Root: c.layout(n).Root}
		if err := createNodeDir(ctx, h, c.layout(n), p, rec); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		probes[i].UID = p.UID
	}
	return nil
}

// startHostNodes initialises every node's datadir and option file on its host, then starts
// the servers the plan does not start in its steps, all nodes at once, and saves the
// state (the processes started).
func (s *Store) startHostNodes(ctx context.Context, c *Cluster, plan topology.Plan, probes []*hostProbe) error {
	log := s.log().With("cluster", c.Name)
	start := time.Now()
	if err := forEachNode(c.Nodes, func(i int, n *Node) error {
		t0 := time.Now()
		err := s.prepareHostNode(ctx, c, n, plan.Nodes[i], probes[i].UID == 0)
		log.Debug("datadir ready", "node", n.Name, "took", time.Since(t0).Round(time.Millisecond))
		return err
	}); err != nil {
		return err
	}
	log.Info("datadirs ready", "elapsed", time.Since(start).Round(time.Millisecond))
	startErr := forEachNode(c.Nodes, func(_ int, n *Node) error {
		if plan.StartedBySteps(n.Name) {
			return nil
		}
		t0 := time.Now()
		err := s.startHostNode(ctx, c, n)
		log.Debug("server up", "node", n.Name, "took", time.Since(t0).Round(time.Millisecond), "err", err)
		return err
	})
	return errors.Join(startErr, c.save())
}

// forEachNode runs f for every node at once and joins the errors (a *topology.FieldError,
// the same bad option on every node, is returned alone).
func forEachNode(nodes []*Node, f func(i int, n *Node) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, n)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		var fe *topology.FieldError
		if errors.As(e, &fe) {
			return e
		}
	}
	return errors.Join(errs...)
}

// planHosts connects to spec's hosts, finds their servers, places the nodes and checks
// that each node's directory and port are free on its host. Nothing is created on any
// host. Refusals are *topology.FieldError naming the host.
func (s *Store) planHosts(ctx context.Context, spec topology.Spec) (*Cluster, []*hostProbe, error) {
	c := &Cluster{
		Name: spec.Name, ProviderName: topology.ProviderHosts, Spec: spec, Network: topology.ProviderHosts,
		// Random passwords: the servers listen on the user's network.
		User: topology.BenchUser, Password: randomPassword(), ReplPassword: randomPassword(), State: "deploying",
		Created: time.Now().UTC(), path: filepath.Join(s.clusterDir(spec.Name), "state.json"),
		Hosts: &HostsState{HostDir: hostsRootDir(spec), AdminUser: HostsAdminUser, AdminPassword: randomPassword(), Servers: map[string]string{}},
	}
	addrs, bins, err := s.resolveHosts(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	c.Binaries = bins[0]
	for i, b := range bins {
		c.Hosts.Servers[spec.Hosts[i]] = b.Server + ": " + b.VersionText
	}
	var probes []*hostProbe
	for i := 1; i <= spec.Nodes; i++ {
		hi, slot := spec.HostOf(i)
		sdir := path.Join(spec.HostDir, spec.Name, topology.NodeName(i))
		dir := path.Join(c.Hosts.HostDir, spec.Name, topology.NodeName(i))
		n := &Node{Name: topology.NodeName(i), ServerID: i, Host: addrs[hi], Port: spec.BasePort + slot, Dir: dir, ServerDir: sdir, Socket: dir + "/mysqld.sock"}
		c.Nodes = append(c.Nodes, n)
		c.Hosts.Dests = append(c.Hosts.Dests, spec.Hosts[hi])
		p, err := probeHost(ctx, c.hostsSSH(n), c.layout(n))
		if err != nil {
			return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		if err := refuseTaken(c, n, p); err != nil {
			return nil, nil, err
		}
		probes = append(probes, p)
	}
	if err := planHostsAux(ctx, c, spec, addrs); err != nil {
		return nil, nil, err
	}
	return c, probes, nil
}

// resolveHosts connects to every host of spec at once and finds its server
// (resolveHost): the hosts' addresses and servers, in spec.Hosts order. Errors name the
// host: unreachable, no server (or no Galera library and SST tools), or a server other
// than the first host's (*topology.FieldError).
func resolveHosts(ctx context.Context, spec topology.Spec) ([]string, []*Binaries, error) {
	addrs := make([]string, len(spec.Hosts))
	bins := make([]*Binaries, len(spec.Hosts))
	errs := make([]error, len(spec.Hosts))
	var wg sync.WaitGroup
	for i, dest := range spec.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addrs[i], bins[i], errs[i] = resolveHost(ctx, sshHostFor(spec.SSH, dest), spec)
		}()
	}
	wg.Wait()
	for i, e := range errs {
		if e != nil {
			return nil, nil, fmt.Errorf("hosts[%d] %s: %w", i, spec.Hosts[i], e)
		}
	}
	for i, b := range bins {
		if b.Server != bins[0].Server || b.Version != bins[0].Version {
			return nil, nil, &topology.FieldError{Field: fmt.Sprintf("hosts[%d]", i), Value: spec.Hosts[i],
				Reason: fmt.Sprintf("has %s %s, %s has %s %s: one server version for a cluster", b.Server, b.Version, spec.Hosts[0], bins[0].Server, bins[0].Version)}
		}
	}
	return addrs, bins, nil
}

// HostsAccess returns the hosts of hosts spec over SSH (its ssh: options), in
// spec.Hosts order, for checks made before a deploy (such as netem.CheckHost).
func HostsAccess(spec topology.Spec) []host.Host {
	var hs []host.Host
	for _, dest := range spec.Hosts {
		hs = append(hs, sshHostFor(spec.SSH, dest))
	}
	return hs
}

// refuseTaken is a *topology.FieldError when node n's directory, record or port is taken
// on its host: habench never touches what it did not create.
func refuseTaken(c *Cluster, n *Node, p *hostProbe) error {
	dest := c.Hosts.Dests[n.ServerID-1]
	l := c.layout(n)
	switch {
	case p.NodeDir:
		return &topology.FieldError{Field: "host_dir", Value: c.Spec.HostDir, Reason: fmt.Sprintf("%s exists on %s (node %s) and this deploy did not create it: habench touches nothing it did not make (habench destroy %s, or another host_dir)", l.nodeDir(), dest, n.Name, c.Name)}
	case p.Record:
		return &topology.FieldError{Field: "host_dir", Value: c.Spec.HostDir, Reason: fmt.Sprintf("%s exists on %s: a cluster %s of another habench state directory lives there (habench destroy %s there)", l.record(), dest, c.Name, c.Name)}
	case p.Listening[n.Port]:
		return &topology.FieldError{Field: "base_port", Value: c.Spec.BasePort, Reason: fmt.Sprintf("port %d is in use on %s (node %s): choose another base_port", n.Port, dest, n.Name)}
	}
	for _, xp := range hostsExtraPorts(c.Spec, n.Port) {
		if p.Listening[xp] {
			return &topology.FieldError{Field: "base_port", Value: c.Spec.BasePort, Reason: fmt.Sprintf("port %d that node %s needs is in use on %s", xp, n.Name, dest)}
		}
	}
	if sock := n.ServerDir + "/mysqld.sock"; len(sock) > 100 {
		return &topology.FieldError{Field: "host_dir", Value: c.Spec.HostDir, Reason: fmt.Sprintf("socket path %s is longer than the 100 bytes a unix socket allows", sock)}
	}
	return nil
}

// resolveHost connects to h (a refused key or an unreachable host is an error naming it),
// resolves the address the other nodes and habench reach it at (ssh -G's HostName, which
// is the destination itself for an address), and finds its server.
func resolveHost(ctx context.Context, h *host.SSH, spec topology.Spec) (string, *Binaries, error) {
	if err := h.Connect(ctx); err != nil {
		return "", nil, err
	}
	r, err := h.Resolve(ctx)
	if err != nil {
		return "", nil, err
	}
	if r.HostName == "" {
		return "", nil, fmt.Errorf("%s: ssh -G names no host", h.Name())
	}
	if err := CheckDestination(r.HostName); err != nil {
		return "", nil, err
	}
	b, err := hostBinaries(ctx, h, spec.Installation, spec.Flavor)
	if err == nil && spec.Is(topology.Galera) {
		_, err = checkHostGalera(ctx, h, b, spec)
	}
	return r.HostName, b, err
}

// hostsRootDir is spec's host directory as its hosts see it: under the root filesystem
// for a rootfs installation (where the chrooted servers see HostDir).
func hostsRootDir(spec topology.Spec) string {
	if spec.Installation.Kind == topology.InstallRootfs {
		return path.Join(spec.Installation.Path, spec.HostDir)
	}
	return spec.HostDir
}

// layout is where node n lives on its host.
func (c *Cluster) layout(n *Node) hostLayout {
	l := hostLayout{HostDir: c.Hosts.HostDir, Cluster: c.Name, Node: n.Name}
	if c.Binaries != nil {
		l.Root = c.Binaries.Root
	}
	return l
}

// prepareHostNode initialises node n's datadir on its host (an empty one for a node that
// gets its data by state transfer) and writes its option file and init file (the admin
// account, created at every start, not binlogged).
func (s *Store) prepareHostNode(ctx context.Context, c *Cluster, n *Node, np topology.NodePlan, asRoot bool) error {
	n.Role, n.ServerID = np.Role, np.ServerID
	init := "SET SESSION sql_log_bin=0;\n"
	if topology.FlavorOf(c.Binaries.Flavor).Install.InitWsrepOff {
		init += "SET SESSION wsrep_on=OFF;\n"
	}
	init += fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s';\nALTER USER '%s'@'%%' IDENTIFIED BY '%s';\nGRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION;\n",
		c.Hosts.AdminUser, c.Hosts.AdminPassword, c.Hosts.AdminUser, c.Hosts.AdminPassword, c.Hosts.AdminUser)
	var initArgv []string
	switch {
	case s.snapshot != nil: // every node starts with the data, Galera joiners too
		initArgv = []string{"cp", "-a", "--reflink=auto", path.Join(s.snapshot.dir, "data"), path.Join(n.Dir, "data")}
	case !np.EmptyDatadir:
		initArgv = initDatadirArgv(c.Binaries, n.ServerDir, asRoot)
	}
	files := map[string][]byte{"init.sql": []byte(init), "my.cnf": []byte(hostOptionFile(c, n, np, asRoot))}
	if err := prepareHostDir(ctx, c.hostsSSH(n), n.Dir, initArgv, files); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	if s.snapshot != nil && isGaleraKind(c.Spec.Kind) && s.snapshot.GaleraPosition != "" {
		st := GaleraState(s.snapshot.GaleraPosition, !np.EmptyDatadir)
		if err := hostWriteFile(ctx, c.hostsSSH(n), path.Join(n.Dir, "data", "grastate.dat"), []byte(st), 0o660); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if c.Spec.Is(topology.Galera) {
		return prepareHostGalera(ctx, c, n, asRoot)
	}
	return nil
}

// hostOptionFile is node n's my.cnf on its host (nodeOptionFile): bound to its address
// when that is an IP address, and with the init file that creates habench's admin account.
func hostOptionFile(c *Cluster, n *Node, np topology.NodePlan, asRoot bool) string {
	return nodeOptionFile(c, n, np, asRoot, net.ParseIP(n.Host) != nil, topology.Option{Name: "init_file", Value: n.ServerDir + "/init.sql"})
}

// startHostNode starts n's server on its host in its own session, records the process
// in the host's record and in n, and waits until it accepts admin connections. A server
// that refuses an option is a *topology.FieldError; one that exits is an error with the
// [ERROR] lines of its log.
func (s *Store) startHostNode(ctx context.Context, c *Cluster, n *Node, extra ...string) error {
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = 90 * time.Second
	}
	h := c.hostsSSH(n)
	// A stale socket lock names the PID of the server that had it (see startNode).
	argv := hostServerArgv(c, n, extra)
	pid, ticks, outStart, err := startHostProcess(ctx, h, n.Dir, []string{n.Socket, n.Socket + ".lock"}, argv)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.PID, n.StartTicks = pid, ticks
	if err := c.recordProcess(ctx, n); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, s.ReadyTimeout)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(rctx, 2*time.Second)
		err := c.Ping(pctx, n)
		pcancel()
		if err == nil {
			return nil
		}
		if !hostProcessOurs(ctx, h, pid, ticks) {
			elog, _ := h.ReadFile(ctx, n.Dir+"/error.log")
			out, _ := shRun(ctx, h, `tail -c +"$2" "$1"`, n.Dir+"/mysqld.out", strconv.FormatInt(outStart+1, 10))
			text := string(elog) + string(out)
			if fe := optionError(text); fe != nil {
				return fe
			}
			return fmt.Errorf("node %s: server exited during start on %s: %s", n.Name, h.Name(), errorLines(text))
		}
		if rctx.Err() != nil {
			elog, _ := h.ReadFile(ctx, n.Dir+"/error.log")
			return fmt.Errorf("node %s: not accepting connections on %s after %v: %w; %s", n.Name, n.Addr(), s.ReadyTimeout, err, errorLines(string(elog)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// recordProcess writes n's process into its record on its host (read, then replaced).
func (c *Cluster) recordProcess(ctx context.Context, n *Node) error {
	h, l := c.hostsSSH(n), c.layout(n)
	rec, err := readHostRecord(ctx, h, l)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	rec.PID, rec.StartTicks = n.PID, n.StartTicks
	return writeHostRecord(ctx, h, l, rec)
}

// startHostStepNode is the hosts provider's stepStarter.
func (s *Store) startHostStepNode(ctx context.Context, c *Cluster, plan topology.Plan, n *Node) error {
	err := s.startHostNode(ctx, c, n, plan.StartArgs(n.Name)...)
	return errors.Join(err, c.save())
}

// destroyHosts removes, on every node's host, what that host's record lists (processes,
// node directory, record, then the parent directories habench created when empty), then
// the cluster's state directory. A host that cannot be reached is said (Store.Notice,
// one line per node, and logged) and its nodes forgotten; any other failure keeps the state so that destroy can try again.
func (s *Store) destroyHosts(ctx context.Context, c *Cluster) error {
	if c.Hosts == nil || len(c.Hosts.Dests) < len(c.Members()) {
		s.log().Warn("state has no hosts: forgetting the cluster", "cluster", c.Name)
		return s.forgetState(c)
	}
	parents := map[string][]string{} // dest -> directories to remove when empty
	var mu sync.Mutex
	err := forEachNode(c.Members(), func(i int, n *Node) error {
		h := c.hostsSSH(n)
		ps, err := destroyHostNode(ctx, h, c.layout(n), n.PID, n.StartTicks)
		var ce *host.ConnError
		if errors.As(err, &ce) {
			s.log().Warn("host unreachable: forgetting the node (what habench made there stays, listed in its record)", "node", n.Name, "host", h.Name(), "err", err)
			s.notice(fmt.Sprintf("node %s: host %s unreachable: node forgotten; what habench made there stays, listed in %s on that host (once it is back: habench destroy %s --hosts %s, with the deploy's ssh flags and --host-dir)",
				n.Name, c.Hosts.Dests[i], c.layout(n).record(), c.Name, c.Hosts.Dests[i]))
			return nil
		}
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		mu.Lock()
		parents[c.Hosts.Dests[i]] = append(parents[c.Hosts.Dests[i]], ps...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	for dest, dirs := range parents {
		removeEmptyDirs(ctx, sshHostFor(c.Spec.SSH, dest), dirs)
	}
	return s.forgetState(c)
}

// randomPassword is 32 hex digits from crypto/rand.
func randomPassword() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// controllerName is this machine's host name, for the records habench leaves on hosts.
func controllerName() string {
	h, _ := os.Hostname()
	return h
}

// HostNodeDir is node n's directory on its host as the host sees it (under the root
// filesystem for a chrooted server), which destroy removes with every process under it;
// "" for a cluster not deployed on hosts.
func (c *Cluster) HostNodeDir(n *Node) string {
	if c.Hosts == nil || c.Hosts.HostDir == "" {
		return ""
	}
	return c.layout(n).nodeDir()
}

// resolveHosts is resolveHosts, once per store for each set of hosts, ssh options,
// installation and flavor (installMemo); the binaries are the caller's own copies.
func (s *Store) resolveHosts(ctx context.Context, spec topology.Spec) ([]string, []*Binaries, error) {
	m := s.memo()
	k, err := json.Marshal(struct {
		Hosts  []string
		SSH    any
		Inst   topology.Installation
		Flavor topology.Flavor
	}{spec.Hosts, spec.SSH, spec.Installation, spec.Flavor})
	if err != nil {
		return resolveHosts(ctx, spec)
	}
	key := string(k)
	m.mu.Lock()
	r, ok := m.hosts[key]
	m.mu.Unlock()
	if !ok {
		addrs, bins, err := resolveHosts(ctx, spec)
		if err != nil {
			return nil, nil, err
		}
		r = hostsResolved{addrs: addrs}
		for _, b := range bins {
			r.bins = append(r.bins, *b)
		}
		m.mu.Lock()
		m.hosts[key] = r
		m.mu.Unlock()
	}
	bins := make([]*Binaries, len(r.bins))
	for i := range r.bins {
		b := r.bins[i]
		bins[i] = &b
	}
	return slices.Clone(r.addrs), bins, nil
}
