package sampler

import (
	"context"
	"fmt"
	"strings"

	"github.com/habench/habench/topology"
)

// Metric names this sampler emits (Sample.Metric; see Metrics and docs/results.md).
const (
	// MetricBacklog: transactions executed on the source and not on the replica.
	MetricBacklog = "backlog_trx"
)

// GTID measures the replication backlog in transactions: what the source has executed and a
// replica has not.
//
//	MySQL-like (Caps.GTIDKind topology.GTIDMySQL): backlog_trx = |gtid_executed(source) - gtid_executed(replica)|,
//	  from SELECT @@GLOBAL.gtid_mode, @@GLOBAL.gtid_executed on both, counted with ParseGTIDSet;
//	  error unless gtid_mode is ON on both.
//	MariaDB (Caps.GTIDKind topology.GTIDMariaDB): backlog_trx = MariaDBBacklog(@@GLOBAL.gtid_binlog_pos on
//	  the source, @@GLOBAL.gtid_slave_pos on the replica); error if the source's log_bin is OFF.
//
// The source (Tick.Source) is read once per tick and shared by all replicas of the tick
// (Tick.Once), before each replica is read: the backlog can miss transactions committed on the
// source between the two reads, never count ones the replica has. The heartbeat's own writes
// are transactions too and are counted. Supports replicas (role replica) whose GTIDKind is
// known; errors when the run has no writable node or source and replica differ in GTID kind.
//
// Group Replication: the "source" is the first primary (the heartbeat's writer), and every
// other member (secondaries; in multi-primary mode the other primaries) gets backlog_trx =
// what that primary has executed and the member has not; the first primary itself gets no
// sample.
type GTID struct{}

// NewGTID returns the GTID backlog sampler.
func NewGTID() *GTID { return &GTID{} }

// Name is "gtid".
func (*GTID) Name() string { return "gtid" }

// Supports replicas and Group Replication members with a known GTID kind.
func (*GTID) Supports(n Node) bool {
	member := n.Role == topology.RoleReplica || n.Role == topology.RoleSecondary || n.Role == topology.RolePrimary
	return member && (n.Caps.GTIDKind == topology.GTIDMySQL || n.Caps.GTIDKind == topology.GTIDMariaDB)
}

// Sample returns backlog_trx for replica n. See GTID for sources and errors.
func (*GTID) Sample(ctx context.Context, t *Tick, n Node) ([]Sample, error) {
	src, ok := t.Source()
	if !ok {
		return nil, errNoSource
	}
	if src.Name == n.Name {
		return nil, nil // the group's first primary: the reference itself
	}
	if src.Caps.GTIDKind != n.Caps.GTIDKind {
		return nil, fmt.Errorf("source %s has GTID kind %q, replica %q", src.Name, src.Caps.GTIDKind, n.Caps.GTIDKind)
	}
	var backlog uint64
	switch n.Caps.GTIDKind {
	case topology.GTIDMySQL:
		s, err := onceTyped(ctx, t, "gtid.source."+src.Name, func() (GTIDSet, error) { return mysqlExecuted(ctx, src) })
		if err != nil {
			return nil, &NodeError{Node: src.Name, Err: fmt.Errorf("source: %w", err)}
		}
		r, err := mysqlExecuted(ctx, n)
		if err != nil {
			return nil, err
		}
		backlog = s.Subtract(r).Count()
	case topology.GTIDMariaDB:
		s, err := onceTyped(ctx, t, "gtid.source."+src.Name, func() (MariaDBGTIDPos, error) { return mariadbBinlogPos(ctx, src) })
		if err != nil {
			return nil, &NodeError{Node: src.Name, Err: fmt.Errorf("source: %w", err)}
		}
		var pos string
		if err := n.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_slave_pos").Scan(&pos); err != nil {
			return nil, err
		}
		r, err := ParseMariaDBGTIDPos(pos)
		if err != nil {
			return nil, err
		}
		backlog = MariaDBBacklog(s, r)
	}
	return []Sample{{Metric: MetricBacklog, Value: float64(backlog)}}, nil
}

// mysqlExecuted reads and parses @@GLOBAL.gtid_executed; error unless gtid_mode is ON.
func mysqlExecuted(ctx context.Context, n Node) (GTIDSet, error) {
	var mode, executed string
	if err := n.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_mode, @@GLOBAL.gtid_executed").Scan(&mode, &executed); err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if !strings.EqualFold(mode, "ON") {
		return nil, fmt.Errorf("node %s: gtid_mode is %s, want ON", n.Name, mode)
	}
	return ParseGTIDSet(executed)
}

// mariadbBinlogPos reads and parses @@GLOBAL.gtid_binlog_pos; error if log_bin is OFF.
func mariadbBinlogPos(ctx context.Context, n Node) (MariaDBGTIDPos, error) {
	var logBin int
	var pos string
	if err := n.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin, @@GLOBAL.gtid_binlog_pos").Scan(&logBin, &pos); err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if logBin == 0 {
		return nil, fmt.Errorf("node %s: log_bin is OFF, no GTIDs to compare", n.Name)
	}
	return ParseMariaDBGTIDPos(pos)
}
