package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/habench/habench/topology"
)

// template returns the host path of an initialised datadir for bins, creating it once
// (cached per installation and version; copying it is much faster than initialising).
// Templates live under DefaultCacheDir()/templates, or /habench/templates inside a root
// filesystem; `make clean-cache` removes them.
func (s *Store) template(ctx context.Context, bins *Binaries) (string, error) {
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

// prepareNode copies the template datadir (or the snapshot's, see DeployFromSnapshot, or
// a Galera node's seed, see galeraSeed) and writes the node's option file.
func (s *Store) prepareNode(c *Cluster, n *Node, np topology.NodePlan, tmpl string, seed *galeraSeed) error {
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

// startNode starts n's server in its own session (it outlives habench), records its PID,
// and waits until it accepts connections on its socket. extra are server arguments for this
// start only (after --defaults-file).
func (s *Store) startNode(ctx context.Context, c *Cluster, n *Node, extra ...string) error {
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
func (s *Store) launchNode(c *Cluster, n *Node, extra ...string) (ready func(context.Context) error, err error) {
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

// userLine is "user=root\n" when habench runs as root (mysqld refuses to run as root
// without it), else "" (the server runs as the calling user).
func userLine() string {
	if os.Geteuid() == 0 {
		return "user=root\n"
	}
	return ""
}
