package cluster

// HAProxy on one of the user's hosts (provider hosts): the proxy member is placed on a
// host like the other aux members (topology.Spec.AuxHostOf), in HOST_DIR/CLUSTER/proxy,
// recorded on its host before anything is made there, and runs the host's own haproxy
// (nothing is installed) in the foreground in its own session, detached over SSH, beside
// habench's health-check server (`habench proxy-check`) run from a copy of this habench
// binary in the proxy's directory (hosts_selfcopy.go), so that HAProxy's checks ask a
// server on its own host (127.0.0.1) and never depend on a path back to this machine.
// n.PID is HAProxy's, in the state file and the record on the host: kill, stop and start
// of the proxy work on HAProxy as on a sandbox (a start also replaces the check server);
// destroy kills every process running from the proxy's directory (both) and removes it
// with the copy. habench reads HAProxy's statistics over HTTP on the host's address, as it
// reaches the servers' SQL ports.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/proxy"
	"github.com/habench/habench/topology"
)

// haproxyHostCandidates are where haproxy is looked for on a host without proxy.binary
// (Debian's and RHEL's package install /usr/sbin/haproxy).
var haproxyHostCandidates = []string{"/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy", "/usr/local/bin/haproxy"}

// HostProgram is a program an aux member runs on its host, as found there before the
// deploy (HostsState.Programs).
type HostProgram struct {
	// Path is the program's path on the member's host.
	Path string `json:"path"`
	// Version is its own words on its version, the first line of `PATH -v` ("HAProxy
	// version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/"); "" when it says none.
	Version string `json:"version,omitempty"`
}

// planHostHAProxy is HAProxy's Program.OnHost: haproxy is on the proxy's host
// (proxy.binary, or haproxyHostCandidates) and says its version (recorded in
// c.Hosts.Programs), this habench binary can be copied there (checkSelfCopy: the same
// system and architecture), and the ports HAProxy and the check server listen on there
// (the proxy's topology.ProxyDef.Ports from n.Port). Refusals are *topology.FieldError
// naming the host.
func planHostHAProxy(ctx context.Context, c *Cluster, n *Node, h host.Host) ([]int, error) {
	p := c.Spec.Proxy
	cands, field, value := haproxyHostCandidates, "proxy", p.Type
	if p.Binary != "" {
		cands, field, value = []string{p.Binary}, "proxy.binary", p.Binary
	}
	found, err := firstFilesOn(ctx, h, cands)
	if err != nil {
		return nil, err
	}
	if found[0] == "" {
		return nil, &topology.FieldError{Field: field, Value: value, Reason: fmt.Sprintf("a proxy on a host without haproxy: none on %s (looked for %s; package haproxy, or give proxy.binary); habench installs nothing on a host", h.Name(), strings.Join(cands, ", "))}
	}
	out, err := h.Run(ctx, found[0], "-v")
	if err != nil {
		return nil, &topology.FieldError{Field: field, Value: found[0], Reason: fmt.Sprintf("%s -v on %s: %s", found[0], h.Name(), firstLineOf(err.Error()))}
	}
	bin, err := habenchBinary()
	if err != nil {
		return nil, &topology.FieldError{Field: "proxy", Value: p.Type, Reason: err.Error()}
	}
	if err := checkSelfCopy(ctx, h, bin, "proxy", p.Type); err != nil {
		return nil, err
	}
	if c.Hosts.Programs == nil {
		c.Hosts.Programs = map[string]HostProgram{}
	}
	c.Hosts.Programs[n.Name] = HostProgram{Path: found[0], Version: firstLineOf(string(out))}
	var ports []int
	for i := range topology.ProxyOf(p.Type).Ports {
		ports = append(ports, n.Port+i)
	}
	return ports, nil
}

