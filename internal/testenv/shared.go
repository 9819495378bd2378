package testenv

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testmachine"
	"github.com/habench/habench/topology"
)

// A shared deployment serves the tests of one package that only run workloads on a
// topology or read it: it is deployed by the first test that asks for it, handed to one
// test at a time (the others wait), checked before each hand-over (every member back in
// the topology, then the user's reset) and destroyed by DestroyShared, which the
// package's TestMain calls after its tests. A deployment that fails its check is
// destroyed and deployed again, and the test that got it is told so in its log.

// shared is one shared deployment: its key, store (a state directory of its own), the
// cluster once deployed, the lock its users hold, and the claims (its name) to release.
type shared struct {
	use      sync.Mutex
	sb       *cluster.Store
	c        *cluster.Cluster
	holder   *holder
	deployed int // how many times it was deployed
}

var sharedSet struct {
	sync.Mutex
	m map[string]*shared
}

// Shared returns the package's shared deployment named by key (the spec of the first
// call: name is a cluster name handed out for it) for t's exclusive use until t ends.
// Before a hand-over reset (nil: none; it may start stopped nodes, drop data, set
// variables back, and returns the cluster as it now is: reloaded from its state file
// when the last user changed it) must succeed and then every member be back in the topology
// (cluster.WaitTopologyReady); otherwise the deployment is destroyed and deployed again. The caller must not destroy it; what it
// changes (knobs, data) it undoes, or reset does. Errors fail t.
func Shared(t *testing.T, key string, spec func(name string) topology.Spec, reset func(ctx context.Context, sb *cluster.Store, c *cluster.Cluster) (*cluster.Cluster, error)) (*cluster.Store, *cluster.Cluster) {
	t.Helper()
	testmachine.Share(t)
	sharedSet.Lock()
	if sharedSet.m == nil {
		sharedSet.m = map[string]*shared{}
	}
	sh := sharedSet.m[key]
	if sh == nil {
		sh = &shared{holder: &holder{name: "shared-" + key}}
		sharedSet.m[key] = sh
	}
	sharedSet.Unlock()
	sh.use.Lock()
	t.Cleanup(sh.use.Unlock)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if sh.c != nil {
		var err error
		if reset != nil {
			var c *cluster.Cluster
			if c, err = reset(ctx, sh.sb, sh.c); err == nil {
				sh.c = c
			}
		}
		if err == nil {
			err = cluster.WaitTopologyReady(ctx, sh.c)
		}
		if err == nil {
			return sh.sb, sh.c
		}
		t.Logf("shared deployment %s (%s) failed its check, deploying it again: %v", key, sh.c.Name, err)
		if derr := sh.sb.Destroy(ctx, sh.c.Name); derr != nil {
			t.Fatalf("shared deployment %s: destroy after a failed check: %v", key, derr)
		}
		sh.c = nil
	}
	if sh.sb == nil {
		dir, err := os.MkdirTemp("", "hbshared-")
		if err != nil {
			t.Fatal(err)
		}
		sh.sb = &cluster.Store{StateDir: dir, ReadyTimeout: 90 * time.Second}
		sh.holder.cleanups = append(sh.holder.cleanups, func() { os.RemoveAll(dir) })
	}
	s := spec(testmachine.Name(sh.holder, key))
	s.Installation = Installation(t, s.Flavor)
	start := time.Now()
	c, err := sh.sb.Deploy(ctx, s)
	if err != nil {
		t.Fatalf("shared deployment %s: %v", key, err)
	}
	sh.c = c
	sh.deployed++
	t.Logf("shared deployment %s: %s deployed in %v (deployment %d)", key, c.Name, time.Since(start).Round(time.Millisecond), sh.deployed)
	return sh.sb, sh.c
}

// DestroyShared destroys every shared deployment of the process and releases its claims;
// a package with shared deployments calls it from TestMain after m.Run. It returns what
// went wrong (a destroy error, something left behind), one line each, empty when all is
// gone.
func DestroyShared() []string {
	sharedSet.Lock()
	defer sharedSet.Unlock()
	var problems []string
	keys := make([]string, 0, len(sharedSet.m))
	for k := range sharedSet.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sh := sharedSet.m[k]
		if sh.c != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			if err := sh.sb.Destroy(ctx, sh.c.Name); err != nil {
				problems = append(problems, fmt.Sprintf("shared deployment %s: destroy %s: %v", k, sh.c.Name, err))
			}
			cancel()
			if left := cluster.Leftovers(sh.sb, sh.c); len(left) > 0 {
				problems = append(problems, fmt.Sprintf("shared deployment %s: %s left behind: %s", k, sh.c.Name, strings.Join(left, ", ")))
			}
		}
		sh.holder.release()
	}
	sharedSet.m = nil
	return problems
}

// MainWithShared runs m, then DestroyShared, ends the SSH masters the tests opened in this
// process (host.CloseAll: it removes their /tmp/hbssh-* control directories, which
// habench's main does at exit and a test binary otherwise never does), and exits: a
// package's TestMain when it uses Shared or the hosts provider in-process. A shared
// deployment that cannot be destroyed fails the run.
func MainWithShared(m *testing.M) {
	code := m.Run()
	if problems := DestroyShared(); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		if code == 0 {
			code = 1
		}
	}
	host.CloseAll()
	os.Exit(code)
}

// holder is the testing.TB the claims of a shared deployment are made for: they last
// until DestroyShared, not until one test ends. Only what testmachine calls is here.
type holder struct {
	testing.TB
	name     string
	mu       sync.Mutex
	cleanups []func()
}

func (h *holder) Name() string { return h.name }
func (h *holder) Helper()      {}
func (h *holder) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}
func (h *holder) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (h *holder) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (h *holder) Logf(string, ...any)               {}

// release runs the holder's cleanups, last first.
func (h *holder) release() {
	h.mu.Lock()
	fs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
