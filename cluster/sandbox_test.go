package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/topology"
)

// requireServers skips when the flavor's binaries are missing, unless
// HABENCH_REQUIRE_SERVERS=1 (CI), where a missing server is a failure.
func requireServers(t *testing.T, f topology.Flavor) topology.Installation {
	t.Helper()
	inst := topology.Installation{Kind: topology.InstallSystem}
	path := "/usr/sbin/mariadbd"
	if f == topology.MySQL {
		inst = topology.Installation{Kind: topology.InstallRootfs, Path: DefaultRootfs}
		path = filepath.Join(DefaultRootfs, "usr/sbin/mysqld")
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("HABENCH_REQUIRE_SERVERS") == "1" {
			t.Fatalf("%s missing and HABENCH_REQUIRE_SERVERS=1", path)
		}
		t.Skipf("%s missing: install with `make deps`", path)
	}
	return inst
}

func newSandbox(t *testing.T) *Sandbox {
	t.Helper()
	dir := t.TempDir()
	s := &Sandbox{StateDir: dir, ReadyTimeout: 60 * time.Second}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := s.DestroyAll(ctx); err != nil {
			t.Errorf("destroy: %v", err)
		}
	})
	return s
}

func TestDeployAsyncReplicates(t *testing.T) {
	for _, f := range []topology.Flavor{topology.MariaDB, topology.MySQL} {
		t.Run(string(f), func(t *testing.T) {
			inst := requireServers(t, f)
			s := newSandbox(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			spec := topology.Spec{Name: "ta" + string(f[:2]), Kind: topology.Async, Nodes: 3, Flavor: f, Installation: inst}
			start := time.Now()
			c, err := s.Deploy(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s async x3 deployed in %v (network %s)", f, time.Since(start).Round(time.Millisecond), c.Network)
			src, err := c.OpenAdmin(c.Nodes[0])
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if _, err := src.ExecContext(ctx, "CREATE DATABASE probe"); err != nil {
				t.Fatal(err)
			}
			for _, n := range c.Nodes[1:] {
				db, _ := c.OpenAdmin(n)
				deadline := time.Now().Add(20 * time.Second)
				for {
					var name string
					err := db.QueryRowContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='probe'").Scan(&name)
					if err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("node %s: database did not replicate: %v", n.Name, err)
					}
					time.Sleep(100 * time.Millisecond)
				}
				db.Close()
			}
			// Destroy leaves nothing.
			dir := s.clusterDir(c.Name)
			if err := s.Destroy(ctx, c.Name); err != nil {
				t.Fatal(err)
			}
			for _, n := range c.Nodes {
				if n.Running() {
					t.Errorf("node %s pid %d still running after destroy", n.Name, n.PID)
				}
			}
			if left := leftoverNetwork(c.Name); len(left) > 0 {
				t.Errorf("left behind: %s", strings.Join(left, ", "))
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s still exists", dir)
			}
			if _, err := os.Stat(c.Nodes[0].Dir); err == nil {
				t.Errorf("%s still exists", c.Nodes[0].Dir)
			}
		})
	}
}
