package cluster

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/habench/habench/topology"
)

// checkGaleraInstallation says, before anything is created, why bins cannot run a Galera
// sandbox of spec: a server built without wsrep, no provider library, no SST script or tool.
// Errors are *topology.FieldError naming what to install.
func checkGaleraInstallation(bins *Binaries, spec topology.Spec) error {
	where := bins.Installation.Path
	if bins.Installation.Kind == topology.InstallSystem {
		where = "system"
	}
	if !bins.Caps().Galera {
		return &topology.FieldError{Field: "installation", Value: where, Reason: bins.VersionText + " has no Galera (wsrep) support"}
	}
	if bins.WsrepProvider == "" {
		return &topology.FieldError{Field: "installation", Value: where, Reason: "no Galera provider libgalera_smm.so (apt-get install galera-4)"}
	}
	m, err := sstMethodFor(bins, spec.Galera.SST)
	if err != nil {
		return err
	}
	script := "wsrep_sst_" + m.Name
	if bins.findTool(script) == "" {
		return &topology.FieldError{Field: "galera.sst", Value: m.Name, Reason: fmt.Sprintf("no %s script in the installation (%s)", script, where)}
	}
	if c := m.ToolCandidates(); len(c) > 0 && !slices.ContainsFunc(c, func(t string) bool { return bins.findTool(t) != "" }) {
		return &topology.FieldError{Field: "galera.sst", Value: m.Name, Reason: fmt.Sprintf("no %s in the installation (%s): apt-get install %s", m.Tool, where, m.Package)}
	}
	if m.Stream && bins.findTool("socat") == "" && bins.findTool("nc") == "" {
		return &topology.FieldError{Field: "galera.sst", Value: m.Name, Reason: fmt.Sprintf("%s SST streams with socat (or nc): neither is in the installation (%s): apt-get install socat", m.Name, where)}
	}
	return nil
}

// sstMethodFor is state transfer method name of the installation's flavor (FlavorDef.Galera),
// or a *topology.FieldError on galera.sst when the flavor or its version has no such method.
func sstMethodFor(bins *Binaries, name string) (topology.SSTMethod, error) {
	fd := topology.FlavorOf(bins.Flavor)
	m, ok := fd.SSTMethod(name)
	if !ok {
		return m, &topology.FieldError{Field: "galera.sst", Value: name, Reason: fmt.Sprintf("%s has no such state transfer (want %s)", fd.Title, fd.SSTNames())}
	}
	if !m.Available(bins.Version) {
		return m, &topology.FieldError{Field: "galera.sst", Value: name, Reason: fmt.Sprintf("%s %s has no %s state transfer", fd.Title, bins.Version, name)}
	}
	return m, nil
}

// findTool returns the path (as the server sees it) of program name in the installation's
// bin directories, or "".
func (b *Binaries) findTool(name string) string {
	var dirs []string
	if b.Basedir != "" {
		dirs = append(dirs, filepath.Join(b.Basedir, "bin"), filepath.Join(b.Basedir, "scripts"))
	}
	dirs = append(dirs, filepath.Dir(b.Server), "/usr/bin", "/usr/local/bin", "/bin")
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(b.HostPath(p)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func init() {
	RegisterKindOps(KindOps{
		RebuildBy:         RebuildSST,
		CheckInstallation: checkGaleraInstallation,
		PrepareNode:       prepareGaleraNode,
		Command: func(c *Cluster, n *Node, args []string) *exec.Cmd {
			cmd := galeraCommand(c, n, args...)
			cmd.Env = galeraEnv(c, n)
			return cmd
		},
		StartArgs: galeraStartArgs,
		Rejoined: func(ctx context.Context, s *Store, c *Cluster, n *Node) error {
			return s.waitRejoined(ctx, c, n)
		},
		Ready: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) error {
			return waitSynced(ctx, c, db, n, GaleraClusterSize(c))
		},
		Health: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) string {
			g, err := ReadGaleraStatus(ctx, db)
			if err != nil {
				return err.Error()
			}
			return g.String()
		},
		Live: galeraLive,
		Stuck: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) (string, bool) {
			g, err := ReadGaleraStatus(ctx, db)
			if err == nil && g.ClusterStatus != "Primary" {
				return "not in the Primary component (wsrep_cluster_status " + g.ClusterStatus + ")", false
			}
			return "", false
		},
	}, topology.Galera)
}

