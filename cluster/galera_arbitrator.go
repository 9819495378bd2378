package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/topology"
)

// The kind galera-arbitrator is Galera's behaviour (galera.go; this file's init runs after
// galera.go's, files initialise in name order) plus garbd as the aux node "arb": the
// sandbox gives it a namespace and starts it after the plan; stop, kill and start work on
// it as on a node (SIGTERM makes garbd leave the group at once, SIGKILL leaves the nodes
// to notice after evs.suspect_timeout).
func init() {
	ops := *OpsOf(topology.Galera)
	galeraCheck := ops.CheckInstallation
	ops.CheckInstallation = func(bins *Binaries, spec topology.Spec) error {
		if galeraCheck != nil {
			if err := galeraCheck(bins, spec); err != nil {
				return err
			}
		}
		if garbdPath() == "" {
			return &topology.FieldError{Field: "galera.arbitrator", Value: true, Reason: "no garbd in /usr/bin, /usr/sbin or /usr/local/bin (apt-get install galera-arbitrator-4)"}
		}
		return nil
	}
	ops.StartArgs = stopArbitratorToBootstrap(arbitratorStartArgs(ops.StartArgs))
	galeraRejoined := ops.Rejoined
	ops.Rejoined = func(ctx context.Context, s *Store, c *Cluster, n *Node) error {
		if galeraRejoined != nil {
			if err := galeraRejoined(ctx, s, c, n); err != nil {
				return err
			}
		}
		return restartArbitrators(ctx, s, c)
	}
	RegisterKindOps(ops, topology.GaleraArbitrator)
	RegisterProgram(topology.ArbitratorProgram, Program{Start: startGarbd, Health: garbdHealth, OnHost: planHostGarbd})
}

// arbitratorStartArgs wraps galera's StartArgs for the case the arbitrator creates: every
// node stopped cleanly while garbd ran. The last node to leave was not the last member
// (garbd stayed), so Galera marked no node safe_to_bootstrap and galera's StartArgs refuses
// to bootstrap. When no node runs and every node's grastate.dat has a seqno (a clean
// shutdown; a crash leaves -1), the node with the highest seqno has every committed write
// set: it is marked safe and bootstraps (the documented manual procedure). Any other
// case keeps galera's answer; a node behind another is told which to start first.
func arbitratorStartArgs(galeraStart func(*Cluster, *Node) ([]string, error)) func(*Cluster, *Node) ([]string, error) {
	return func(c *Cluster, n *Node) ([]string, error) {
		var args []string
		var err error
		if galeraStart != nil {
			if args, err = galeraStart(c, n); err == nil {
				return args, nil
			}
		}
		safe, mine, rerr := c.readGrastate(n)
		if rerr != nil || mine < 0 || safe {
			return nil, err
		}
		for _, o := range c.Nodes {
			if o == n {
				continue
			}
			osafe, q, rerr := c.readGrastate(o)
			if running, _ := c.NodeRunning(o); running || rerr != nil || q < 0 || osafe {
				return nil, err
			}
			if q > mine {
				return nil, fmt.Errorf("node %s: no other node of %s runs, every node stopped cleanly while the arbitrator ran, and %s has a later seqno (%d, %s %d): start %s first", n.Name, c.Name, o.Name, q, n.Name, mine, o.Name)
			}
		}
		if werr := c.markSafeToBootstrap(n); werr != nil {
			return nil, fmt.Errorf("%w (marking %s safe to bootstrap: %v)", err, n.Name, werr)
		}
		return []string{"--wsrep-new-cluster"}, nil
	}
}

// bootstrapStopped are the arbitrators (cluster directory + "/" + name) that
// stopArbitratorToBootstrap killed, for restartArbitrators to start again.
var (
	bootstrapMu      sync.Mutex
	bootstrapStopped = map[string]bool{}
)

