package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
	"golang.org/x/sys/unix"
)

const dropCachesPath = "/proc/sys/vm/drop_caches"

// CheckDropCaches says why the OS page cache cannot be dropped here (nil when it can):
// it needs root and a writable /proc/sys/vm/drop_caches (not in every container).
func CheckDropCaches() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("dropping the OS page cache needs root (%s); run as root or set cell.drop_caches: false", dropCachesPath)
	}
	f, err := os.OpenFile(dropCachesPath, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cannot open %s for writing: %v (set cell.drop_caches: false)", dropCachesPath, err)
	}
	return f.Close()
}

// DropCaches flushes dirty pages (sync) and drops the page cache, dentries and inodes
// (echo 3 > /proc/sys/vm/drop_caches). Root only.
func DropCaches() error {
	unix.Sync()
	return os.WriteFile(dropCachesPath, []byte("3\n"), 0)
}

// RestartCluster stops every server of c cleanly and starts it again, then waits until the
// topology is healthy: replicas stopped first and the source last, the source started
// first and the replicas after it (so they reconnect at once instead of after the connect
// retry), then every replica's receiver and applier running and, for semi-sync, the
// source's acknowledging replicas connected. Kinds single, async and semisync only (a
// Group Replication or Galera restart needs the kind's own rejoin); error otherwise.
// Runtime (SET GLOBAL) settings are gone afterwards: the option files' values apply.
func RestartCluster(ctx context.Context, sb *cluster.Sandbox, c *cluster.Cluster) error {
	if !restartable(c.Spec.Kind) {
		return fmt.Errorf("restarting a %s topology is not supported", c.Spec.Kind)
	}
	var order []*cluster.Node // stop order: replicas, then the source
	for _, n := range c.Nodes {
		if n.Role == topology.RoleReplica {
			order = append(order, n)
		}
	}
	for _, n := range c.Nodes {
		if n.Role != topology.RoleReplica {
			order = append(order, n)
		}
	}
	for _, n := range order {
		if err := sb.StopNode(c, n.Name); err != nil {
			return err
		}
	}
	for _, n := range slices.Backward(order) {
		if err := sb.StartNode(ctx, c, n.Name); err != nil {
			return err
		}
	}
	return waitHealthy(ctx, c, 90*time.Second)
}

// waitHealthy waits until every replica's threads run and a semi-sync source has its
// acknowledging replicas, bounded by timeout.
func waitHealthy(ctx context.Context, c *cluster.Cluster, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	caps := c.Capabilities()
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			return err
		}
		err = func() error {
			defer db.Close()
			var last string
			for {
				ok := false
				switch {
				case n.Role == topology.RoleReplica:
					st, err := cluster.ReplicaStatus(ctx, db, caps)
					if err == nil && st != nil {
						io, sqlr := st[caps.ReplicaStatusColumn("io_running")], st[caps.ReplicaStatusColumn("sql_running")]
						ok = io == "Yes" && sqlr == "Yes"
						last = fmt.Sprintf("io=%s sql=%s %s", io, sqlr, st[caps.ReplicaStatusColumn("last_io_error")]+st[caps.ReplicaStatusColumn("last_sql_error")])
					} else {
						last = fmt.Sprint(err)
					}
				case c.Spec.Kind == topology.SemiSync:
					v := caps.SemiSyncNames()
					var name string
					var clients int
					err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v.StatusPrefix+"clients'").Scan(&name, &clients)
					ok = err == nil && clients >= c.Spec.SemiSync.WaitForReplicas
					last = fmt.Sprintf("%d semi-sync replicas connected (%v)", clients, err)
				default:
					ok = db.PingContext(ctx) == nil
				}
				if ok {
					return nil
				}
				select {
				case <-ctx.Done():
					return errors.New("node " + n.Name + " not healthy after restart: " + last)
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		if err != nil {
			return err
		}
	}
	return nil
}
