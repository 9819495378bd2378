package sampler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/habench/habench/topology"
)

// Metric names this sampler emits (Sample.Metric; see Metrics and docs/results.md).
const (
	// MetricIORunning: replica receiver thread running, 0/1.
	MetricIORunning = "io_running"
	// MetricSQLRunning: replica applier thread running, 0/1.
	MetricSQLRunning = "sql_running"
	// MetricSecondsBehindSource: the server's Seconds_Behind_Source, -1 when NULL.
	MetricSecondsBehindSource = "seconds_behind_source"
	// MetricApplierLag: a MySQL replica's apply lag (end-apply minus original commit), seconds.
	MetricApplierLag = "applier_lag_s"
)

// Replica reports a replica's own view of its replication threads and delay, from
// Caps.ShowReplicaStatus() (SHOW REPLICA STATUS / SHOW SLAVE STATUS), columns named by
// Caps.ReplicaStatusColumn and scanned generically (the column set varies by version):
//
//	io_running             1 if the IO (receiver) thread column says "Yes", else 0 ("Connecting" = 0)
//	sql_running            1 if the SQL (applier) thread column says "Yes", else 0
//	seconds_behind_source  the server's Seconds_Behind_Source|Master in seconds; -1 when NULL
//	                       (a thread not running)
//
// With several channels (rows), io_running and sql_running are the minimum, seconds_behind_source
// the maximum, or -1 if any channel's is NULL.
//
// On MySQL-like flavors it also reports applier_lag_s: the maximum over applier workers of
// LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP - LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP
// (seconds) from performance_schema.replication_applier_status_by_worker: how late the last
// applied transaction became visible compared with its commit on the original source. It does
// not grow while nothing is applied (use lag_s for that); it is omitted until a transaction has
// been applied, and for good on a node where the table or columns do not exist (MySQL < 8.0.2).
//
// The two timestamps come from two hosts' clocks (the replica's and the original source's,
// taken as the tick's source, Tick.Source): applier_lag_s is corrected by the difference of
// their offsets to this machine's clock (Node.ClockOffset, measured with host.ClockOffset;
// zero for nodes on this machine), and clamped at 0. When the combined uncertainty of the
// two offsets is larger than the lag reported, a warning is logged once per node (the
// value then says little more than "below the clocks' uncertainty").
//
// Supports nodes with role replica. Sample errors when the status query fails, returns no
// row (replication not configured) or lacks an expected column.
type Replica struct {
	mu          sync.Mutex
	noApplierPS map[string]bool // node -> the performance_schema table/columns are missing
	log         *slog.Logger    // Config.Logger, set by Start; nil: no warnings
	warned      map[string]bool // node -> the clock uncertainty warning was logged
}

// NewReplica returns the replica status sampler.
func NewReplica() *Replica {
	return &Replica{noApplierPS: map[string]bool{}, warned: map[string]bool{}}
}

// Start keeps cfg.Logger for the clock uncertainty warning; it does no I/O.
func (r *Replica) Start(_ context.Context, cfg Config, _ []Node) (func(), error) {
	r.mu.Lock()
	r.log = cfg.withDefaults().Logger
	r.mu.Unlock()
	return nil, nil
}

// Name is "replica".
func (*Replica) Name() string { return "replica" }

// Supports nodes whose role is replica.
func (*Replica) Supports(n Node) bool { return n.Role == topology.RoleReplica }

// Sample returns io_running, sql_running, seconds_behind_source and, on MySQL, applier_lag_s.
func (r *Replica) Sample(ctx context.Context, t *Tick, n Node) ([]Sample, error) {
	q := n.Caps.ShowReplicaStatus()
	rows, err := n.DB.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	cols, status, err := scanRows(rows)
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	out, err := replicaStatusSamples(n.Caps, cols, status)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	if !mysqlLike(n.Caps) {
		return out, nil
	}
	r.mu.Lock()
	skip := r.noApplierPS[n.Name]
	r.mu.Unlock()
	if skip {
		return out, nil
	}
	lag, ok, err := applierLag(ctx, n)
	switch {
	case isServerError(err, erNoSuchTable, erBadFieldError):
		r.mu.Lock()
		r.noApplierPS[n.Name] = true
		r.mu.Unlock()
	case err != nil:
		return out, fmt.Errorf("applier lag: %w", err)
	case ok:
		out = append(out, Sample{Metric: MetricApplierLag, Value: r.correctLag(lag, n, t)})
	}
	return out, nil
}