// galeraLive is KindOps.Live of a Galera node: wsrep_ready ON, Synced
// (wsrep_local_state_comment) and in the Primary component; a donor (Donor/Desynced), a
// joiner or a node outside the Primary component is not.
func galeraLive(ctx context.Context, c *Cluster, n *Node, db *sql.DB) string {
	g, err := ReadGaleraStatus(ctx, db)
	switch {
	case err != nil:
		return err.Error()
	case g.ClusterStatus != "Primary":
		return "not in the Primary component (wsrep_cluster_status " + g.ClusterStatus + ")"
	case g.State != "Synced":
		return "wsrep_local_state_comment " + g.State
	case !g.Ready:
		return "wsrep_ready OFF"
	}
	return ""
}

// GaleraClusterSize is the wsrep_cluster_size of c when every member runs: its nodes
// and its aux members that are group members (an arbitrator; not a proxy).
func GaleraClusterSize(c *Cluster) int {
	size := len(c.Nodes)
	for _, a := range c.Aux {
		if a.Role != topology.RoleProxy {
			size++
		}
	}
	return size
}

// GaleraStatus is a Galera node's own view of its membership, from SHOW GLOBAL STATUS.
type GaleraStatus struct {
	// State is wsrep_local_state_comment: Joining, Donor/Desynced, Joined, Synced, ...
	State string
	// ClusterStatus is wsrep_cluster_status: Primary, Non-Primary or Disconnected.
	ClusterStatus string
	// ClusterSize is wsrep_cluster_size: nodes in the node's component.
	ClusterSize int
	// Ready is wsrep_ready: the node accepts queries.
	Ready bool
	// LastCommitted is wsrep_last_committed: the seqno of the last write set applied.
	LastCommitted int64
}

// Synced reports whether the node is Synced in a Primary component and ready.
func (g GaleraStatus) Synced() bool {
	return g.State == "Synced" && g.ClusterStatus == "Primary" && g.Ready
}

func (g GaleraStatus) String() string {
	ready := "ready"
	if !g.Ready {
		ready = "not ready"
	}
	return fmt.Sprintf("%s, %s, cluster size %d, %s, last committed %d", orNull(g.State), orNull(g.ClusterStatus), g.ClusterSize, ready, g.LastCommitted)
}

// ReadGaleraStatus reads the node's wsrep status variables. Error if the query fails or
// the server has no wsrep status (not a Galera node).
func ReadGaleraStatus(ctx context.Context, db *sql.DB) (GaleraStatus, error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_status', 'wsrep_cluster_size', 'wsrep_ready', 'wsrep_last_committed')")
	if err != nil {
		return GaleraStatus{}, err
	}
	defer rows.Close()
	var g GaleraStatus
	seen := 0
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return g, err
		}
		seen++
		switch k {
		case "wsrep_local_state_comment":
			g.State = v
		case "wsrep_cluster_status":
			g.ClusterStatus = v
		case "wsrep_cluster_size":
			g.ClusterSize, _ = strconv.Atoi(v)
		case "wsrep_ready":
			g.Ready = v == "ON"
		case "wsrep_last_committed":
			g.LastCommitted, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if err := rows.Err(); err != nil {
		return g, err
	}
	if seen == 0 {
		return g, fmt.Errorf("no wsrep status variables: not a Galera node")
	}
	return g, nil
}

