package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/proxy"
	"github.com/habench/habench/topology"
)

// Proxy returns c's proxy member (topology.ProxySpec, the aux node topology.ProxyName),
// or nil when c has none.
func (c *Cluster) Proxy() *Node {
	n := c.Member(topology.ProxyName)
	if n == nil || n.Role != topology.RoleProxy {
		return nil
	}
	return n
}

// ProxyPort returns the port of the proxy's endpoint called name (one of its
// topology.ProxyDef.Ports: "write", "read", "stats", "check" for HAProxy), counted from
// the proxy member's Port; 0 when c has no proxy or the proxy no such endpoint.
func (c *Cluster) ProxyPort(name string) int {
	n := c.Proxy()
	if n == nil {
		return 0
	}
	d := topology.ProxyOf(c.Spec.Proxy.Type)
	if d == nil {
		return 0
	}
	i := slices.Index(d.Ports, name)
	if i < 0 {
		return 0
	}
	return n.Port + i
}

// ProxyWriter is the node c's proxy's write endpoint sends connections to now
// (proxy.WriteServer of ProxyState), nil when c has no proxy, none is up there, or the
// proxy cannot say.
func (c *Cluster) ProxyWriter(ctx context.Context) *Node {
	ss, err := c.ProxyState(ctx)
	if err != nil {
		return nil
	}
	return c.Node(proxy.WriteServer(ss))
}

// ProxyState reads c's proxy's servers' state now (its Program's State). Error: c has no
// proxy, its program cannot say, or the proxy does not answer.
func (c *Cluster) ProxyState(ctx context.Context) ([]proxy.Server, error) {
	n := c.Proxy()
	if n == nil {
		return nil, fmt.Errorf("cluster %s has no proxy", c.Name)
	}
	p, err := program(n)
	if err != nil {
		return nil, err
	}
	if p.State == nil {
		return nil, fmt.Errorf("cluster %s: proxy %s cannot tell its servers' state", c.Name, c.Spec.Proxy.Type)
	}
	return p.State(ctx, c, n)
}

// ProxyConfig returns the configuration of c's proxy in effect (its Program's Config):
// the file it was started with (habench's, or a copy of the user's proxy.config), or
// before a start the one it would be started with. Error: c has no proxy, its program
// has no configuration to show, a file cannot be read.
func ProxyConfig(c *Cluster) (string, error) {
	n := c.Proxy()
	if n == nil {
		return "", fmt.Errorf("cluster %s has no proxy", c.Name)
	}
	p, err := program(n)
	if err != nil {
		return "", err
	}
	if p.Config == nil {
		return "", fmt.Errorf("cluster %s: proxy %s has no configuration to show", c.Name, c.Spec.Proxy.Type)
	}
	return p.Config(c, n)
}

// RestartProxy restarts c's proxy with the health checks checks gives (the others as
// c's spec has them) and waits until it serves again (its Program's Start: HAProxy until
// its write endpoint has a server up and every check has settled, which takes about fall
// check intervals). c's spec, and its state file, then have them: the configuration in
// effect (ProxyConfig), status and a later start of the proxy (a fault's) use them. A
// proxy cannot change its checks while it runs (HAProxy's inter), hence the restart; the
// stop is clean, and the sessions through the proxy end. Nothing is done when the proxy
// runs with these checks already. Errors: c has no proxy; its proxy has no checks habench
// sets (topology.ProxyDef.NoChecks) or runs the user's configuration (proxy.config, which
// habench does not change), a *topology.FieldError on proxy.type or proxy.config; checks
// out of range (ProxyChecks.Validate, on proxy.*); the stop or the start failed (c's spec
// then has checks).
func (s *Store) RestartProxy(ctx context.Context, c *Cluster, checks topology.ProxyChecks) error {
	n := c.Proxy()
	if n == nil {
		return fmt.Errorf("cluster %s has no proxy", c.Name)
	}
	p := c.Spec.Proxy
	if d := topology.ProxyOf(p.Type); d != nil && d.NoChecks != "" {
		return &topology.FieldError{Field: "proxy.type", Value: p.Type, Reason: d.NoChecks}
	}
	if p.Config != "" {
		return &topology.FieldError{Field: "proxy.config", Value: p.Config, Reason: "the proxy runs your configuration: habench does not change its health checks"}
	}
	if err := checks.Validate("proxy"); err != nil {
		return err
	}
	want := p.With(checks)
	if want.Checks() == p.Checks() && !c.NodeDown(n) {
		return nil
	}
	if err := s.StopNode(c, n.Name); err != nil {
		return fmt.Errorf("restart the proxy: %w", err)
	}
	c.Spec.Proxy = want
	if err := s.StartNode(ctx, c, n.Name); err != nil {
		return fmt.Errorf("restart the proxy with %s: %w", want.Checks(), err)
	}
	return nil
}