// stopArbitratorToBootstrap wraps StartArgs: before a node bootstraps a new Primary
// component (--wsrep-new-cluster: no other node runs), a running garbd is killed. Left
// alone after the nodes stopped, garbd keeps its last view (a Primary component of
// itself, after they left cleanly) and would make the new component abort ("conflicting
// prims: older overrides"), or it has given up on its peers and never rejoins.
// restartArbitrators starts it again once the node is Synced.
func stopArbitratorToBootstrap(start func(*Cluster, *Node) ([]string, error)) func(*Cluster, *Node) ([]string, error) {
	return func(c *Cluster, n *Node) ([]string, error) {
		args, err := start(c, n)
		if err != nil || !slices.Contains(args, "--wsrep-new-cluster") {
			return args, err
		}
		for _, a := range c.Aux {
			if running, _ := c.NodeRunning(a); a.Program != topology.ArbitratorProgram || !running {
				continue
			}
			// KillNode of the sandbox and hosts providers needs no *Store.
			if kerr := c.Provider().KillNode(context.Background(), nil, c, a); kerr != nil {
				return nil, fmt.Errorf("node %s bootstraps the cluster: arbitrator %s: %w", n.Name, a.Name, kerr)
			}
			bootstrapMu.Lock()
			bootstrapStopped[c.Dir()+"/"+a.Name] = true
			bootstrapMu.Unlock()
		}
		return args, nil
	}
}

