//go:build bench

package experiment_test

// What a data snapshot saves (issue 22: a 3-node group and a 3-node Galera cluster with 8 x
// 1,000,000 rows healthy with the data in at most 1/5 of the time a deploy plus prepare
// takes). Run as root:
//
//	go test -tags bench -count=1 -run '^$' -bench SnapshotDeploy -benchtime 1x -timeout 60m ./experiment/
//
// HABENCH_BENCH_TABLES (default 8) and HABENCH_BENCH_SNAPSHOT_ROWS (rows per table,
// default 1000000) size it. It prints; nothing in it passes or fails on a number.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// BenchmarkSnapshotDeploy measures, for a 3-member single-primary group (MySQL) and a
// 3-node Galera cluster (MariaDB), the time from nothing to every node holding the
// prepared data (every table's last row and its secondary index k_N on every node):
// (A) deploy, prepare on the writer (8 threads), replicas caught up; (B) deploy from a data
// snapshot of the same shape. The snapshot is made between the two (a one-node deploy
// and prepare, timed apart: paid once per installation and shape). It reports B/A
// (the goal: at most 0.2) and checks that B's nodes hold the same rows as a
// prepare gives (CHECKSUM TABLE equal on every node of B and equal to A's, the prepared
// deployment's).
func BenchmarkSnapshotDeploy(b *testing.B) {
	tables := benchEnvInt("HABENCH_BENCH_TABLES", 8)
	rows := benchEnvInt("HABENCH_BENCH_SNAPSHOT_ROWS", 1000000)
	var lines []string
	for _, k := range []struct {
		name   string
		kind   topology.Kind
		flavor topology.Flavor
	}{{"group", topology.Group, topology.MySQL}, {"galera", topology.Galera, topology.MariaDB}} {
		b.Run(k.name, func(b *testing.B) {
			testenv.Installation(b, k.flavor)
			s := testenv.Store(b)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
			defer cancel()
			o := workload.DefaultOptions()
			o.Tables, o.TableSize, o.Threads = tables, rows, 8
			o.RandSeed = time.Now().UnixNano()%1_000_000_000 + 1 // a shape, so a snapshot, of this run's own
			wl, err := workload.Lookup("oltp_read_write")
			if err != nil {
				b.Fatal(err)
			}
			spec := testenv.Spec(b, testenv.Name(b, "bs"+k.name[:2]), k.kind, 3, k.flavor)
			a, sumA := timeToData(ctx, b, s, spec, o, func(c *cluster.Cluster) error {
				return wl.Prepare(ctx, target(c), o, io.Discard)
			}, nil)
			t0 := time.Now()
			shape := cluster.DataShape(workload.DataShape("oltp_read_write", o))
			snap, err := s.MakeSnapshot(ctx, spec, testenv.Name(b, "bsx"+k.name[:1]), shape, func(ctx context.Context, c *cluster.Cluster) error {
				return wl.Prepare(ctx, target(c), o, io.Discard)
			})
			if err != nil {
				b.Fatal(err)
			}
			defer cluster.RemoveSnapshot(snap.Name)
			made := time.Since(t0)
			t1 := time.Now()
			if err := s.VerifySnapshot(ctx, spec, snap); err != nil {
				b.Fatal(err)
			}
			verify := time.Since(t1) // also paid inside B's deploy: DeployFromSnapshot checks first
			bt, sumB := timeToData(ctx, b, s, spec, o, nil, snap)
			if sumA != sumB {
				b.Fatalf("%s: the deployment from the snapshot holds other data than the prepared one: CHECKSUM TABLE %q, prepared %q", k.name, sumB, sumA)
			}
			b.ReportMetric(bt.Seconds()/a.Seconds(), "snapshot-ratio")
			b.ReportMetric(float64(verify.Microseconds())/1000, "check-ms")
			lines = append(lines, fmt.Sprintf("%-7s 3 nodes, %d x %d rows: deploy+prepare %.1f s, from the snapshot %.1f s (ratio %.3f), of which checking its %d files %.1f ms; making the snapshot %.1f s (once per installation and shape)",
				k.name, tables, rows, a.Seconds(), bt.Seconds(), bt.Seconds()/a.Seconds(), len(snap.Files), float64(verify.Microseconds())/1000, made.Seconds()))
		})
	}
	fmt.Println(strings.Join(lines, "\n"))
}

// timeToData deploys spec on s (from snap when it is not nil, else empty and then
// prepare), waits until every node holds the data (dataIn) and returns the time taken
// and the nodes' CHECKSUM TABLE (checked equal on every node); the deployment is
// destroyed after.
func timeToData(ctx context.Context, b *testing.B, s *cluster.Store, spec topology.Spec, o workload.Options, prepare func(*cluster.Cluster) error, snap *cluster.Snapshot) (time.Duration, string) {
	b.Helper()
	t0 := time.Now()
	var c *cluster.Cluster
	var err error
	if snap != nil {
		c, err = s.DeployFromSnapshot(ctx, spec, snap)
	} else {
		c, err = s.Deploy(ctx, spec)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy(context.WithoutCancel(ctx), c.Name)
	if prepare != nil {
		if err := prepare(c); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		if err := dataIn(ctx, c, n, o.Tables, o.TableSize); err != nil {
			b.Fatalf("%s %s: %v", c.Name, n.Name, err)
		}
	}
	d := time.Since(t0)
	var sums []string
	for _, n := range c.Nodes {
		sums = append(sums, checksums(ctx, c, n))
	}
	if !allEqual(sums) || strings.Contains(sums[0], "error") {
		b.Fatalf("%s: checksums differ: %q", c.Name, sums)
	}
	return d, sums[0]
}

// dataIn polls n every 200 ms until each of sbtest1..tables has its last row (id = size)
// and its secondary index (k_N), for at most 20 minutes or until ctx ends.
func dataIn(ctx context.Context, c *cluster.Cluster, n *cluster.Node, tables, size int) error {
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	for {
		ok, err := hasData(ctx, db, tables, size)
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("data not in (%v): %w", err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func hasData(ctx context.Context, db *sql.DB, tables, size int) (bool, error) {
	var idx int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT TABLE_NAME) FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = 'sbtest' AND INDEX_NAME <> 'PRIMARY'`).Scan(&idx); err != nil || idx < tables {
		return false, err
	}
	for i := 1; i <= tables; i++ {
		var last sql.NullInt64
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT MAX(id) FROM sbtest.sbtest%d", i)).Scan(&last); err != nil || last.Int64 < int64(size) {
			return false, err
		}
	}
	return true, nil
}
