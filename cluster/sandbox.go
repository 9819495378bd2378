package cluster

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/habench/habench/topology"
)

// Sandbox deploys topologies as local server processes. With root and Network "auto" or
// NetNamespaces, each node runs in its own network namespace on a private bridge with its
// own address (so links between nodes can be impaired); otherwise every node listens on
// 127.0.0.1 at BasePort+i. Everything lives under StateDir/clusters/NAME (and the same
// path inside a root filesystem for chrooted servers).
type Sandbox struct {
	StateDir string
	Network  string // "auto" (default), NetNamespaces or NetLoopback
	BasePort int    // loopback mode: node i listens on BasePort+i-1 (default 23306)
	// ReadyTimeout bounds each readiness wait (server accepting connections, replica
	// threads running); default 90s.
	ReadyTimeout time.Duration
	// StopGrace is how long StopNode waits after SIGTERM before SIGKILL (0: DefaultStopGrace).
	StopGrace time.Duration
	// GaleraJoinBySST: the joiners of a new Galera cluster take a full state transfer by
	// the cluster's method (galera.sst), one after the other, instead of starting from its
	// seed (galera_seed.go); slower, for a test of the state transfer itself.
	GaleraJoinBySST bool
	Log             *slog.Logger
	// Notice, when set, receives lines a command says on its output besides its result
	// (a host unreachable at destroy); they are logged too. nil: logged only.
	Notice func(line string)

	// snapshot, when set (DeployFromSnapshot), is the data snapshot every node's datadir
	// is copied from.
	snapshot *Snapshot
}

// notice says line through s.Notice, when set.
func (s *Sandbox) notice(line string) {
	if s.Notice != nil {
		s.Notice(line)
	}
}

func (s *Sandbox) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// stateDir is StateDir made absolute (a relative one would change meaning with the
// working directory, and paths in option files and process command lines must be absolute).
func (s *Sandbox) stateDir() string {
	d, err := filepath.Abs(s.StateDir)
	if err != nil {
		return s.StateDir
	}
	return d
}

func (s *Sandbox) clustersDir() string { return filepath.Join(s.stateDir(), "clusters") }
func (s *Sandbox) clusterDir(name string) string {
	return filepath.Join(s.clustersDir(), name)
}

// Load reads cluster name's state file. ErrNotFound if there is none; a *FieldError if
// name is not a valid cluster name (so it can never address a path outside the state dir).
func (s *Sandbox) Load(name string) (*Cluster, error) {
	if err := topology.ValidName(name); err != nil {
		return nil, err
	}
	c, err := loadState(filepath.Join(s.clusterDir(name), "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cluster %q: %w (see `habench status`)", name, ErrNotFound)
	}
	return c, err
}