// waitSynced polls node n of c until it is Synced in a Primary component of at least size
// nodes (GaleraStatus.Synced). Error when ctx ends first or the server process exits
// (a failed state transfer ends the joiner; asked of c's provider, so also on a user's
// host), with the last status and the error log's errors.
func waitSynced(ctx context.Context, c *Cluster, db *sql.DB, n *Node, size int) error {
	var last GaleraStatus
	var lastErr error
	start := time.Now()
	for {
		g, err := ReadGaleraStatus(ctx, db)
		if err == nil {
			last, lastErr = g, nil
			if g.Synced() && g.ClusterSize >= size {
				return nil
			}
		} else {
			lastErr = err
		}
		if n.PID != 0 && c.NodeDown(n) {
			return fmt.Errorf("node %s: server exited while joining the cluster: %s", n.Name, errorLines(c.nodeFileText(n, "error.log")))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: not Synced in a Primary component of %d node(s) after %v: %s (last error: %v); %s", n.Name, size, waited(start), last, lastErr,
				errorLines(c.nodeFileText(n, "error.log")))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitApplied waits until Galera node n (db) has applied every write set the cluster had
// committed when n was Synced: its wsrep_last_committed at least that of the first other
// node of c. Synced comes with write sets still queued: a joiner answered before it had
// applied the bench user's GRANT (error 1044 for the first cell's workers on it, a
// deployment from a snapshot in CI). Error when ctx ends first.
func waitApplied(ctx context.Context, c *Cluster, db *sql.DB, n *Node) error {
	var peer *Node
	for _, m := range c.Nodes {
		if m.Name != n.Name {
			peer = m
			break
		}
	}
	if peer == nil {
		return nil
	}
	pdb, err := c.OpenAdmin(peer)
	if err != nil {
		return err
	}
	defer pdb.Close()
	pg, err := ReadGaleraStatus(ctx, pdb)
	if err != nil {
		return fmt.Errorf("node %s: %w", peer.Name, err)
	}
	var last GaleraStatus
	for {
		g, err := ReadGaleraStatus(ctx, db)
		if err == nil && g.LastCommitted >= pg.LastCommitted {
			return nil
		}
		last = g
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: Synced but applied up to seqno %d, %s had committed %d: %w", n.Name, last.LastCommitted, peer.Name, pg.LastCommitted, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rsyncWrapper is written to a Galera node's bin directory, which comes first on its
// server's PATH. wsrep_sst_rsync starts the joiner's rsync daemon without uid/gid, and an
// rsync daemon started by root then handles transfers as nobody, who cannot write the
// root-owned datadir, so every rsync SST fails when the servers run as root (MDEV-40688).
// The wrapper keeps the daemon's privileges; every other rsync call passes through.
const rsyncWrapper = `#!/bin/sh
# written by habench: keep root for wsrep_sst_rsync's joiner daemon (MDEV-40688)
for a in "$@"; do
  if [ "$a" = "--daemon" ]; then exec %[1]s "$@" --dparam=uid=0 --dparam=gid=0; fi
done
exec %[1]s "$@"
`

// prepareGaleraNode writes what a Galera node needs besides its option file: as root, the
// rsync wrapper (see rsyncWrapper) in DIR/bin.
func prepareGaleraNode(c *Cluster, n *Node) error {
	if os.Geteuid() != 0 || c.Spec.Galera.SST != topology.SSTRsync {
		return nil
	}
	rsync := c.Binaries.findTool("rsync")
	if rsync == "" {
		return fmt.Errorf("no rsync in the installation")
	}
	if err := os.MkdirAll(filepath.Join(n.Dir, "bin"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.Dir, "bin", "rsync"), []byte(fmt.Sprintf(rsyncWrapper, rsync)), 0o755)
}

// galeraEnv is the environment of a Galera node's server: PATH starts with the node's bin
// directory (as the server sees it), so its SST scripts find the rsync wrapper. mariadbd
// prepends "<basedir>/" + "/bin" (/usr//bin) to PATH unless PATH already contains that
// string (wsrep_prepend_PATH), which would put the real rsync first: PATH holds it, after
// the node's bin directory.
func galeraEnv(c *Cluster, n *Node) []string {
	env := []string{"PATH=" + galeraPATH(c, filepath.Join(n.ServerDir, "bin"))}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PATH=") {
			env = append(env, e)
		}
	}
	return env
}

// galeraPATH is a Galera server's PATH (see galeraEnv): binDir (the node's bin
// directory as the server sees it) first, then the installation's "<basedir>//bin".
func galeraPATH(c *Cluster, binDir string) string {
	home := "/usr"
	if c.Binaries != nil && c.Binaries.Basedir != "" {
		home = strings.TrimRight(c.Binaries.Basedir, "/")
	}
	return strings.Join([]string{binDir, home + "//bin", "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}, ":")
}

// sstHelpers returns the live state transfer helpers of the nodes under dir that do not
// carry --defaults-file=dir/... (processesUnder finds the SST scripts by it): the joiner's
// rsync daemon, found by its --config DIR/<node>/data/rsync_sst.conf.
func sstHelpers(dir string) []int {
	if dir == "" {
		return nil
	}
	prefix := []byte(dir + "/")
	return processesWithArgFunc(func(arg []byte) bool {
		return bytes.HasPrefix(arg, prefix) && bytes.HasSuffix(arg, []byte("/rsync_sst.conf"))
	})
}

// processesInNetns returns the live processes that run entirely in the named network
// namespace: every thread of theirs is in it. A process with only some threads there (a
// Go program measuring from inside on a locked thread: habench itself, a test, the
// userspace link) is not one of them; /proc/PID/ns/net alone would name it whenever that
// thread is its main thread.
func processesInNetns(name string) []int {
	var want syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", name), &want); err != nil {
		return nil
	}
	in := func(nsPath string) bool {
		var st syscall.Stat_t
		return syscall.Stat(nsPath, &st) == nil && st.Ino == want.Ino && st.Dev == want.Dev
	}
	var pids []int
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || !in(filepath.Join("/proc", e.Name(), "ns", "net")) {
			continue
		}
		tasks, err := os.ReadDir(filepath.Join("/proc", e.Name(), "task"))
		all := err == nil && len(tasks) > 0
		for _, t := range tasks {
			all = all && in(filepath.Join("/proc", e.Name(), "task", t.Name(), "ns", "net"))
		}
		if all {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitRejoined waits (ReadyTimeout) until restarted Galera node n is Synced again.
func (s *Store) waitRejoined(ctx context.Context, c *Cluster, n *Node) error {
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	wctx, cancel := context.WithTimeout(ctx, s.ReadyTimeout)
	defer cancel()
	return waitSynced(wctx, c, db, n, 1)
}

// galeraCommand is the command that starts Galera node n's server with args. For a root
// filesystem it runs in a private mount namespace with /proc mounted inside the root: the
// SST scripts check their helpers with ps and find sockets with ss, and both need /proc.
// The mount lives and dies with the server's mount namespace, so nothing is left mounted.
// The server keeps the PID of the command (every step execs).
func galeraCommand(c *Cluster, n *Node, args ...string) *exec.Cmd {
	b := c.Binaries
	if b.Root == "" {
		return b.Command(n.Netns, b.Server, args...)
	}
	var argv []string
	if n.Netns != "" {
		argv = append(argv, "nsenter", "--net="+filepath.Join("/run/netns", n.Netns), "--")
	}
	argv = append(argv, "unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount -t proc proc "$0/proc" && exec chroot "$0" "$@"`, b.Root, b.Server)
	argv = append(argv, args...)
	return exec.Command(argv[0], argv[1:]...)
}

// galeraStartArgs returns the extra server arguments for starting Galera node n: none
// while another node of c runs (n joins it by IST or SST), else --wsrep-new-cluster, n
// bootstrapping a new Primary component. Bootstrapping is only safe from a node that has
// every committed write set, so it is allowed only when n's grastate.dat says
// safe_to_bootstrap: 1 (Galera writes that on the last node of a cluster to stop cleanly).
// Error (naming the node to start first) otherwise, e.g. after every node crashed.
func galeraStartArgs(c *Cluster, n *Node) ([]string, error) {
	for _, o := range c.Nodes {
		if running, _ := c.NodeRunning(o); o != n && running {
			return nil, nil
		}
	}
	safe, seqno, err := c.readGrastate(n)
	if err != nil {
		return nil, fmt.Errorf("node %s: no other node of %s runs, so it would bootstrap the cluster, but its grastate.dat is unreadable: %w", n.Name, c.Name, err)
	}
	if safe {
		return []string{"--wsrep-new-cluster"}, nil
	}
	var others []string
	for _, o := range c.Nodes {
		if o == n {
			continue
		}
		if s, q, err := c.readGrastate(o); err == nil {
			if s {
				return nil, fmt.Errorf("node %s: no other node of %s runs and %s stopped last (grastate.dat safe_to_bootstrap: 1): start %s first", n.Name, c.Name, o.Name, o.Name)
			}
			others = append(others, fmt.Sprintf("%s seqno %d", o.Name, q))
		}
	}
	return nil, fmt.Errorf("node %s: no other node of %s runs and no node is marked safe to bootstrap (grastate.dat safe_to_bootstrap: 0 on all; after a crash): %s seqno %d, %s; bootstrap by hand from the node with the highest seqno (set safe_to_bootstrap: 1 in its grastate.dat)",
		n.Name, c.Name, n.Name, seqno, strings.Join(others, ", "))
}

// readGrastate reads safe_to_bootstrap and seqno from node n's datadir/grastate.dat
// (seqno -1 while the node runs or after a crash).
func readGrastate(n *Node) (safe bool, seqno int64, err error) {
	b, err := os.ReadFile(filepath.Join(n.Dir, "data", "grastate.dat"))
	if err != nil {
		return false, 0, err
	}
	safe, seqno = parseGrastate(b)
	return safe, seqno, nil
}

// readGrastate is readGrastate for node n of c wherever it runs (on its host for the
// hosts provider).
func (c *Cluster) readGrastate(n *Node) (safe bool, seqno int64, err error) {
	if c.hostsSSH(n) == nil {
		return readGrastate(n)
	}
	b, err := c.readNodeFile(n, "data/grastate.dat")
	if err != nil {
		return false, 0, err
	}
	safe, seqno = parseGrastate(b)
	return safe, seqno, nil
}

// parseGrastate reads safe_to_bootstrap and seqno (-1 when missing) from a grastate.dat
// text. Pure.
func parseGrastate(b []byte) (safe bool, seqno int64) {
	seqno = -1
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "safe_to_bootstrap":
			safe = strings.TrimSpace(v) == "1"
		case "seqno":
			if q, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				seqno = q
			}
		}
	}
	return safe, seqno
}

// GaleraMembersNote describes the members of an existing Galera cluster that habench was
// not given: from the first node that answers, wsrep_cluster_size against the given nodes,
// and wsrep_incoming_addresses, where a member without a client address is an arbitrator
// (garbd) and one with an address not among the nodes is a server habench neither loads
// nor samples. "" when there are none, for a sandbox (whose members habench made) and for
// other kinds; errors are left out (status shows each node's health).
func GaleraMembersNote(ctx context.Context, c *Cluster) string {
	if c.Deployed() || !c.Spec.Is(topology.Galera) {
		return ""
	}
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := ShowMap(qctx, db, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_size', 'wsrep_incoming_addresses')")
		cancel()
		db.Close()
		if err != nil {
			continue
		}
		return galeraMembersNote(c, st["wsrep_cluster_size"], st["wsrep_incoming_addresses"])
	}
	return ""
}

// galeraMembersNote is GaleraMembersNote from one node's wsrep_cluster_size and
// wsrep_incoming_addresses (comma-separated host:port, "" for a member without one).
func galeraMembersNote(c *Cluster, size, incoming string) string {
	n, err := strconv.Atoi(size)
	if err != nil || n <= len(c.Nodes) {
		return ""
	}
	given := map[string]bool{}
	for _, nd := range c.Nodes {
		given[nd.Addr()] = true
	}
	if strings.TrimSpace(incoming) == "" { // not reported: arbitrators cannot be told apart
		return fmt.Sprintf("wsrep_cluster_size %d for %d given node(s): %d member(s) not given (arbitrators or servers: no wsrep_incoming_addresses)", n, len(c.Nodes), n-len(c.Nodes))
	}
	arbitrators, others := 0, []string{}
	for _, a := range strings.Split(incoming, ",") {
		switch a = strings.TrimSpace(a); {
		case a == "":
			arbitrators++
		case !given[a]:
			others = append(others, a)
		}
	}
	var parts []string
	if arbitrators > 0 {
		parts = append(parts, fmt.Sprintf("%d without a client address (an arbitrator, garbd: it votes, holds no data)", arbitrators))
	}
	if k := n - len(c.Nodes) - arbitrators; k > 0 {
		what := fmt.Sprintf("%d server(s) not given", k)
		if len(others) == k { // else some nodes were given by another name
			what += " (" + strings.Join(others, ", ") + ")"
		}
		parts = append(parts, what+": habench neither loads nor samples them")
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("wsrep_cluster_size %d for %d given node(s): %s", n, len(c.Nodes), strings.Join(parts, "; "))
}

func isGaleraKind(k topology.Kind) bool {
	return k == topology.Galera || k == topology.GaleraArbitrator
}