// restartArbitrators starts the arbitrators stopArbitratorToBootstrap killed (Rejoined:
// the bootstrapped node is Synced) and saves their PIDs.
func restartArbitrators(ctx context.Context, s *Store, c *Cluster) error {
	var errs []error
	for _, a := range c.Aux {
		key := c.Dir() + "/" + a.Name
		bootstrapMu.Lock()
		again := bootstrapStopped[key]
		delete(bootstrapStopped, key)
		bootstrapMu.Unlock()
		if running, _ := c.NodeRunning(a); !again || running {
			continue
		}
		if err := startGarbd(ctx, s, c, a); err != nil {
			errs = append(errs, fmt.Errorf("arbitrator %s, restarted after the bootstrap: %w", a.Name, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.Dir() != "" {
		return c.save()
	}
	return nil
}

// markSafeToBootstrap sets safe_to_bootstrap: 1 in n's grastate.dat (on its host for
// the hosts provider).
func (c *Cluster) markSafeToBootstrap(n *Node) error {
	p := filepath.Join(n.Dir, "data", "grastate.dat")
	b, err := c.readNodeFile(n, "data/grastate.dat")
	if err != nil {
		return err
	}
	re := regexp.MustCompile(`(?m)^safe_to_bootstrap:\s*0\s*$`)
	if !re.Match(b) {
		return fmt.Errorf("no safe_to_bootstrap: 0 line in %s", p)
	}
	b = re.ReplaceAll(b, []byte("safe_to_bootstrap: 1"))
	if h := c.hostsSSH(n); h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return hostWriteFile(ctx, h, p, b, 0o660)
	}
	return atomicfile.WriteFile(p, b, 0o644)
}

// garbdPath is the host's garbd ("" when missing). It runs on the host, also next to
// servers from a root filesystem: only its group protocol has to match the provider's.
func garbdPath() string {
	for _, p := range []string{"/usr/bin/garbd", "/usr/sbin/garbd", "/usr/local/bin/garbd"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// GarbdArgs are garbd's arguments for aux node n of c: the nodes' group addresses, the
// cluster's group name (wsrep_cluster_name is the cluster name), its own listen address,
// its log and its working directory (gvwstate.dat) in n.Dir.
func GarbdArgs(c *Cluster, n *Node) ([]string, error) {
	peers, listen, err := topology.ArbitratorAddrs(c.Spec, func(name string) (string, int) {
		if m := c.Node(name); m != nil {
			return m.Host, m.Port
		}
		return "", 0
	}, n.Host, n.Port)
	if err != nil {
		return nil, err
	}
	return []string{
		"--address", "gcomm://" + strings.Join(peers, ","),
		"--group", c.Name,
		"--name", n.Name,
		"--options", "gmcast.listen_addr=tcp://" + listen,
		"--log", filepath.Join(n.Dir, "garbd.log"),
		"--workdir", n.Dir,
	}, nil
}

// startGarbd starts garbd for n (on its host for the hosts provider: startHostGarbd) in n's namespace, in its own session, records its PID and
// waits (ReadyTimeout) until garbd is a synced member of the group: its log says
// "Member I.J (NAME) synced with group", about 3.5 s after the start when the nodes run.
// Error when garbd exits first, with its log's last lines.
func startGarbd(ctx context.Context, s *Store, c *Cluster, n *Node) error {
	if c.Hosts != nil {
		return s.startHostGarbd(ctx, c, n)
	}
	bin := garbdPath()
	if bin == "" {
		return fmt.Errorf("no garbd (apt-get install galera-arbitrator-4)")
	}
	args, err := GarbdArgs(c, n)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return err
	}
	// garbd keeps no data, only its last view (gvwstate.dat, pc.recovery): restored, an
	// old view can conflict with a component bootstrapped since; it joins as new instead.
	os.Remove(filepath.Join(n.Dir, "gvwstate.dat"))
	logPath := filepath.Join(n.Dir, "garbd.log")
	var logStart int64
	if fi, err := os.Stat(logPath); err == nil {
		logStart = fi.Size()
	}
	out, err := os.OpenFile(filepath.Join(n.Dir, "garbd.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	outStart, _ := out.Seek(0, io.SeekEnd)
	var cmd *exec.Cmd
	if n.Netns != "" {
		cmd = exec.Command("nsenter", append([]string{"--net=" + filepath.Join("/run/netns", n.Netns), "--", bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Dir = n.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	n.PID = cmd.Process.Pid
	n.StartTicks, _ = procStartTicks(n.PID)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Recorded before the wait: garbd never exits by itself once it has no peer (it
	// retries forever), so a habench killed during the wait must leave destroy its PID
	// (on loopback nothing else finds it; in netns mode destroy also sweeps arb's namespace).
	if c.Dir() != "" {
		if err := c.save(); err != nil {
			syscall.Kill(n.PID, syscall.SIGKILL)
			return err
		}
	}
	timeout := s.ReadyTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	synced := regexp.MustCompile(`Member [0-9]+\.[0-9]+ \(` + regexp.QuoteMeta(n.Name) + `\) synced with group`)
	for {
		if synced.MatchString(readFrom(logPath, logStart)) {
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("garbd exited while joining (%v): %s", werr,
				strings.ReplaceAll(tail(readFrom(logPath, logStart)+readFrom(filepath.Join(n.Dir, "garbd.out"), outStart), 3), "\n", "; "))
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("garbd not a synced member of group %s after %s: %s", c.Name, timeout,
				strings.ReplaceAll(tail(readFrom(logPath, logStart), 3), "\n", "; "))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// garbdViewRE matches the start of a view garbd logs: "view(view_id(PRIM,uuid,seq) memb {"
// (or NON_PRIM), followed by one member per line up to "}".
var garbdViewRE = regexp.MustCompile(`view\(view_id\((PRIM|NON_PRIM),[^)]*\) memb \{`)

// GarbdView reads garbd's last view from its log: whether it is Primary and how many
// members it has; ok false when the log holds no view yet.
func GarbdView(log string) (primary bool, members int, ok bool) {
	locs := garbdViewRE.FindAllStringSubmatchIndex(log, -1)
	if len(locs) == 0 {
		return false, 0, false
	}
	l := locs[len(locs)-1]
	primary = log[l[2]:l[3]] == "PRIM"
	for _, line := range strings.Split(log[l[1]:], "\n")[1:] {
		if strings.HasPrefix(strings.TrimSpace(line), "}") {
			break
		}
		members++
	}
	return primary, members, true
}

// garbdHealth is the arbitrator's line in status: its last view from its log.
func garbdHealth(ctx context.Context, c *Cluster, n *Node) string {
	primary, members, ok := GarbdView(c.nodeFileText(n, "garbd.log"))
	if !ok {
		return "garbd running, no view yet"
	}
	st := "non-Primary"
	if primary {
		st = "Primary"
	}
	return fmt.Sprintf("garbd running, %s, cluster size %d", st, members)
}