// erBadFieldError is ER_BAD_FIELD_ERROR (unknown column).
const erBadFieldError = 1054

// replicaStatusSamples turns SHOW REPLICA|SLAVE STATUS rows into samples. Error on no rows or
// a missing column.
func replicaStatusSamples(c topology.Capabilities, cols []string, rows []map[string]string) ([]Sample, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("no replica status: replication is not configured on this node")
	}
	names := map[string]string{}
	for _, neutral := range []string{"io_running", "sql_running", "seconds_behind"} {
		col := c.ReplicaStatusColumn(neutral)
		if !slices.Contains(cols, col) {
			return nil, fmt.Errorf("no column %q (for %s)", col, neutral)
		}
		names[neutral] = col
	}
	io, sqlRun, behind := 1.0, 1.0, 0.0
	for _, row := range rows {
		io = min(io, yes(row[names["io_running"]]))
		sqlRun = min(sqlRun, yes(row[names["sql_running"]]))
		v, ok := row[names["seconds_behind"]]
		if !ok || behind < 0 {
			behind = -1
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("%s = %q: not a number", names["seconds_behind"], v)
		}
		behind = max(behind, f)
	}
	return []Sample{
		{Metric: MetricIORunning, Value: io},
		{Metric: MetricSQLRunning, Value: sqlRun},
		{Metric: MetricSecondsBehindSource, Value: behind},
	}, nil
}

// yes is 1 for "Yes" (any case), else 0 ("No", "Connecting", "Preparing", ...).
func yes(v string) float64 {
	if strings.EqualFold(strings.TrimSpace(v), "Yes") {
		return 1
	}
	return 0
}

// correctLag returns raw, an applier lag in seconds as replica n's server computed it (its
// END_APPLY on its host's clock minus ORIGINAL_COMMIT on the source's), corrected by the
// two hosts' clock offsets (the source: t.Source(); no correction without a tick or a
// source) and clamped at 0. It logs the warning of Replica's docstring once per node.
func (r *Replica) correctLag(raw float64, n Node, t *Tick) float64 {
	if t == nil {
		return max(0, raw)
	}
	src, ok := t.Source()
	if !ok {
		return max(0, raw)
	}
	lag := max(0, raw-(n.ClockOffset-src.ClockOffset).Seconds())
	unc := (n.ClockUncertainty + src.ClockUncertainty).Seconds()
	if unc <= lag {
		return lag
	}
	r.mu.Lock()
	log, warned := r.log, r.warned[n.Name]
	r.warned[n.Name] = true
	r.mu.Unlock()
	if log != nil && !warned {
		log.Warn("applier_lag_s is smaller than the uncertainty of the hosts' clock offsets: it says only that the lag is below that",
			"node", n.Name, "source", src.Name, "applier_lag_s", lag, "clock_uncertainty_s", unc)
	}
	return lag
}

// applierLag reads the lag of the last applied transaction in seconds, unclamped (a clock
// offset between the hosts can make it negative); ok is false when no worker has applied
// one yet.
func applierLag(ctx context.Context, n Node) (lag float64, ok bool, err error) {
	const q = `SELECT MAX(TIMESTAMPDIFF(MICROSECOND, LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP,
		LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP))
		FROM performance_schema.replication_applier_status_by_worker
		WHERE LAST_APPLIED_TRANSACTION IS NOT NULL AND LAST_APPLIED_TRANSACTION <> ''`
	var us *int64
	if err := n.DB.QueryRowContext(ctx, q).Scan(&us); err != nil {
		return 0, false, err
	}
	if us == nil {
		return 0, false, nil
	}
	return float64(*us) / 1e6, true, nil
}
