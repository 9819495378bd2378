// Package cluster deploys and manages the servers a benchmark runs against. A Cluster is
// the persistent description (state.json) of a topology's nodes: name, role, addresses,
// sockets and, for the clusters habench deploys, processes, directories and network
// namespaces. The Store (store.go) keeps every cluster's state file in a state directory,
// so that `habench destroy` cleans up even after habench itself was killed, and hands a
// spec to its Provider (provider.go), of which there are three, each in the files named
// after it: the local sandbox (sandbox_*.go: servers on this machine), hosts (hosts_*.go:
// servers habench deploys on the user's hosts over SSH) and existing (existing_*.go:
// servers somebody else runs, registered). Code they share (the plan runner, the
// replication waits, server logs, the kinds' bootstrap) is in files named after what it
// does.
package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// Node is one server of a cluster.
type Node struct {
	Name     string        `json:"name"`
	Role     topology.Role `json:"role"`
	ServerID int           `json:"server_id"`
	// Host and Port are the TCP address clients and other nodes use.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Socket is the host path of the server's unix socket (admin connections as root).
	Socket string `json:"socket,omitempty"`
	// Dir is the host path of the node's directory (option file, datadir, logs).
	Dir string `json:"dir,omitempty"`
	// ServerDir is Dir as the server sees it (differs under chroot).
	ServerDir string `json:"server_dir,omitempty"`
	// Netns is the node's network namespace ("" in loopback mode).
	Netns string `json:"netns,omitempty"`
	// PID and StartTicks identify the server process (StartTicks from /proc/PID/stat
	// field 22, so a reused PID is never mistaken for our server).
	PID        int    `json:"pid,omitempty"`
	StartTicks uint64 `json:"start_ticks,omitempty"`
	// Program is what runs an aux node (Cluster.Aux: "garbd"); "" for a SQL server.
	Program string `json:"program,omitempty"`
}

// Addr returns "host:port", or the host alone for an aux member without a port of its
// own (an arbitrator in its own namespace listens on its program's standard port).
func (n *Node) Addr() string {
	if n.Port == 0 && n.IsAux() {
		return n.Host
	}
	return net.JoinHostPort(n.Host, strconv.Itoa(n.Port))
}

// Cluster is a deployed topology.
type Cluster struct {
	Name string `json:"name"`
	// ProviderName is the provider of the cluster's servers (topology.Provider*; see
	// Provider): "sandbox", "hosts" or "existing"; "" (state files written before
	// providers were named) is "sandbox".
	ProviderName string        `json:"provider"`
	Spec         topology.Spec `json:"spec"`
	Binaries     *Binaries     `json:"binaries,omitempty"`
	Network      string        `json:"network"`          // NetNamespaces or NetLoopback
	SubnetIdx    int           `json:"subnet,omitempty"` // 10.233.<SubnetIdx>.0/24 in netns mode
	User         string        `json:"user"`
	// Password is the benchmark user's (User's) password: topology.BenchPassword on a
	// local sandbox, random per cluster on hosts (planHosts).
	Password string `json:"password"`
	// ReplPassword is the replication user's (topology.ReplUser) password; empty:
	// topology.ReplPassword (local sandboxes and clusters deployed before it was kept).
	ReplPassword string  `json:"repl_password,omitempty"`
	Nodes        []*Node `json:"nodes"`
	// Aux are the members that are not SQL servers (a Galera arbitrator): they have an
	// address, a process and a place in links and faults, but no SQL connection, so code
	// that talks SQL ranges over Nodes only. Started by their Program (RegisterProgram).
	Aux []*Node `json:"aux,omitempty"`
	// Hosts is what the hosts provider keeps of a cluster on the user's hosts (nil for
	// other providers): see hosts_provider.go.
	Hosts   *HostsState           `json:"hosts,omitempty"`
	State   string                `json:"state"` // "deploying", "ready", "failed"
	Created time.Time             `json:"created"`
	Caps    topology.Capabilities `json:"-"`

	path string // state.json on disk
	// base is what the state file held when c was loaded or last saved (nil: never):
	// save keeps other writers' changes to the fields c did not change (mergeNewer).
	base *Cluster
}

// Dir returns the cluster's directory in the state directory (state.json, logs, links.json);
// "" for a cluster that was never saved.
func (c *Cluster) Dir() string {
	if c.path == "" {
		return ""
	}
	return filepath.Dir(c.path)
}

// Node returns the node called name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Writer returns the first writable node (the source or primary).
func (c *Cluster) Writer() *Node {
	for _, n := range c.Nodes {
		if n.Role.Writable() {
			return n
		}
	}
	return c.Nodes[0]
}