// startHostHAProxy is startHAProxy on the proxy's host: it records and creates the proxy's
// directory there when not done yet, copies this habench binary into it (copySelf),
// writes the check server's config and HAProxy's (hostWriteProxyFiles), replaces the check
// server, starts HAProxy, records its PID on the host and in the state file, then waits
// (s.ReadyTimeout, default 90 s) until proxyReady. Errors: no haproxy recorded for the
// host, a process that exits first (with its log's last lines; a host that cannot be read
// is asked again until the timeout), the timeout, ctx's end; when the PID cannot be
// recorded or saved, both processes are killed first.
func startHostHAProxy(ctx context.Context, s *Store, c *Cluster, n *Node) error {
	prog := c.Hosts.Programs[n.Name]
	if prog.Path == "" {
		return fmt.Errorf("no haproxy recorded for %s's host (deploy again)", n.Name)
	}
	if err := ensureHostMemberDir(ctx, c, n); err != nil {
		return err
	}
	h := c.hostsSSH(n)
	bin, err := habenchBinary()
	if err != nil {
		return err
	}
	t0 := time.Now()
	exe, err := copySelf(ctx, h, c.layout(n), bin)
	if err != nil {
		return err
	}
	log := s.log().With("cluster", c.Name, "node", n.Name)
	log.Debug("habench copied to the proxy's host", "path", exe, "took", time.Since(t0).Round(time.Millisecond))
	stopHostCheckServer(ctx, h, n)
	if err := hostWriteProxyFiles(ctx, c, n, h); err != nil {
		return err
	}
	checkPID, checkTicks, checkStart, err := startHostProcessLog(ctx, h, n.Dir, checkLogFile, nil,
		[]string{exe, "proxy-check", path.Join(n.Dir, checkConfigFile)})
	if err != nil {
		return err
	}
	pid, ticks, logStart, err := startHostProcessLog(ctx, h, n.Dir, haproxyLogFile, nil,
		[]string{prog.Path, "-db", "-f", path.Join(n.Dir, haproxyConfigFile)})
	if err != nil {
		stopHostCheckServer(ctx, h, n)
		return err
	}
	n.PID, n.StartTicks = pid, ticks
	// Not recorded, not saved: neither process is left running on the host (on a fresh
	// context: ctx may be why).
	killBoth := func() {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		hostSignal(kctx, h, pid, ticks, "KILL", 5*time.Second)
		stopHostCheckServer(kctx, h, n)
	}
	if err := c.recordProcess(ctx, n); err != nil {
		killBoth()
		return err
	}
	if err := c.save(); err != nil {
		killBoth()
		return err
	}
	logTail := func(f string, from int64) string {
		out, _ := shRun(ctx, h, `tail -c +"$2" "$1"`, path.Join(n.Dir, f), strconv.FormatInt(from+1, 10))
		return strings.ReplaceAll(tail(string(out), 3), "\n", "; ")
	}
	timeout := s.ReadyTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		why := proxyReady(ctx, c, n)
		switch {
		case why == "":
			log.Debug("proxy ready", "took", time.Since(t0).Round(time.Millisecond))
			return nil
		case ctx.Err() != nil: // before asking the host: a read cut by ctx is no exit
			return ctx.Err()
		case hostProcessExited(ctx, h, pid, ticks):
			return fmt.Errorf("haproxy exited on %s while starting: %s", h.Name(), logTail(haproxyLogFile, logStart))
		case hostProcessExited(ctx, h, checkPID, checkTicks):
			return fmt.Errorf("habench proxy-check exited on %s while the proxy started: %s", h.Name(), logTail(checkLogFile, checkStart))
		case time.Now().After(deadline):
			return fmt.Errorf("proxy on %s not ready after %s: %s (haproxy: %s; checks: %s)", h.Name(), timeout, why, logTail(haproxyLogFile, logStart), logTail(checkLogFile, checkStart))
		}
	}
}

// hostWriteProxyFiles writes, in the proxy's directory on its host h (mode 0600), the
// check server's config and HAProxy's: habench's, written anew on each start (the
// writer first; the endpoints on the host's address, the check server on 127.0.0.1
// there), or the user's proxy.config (a file on this machine), copied as it is on the
// first start and kept after.
func hostWriteProxyFiles(ctx context.Context, c *Cluster, n *Node, h host.Host) error {
	backends := proxyBackends(ctx, c)
	ck := proxy.CheckConfig{Kind: c.Spec.Kind, Mode: c.Spec.Group.Mode, Nodes: backends, User: c.User, Password: c.Password,
		Listen: proxyAddr(c, "127.0.0.1", "check"), CheckInterval: c.Spec.Proxy.CheckInterval}
	b, err := json.MarshalIndent(ck, "", "  ")
	if err != nil {
		return err
	}
	if err := hostWriteFile(ctx, h, path.Join(n.Dir, checkConfigFile), b, 0o600); err != nil {
		return err
	}
	cfg := path.Join(n.Dir, haproxyConfigFile)
	if f := c.Spec.Proxy.Config; f != "" {
		if _, err := shRun(ctx, h, `test -f "$1"`, cfg); err == nil {
			return nil
		}
		text, err := os.ReadFile(f)
		if err != nil {
			return &topology.FieldError{Field: "proxy.config", Value: f, Reason: err.Error()}
		}
		return hostWriteFile(ctx, h, cfg, text, 0o600)
	}
	text, err := proxy.HAProxyText(hostHAProxyEndpoints(c, n, backends))
	if err != nil {
		return err
	}
	return hostWriteFile(ctx, h, cfg, []byte(text), 0o600)
}

// hostHAProxyEndpoints is habench's HAProxy configuration on a host (haproxyConfig): the
// endpoints bound to the host's address when that is an IP address, else (a name, which
// the host may resolve to a loopback address of its own) to all its addresses, as the
// servers are (hostOptionFile).
func hostHAProxyEndpoints(c *Cluster, n *Node, backends []proxy.Backend) proxy.HAProxyConfig {
	cfg := haproxyConfig(c, n, backends)
	if net.ParseIP(n.Host) == nil {
		cfg.Write, cfg.Stats = proxyAddr(c, "", "write"), proxyAddr(c, "", "stats")
		if cfg.Read != "" {
			cfg.Read = proxyAddr(c, "", "read")
		}
	}
	return cfg
}

// stopHostCheckServer ends the proxy's check servers still running on its host h (found
// by their config file's path on their command line): a start replaces them.
func stopHostCheckServer(ctx context.Context, h host.Host, n *Node) {
	pids, _ := hostProcessesNaming(ctx, h, path.Join(n.Dir, checkConfigFile), "")
	for _, pid := range pids {
		if !hostSignal(ctx, h, pid, 0, "TERM", 2*time.Second) {
			hostSignal(ctx, h, pid, 0, "KILL", 2*time.Second)
		}
	}
}

// hostHAProxyConfig is the Program's Config on a host: the file HAProxy was started with,
// read on its host, or before a start the one it would be started with.
func hostHAProxyConfig(c *Cluster, n *Node) (string, error) {
	if h := c.hostsSSH(n); h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if b, err := h.ReadFile(ctx, path.Join(n.Dir, haproxyConfigFile)); err == nil {
			return string(b), nil
		}
	}
	if f := c.Spec.Proxy.Config; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("proxy.config %q: %w", f, err)
		}
		return string(b), nil
	}
	return proxy.HAProxyText(hostHAProxyEndpoints(c, n, proxyBackends(context.Background(), c)))
}
