// Package testenv gives real-server tests their sandboxes: it skips a test when the
// server binaries or another prerequisite are missing (or fails it when
// HABENCH_REQUIRE_SERVERS=1, as in `make test` and CI: prereq.Missing decides), and
// destroys every cluster a test deployed, also when it fails.
package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/internal/testmachine"
	"github.com/habench/habench/topology"
)

// Installation returns the installation tests use for flavor f (system MariaDB, the
// default MySQL root filesystem), skipping or failing the test when it is missing.
func Installation(t testing.TB, f topology.Flavor) topology.Installation {
	t.Helper()
	if testing.Short() {
		t.Skip("real-server test skipped in -short mode")
	}
	inst := topology.Installation{Kind: topology.InstallSystem}
	path := "/usr/sbin/mariadbd"
	if f == topology.MySQL {
		inst = topology.Installation{Kind: topology.InstallRootfs, Path: cluster.DefaultRootfs}
		path = filepath.Join(cluster.DefaultRootfs, "usr/sbin/mysqld")
	}
	if _, err := os.Stat(path); err != nil {
		prereq.Missing(t, "%s missing: install with `make deps`", path)
	}
	return inst
}

// Store returns a store with a fresh state directory whose clusters are all
// destroyed at cleanup; cleanup also fails the test if anything is left behind. The test
// shares the machine (testmachine.Share: a test that measures alone waits for it).
func Store(t testing.TB) *cluster.Store {
	t.Helper()
	testmachine.Share(t)
	dir, err := os.MkdirTemp("", "hbs-")
	if err != nil {
		t.Fatal(err)
	}
	s := &cluster.Store{StateDir: dir, ReadyTimeout: 90 * time.Second}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cs, _ := s.List()
		if err := s.DestroyAll(ctx); err != nil {
			t.Errorf("destroy: %v", err)
		}
		for _, c := range cs {
			if left := cluster.Leftovers(s, c); len(left) > 0 {
				t.Errorf("cluster %s left behind: %s", c.Name, strings.Join(left, ", "))
			}
		}
		os.RemoveAll(dir)
	})
	return s
}

// Spec returns a spec for a test cluster with the flavor's test installation.
func Spec(t testing.TB, name string, kind topology.Kind, nodes int, f topology.Flavor) topology.Spec {
	return topology.Spec{Name: name, Kind: kind, Nodes: nodes, Flavor: f, Installation: Installation(t, f)}
}

// Name returns prefix (1 to 7 characters, a lowercase letter first) plus 3 characters:
// a valid cluster name that no other test on this machine (in any process) holds until t
// ends. Namespaces and bridges take their names from it and are machine-wide.
func Name(t testing.TB, prefix string) string {
	t.Helper()
	return testmachine.Name(t, prefix)
}

// Habench returns the path of a habench binary, for tests that start it as a process
// (the link process a partition fault starts: habench netem serve): HABENCH_TEST_BIN
// (make test sets it to the bin/habench it built), else one built from this module into
// the test's temporary directory (a failed build fails the test).
func Habench(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("HABENCH_TEST_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("HABENCH_TEST_BIN: %v", err)
		}
		return bin
	}
	bin := filepath.Join(t.TempDir(), "habench")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/habench/habench/cmd/habench").CombinedOutput(); err != nil {
		t.Fatalf("build habench: %v\n%s", err, out)
	}
	return bin
}

// SideBySide runs f(t, i) for each of names as subtests of t, all at once (each t.Run in
// a goroutine of its own), and returns when every one has ended. Parallel subtests
// (t.Parallel inside t.Run) wait for their parent to return and then queue behind every
// parallel test of the package, so a long one becomes the package's tail; these start
// with their parent, inside its one -parallel slot: for the parts of one test that mostly
// wait (runs at a low rate, elections, restarts).
func SideBySide(t *testing.T, names []string, f func(t *testing.T, i int)) {
	t.Helper()
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) { f(t, i) })
		}()
	}
	wg.Wait()
}
