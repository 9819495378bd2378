package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/habench/habench/topology"
)

// Store is a state directory: every cluster's state file under StateDir/clusters/NAME,
// whichever provider made the cluster. It loads, lists and destroys clusters (Destroy
// runs the registered destroy hooks, then the cluster's provider's destroy), hands a spec
// to its provider (Provide; Deploy for the local sandbox) and carries what the providers
// share: the ready timeout, the stop grace, the logger and the notices. Network,
// BasePort and GaleraJoinBySST are options of the local sandbox's deploy only
// (sandbox_deploy.go): with root and Network "auto" or NetNamespaces each node runs in
// its own network namespace on a private bridge with its own address (so links between
// nodes can be impaired); otherwise every node listens on 127.0.0.1 at BasePort+i. A
// local sandbox's files live under StateDir/clusters/NAME too (and the same path inside
// a root filesystem for chrooted servers).
type Store struct {
	StateDir string
	// Network is the local deploy's network: "auto" (default), NetNamespaces or NetLoopback.
	Network string
	// BasePort is the local deploy's first port in loopback mode: node i listens on
	// BasePort+i-1 (default 23306).
	BasePort int
	// ReadyTimeout bounds each readiness wait (server accepting connections, replica
	// threads running) of a deploy or a start, on this machine or on hosts; default 90s.
	ReadyTimeout time.Duration
	// StopGrace is how long StopNode waits after SIGTERM before SIGKILL (0: DefaultStopGrace).
	StopGrace time.Duration
	// GaleraJoinBySST (local deploy): the joiners of a new Galera cluster take a full
	// state transfer by the cluster's method (galera.sst), one after the other, instead
	// of starting from its seed (galera_seed.go); slower, for a test of the state
	// transfer itself.
	GaleraJoinBySST bool
	Log             *slog.Logger
	// Notice, when set, receives lines a command says on its output besides its result
	// (a host unreachable at destroy); they are logged too. nil: logged only.
	Notice func(line string)

	// snapshot, when set (DeployFromSnapshot, on a copy of the store for that deploy), is
	// the data snapshot every node's datadir is copied from, on this machine or on hosts.
	snapshot *Snapshot
	// installs are the installations this store resolved (installMemo; memo creates it).
	installs *installMemo
}

// notice says line through s.Notice, when set.
func (s *Store) notice(line string) {
	if s.Notice != nil {
		s.Notice(line)
	}
}

func (s *Store) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// stateDir is StateDir made absolute (a relative one would change meaning with the
// working directory, and paths in option files and process command lines must be absolute).
func (s *Store) stateDir() string {
	d, err := filepath.Abs(s.StateDir)
	if err != nil {
		return s.StateDir
	}
	return d
}

func (s *Store) clustersDir() string { return filepath.Join(s.stateDir(), "clusters") }
func (s *Store) clusterDir(name string) string {
	return filepath.Join(s.clustersDir(), name)
}

// Load reads cluster name's state file. ErrNotFound if there is none; a *FieldError if
// name is not a valid cluster name (so it can never address a path outside the state dir).
func (s *Store) Load(name string) (*Cluster, error) {
	if err := topology.ValidName(name); err != nil {
		return nil, err
	}
	c, err := loadState(filepath.Join(s.clusterDir(name), "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cluster %q: %w (see `habench status`)", name, ErrNotFound)
	}
	return c, err
}

// List returns every cluster with a state file, sorted by name.
func (s *Store) List() ([]*Cluster, error) {
	entries, err := os.ReadDir(s.clustersDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Cluster
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := loadState(filepath.Join(s.clustersDir(), e.Name(), "state.json"))
		if err != nil {
			// A directory without state (crash before the first save): still ours to clean.
			c = &Cluster{Name: e.Name(), path: filepath.Join(s.clustersDir(), e.Name(), "state.json"), State: "unknown"}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Provide makes the cluster spec describes with the provider it names (Provider.Provide).
func (s *Store) Provide(ctx context.Context, spec topology.Spec) (*Cluster, error) {
	p, err := ProviderOf(spec)
	if err != nil {
		return nil, err
	}
	return p.Provide(ctx, s, spec)
}

// Destroy stops cluster name's servers and removes its processes, namespaces, links and
// directories. It works from the state file alone, also after habench was killed, and by
// name when the state file is missing or unreadable. For an existing cluster it only
// forgets the registration: its servers are not touched. The registered destroy hooks
// (RegisterDestroyHook) run first: a refusal, or a failure to undo a package's side state,
// keeps the cluster and is the error.
func (s *Store) Destroy(ctx context.Context, name string) error {
	defer destroyedByUs(name)
	c, err := s.Load(name)
	if err != nil {
		var fe *topology.FieldError
		if errors.As(err, &fe) {
			return err
		}
		if _, serr := os.Stat(s.clusterDir(name)); serr != nil {
			return err
		}
		// A directory without a readable state (crash, corruption): clean what we can by name.
		s.log().Warn("state unreadable, destroying by name", "cluster", name, "err", err)
		c = &Cluster{Name: name, Network: "unknown", path: filepath.Join(s.clusterDir(name), "state.json")}
	}
	if err := refuseDestroy([]*Cluster{c}); err != nil {
		return err
	}
	if err := beforeDestroy(c); err != nil {
		return err
	}
	return c.Provider().Destroy(ctx, s, c)
}

// DestroyAll destroys every cluster in the state directory. The destroy hooks run first
// for every cluster (their refusals, then their undoing): one refusal or failure keeps
// every cluster.
func (s *Store) DestroyAll(ctx context.Context) error {
	cs, err := s.List()
	if err != nil {
		return err
	}
	if err := refuseDestroy(cs); err != nil {
		return err
	}
	for _, c := range cs {
		if err := beforeDestroy(c); err != nil {
			return err
		}
	}
	var errs []error
	for _, c := range cs {
		if c.State == "unknown" {
			c.Network = "unknown"
		}
		errs = append(errs, c.Provider().Destroy(ctx, s, c))
	}
	return errors.Join(errs...)
}

// forgetState removes c's state directory and nothing else (a registration, or a
// provider this habench does not know).
func (s *Store) forgetState(c *Cluster) error {
	return os.RemoveAll(s.clusterDir(c.Name))
}
