package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/proxy"
	"github.com/habench/habench/topology"
)

// HAProxy as a sandbox member (topology.HAProxy): its Program starts, in the proxy's
// namespace, habench's health-check server (`habench proxy-check`, package proxy) and
// HAProxy in the foreground (-db), both in sessions of their own; n.PID is HAProxy's.
// kill, stop and start of node proxy work on HAProxy; a start also replaces the check
// server. The check server ends by itself once its config file is gone (destroy). On
// provider hosts: hosts_haproxy.go (the host's haproxy, checked there before a deploy).
func init() {
	RegisterProgram(topology.HAProxy, Program{Start: startHAProxy, Health: haproxyHealth, State: proxyStats,
		Check:  checkHAProxyHere,
		Config: haproxyConfigInEffect, Version: haproxyVersion, OnHost: planHostHAProxy})
}

// checkHAProxyHere is the Program's Check: haproxy on this machine for a sandbox (on
// provider hosts, planHostHAProxy checks the proxy's host instead).
func checkHAProxyHere(spec topology.Spec) error {
	if spec.IsHosts() {
		return nil
	}
	_, err := haproxyBinary(spec.Proxy)
	return err
}

// The proxy's files in its directory.
const (
	haproxyConfigFile = "haproxy.cfg" // the configuration in effect (habench's or the user's copy)
	checkConfigFile   = "check.json"  // the check server's proxy.CheckConfig, mode 0600
	haproxyLogFile    = "haproxy.log" // HAProxy's standard output and error
	checkLogFile      = "check.log"   // the check server's
)

// HabenchBinary is the habench program package cluster starts as a proxy's health-check
// server (`habench proxy-check`). cmd/habench sets it to its own executable; a program
// that does not (a test binary) sets it or the environment variable HabenchBinEnv.
var HabenchBinary string

// HabenchBinEnv names the environment variable with the habench program's path, used
// when HabenchBinary is empty.
const HabenchBinEnv = "HABENCH_BIN"