// Capabilities returns the capability table entry of the cluster's servers.
func (c *Cluster) Capabilities() topology.Capabilities {
	if c.Binaries != nil {
		return c.Binaries.Caps()
	}
	return topology.CapabilitiesFor(c.Spec.Flavor, topology.Version{})
}

// AdminDSN is a go-sql-driver DSN with administrative rights on node n, from c's provider:
// root over the node's unix socket for a local sandbox; for an existing cluster, the
// registered user over TCP through the guarded dialer (habench has no other access to
// servers it does not run).
func (c *Cluster) AdminDSN(n *Node) string { return c.Provider().AdminDSN(c, n) }

// Credentials are the passwords of the accounts the cluster's plan creates (its
// topology.Spec.Credentials, which the state file does not keep).
func (c *Cluster) Credentials() topology.Credentials {
	return topology.Credentials{Bench: c.Password, Repl: c.ReplPassword}
}

// planSpec is c's spec with its Credentials, for topology.BuildPlan.
func (c *Cluster) planSpec() topology.Spec {
	s := c.Spec
	s.Credentials = c.Credentials()
	return s
}

// BenchDSN is a DSN for the benchmark user over TCP through the guarded dialer.
func (c *Cluster) BenchDSN(n *Node, db string) string {
	RegisterGuardedDialer()
	cfg := mysql.NewConfig()
	cfg.User = c.User
	cfg.Passwd = c.Password
	cfg.Net = GuardedNet
	cfg.Addr = n.Addr()
	cfg.DBName = db
	cfg.Timeout = 10 * time.Second
	return cfg.FormatDSN()
}

// OpenAdmin opens a small pool to node n as root over its socket (existing clusters: see AdminDSN).
func (c *Cluster) OpenAdmin(n *Node) (*sql.DB, error) {
	db, err := sql.Open("mysql", c.AdminDSN(n))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// ErrNotFound is returned by Load for an unknown cluster name.
var ErrNotFound = errors.New("no such cluster")

// loadState reads a state file.
func loadState(path string) (*Cluster, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Cluster{path: path}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Caps = c.Capabilities()
	c.base = c.snapshot()
	return c, nil
}

// Ping waits until node n accepts an admin connection or ctx ends.
func (c *Cluster) Ping(ctx context.Context, n *Node) error {
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	var last error
	start := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = db.PingContext(pctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: not accepting connections after %v: %w", n.Name, waited(start), last)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// DefaultStateDir is $HABENCH_STATE_DIR, else /var/lib/habench for root, else
// $XDG_STATE_HOME/habench (~/.local/state/habench).
func DefaultStateDir() string {
	if d := os.Getenv("HABENCH_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/habench"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "habench")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "habench")
}

// DefaultCacheDir holds caches shared by all state directories (initialised datadir
// templates): $HABENCH_CACHE_DIR, else /var/cache/habench for root, else ~/.cache/habench.
func DefaultCacheDir() string {
	if d := os.Getenv("HABENCH_CACHE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/cache/habench"
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "habench-cache")
	}
	return filepath.Join(d, "habench")
}

// Host returns access to the machine node n runs on, from c's provider: this machine
// (inside the node's network namespace, if any) for a local sandbox; for an existing
// cluster registered with ssh access, its host over SSH (a *host.SSH, the same value on
// every call, one connection per host for the process); nil when the provider has no
// access to it (work that needs the host is then skipped or refused).
func (c *Cluster) Host(n *Node) host.Host { return c.Provider().Host(c, n) }

// Reload reads c's state file again (a copy: c is unchanged), to see what another actor
// recorded since c was loaded (a promote's new roles). An error for a cluster without one.
func (c *Cluster) Reload() (*Cluster, error) {
	if c.path == "" {
		return nil, fmt.Errorf("cluster %s: no state file", c.Name)
	}
	return loadState(c.path)
}

// guardedDSN is a go-sql-driver DSN for user on host:port over TCP through the guarded
// dialer: an existing node's, and the admin account of a node on the user's hosts.
func guardedDSN(host string, port int, user, password string) string {
	RegisterGuardedDialer()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, password
	cfg.Net = GuardedNet
	cfg.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	cfg.Timeout = 5 * time.Second
	cfg.ReadTimeout = 30 * time.Second
	cfg.InterpolateParams = true
	return cfg.FormatDSN()
}

// ShowMap runs q on db, a statement whose rows are a name and a value (SHOW [GLOBAL]
// VARIABLES or STATUS, with or without WHERE), and returns the values by name in lower
// case (NULL as ""). Errors: the query's or a row's, after q.
func ShowMap(ctx context.Context, db *sql.DB, q string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var k string
		var v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
		m[strings.ToLower(k)] = v.String
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	return m, nil
}