// ProxyVersion is the version of c's proxy program in its own words (its Program's
// Version: "HAProxy version 2.6.12-1+deb12u4 ..."), "" when c has no proxy or the
// program cannot be asked.
func ProxyVersion(c *Cluster) string {
	n := c.Proxy()
	if n == nil {
		return ""
	}
	p, err := program(n)
	if err != nil || p.Version == nil {
		return ""
	}
	return p.Version(c)
}

// programFirstLine is the first line of what bin args prints on its standard output
// (trimmed), "" when it cannot be run or fails.
func programFirstLine(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// userProxyBinary is proxy.binary for a proxy habench does not install (typ: "proxysql"),
// as a path found on this machine (a bare name is looked up on PATH). Error: a
// *topology.FieldError on proxy.binary when it is not given or not found.
func userProxyBinary(p topology.ProxySpec, typ string) (string, error) {
	if p.Binary == "" {
		return "", &topology.FieldError{Field: "proxy.binary", Value: "", Reason: "required for proxy " + typ + ": the path of your " + typ + " (habench does not install it)"}
	}
	bin, err := exec.LookPath(p.Binary)
	if err != nil {
		return "", &topology.FieldError{Field: "proxy.binary", Value: p.Binary, Reason: "not found or not executable"}
	}
	return bin, nil
}

// proxyConfigFile writes the proxy's configuration into n.Dir/name (mode 0600: it may
// hold passwords): habench's text, written anew on each start, or the user's
// proxy.config, copied as it is on the first start and kept after. Error: the user's
// file cannot be read (a *topology.FieldError on proxy.config), a write fails.
func proxyConfigFile(c *Cluster, n *Node, name string, habench func() (string, error)) error {
	path := filepath.Join(n.Dir, name)
	if f := c.Spec.Proxy.Config; f != "" {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		text, err := os.ReadFile(f)
		if err != nil {
			return &topology.FieldError{Field: "proxy.config", Value: f, Reason: err.Error()}
		}
		return atomicfile.WriteFile(path, text, 0o600)
	}
	text, err := habench()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, []byte(text), 0o600)
}

// proxyConfigShown is a Program's Config for a proxy whose configuration is the file
// n.Dir/name: that file once started, else the user's proxy.config, else habench's text.
func proxyConfigShown(c *Cluster, n *Node, name string, habench func() (string, error)) (string, error) {
	if b, err := os.ReadFile(filepath.Join(n.Dir, name)); err == nil {
		return string(b), nil
	}
	if f := c.Spec.Proxy.Config; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("proxy.config %q: %w", f, err)
		}
		return string(b), nil
	}
	return habench()
}

// proxyLaunch is one start of a proxy that is a single process of the user's binary.
type proxyLaunch struct {
	name string   // the program's name in messages ("proxysql")
	bin  string   // its path
	args []string // its arguments
	log  string   // its standard output and error, a file in n.Dir
	// ready is "" once the proxy serves, else what it waits for (asked every 100 ms).
	ready func(ctx context.Context) string
}

// startProxyProcess starts l in n's namespace, detached (startDetached), records and saves
// its PID, then waits (s.ReadyTimeout, default 90 s) until l.ready is "". Errors: the
// process does not start or exits first (with its log's last lines), the state cannot be
// saved (the process is killed), the timeout, ctx's end.
func startProxyProcess(ctx context.Context, s *Store, c *Cluster, n *Node, l proxyLaunch) error {
	var logStart int64
	if fi, err := os.Stat(filepath.Join(n.Dir, l.log)); err == nil {
		logStart = fi.Size()
	}
	cmd, exited, err := startDetached(n, l.bin, l.args, l.log)
	if err != nil {
		return err
	}
	n.PID = cmd.Process.Pid
	n.StartTicks, _ = procStartTicks(n.PID)
	if c.Dir() != "" {
		if err := c.save(); err != nil {
			syscall.Kill(n.PID, syscall.SIGKILL)
			return err
		}
	}
	logTail := func() string {
		return strings.ReplaceAll(tail(readFrom(filepath.Join(n.Dir, l.log), logStart), 3), "\n", "; ")
	}
	timeout := s.ReadyTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		why := l.ready(ctx)
		if why == "" {
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("%s exited while starting (%v): %s", l.name, werr, logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("proxy not ready after %s: %s (%s: %s)", timeout, why, l.name, logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeEndpointAccepts is "" once c's proxy's write endpoint accepts a TCP connection
// (the readiness of a proxy run with the user's configuration), else why not.
func writeEndpointAccepts(c *Cluster, n *Node) string {
	conn, err := net.DialTimeout("tcp", proxyAddr(c, n.Host, "write"), time.Second)
	if err != nil {
		return "write endpoint: " + err.Error()
	}
	conn.Close()
	return ""
}
