package cluster_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

var setHabench sync.Once

// throughProxy opens a new connection to c's proxy endpoint called endpoint ("write",
// "read"), runs q (when not "") and returns the @@server_id that answered.
func throughProxy(ctx context.Context, c *cluster.Cluster, endpoint, q string) (int, error) {
	px := c.Proxy()
	db, err := sql.Open("mysql", c.BenchDSN(&cluster.Node{Host: px.Host, Port: c.ProxyPort(endpoint)}, "")+"&timeout=2s&readTimeout=5s")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if q != "" {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return 0, err
		}
	}
	var id int
	err = db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id)
	return id, err
}

// serverIDs maps each node's @@server_id to its name.
func serverIDs(t *testing.T, ctx context.Context, c *cluster.Cluster) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			t.Fatal(err)
		}
		var id int
		err = db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id)
		db.Close()
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		out[id] = n.Name
	}
	if len(out) != len(c.Nodes) {
		t.Fatalf("server ids %v: not one per node", out)
	}
	return out
}

// TestProxyHAProxy deploys a 3-node MariaDB Galera cluster and a 3-member single-primary
// MySQL group, each with proxy: haproxy (checks every 200 ms), side by side. Through
// the write endpoint a new connection reaches the writer; through the read endpoint the
// two other nodes, in turn; the proxy's health line says so. After the writer is
// killed, a new connection through the write endpoint reaches another node and writes
// there within 20 s (the measured time is logged). The proxy itself survives kill and
// start: afterwards the write endpoint reaches the writer again. About 15 s alone on 2
// cores (each deploy 5-8 s, the failovers 6-7 s).
func TestProxyHAProxy(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	setHabench.Do(func() { cluster.HabenchBinary = testenv.Habench(t) })
	if _, err := cluster.ProxyConfig(&cluster.Cluster{}); err == nil {
		t.Error("ProxyConfig of a cluster without a proxy: no error")
	}
	kinds := []struct {
		prefix string
		kind   topology.Kind
		flavor topology.Flavor
	}{{"pxg", topology.Galera, topology.MariaDB}, {"pxr", topology.Group, topology.MySQL}}
	names := []string{"galera", "group"}
	testenv.SideBySide(t, names, func(t *testing.T, i int) {
		k := kinds[i]
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		spec := testenv.Spec(t, testenv.Name(t, k.prefix), k.kind, 3, k.flavor)
		spec.Proxy = topology.ProxySpec{Type: topology.HAProxy, CheckInterval: 200 * time.Millisecond}
		if k.kind == topology.Group {
			// The killed primary expelled as soon as it is suspected (about 5 s), not 5 s
			// later, and a new primary elected: a failover of ~22 s otherwise.
			spec.Options = map[string]string{"group_replication_member_expel_timeout": "0"}
		}
		start := time.Now()
		c, err := s.Deploy(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s x3 with haproxy deployed in %v (network %s)", k.kind, time.Since(start).Round(time.Millisecond), c.Network)
		checkProxy(t, ctx, s, c)
	})
}

// checkProxy is TestProxyHAProxy on one deployed cluster c.
func checkProxy(t *testing.T, ctx context.Context, s *cluster.Store, c *cluster.Cluster) {
	px := c.Proxy()
	if px == nil {
		t.Fatal("no proxy member")
	}
	cfg, err := cluster.ProxyConfig(c)
	if err != nil || !strings.Contains(cfg, "listen write") {
		t.Errorf("ProxyConfig: %v\n%s", err, cfg)
	}
	ids := serverIDs(t, ctx, c)
	writer := c.WriterNow(ctx)
	var others []string
	for _, n := range c.Nodes {
		if n != writer {
			others = append(others, n.Name)
		}
	}
	want := fmt.Sprintf("haproxy running, write %s, read 2 up: %s", writer.Name, strings.Join(others, ", "))
	waitFor(t, 10*time.Second, "proxy health", func() error {
		if h := c.Health(ctx, px); h != want {
			return fmt.Errorf("health %q, want %q", h, want)
		}
		return nil
	})
	if id, err := throughProxy(ctx, c, "write", ""); err != nil || ids[id] != writer.Name {
		t.Fatalf("write endpoint reached %q (server id %d, %v), want the writer %s", ids[id], id, err, writer.Name)
	}
	seen := map[string]bool{}
	for range 6 {
		id, err := throughProxy(ctx, c, "read", "")
		if err != nil {
			t.Fatalf("read endpoint: %v", err)
		}
		seen[ids[id]] = true
	}
	if len(seen) != 2 || seen[writer.Name] {
		t.Errorf("read endpoint reached %v in 6 connections, want %v", seen, others)
	}

	// The writer killed: a new writer through the same endpoint.
	t0 := time.Now()
	if err := s.KillNode(c, writer.Name); err != nil {
		t.Fatal(err)
	}
	var last error
	var reached string
	for time.Since(t0) < 20*time.Second {
		id, err := throughProxy(ctx, c, "write", "CREATE DATABASE IF NOT EXISTS pxprobe")
		if err == nil && slices.Contains(others, ids[id]) {
			reached = ids[id]
			break
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	if reached == "" {
		t.Fatalf("no new writer through the proxy 20 s after killing %s: %v; health %s", writer.Name, last, c.Health(ctx, px))
	}
	t.Logf("%s: %s killed, the write endpoint wrote on %s after %.2f s", c.Spec.Kind, writer.Name, reached, time.Since(t0).Seconds())

	// The proxy killed and started again: it serves the writer again.
	if err := s.KillNode(c, px.Name); err != nil {
		t.Fatal(err)
	}
	if h := c.Health(ctx, px); h != "haproxy not running" {
		t.Errorf("killed proxy's health %q", h)
	}
	if _, err := throughProxy(ctx, c, "write", ""); err == nil {
		t.Error("write endpoint answers with haproxy killed")
	}
	t1 := time.Now()
	if err := s.StartNode(ctx, c, px.Name); err != nil {
		t.Fatal(err)
	}
	if id, err := throughProxy(ctx, c, "write", ""); err != nil || ids[id] != reached {
		t.Errorf("after the proxy's restart the write endpoint reached %q (%v), want %s", ids[id], err, reached)
	}
	t.Logf("proxy restarted in %.2f s; health %s", time.Since(t1).Seconds(), c.Health(ctx, px))
}