// habenchBinary is HabenchBinary, else $HABENCH_BIN; an error when neither names a file.
func habenchBinary() (string, error) {
	bin := HabenchBinary
	if bin == "" {
		bin = os.Getenv(HabenchBinEnv)
	}
	if bin == "" {
		return "", fmt.Errorf("no habench program to serve the proxy's health checks: set cluster.HabenchBinary or %s", HabenchBinEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s %q: %w", HabenchBinEnv, bin, err)
	}
	return bin, nil
}

// haproxyBinary is proxy.binary, or haproxy on PATH; a *topology.FieldError on
// proxy.binary naming the value when it is not there.
func haproxyBinary(p topology.ProxySpec) (string, error) {
	name := p.Binary
	if name == "" {
		name = "haproxy"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", &topology.FieldError{Field: "proxy.binary", Value: name, Reason: "not found (apt-get install haproxy, or give its path)"}
	}
	return bin, nil
}

// proxyBackends are c's servers in the write endpoint's order: the writer now first.
func proxyBackends(ctx context.Context, c *Cluster) []proxy.Backend {
	w := c.WriterNow(ctx)
	var out []proxy.Backend
	for _, n := range c.Nodes {
		b := proxy.Backend{Name: n.Name, Host: n.Host, Port: n.Port}
		if n == w {
			out = append([]proxy.Backend{b}, out...)
		} else {
			out = append(out, b)
		}
	}
	return out
}

// addr is "host:port" of n's proxy endpoint called name (Cluster.ProxyPort).
func proxyAddr(c *Cluster, host, name string) string {
	return net.JoinHostPort(host, strconv.Itoa(c.ProxyPort(name)))
}

// haproxyConfig is habench's HAProxy configuration for c with these backends: the
// endpoints on the proxy's address, the check server on 127.0.0.1 in its namespace.
func haproxyConfig(c *Cluster, n *Node, backends []proxy.Backend) proxy.HAProxyConfig {
	p := c.Spec.Proxy
	cfg := proxy.HAProxyConfig{
		Cluster: c.Name, Backends: backends, CheckInterval: p.CheckInterval, Fall: p.Fall, Rise: p.Rise,
		Write: proxyAddr(c, n.Host, "write"), Stats: proxyAddr(c, n.Host, "stats"), Check: proxyAddr(c, "127.0.0.1", "check"),
	}
	if p.HasRead() {
		cfg.Read = proxyAddr(c, n.Host, "read")
	}
	return cfg
}

// haproxyConfigInEffect is the Program's Config: the file HAProxy was started with
// (habench's, or a copy of the user's proxy.config), or before a start the one it would
// be started with. Error: a file cannot be read.
func haproxyConfigInEffect(c *Cluster, n *Node) (string, error) {
	if c.Hosts != nil {
		return hostHAProxyConfig(c, n)
	}
	return proxyConfigShown(c, n, haproxyConfigFile, func() (string, error) {
		return proxy.HAProxyText(haproxyConfig(c, n, proxyBackends(context.Background(), c)))
	})
}

// writeProxyFiles writes the check server's config (0600: the benchmark password) and
// HAProxy's into n.Dir: habench's, written anew on each start (the writer first), or the
// user's proxy.config, copied as it is on the first start and kept after.
func writeProxyFiles(ctx context.Context, c *Cluster, n *Node) error {
	backends := proxyBackends(ctx, c)
	ck := proxy.CheckConfig{Kind: c.Spec.Kind, Mode: c.Spec.Group.Mode, Nodes: backends, User: c.User, Password: c.Password,
		Listen: proxyAddr(c, "127.0.0.1", "check"), CheckInterval: c.Spec.Proxy.CheckInterval}
	b, err := json.MarshalIndent(ck, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(n.Dir, checkConfigFile), b, 0o600); err != nil {
		return err
	}
	return proxyConfigFile(c, n, haproxyConfigFile, func() (string, error) {
		return proxy.HAProxyText(haproxyConfig(c, n, backends))
	})
}

// startDetached starts bin with args in n's namespace (nsenter; on loopback as it is), in
// a session of its own, working directory n.Dir, output appended to n.Dir/logName. It
// returns the process and a channel that gets its exit.
func startDetached(n *Node, bin string, args []string, logName string) (*exec.Cmd, <-chan error, error) {
	out, err := os.OpenFile(filepath.Join(n.Dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer out.Close()
	cmd := exec.Command(bin, args...)
	if n.Netns != "" {
		cmd = exec.Command("nsenter", append([]string{"--net=" + filepath.Join("/run/netns", n.Netns), "--", bin}, args...)...)
	}
	cmd.Dir = n.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, exited, nil
}

// stopCheckServer ends n's check servers still running (found by their config file's
// path on their command line): a start replaces them.
func stopCheckServer(n *Node) {
	for _, pid := range processesWithArg(filepath.Join(n.Dir, checkConfigFile)) {
		if !signalAndWait(pid, 0, syscall.SIGTERM, 2*time.Second) {
			signalAndWait(pid, 0, syscall.SIGKILL, 2*time.Second)
		}
	}
}

// startHAProxy is the Program's Start: it writes the proxy's files, replaces the check
// server, starts HAProxy, records and saves its PID, then waits (s.ReadyTimeout, default
// 90 s) until the write endpoint has a server up in HAProxy's statistics and every check
// has settled (proxyReady). Errors: no HAProxy or
// habench program, a process that exits first (with its log's last lines), the timeout.
func startHAProxy(ctx context.Context, s *Store, c *Cluster, n *Node) error {
	if c.Hosts != nil {
		return startHostHAProxy(ctx, s, c, n)
	}
	bin, err := haproxyBinary(c.Spec.Proxy)
	if err != nil {
		return err
	}
	exe, err := habenchBinary()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	stopCheckServer(n)
	if err := writeProxyFiles(ctx, c, n); err != nil {
		return err
	}
	logs := map[string]int64{}
	for _, f := range []string{haproxyLogFile, checkLogFile} {
		if fi, err := os.Stat(filepath.Join(n.Dir, f)); err == nil {
			logs[f] = fi.Size()
		}
	}
	_, checkExited, err := startDetached(n, exe, []string{"proxy-check", filepath.Join(n.Dir, checkConfigFile)}, checkLogFile)
	if err != nil {
		return err
	}
	cmd, exited, err := startDetached(n, bin, []string{"-db", "-f", filepath.Join(n.Dir, haproxyConfigFile)}, haproxyLogFile)
	if err != nil {
		stopCheckServer(n)
		return err
	}
	n.PID = cmd.Process.Pid
	n.StartTicks, _ = procStartTicks(n.PID)
	if c.Dir() != "" {
		if err := c.save(); err != nil {
			syscall.Kill(n.PID, syscall.SIGKILL)
			stopCheckServer(n)
			return err
		}
	}
	logTail := func(f string) string {
		return strings.ReplaceAll(tail(readFrom(filepath.Join(n.Dir, f), logs[f]), 3), "\n", "; ")
	}
	timeout := s.ReadyTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		why := proxyReady(ctx, c, n)
		if why == "" {
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("haproxy exited while starting (%v): %s", werr, logTail(haproxyLogFile))
		case werr := <-checkExited:
			return fmt.Errorf("habench proxy-check exited while the proxy started (%v): %s", werr, logTail(checkLogFile))
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("proxy not ready after %s: %s (haproxy: %s; checks: %s)", timeout, why, logTail(haproxyLogFile), logTail(checkLogFile))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// proxyReady is "" once c's proxy serves: a write server up in its statistics and every
// server's checks settled (proxy.Settled: HAProxy starts with every server up, the ones
// that fail go down after Fall checks); with the user's configuration, once its write
// port accepts a connection. Else what it waits for.
func proxyReady(ctx context.Context, c *Cluster, n *Node) string {
	if c.Spec.Proxy.Config != "" {
		conn, err := net.DialTimeout("tcp", proxyAddr(c, n.Host, "write"), time.Second)
		if err != nil {
			return "write endpoint: " + err.Error()
		}
		conn.Close()
		return ""
	}
	ss, err := proxyStats(ctx, c, n)
	if err != nil {
		return "statistics: " + err.Error()
	}
	if sum := proxy.Summary(ss); strings.HasPrefix(sum, "write none") || !proxy.Settled(ss) {
		return sum + " (checks not settled yet)"
	}
	return ""
}

// proxyStats reads the proxy's statistics (1 s timeout).
func proxyStats(ctx context.Context, c *Cluster, n *Node) ([]proxy.Server, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return proxy.ReadStats(ctx, statsClient, proxy.StatsURL(n.Host, c.ProxyPort("stats")))
}

// statsClient reads proxies' statistics: directly (no HTTP_PROXY), a connection each.
var statsClient = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// haproxyHealth is the proxy's line in status: "haproxy running, write n1, read 2 up: n2, n3"
// (proxy.Summary of its statistics).
func haproxyHealth(ctx context.Context, c *Cluster, n *Node) string {
	ss, err := proxyStats(ctx, c, n)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "haproxy running, statistics not answering within 1 s"
		}
		return "haproxy running, statistics: " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	return "haproxy running, " + proxy.Summary(ss)
}

// haproxyVersion is the Program's Version: the first line of `haproxy -v` of c's proxy
// program (proxy.binary or haproxy on PATH; on provider hosts, as found on the proxy's
// host before the deploy), "" when it cannot be run.
func haproxyVersion(c *Cluster) string {
	if c.Hosts != nil {
		return c.Hosts.Programs[topology.ProxyName].Version
	}
	bin, err := haproxyBinary(c.Spec.Proxy)
	if err != nil {
		return ""
	}
	return programFirstLine(bin, "-v")
}