// List returns every cluster with a state file, sorted by name.
func (s *Sandbox) List() ([]*Cluster, error) {
	entries, err := os.ReadDir(s.clustersDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Cluster
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := loadState(filepath.Join(s.clustersDir(), e.Name(), "state.json"))
		if err != nil {
			// A directory without state (crash before the first save): still ours to clean.
			c = &Cluster{Name: e.Name(), path: filepath.Join(s.clustersDir(), e.Name(), "state.json"), State: "unknown"}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Deploy creates the directories, network and processes of spec, bootstraps replication
// and waits until the topology is healthy. spec is defaulted and validated first; errors
// in it are *topology.FieldError. On any failure everything created is removed again.
func (s *Sandbox) Deploy(ctx context.Context, spec topology.Spec) (c *Cluster, err error) {
	if spec.Provider != "" && spec.Provider != topology.ProviderSandbox {
		return s.Provide(ctx, spec) // another provider's spec: that provider makes it
	}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
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
	bins, err := checkedInstallation(ctx, spec)
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
	plan, err := s.prepareNodes(ctx, c, spec, bins)
	if err != nil {
		return c, err
	}
	errs, stepStarts := s.startNodes(ctx, c, plan)
	if !stepStarts {
		release()
	}
	if err := c.save(); err != nil {
		return c, err
	}
	if err := startError(errs); err != nil {
		return c, err
	}
	log.Info("servers up", "elapsed", time.Since(start).Round(time.Millisecond))
	if err := s.completeDeploy(ctx, c, plan); err != nil {
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
func (s *Sandbox) networkMode() (string, error) {
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

// checkedInstallation resolves spec's installation to binaries and lets the kind check
// them (CheckInstallation).
func checkedInstallation(ctx context.Context, spec topology.Spec) (*Binaries, error) {
	bins, err := ResolveInstallation(ctx, spec.Installation, spec.Flavor)
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

// prepareNodes builds the kind's plan for c's addresses and prepares every node's data
// directory and option file from the installation's template.
func (s *Sandbox) prepareNodes(ctx context.Context, c *Cluster, spec topology.Spec, bins *Binaries) (topology.Plan, error) {
	plan, err := topology.BuildPlan(spec, bins.Caps(), func(node string) (string, int) {
		n := c.Node(node)
		return n.Host, n.Port
	})
	if err != nil {
		return plan, err
	}
	tmpl, err := s.template(ctx, bins)
	if err != nil {
		return plan, err
	}
	if s.snapshot != nil && s.snapshot.GaleraPosition != "" && isGaleraKind(c.Spec.Kind) {
		usersAfterJoins(&plan)
	}
	seed, err := s.seedFor(ctx, c, tmpl)
	if err != nil {
		return plan, err
	}
	if seed != nil {
		seedJoins(&plan)
	}
	for i, n := range c.Nodes {
		if err := s.prepareNode(c, n, plan.Nodes[i], tmpl, seed); err != nil {
			return plan, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return plan, nil
}

// startNodes starts together the nodes no plan step starts (every kind but galera; the
// others start one by one in runPlan) and returns each node's error, and whether a plan
// step starts some node.
func (s *Sandbox) startNodes(ctx context.Context, c *Cluster, plan topology.Plan) (errs []error, stepStarts bool) {
	var wg sync.WaitGroup
	errs = make([]error, len(c.Nodes))
	for i, n := range c.Nodes {
		if plan.StartedBySteps(n.Name) {
			stepStarts = true
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.startNode(ctx, c, n)
		}()
	}
	wg.Wait()
	return errs, stepStarts
}

// startError is the nodes' start errors joined, or the first *topology.FieldError alone:
// the same bad option on every node is said once.
func startError(errs []error) error {
	for _, e := range errs {
		var fe *topology.FieldError
		if errors.As(e, &fe) {
			return fe
		}
	}
	return errors.Join(errs...)
}

// completeDeploy runs the plan's steps (replication, bootstrap), the kind's AfterPlan and
// starts the auxiliary processes (arbitrator), saving the state after each of these.
func (s *Sandbox) completeDeploy(ctx context.Context, c *Cluster, plan topology.Plan) error {
	if err := s.runPlan(ctx, c, plan); err != nil {
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
func (s *Sandbox) allocate(spec topology.Spec, bins *Binaries, mode string) (*Cluster, error) {
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
		// The servers' ports, then one per aux member (allocateAux).
		members := spec.Nodes + len(spec.AuxNodes())
		if base < 1024 || base+members-1 > 65535 {
			return nil, &topology.FieldError{Field: "base-port", Value: base, Reason: fmt.Sprintf("want 1024 to %d for %d node(s)", 65536-members, members)}
		}
		taken := map[int]string{}
		for _, e := range existing {
			for _, n := range e.Members() {
				if e.Network == NetLoopback {
					taken[n.Port] = e.Name
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
func (s *Sandbox) serverClusterDir(bins *Binaries, name string) string {
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

// template returns the host path of an initialised datadir for bins, creating it once
// (cached per installation and version; copying it is much faster than initialising).
// Templates live under DefaultCacheDir()/templates, or /habench/templates inside a root
// filesystem; `make clean-cache` removes them.
func (s *Sandbox) template(ctx context.Context, bins *Binaries) (string, error) {
	base := filepath.Join(DefaultCacheDir(), "templates")
	if bins.Root != "" {
		base = "/habench/templates"
	}
	server := filepath.Join(base, fmt.Sprintf("%s-%s-%s", bins.Flavor, bins.Version, strings.ReplaceAll(strings.Trim(bins.Server, "/"), "/", "_")))
	host := bins.HostPath(server)
	if _, err := os.Stat(filepath.Join(host, "ready")); err == nil {
		return host, nil
	}
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(host+".lock", false)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(host, "ready")); err == nil {
		return host, nil
	}
	os.RemoveAll(host)
	if err := os.MkdirAll(host, 0o755); err != nil {
		return "", err
	}
	cnf := fmt.Sprintf("[mysqld]\n%sdatadir=%s/data\nlog-error=%s/init.log\nsocket=%s/init.sock\nskip-networking\n", userLine(), server, server, server)
	fd := topology.FlavorOf(bins.Flavor)
	if fd.Install.MySQLX {
		cnf += fmt.Sprintf("secure-file-priv=%s\nmysqlx=OFF\n", server)
	}
	if bins.Basedir != "" {
		cnf += "basedir=" + bins.Basedir + "\n"
	}
	if err := os.WriteFile(filepath.Join(host, "init.cnf"), []byte(cnf), 0o644); err != nil {
		return "", err
	}
	var cmd *exec.Cmd
	defaults := "--defaults-file=" + filepath.Join(server, "init.cnf")
	if fd.Install.InstallDB {
		cmd = bins.Command("", bins.InstallDB, defaults, "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve")
	} else {
		cmd = bins.Command("", bins.Server, defaults, "--initialize-insecure")
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, cmd.Path, cmd.Args[1:]...).CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(host, "init.log"))
		return "", fmt.Errorf("initialise datadir: %w\n%s\n%s", err, out, tail(string(log), 20))
	}
	// Per-server identity must not be shared between nodes.
	os.Remove(filepath.Join(host, "data", "auto.cnf"))
	if err := os.WriteFile(filepath.Join(host, "ready"), nil, 0o644); err != nil {
		return "", err
	}
	return host, nil
}

// SandboxServerOptions are the server options habench sets on every sandbox node beyond
// what its topology needs (addresses, paths, replication): max_connections=1000, because
// the servers' default 151 refuses a run of more than about 150 threads on a node (a
// thread count sweep to 256 or 512, plus the samplers' and heartbeat's connections).
// A topology's options: come after them in the option file, so a max_connections there
// wins. The manifest records them (cluster.sandbox_options) and the run reads them back
// like the topology's options.
var SandboxServerOptions = []topology.Option{{Name: "max_connections", Value: "1000"}}

// prepareNode copies the template datadir (or the snapshot's, see DeployFromSnapshot, or
// a Galera node's seed, see galeraSeed) and writes the node's option file.
func (s *Sandbox) prepareNode(c *Cluster, n *Node, np topology.NodePlan, tmpl string, seed *galeraSeed) error {
	if err := os.MkdirAll(filepath.Join(n.Dir, "tmp"), 0o755); err != nil {
		return err
	}
	if s.snapshot != nil {
		if err := s.nodeFromSnapshot(c, n, np); err != nil {
			return err
		}
	} else if seed != nil {
		if err := copyDatadir(filepath.Join(seed.dir, "data"), filepath.Join(n.Dir, "data")); err != nil {
			return err
		}
	} else if np.EmptyDatadir {
		if err := os.Mkdir(filepath.Join(n.Dir, "data"), 0o700); err != nil {
			return err
		}
	} else if out, err := exec.Command("cp", "-a", filepath.Join(tmpl, "data"), filepath.Join(n.Dir, "data")).CombinedOutput(); err != nil {
		return fmt.Errorf("copy datadir: %v: %s", err, out)
	}
	if seed != nil {
		if err := seedNode(c, n, np, seed); err != nil {
			return err
		}
	}
	n.Role = np.Role
	n.ServerID = np.ServerID
	if f := c.ops().PrepareNode; f != nil {
		if err := f(c, n); err != nil {
			return err
		}
	}
	// As root the servers must be told to stay root; otherwise they run as the caller.
	cnf := nodeOptionFile(c, n, np, os.Geteuid() == 0, true)
	return os.WriteFile(filepath.Join(n.Dir, "my.cnf"), []byte(cnf), 0o644)
}

// nodeOptionFile is node n's option file, wherever it runs: user root when asRoot, its
// paths under its ServerDir, its port and address (bind_address too when bind), extra,
// habench's own server options (SandboxServerOptions), the installation's basedir,
// MySQL's secure_file_priv and mysqlx, then the plan's options (last, so they win).
func nodeOptionFile(c *Cluster, n *Node, np topology.NodePlan, asRoot, bind bool, extra ...topology.Option) string {
	d := n.ServerDir
	var opts []topology.Option
	if asRoot {
		opts = append(opts, topology.Option{Name: "user", Value: "root"})
	}
	opts = append(opts, []topology.Option{
		{Name: "datadir", Value: d + "/data"},
		{Name: "socket", Value: d + "/mysqld.sock"},
		{Name: "pid_file", Value: d + "/mysqld.pid"},
		{Name: "log_error", Value: d + "/error.log"},
		{Name: "tmpdir", Value: d + "/tmp"},
		{Name: "port", Value: strconv.Itoa(n.Port)},
	}...)
	if bind {
		opts = append(opts, topology.Option{Name: "bind_address", Value: n.Host})
	}
	opts = append(opts, topology.Option{Name: "report_host", Value: n.Host}, topology.Option{Name: "report_port", Value: strconv.Itoa(n.Port)})
	opts = append(opts, extra...)
	opts = append(opts, SandboxServerOptions...)
	if c.Binaries.Basedir != "" {
		opts = append(opts, topology.Option{Name: "basedir", Value: c.Binaries.Basedir})
	}
	if topology.FlavorOf(c.Binaries.Flavor).Install.MySQLX {
		opts = append(opts, topology.Option{Name: "secure_file_priv", Value: d + "/tmp"}, topology.Option{Name: "mysqlx", Value: "OFF"})
	}
	opts = append(opts, np.Options...)
	var b strings.Builder
	b.WriteString("# written by habench for " + c.Name + "/" + n.Name + "\n[mysqld]\n")
	for _, o := range opts {
		if o.Value == "" {
			fmt.Fprintf(&b, "%s\n", o.Name)
		} else {
			fmt.Fprintf(&b, "%s=%s\n", o.Name, o.Value)
		}
	}
	return b.String()
}

// startNode starts n's server in its own session (it outlives habench), records its PID,
// and waits until it accepts connections on its socket. extra are server arguments for this
// start only (after --defaults-file).
func (s *Sandbox) startNode(ctx context.Context, c *Cluster, n *Node, extra ...string) error {
	ready, err := s.launchNode(c, n, extra...)
	if err != nil {
		return err
	}
	return ready(ctx)
}

// launchNode starts n's server in its own session (it outlives habench) and records its
// PID in n, returning at once; ready waits (at most s.ReadyTimeout) until the server
// accepts connections on its socket, or returns why it exited during its start (a
// *topology.FieldError for an option it refused).
func (s *Sandbox) launchNode(c *Cluster, n *Node, extra ...string) (ready func(context.Context) error, err error) {
	os.Remove(n.Socket)
	// MySQL's socket lock names the PID of the server that had the socket; right after a
	// SIGKILL that PID may still be an unreaped zombie, and the new server then refuses to
	// start ("Another process with pid N is using unix socket file"). n's server is not
	// running (callers checked), so the lock is stale.
	os.Remove(n.Socket + ".lock")
	args := append([]string{"--defaults-file=" + filepath.Join(n.ServerDir, "my.cnf")}, extra...)
	cmd := c.serverCommand(n, args)
	out, err := os.OpenFile(filepath.Join(n.Dir, "mysqld.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	// The server reports options it refuses while parsing them, before it opens
	// error.log, on stderr: remember where this start's output begins.
	outStart, _ := out.Seek(0, io.SeekEnd)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("node %s: start %s: %w", n.Name, c.Binaries.Server, err)
	}
	n.PID = cmd.Process.Pid
	n.StartTicks, _ = procStartTicks(n.PID)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, s.ReadyTimeout)
		defer cancel()
		pctx, pcancel := context.WithCancel(rctx)
		defer pcancel()
		ready := make(chan error, 1)
		go func() { ready <- c.Ping(pctx, n) }()
		select {
		case err := <-ready:
			if err != nil {
				return fmt.Errorf("%w; %s", err, errorLines(readFile(filepath.Join(n.Dir, "error.log"))))
			}
			return nil
		case werr := <-exited:
			pcancel()
			log := readFile(filepath.Join(n.Dir, "error.log")) + readFrom(filepath.Join(n.Dir, "mysqld.out"), outStart)
			if fe := optionError(log); fe != nil {
				return fe
			}
			return fmt.Errorf("node %s: server exited during start (%v): %s", n.Name, werr, errorLines(log))
		}
	}, nil
}

// runPlan executes the bootstrap steps in order over the admin sockets.
func (s *Sandbox) runPlan(ctx context.Context, c *Cluster, plan topology.Plan) error {
	return s.runPlanWith(ctx, c, plan, s.startStepNode)
}

// stepStarter starts node n for a plan step that starts it (topology.Step.Start), with
// the plan's StartArgs, records it in the state file, and returns once it accepts
// connections: the one part of running a plan that depends on where the servers run.
type stepStarter func(ctx context.Context, c *Cluster, plan topology.Plan, n *Node) error

// runPlanWith executes the bootstrap steps in order over admin connections (c.OpenAdmin,
// so over whatever c's provider gives), starting nodes with start.
func (s *Sandbox) runPlanWith(ctx context.Context, c *Cluster, plan topology.Plan, start stepStarter) (rerr error) {
	var bg background
	defer func() { rerr = errors.Join(rerr, bg.wait()) }()
	for _, st := range plan.Steps {
		if st.Background {
			if err := s.startBackground(ctx, c, st, &bg); err != nil {
				return err
			}
			continue
		}
		if err := s.runStep(ctx, c, plan, st, start); err != nil {
			return err
		}
	}
	return nil
}

// runStep runs one plan step: it starts the step's node when the step says so, runs its
// statements over an admin connection, then waits for its condition (s.ReadyTimeout).
func (s *Sandbox) runStep(ctx context.Context, c *Cluster, plan topology.Plan, st topology.Step, start stepStarter) error {
	caps := c.Binaries.Caps()
	n := c.Node(st.Node)
	if st.Start {
		if err := start(ctx, c, plan, n); err != nil {
			return err
		}
		s.log().Debug("server up", "node", n.Name, "step", st.Desc)
	}
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	err = func() error {
		defer db.Close()
		// A server that has just started (a Galera joiner during its state transfer) can
		// drop the first connection: retried for up to 10 s.
		var conn *sql.Conn
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			conn, err = db.Conn(ctx)
			if err == nil || !(errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn)) || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		defer conn.Close()
		for _, q := range st.SQL {
			if _, err := conn.ExecContext(ctx, q); err != nil && !ignoredError(err, st.IgnoreErrors) {
				return fmt.Errorf("node %s: %s: %s: %w", n.Name, st.Desc, redact(q), err)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, s.ReadyTimeout)
		defer cancel()
		switch st.Wait {
		case topology.WaitReplicaRunning:
			return waitReplicaRunning(wctx, db, caps, n.Name)
		case topology.WaitSemiSyncReady:
			return waitSemiSyncClients(wctx, db, caps, max(st.Replicas, c.Spec.SemiSync.WaitForReplicas), n.Name)
		case topology.WaitGroupOnline:
			return waitGroupOnline(wctx, db, n.Name)
		case topology.WaitSynced:
			return waitSynced(wctx, c, db, n, st.ClusterSize)
		}
		return nil
	}()
	if err != nil {
		return err
	}
	s.log().Debug("step done", "node", n.Name, "step", st.Desc)
	return nil
}

// startStepNode starts node n for a plan step (with its plan's StartArgs) and records its
// PID in the state file at once. A server that refuses an option is a *topology.FieldError.
func (s *Sandbox) startStepNode(ctx context.Context, c *Cluster, plan topology.Plan, n *Node) error {
	err := s.startNode(ctx, c, n, plan.StartArgs(n.Name)...)
	if serr := c.save(); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// ReplicaStatus reads SHOW REPLICA|SLAVE STATUS into a column->value map (nil, nil when
// the node is not a replica).
func ReplicaStatus(ctx context.Context, db *sql.DB, caps topology.Capabilities) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, caps.ShowReplicaStatus())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(cols))
	for i, c := range cols {
		m[c] = vals[i].String
	}
	return m, rows.Err()
}

func waitReplicaRunning(ctx context.Context, db *sql.DB, caps topology.Capabilities, node string) error {
	var last map[string]string
	start := time.Now()
	for {
		st, err := ReplicaStatus(ctx, db, caps)
		if err == nil && st != nil {
			last = st
			io, sqlr := st[caps.ReplicaStatusColumn("io_running")], st[caps.ReplicaStatusColumn("sql_running")]
			if io == "Yes" && sqlr == "Yes" {
				return nil
			}
			// A thread that stopped with an error will not recover by waiting
			// ("Connecting" is a retry in progress and may).
			if e := st[caps.ReplicaStatusColumn("last_io_error")]; io == "No" && e != "" {
				return fmt.Errorf("node %s: replica receiver stopped: %s", node, e)
			}
			if e := st[caps.ReplicaStatusColumn("last_sql_error")]; sqlr == "No" && e != "" {
				return fmt.Errorf("node %s: replica applier stopped: %s", node, e)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: replica threads not running after %v (io=%q sql=%q io_error=%q sql_error=%q)", node, waited(start),
				last[caps.ReplicaStatusColumn("io_running")], last[caps.ReplicaStatusColumn("sql_running")],
				last[caps.ReplicaStatusColumn("last_io_error")], last[caps.ReplicaStatusColumn("last_sql_error")])
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func waitSemiSyncClients(ctx context.Context, db *sql.DB, caps topology.Capabilities, want int, node string) error {
	v := caps.SemiSyncNames()
	var name string
	var n int
	start := time.Now()
	for {
		err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v.StatusPrefix+"clients'").Scan(&name, &n)
		if err == nil && n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: %d semi-sync replicas connected after %v, want %d (last error: %v)", node, n, waited(start), want, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Destroy stops cluster name's servers and removes its processes, namespaces, links and
// directories. It works from the state file alone, also after habench was killed, and by
// name when the state file is missing or unreadable. For an existing cluster it only
// forgets the registration: its servers are not touched.
func (s *Sandbox) Destroy(ctx context.Context, name string) error {
	defer destroyedByUs(name)
	c, err := s.Load(name)
	if err != nil {
		var fe *topology.FieldError
		if errors.As(err, &fe) {
			return err
		}
		if _, serr := os.Stat(s.clusterDir(name)); serr != nil {
			return err
		}
		// A directory without a readable state (crash, corruption): clean what we can by name.
		s.log().Warn("state unreadable, destroying by name", "cluster", name, "err", err)
		c = &Cluster{Name: name, Network: "unknown", path: filepath.Join(s.clusterDir(name), "state.json")}
	}
	return c.Provider().Destroy(ctx, s, c)
}

// DestroyAll destroys every cluster in the state directory.
func (s *Sandbox) DestroyAll(ctx context.Context) error {
	cs, err := s.List()
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		if c.State == "unknown" {
			c.Network = "unknown"
		}
		errs = append(errs, c.Provider().Destroy(ctx, s, c))
	}
	return errors.Join(errs...)
}

// destroy kills the servers (SIGKILL: their data is deleted anyway, and a clean shutdown
// of a MySQL source with connected replicas takes about 10 s), then removes the network
// and the directories.
func (s *Sandbox) destroy(ctx context.Context, c *Cluster) error {
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range c.Members() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !signalAndWait(n.PID, n.StartTicks, syscall.SIGKILL, 10*time.Second) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("node %s: pid %d survived SIGKILL", n.Name, n.PID))
				mu.Unlock()
			}
		}()
	}
	// The detached link process (`habench netem apply`, userspace backend) holds TUN
	// devices in the nodes' namespaces: it goes first.
	for _, pid := range LinkProcesses(c) {
		if err := Terminate(pid, 0, 3*time.Second); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("link process: %w", err))
			mu.Unlock()
		}
	}
	wg.Wait()
	// Servers whose PID never reached the state file, found by their option file path:
	// under the state dir, and under /habench/<hash>/<name> inside a root filesystem
	// (that path does not depend on the state file).
	for _, dir := range []string{s.clusterDir(c.Name), s.serverClusterDir(&Binaries{Root: "-"}, c.Name)} {
		for _, pid := range processesUnder(dir) {
			signalAndWait(pid, 0, syscall.SIGKILL, 5*time.Second)
		}
		// Galera state transfer helpers (rsync daemon) outlive a killed server.
		for _, pid := range sstHelpers(dir) {
			signalAndWait(pid, 0, syscall.SIGKILL, 5*time.Second)
		}
	}
	if os.Geteuid() == 0 && c.Network == NetNamespaces {
		// Whatever still runs in the cluster's own namespaces (children of a killed
		// server: SST scripts, rsync) would keep them alive after teardown.
		for _, n := range c.Members() {
			for _, pid := range processesInNetns(netnsName(c.Name, n.Name)) {
				signalAndWait(pid, 0, syscall.SIGKILL, 5*time.Second)
			}
		}
	}
	if os.Geteuid() == 0 && c.Network != NetLoopback {
		var names []string
		for _, n := range c.Members() {
			names = append(names, n.Name)
		}
		// Without a state file, namespaces are only removed when no process lives in them:
		// another state directory may own a cluster of the same name.
		onlyOrphans := c.Network != NetNamespaces
		if len(names) == 0 {
			for i := 1; i <= topology.MaxNodes; i++ {
				names = append(names, topology.NodeName(i))
			}
		}
		if err := teardownNetwork(c.Name, names, onlyOrphans); err != nil {
			errs = append(errs, err)
		}
	}
	roots := []string{DefaultRootfs, DefaultMariaDBRootfs}
	if c.Binaries != nil && c.Binaries.Root != "" {
		roots = []string{c.Binaries.Root}
	}
	for _, root := range roots {
		b := &Binaries{Root: root}
		dir := b.HostPath(s.serverClusterDir(b, c.Name))
		if _, err := os.Stat(dir); err == nil {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
		}
		os.Remove(filepath.Dir(dir)) // the state directory's folder in the rootfs, when empty
	}
	if err := os.RemoveAll(s.clusterDir(c.Name)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DefaultStopGrace is how long StopNode waits for a server to shut down after SIGTERM
// before it kills it with SIGKILL (Sandbox.StopGrace overrides it). 90 s: a loaded MySQL
// group primary needs 57-59 s for a clean shutdown (Group Replication's stop waits up to
// its fixed 50 s TRANSACTION_KILL_TIMEOUT for commits in flight, docs/topologies.md); a
// 60 s grace turned some of those into crashes.
const DefaultStopGrace = 90 * time.Second

// StopEscalatedError says that a clean stop was not one: the server did not exit within
// Grace of SIGTERM and was killed with SIGKILL (a crash as far as the server, its group
// and its clients are concerned). The node is down when it is returned.
type StopEscalatedError struct {
	Node  string
	PID   int
	Grace time.Duration
}

func (e *StopEscalatedError) Error() string {
	return fmt.Sprintf("node %s did not shut down within %g s of SIGTERM: killed with SIGKILL (a crash, not a clean stop)", e.Node, e.Grace.Seconds())
}

// stopProcess shuts node n's server down: SIGTERM, then SIGKILL after grace. Errors:
// *StopEscalatedError when SIGKILL was needed (the server is gone), else an error when
// the process survived SIGKILL for 5 s.
func stopProcess(n *Node, grace time.Duration) error {
	if !ourProcess(n.PID, n.StartTicks) {
		return nil
	}
	if signalAndWait(n.PID, n.StartTicks, syscall.SIGTERM, grace) {
		return nil
	}
	if signalAndWait(n.PID, n.StartTicks, syscall.SIGKILL, 5*time.Second) {
		return &StopEscalatedError{Node: n.Name, PID: n.PID, Grace: grace}
	}
	return fmt.Errorf("node %s: pid %d survived SIGTERM and SIGKILL", n.Name, n.PID)
}

// StopNode shuts node's server down cleanly: for a sandbox SIGTERM, then SIGKILL if it
// has not exited after s.StopGrace (default DefaultStopGrace, 90 s); other providers as
// they do it (Provider.StopNode). Errors: *StopEscalatedError when it took SIGKILL (the
// node is down, but it crashed: callers must say so), *topology.FieldError for an unknown
// node, *UnsupportedError when c's provider does not stop nodes.
func (s *Sandbox) StopNode(c *Cluster, node string) error {
	n, err := c.memberFor(OpStopNode, node)
	if err != nil {
		return err
	}
	return c.Provider().StopNode(context.Background(), s, c, n)
}

// KillNode kills node's server (a crash: SIGKILL for a sandbox). Error when the process
// is still there 10 s later (stuck in the kernel): the fault did not happen as recorded;
// *UnsupportedError when c's provider does not kill nodes.
func (s *Sandbox) KillNode(c *Cluster, node string) error {
	n, err := c.memberFor(OpKillNode, node)
	if err != nil {
		return err
	}
	return c.Provider().KillNode(context.Background(), s, c, n)
}

// StartNode starts a stopped node again and waits until it accepts connections; a Galera
// node also until it has rejoined (Synced in a Primary component, after IST or SST), a Group
// Replication member until it is ONLINE in its group again (see rejoinGroup). When no other
// node runs, a group member bootstraps the group again and a Galera node bootstraps a new
// Primary component, the latter only if it stopped last (see galeraStartArgs).
// *UnsupportedError when c's provider does not start nodes.
func (s *Sandbox) StartNode(ctx context.Context, c *Cluster, node string) error {
	n, err := c.memberFor(OpStartNode, node)
	if err != nil {
		return err
	}
	return c.Provider().StartNode(ctx, s, c, n)
}

// memberFor returns member node for op: the provider's refusal first (as before, a
// provider that cannot do op says so whatever the node), then *topology.FieldError for
// an unknown node.
func (c *Cluster) memberFor(op Op, node string) (*Node, error) {
	if err := c.Refuse(op, string(op)+" "+node); err != nil {
		return nil, err
	}
	n := c.Member(node)
	if n == nil {
		return nil, &topology.FieldError{Field: "node", Value: node, Reason: "no such node in " + c.Name}
	}
	return n, nil
}

// Running reports whether node n's recorded server process is alive.
func (n *Node) Running() bool { return ourProcess(n.PID, n.StartTicks) }

// globalLockPath is the machine-wide allocation lock (/run/habench.lock as root).
func globalLockPath() string {
	if os.Geteuid() == 0 {
		return "/run/habench.lock"
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("habench-%d.lock", os.Geteuid()))
}

var (
	unknownVarRE = regexp.MustCompile(`unknown (?:variable|option) '-*([^'=]+)(?:=([^']*))?'`)
	badValueRE   = regexp.MustCompile(`Error while setting value '([^']*)' to '([^']+)'`)
)

// optionError turns a server's refusal of a user option (found in its error log) into bad
// input: *topology.FieldError naming the option and the value. nil when the log has none.
func optionError(log string) *topology.FieldError {
	if m := unknownVarRE.FindStringSubmatch(log); m != nil {
		return &topology.FieldError{Field: "options", Value: strings.ReplaceAll(m[1], "-", "_"), Reason: "the server does not know this variable"}
	}
	if m := badValueRE.FindStringSubmatch(log); m != nil {
		return &topology.FieldError{Field: "options." + strings.ReplaceAll(m[2], "-", "_"), Value: m[1], Reason: "the server refused this value"}
	}
	return nil
}

// userLine is "user=root\n" when habench runs as root (mysqld refuses to run as root
// without it), else "" (the server runs as the calling user).
func userLine() string {
	if os.Geteuid() == 0 {
		return "user=root\n"
	}
	return ""
}

// errorLines returns the [ERROR] lines of a server error log joined by "; " (the last
// five), or its last three lines when it has none: one readable line for an error message.
func errorLines(log string) string {
	var errs []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "[ERROR]") {
			if i := strings.Index(l, "[ERROR]"); i >= 0 {
				l = l[i:]
			}
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) == 0 {
		return strings.ReplaceAll(tail(log, 3), "\n", "; ")
	}
	if len(errs) > 5 {
		errs = errs[len(errs)-5:]
	}
	return strings.Join(errs, "; ")
}

func readFile(p string) string { b, _ := os.ReadFile(p); return string(b) }

// readFrom returns file p from byte offset off on ("" when it cannot be read).
func readFrom(p string, off int64) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// redact hides passwords in SQL for error messages.
func redact(q string) string {
	for _, k := range []string{"PASSWORD=", "IDENTIFIED BY "} {
		if i := strings.Index(q, k); i >= 0 {
			j := strings.IndexAny(q[i+len(k)+1:], "'")
			if j >= 0 {
				q = q[:i+len(k)] + "'***'" + q[i+len(k)+j+2:]
			}
		}
	}
	return q
}

// Leftovers lists what of cluster c still exists on this machine: live processes under
// its directories, network namespaces and links of its name, and its directories. Empty
// after a successful Destroy.
func Leftovers(s *Sandbox, c *Cluster) []string {
	var left []string
	dirs := []string{s.clusterDir(c.Name)}
	if c.Binaries != nil && c.Binaries.Root != "" {
		dirs = append(dirs, c.Binaries.HostPath(s.serverClusterDir(c.Binaries, c.Name)))
		for _, pid := range processesUnder(s.serverClusterDir(c.Binaries, c.Name)) {
			left = append(left, fmt.Sprintf("process %d", pid))
		}
	}
	for _, pid := range processesUnder(s.clusterDir(c.Name)) {
		left = append(left, fmt.Sprintf("process %d", pid))
	}
	for _, dir := range []string{s.clusterDir(c.Name), s.serverClusterDir(&Binaries{Root: "-"}, c.Name)} {
		for _, pid := range sstHelpers(dir) {
			left = append(left, fmt.Sprintf("state transfer process %d", pid))
		}
	}
	for _, pid := range processesWithArg(LinkStateArg + s.clusterDir(c.Name) + "/") {
		left = append(left, fmt.Sprintf("link process %d", pid))
	}
	for _, n := range c.Members() {
		if n.Running() {
			left = append(left, fmt.Sprintf("node %s pid %d", n.Name, n.PID))
		}
	}
	if os.Geteuid() == 0 {
		left = append(left, leftoverNetwork(c.Name)...)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			left = append(left, "directory "+d)
		}
	}
	return left
}
