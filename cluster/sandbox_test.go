package cluster_test

import (
	"context"
	"github.com/habench/habench/internal/testenv/prereq"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/topology"
)

// TestDeployAsyncReplicates deploys 3-node async replication on both flavors, proves a
// write on the source reaches every replica, and that destroy leaves nothing behind.
func TestDeployAsyncReplicates(t *testing.T) {
	t.Parallel()
	for _, f := range []topology.Flavor{topology.MariaDB, topology.MySQL} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			s := testenv.Store(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "ca"+string(f[:2])), topology.Async, 3, f))
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
			if err := s.Destroy(ctx, c.Name); err != nil {
				t.Fatal(err)
			}
			if left := cluster.Leftovers(s, c); len(left) > 0 {
				t.Fatalf("left behind after destroy: %s", strings.Join(left, ", "))
			}
		})
	}
}

// TestDeployFailureRollsBack makes the bootstrap fail (a server option the server
// rejects) and checks the failed deploy removed everything it had created.
func TestDeployFailureRollsBack(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "crb"), topology.Async, 2, topology.MariaDB)
	spec.Options = map[string]string{"no_such_server_variable": "1"}
	s.ReadyTimeout = 20 * time.Second
	c, err := s.Deploy(ctx, spec)
	if err == nil {
		t.Fatalf("deploy with a bad server option succeeded: %+v", c)
	}
	if !strings.Contains(err.Error(), "no_such_server_variable") && !strings.Contains(err.Error(), "exited") {
		t.Errorf("error does not say why: %v", err)
	}
	if cs, _ := s.List(); len(cs) != 0 {
		t.Errorf("state left after failed deploy: %d clusters", len(cs))
	}
	if left := cluster.Leftovers(s, &cluster.Cluster{Name: spec.Name, Nodes: []*cluster.Node{{Name: "n1"}, {Name: "n2"}}}); len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, ", "))
	}
}

// TestLoopbackPortInUse: a loopback sandbox refuses a base port that is taken, creating nothing.
func TestLoopbackPortInUse(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	s.Network = cluster.NetLoopback
	ln, port := listen(t)
	defer ln.Close()
	s.BasePort = port
	_, err := s.Deploy(context.Background(), testenv.Spec(t, testenv.Name(t, "cpt"), topology.Single, 1, topology.MariaDB))
	var fe *topology.FieldError
	if !asFieldError(err, &fe) || fe.Field != "port" {
		t.Fatalf("want a port FieldError, got %v", err)
	}
	if cs, _ := s.List(); len(cs) != 0 {
		t.Errorf("state left after refused deploy")
	}
}

// TestDeploySemiSync: semi-sync comes up with the source's status ON, the configured wait
// point and timeout read back from the server, and every replica acknowledging.
func TestDeploySemiSync(t *testing.T) {
	t.Parallel()
	for _, f := range []topology.Flavor{topology.MariaDB, topology.MySQL} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			s := testenv.Store(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			spec := testenv.Spec(t, testenv.Name(t, "cs"+string(f[:2])), topology.SemiSync, 3, f)
			spec.SemiSync = topology.SemiSyncOptions{WaitPoint: "AFTER_COMMIT", Timeout: 2500 * time.Millisecond, WaitForReplicas: 1}
			c, err := s.Deploy(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			names := c.Capabilities().SemiSyncNames()
			db, _ := c.OpenAdmin(c.Nodes[0])
			defer db.Close()
			var k, status, clients, wp, timeout string
			if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+names.StatusPrefix+"status'").Scan(&k, &status); err != nil || status != "ON" {
				t.Errorf("%sstatus = %q (%v)", names.StatusPrefix, status, err)
			}
			if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+names.StatusPrefix+"clients'").Scan(&k, &clients); err != nil || clients != "2" {
				t.Errorf("%sclients = %q (%v), want 2", names.StatusPrefix, clients, err)
			}
			if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+names.WaitPoint+", @@GLOBAL."+names.Timeout).Scan(&wp, &timeout); err != nil || wp != "AFTER_COMMIT" || timeout != "2500" {
				t.Errorf("wait point %q timeout %q (%v), want AFTER_COMMIT and 2500", wp, timeout, err)
			}
		})
	}
}

// TestDeployLoopback: without namespaces every node listens on 127.0.0.1 at its own port,
// and replication works over loopback.
func TestDeployLoopback(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	s.Network = cluster.NetLoopback
	port := testserver.LoopbackPorts(t, 2)
	s.BasePort = port
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "clo"), topology.Async, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes[0].Host != "127.0.0.1" || c.Nodes[1].Port != port+1 || c.Nodes[0].Netns != "" {
		t.Errorf("nodes %+v %+v", c.Nodes[0], c.Nodes[1])
	}
}

