package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"golang.org/x/sys/unix"
)

const dropCachesPath = "/proc/sys/vm/drop_caches"

// CheckDropCaches says why the OS page cache cannot be dropped here (nil when it can):
// it needs root and a writable /proc/sys/vm/drop_caches (not in every container).
func CheckDropCaches() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("dropping the OS page cache needs root (%s); run as root or set cell.drop_caches: false", dropCachesPath)
	}
	f, err := os.OpenFile(dropCachesPath, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cannot open %s for writing: %v (set cell.drop_caches: false)", dropCachesPath, err)
	}
	return f.Close()
}

// DropCaches flushes dirty pages (sync) and drops the page cache, dentries and inodes
// (echo 3 > /proc/sys/vm/drop_caches). Root only.
func DropCaches() error {
	unix.Sync()
	return os.WriteFile(dropCachesPath, []byte("3\n"), 0)
}

// dropCachesScript drops a host's page cache over its host access: as root, or with
// passwordless sudo.
const dropCachesScript = `sync; if [ "$(id -u)" = 0 ]; then echo 3 > ` + dropCachesPath + `; else sudo -n sh -c 'echo 3 > ` + dropCachesPath + `'; fi`

// DropClusterCaches drops the page cache of every distinct host of c's nodes (by the
// provider's HostName), all at once: on this machine (a local sandbox's "local", once)
// with DropCaches, on a host reached over SSH with sync and echo 3 > drop_caches (as root
// or with sudo -n). It returns one record per host, in node order. Errors: c's provider
// has no host access (an existing cluster without ssh:, a *cluster.UnsupportedError), or
// the hosts where the drop failed, each named.
func DropClusterCaches(ctx context.Context, c *cluster.Cluster) ([]schema.CacheDrop, error) {
	if err := c.Refuse(cluster.OpHostAccess, "drop the page cache of its hosts (cell.drop_caches)"); err != nil {
		return nil, err
	}
	var drops []schema.CacheDrop
	var hosts []host.Host
	for _, n := range c.Nodes {
		h := c.Host(n)
		if h == nil {
			return nil, fmt.Errorf("drop caches: node %s: no access to its host", n.Name)
		}
		name := c.Provider().HostName(c, n)
		i := slices.IndexFunc(drops, func(d schema.CacheDrop) bool { return d.Host == name })
		if i < 0 {
			drops, hosts = append(drops, schema.CacheDrop{Host: name}), append(hosts, h)
			i = len(drops) - 1
		}
		drops[i].Nodes = append(drops[i].Nodes, n.Name)
	}
	errs := make([]error, len(drops))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if remoteHost(h) {
				_, errs[i] = h.Run(ctx, "sh", "-c", dropCachesScript)
			} else {
				errs[i] = DropCaches()
			}
			drops[i].At, drops[i].TookS = start.UTC(), time.Since(start).Seconds()
			if errs[i] != nil {
				errs[i] = fmt.Errorf("drop caches on %s: %w", drops[i].Host, errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return drops, nil
}

// RestartCluster stops every server of c cleanly and starts it again, then waits until the
// topology is whole (cluster.WaitTopologyReady: replicas' threads running, a semi-sync
// source's acknowledging replicas connected, every group member ONLINE, every Galera node
// Synced). The writer (source, primary, first Galera node) stops last and starts first:
// replicas reconnect at once instead of after the connect retry, the group's primary
// bootstraps the group again (so it stays the primary) and the Galera node that stopped
// last (safe_to_bootstrap) bootstraps the new Primary component, the others joining by
// IST. Sandboxes only; error for existing clusters. Runtime (SET GLOBAL) settings are gone
// afterwards: the option files' values apply. A server that needed SIGKILL to stop does
// not end the restart: when everything else succeeded the error is then only the
// *cluster.StopEscalatedError of each such node (joined), the cluster whole again. The
// wait for the topology is sb.ReadyTimeout (default 90 s). Another error is the
// *cluster.NodeError of the node that failed (its message names the wait and the last
// state seen).
func RestartCluster(ctx context.Context, sb *cluster.Store, c *cluster.Cluster) error {
	if err := c.Refuse(cluster.OpRestartNode, "restart"); err != nil {
		return err
	}
	if !scenario.Restartable(c.Spec.Kind) {
		return fmt.Errorf("restarting a %s topology is not supported", c.Spec.Kind)
	}
	w := restartWriter(ctx, c)
	var order []*cluster.Node // stop order: the others, then the writer
	for _, n := range c.Nodes {
		if n != w {
			order = append(order, n)
		}
	}
	order = append(order, w)
	var escalated []error
	for _, n := range order {
		if err := sb.StopNode(c, n.Name); err != nil {
			var se *cluster.StopEscalatedError
			if !errors.As(err, &se) {
				return cluster.OfNode(n.Name, err)
			}
			escalated = append(escalated, err) // down all the same: go on, say so at the end
		}
	}
	for _, n := range slices.Backward(order) {
		if err := sb.StartNode(ctx, c, n.Name); err != nil {
			return cluster.OfNode(n.Name, err)
		}
	}
	wait := sb.ReadyTimeout
	if wait <= 0 {
		wait = 90 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := cluster.WaitTopologyReady(wctx, c); err != nil {
		return err
	}
	return errors.Join(escalated...)
}

// restartWriter is the node RestartCluster stops last and starts first (a group or a
// Galera cluster bootstraps from it): the writer now (a group's PRIMARY as its members
// say), or, when that node's server is down (a fault killed it and the writes moved on:
// its data is behind), the first running writable node.
func restartWriter(ctx context.Context, c *cluster.Cluster) *cluster.Node {
	w := c.WriterNow(ctx)
	if !c.NodeDown(w) {
		return w
	}
	for _, n := range c.Nodes {
		if !c.NodeDown(n) && n.Role.Writable() {
			return n
		}
	}
	return w
}
