package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/habench/habench/topology"
)

// destroy kills the servers (SIGKILL: their data is deleted anyway, and a clean shutdown
// of a MySQL source with connected replicas takes about 10 s), then removes the network
// and the directories.
func (s *Store) destroy(ctx context.Context, c *Cluster) error {
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
	// An aux member's other processes (a proxy's health-check server), and its own if its
	// PID never reached the state file: each has a path in the member's directory among
	// its arguments.
	for _, n := range c.Aux {
		for _, pid := range auxProcesses(n) {
			signalAndWait(pid, 0, syscall.SIGKILL, 5*time.Second)
		}
	}
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

// Leftovers lists what of cluster c still exists on this machine: live processes under
// its directories, network namespaces and links of its name, and its directories. Empty
// after a successful Destroy.
func Leftovers(s *Store, c *Cluster) []string {
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
	for _, n := range c.Aux {
		for _, pid := range auxProcesses(n) {
			left = append(left, fmt.Sprintf("node %s process %d", n.Name, pid))
		}
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