// TestGuardedDialRefusesForeignAddresses: under the test harness's network guard the
// dialer refuses anything that is not loopback or a namespace on this machine, before any
// packet is sent (names without a DNS query).
func TestGuardedDialRefusesForeignAddresses(t *testing.T) {
	t.Setenv(cluster.NetworkGuardEnv, "1")
	for _, h := range []string{"192.0.2.10", "10.1.2.3", "8.8.8.8", "db.invalid"} {
		if err := cluster.CheckDestination(h); err == nil {
			t.Errorf("CheckDestination(%s) allowed a foreign address", h)
		}
	}
	if err := cluster.CheckDestination("127.0.0.1"); err != nil {
		t.Errorf("loopback refused: %v", err)
	}
	// A name is refused before any lookup: resolving it would query the (non-local) DNS
	// resolver.
	if err := cluster.CheckDestination("db.invalid"); err == nil || !strings.Contains(err.Error(), "resolves no names") {
		t.Errorf("a name: %v, want a refusal without lookup", err)
	}
}

// TestDeployFromBasedir: an installation given as a basedir (the layout of an unpacked
// tarball: BASEDIR/bin, BASEDIR/sbin, BASEDIR/share) deploys and reports its version. The
// basedir is assembled from the system MariaDB's files with symlinks, its server a script
// that logs its arguments and runs the system's: a store asks the server for its version
// once (the deploy), not again when it is asked for the same installation later.
func TestDeployFromBasedir(t *testing.T) {
	testenv.Installation(t, topology.MariaDB)
	t.Setenv("HABENCH_CACHE_DIR", t.TempDir()) // this basedir's template is never reused
	b := t.TempDir()
	for _, d := range []string{"bin", "sbin"} {
		if err := os.MkdirAll(filepath.Join(b, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	calls := filepath.Join(t.TempDir(), "calls")
	wrapper := "#!/bin/sh\necho \"$*\" >> " + calls + "\nexec /usr/sbin/mariadbd \"$@\"\n"
	if err := os.WriteFile(filepath.Join(b, "sbin", "mariadbd"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	versions := func() int {
		out, _ := os.ReadFile(calls)
		return strings.Count(string(out), "--version")
	}
	links := map[string]string{"share": "/usr/share", "lib": "/usr/lib"}
	for _, f := range []string{"my_print_defaults", "mariadb-install-db", "resolveip", "mariadb"} {
		links["bin/"+f] = "/usr/bin/" + f
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(b, l)); err != nil {
			t.Fatal(err)
		}
	}
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := topology.Spec{Name: testenv.Name(t, "cbd"), Kind: topology.Single, Nodes: 1, Flavor: topology.MariaDB,
		Installation: topology.Installation{Kind: topology.InstallBasedir, Path: b}}
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if c.Binaries.Basedir != b || c.Binaries.Version.Major != 10 {
		t.Errorf("binaries %+v", c.Binaries)
	}
	db, _ := c.OpenAdmin(c.Nodes[0])
	defer db.Close()
	var basedir string
	if err := db.QueryRowContext(ctx, "SELECT @@basedir").Scan(&basedir); err != nil || strings.TrimSuffix(basedir, "/") != b {
		t.Errorf("@@basedir = %q (%v), want %s", basedir, err, b)
	}
	again, err := s.SpecBinaries(ctx, spec)
	if err != nil || *again != *c.Binaries || versions() != 1 {
		t.Errorf("asked again: %+v (%v), the server asked for its version %d times; want the deploy's binaries, once", again, err, versions())
	}
	if _, err := (&cluster.Store{}).SpecBinaries(ctx, spec); err != nil || versions() != 2 {
		t.Errorf("another store: %v, %d version calls; want it to ask the server itself (2)", err, versions())
	}
}

// TestLoopbackDestroySparesNamesakes: namespaces are machine-wide, cluster names are per
// state directory. Destroying a loopback cluster must not touch a namespace cluster of the
// same name in another state directory.
func TestLoopbackDestroySparesNamesakes(t *testing.T) {
	t.Parallel()
	prereq.Need(t, cluster.NetNamespacesUsable())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := testenv.Name(t, "cns")
	a := testenv.Store(t)
	ca, err := a.Deploy(ctx, testenv.Spec(t, name, topology.Single, 1, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	b := testenv.Store(t)
	b.Network = cluster.NetLoopback
	b.BasePort = testserver.LoopbackPorts(t, 1)
	if _, err := b.Deploy(ctx, testenv.Spec(t, name, topology.Single, 1, topology.MariaDB)); err != nil {
		t.Fatal(err)
	}
	if err := b.Destroy(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := ca.Ping(ctx, ca.Nodes[0]); err != nil || len(cluster.Leftovers(a, ca)) == 0 {
		t.Fatalf("the namespace cluster was damaged by destroying its loopback namesake: %v", err)
	}
	if err := cluster.CheckDestination(ca.Nodes[0].Host); err != nil {
		t.Fatalf("the namespace cluster's network is gone: %v", err)
	}
}

// TestDestroyWithCorruptState: a MySQL (chroot) cluster whose state file is unreadable is
// still destroyed by name: its servers found by their option-file paths inside the rootfs.
func TestDestroyWithCorruptState(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "ccs"), topology.Single, 1, topology.MySQL))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.StateDir, "clusters", c.Name, "state.json"), []byte("{trunc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Destroy(ctx, c.Name); err != nil {
		t.Fatalf("destroy with a corrupt state file: %v", err)
	}
	if left := cluster.Leftovers(s, c); len(left) > 0 {
		t.Fatalf("left behind: %s", strings.Join(left, ", "))
	}
}
