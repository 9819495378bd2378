package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/habench/habench/topology"
)

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
// MySQL's secure_file_priv and mysqlx, then the plan's options (last, so they win). A
// Galera node also gets an [sst] group that keeps its SST scripts' log archive in its own
// directory (sst-log-archive-dir), where mariabackup's and xtrabackup's scripts would
// otherwise leave one in /tmp/sst_log_archive per transfer, past the cluster's destroy.
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
	if slices.ContainsFunc(np.Options, func(o topology.Option) bool { return o.Name == "wsrep_sst_method" }) {
		fmt.Fprintf(&b, "[sst]\nsst-log-archive-dir=%s/sst_log_archive\n", d)
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
