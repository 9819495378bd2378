// Package experiment ties clusters, workloads and samplers together: it runs a workload
// against a target while sampling every node, reads back the settings actually in effect,
// and writes the results directory (manifest.json, intervals.csv, samples.csv,
// summary.json, report.md). It is the only package that knows all the others.
package experiment

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
)

// keyVariables are the server variables recorded in manifest.json for every node: the
// ones that decide durability, replication and capacity. Every variable is also dumped
// to variables.json.
var keyVariables = []string{
	"version", "version_comment", "server_id", "server_uuid", "hostname", "port",
	"log_bin", "binlog_format", "binlog_row_image", "sync_binlog", "innodb_flush_log_at_trx_commit",
	"innodb_buffer_pool_size", "innodb_log_file_size", "innodb_redo_log_capacity", "innodb_doublewrite",
	"innodb_flush_method", "innodb_io_capacity", "max_connections", "max_prepared_stmt_count",
	"transaction_isolation", "tx_isolation", "autocommit", "performance_schema",
	"gtid_mode", "enforce_gtid_consistency", "gtid_strict_mode", "gtid_domain_id",
	"log_replica_updates", "log_slave_updates", "read_only", "super_read_only",
	"replica_parallel_workers", "replica_parallel_type", "replica_preserve_commit_order",
	"slave_parallel_threads", "slave_parallel_mode", "slave_parallel_workers",
	"rpl_semi_sync_source_enabled", "rpl_semi_sync_source_timeout", "rpl_semi_sync_source_wait_point",
	"rpl_semi_sync_source_wait_for_replica_count", "rpl_semi_sync_replica_enabled",
	"rpl_semi_sync_master_enabled", "rpl_semi_sync_master_timeout", "rpl_semi_sync_master_wait_point",
	"rpl_semi_sync_master_wait_for_slave_count", "rpl_semi_sync_slave_enabled",
	"auto_increment_increment", "auto_increment_offset",
	"group_replication_group_name", "group_replication_single_primary_mode",
	"group_replication_enforce_update_everywhere_checks", "group_replication_consistency",
	"group_replication_flow_control_mode", "group_replication_flow_control_certifier_threshold",
	"group_replication_flow_control_applier_threshold", "group_replication_flow_control_period",
	"group_replication_paxos_single_leader", "group_replication_communication_stack",
}

// ReadVariables returns every global variable of the server behind db (SHOW GLOBAL
// VARIABLES, within 10 s), names lower-case. Errors: cluster.ShowMap's.
func ReadVariables(ctx context.Context, db *sql.DB) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return cluster.ShowMap(ctx, db, "SHOW GLOBAL VARIABLES")
}

// pick returns the subset of all named in names (and extra), skipping absent ones.
func pick(all map[string]string, names []string, extra ...string) map[string]string {
	out := map[string]string{}
	for _, n := range append(append([]string{}, names...), extra...) {
		n = strings.ToLower(strings.ReplaceAll(n, "-", "_"))
		n = strings.TrimPrefix(n, "loose_")
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	return out
}

// GTIDPosition returns the node's executed transactions as text: @@GLOBAL.gtid_executed
// on MySQL-like servers, @@GLOBAL.gtid_current_pos on MariaDB. Used to check that every
// replica caught up with its source after a run.
func GTIDPosition(ctx context.Context, db *sql.DB, mariadb bool) (string, error) {
	q := "SELECT @@GLOBAL.gtid_executed"
	if mariadb {
		q = "SELECT @@GLOBAL.gtid_current_pos"
	}
	var s string
	if err := db.QueryRowContext(ctx, q).Scan(&s); err != nil {
		return "", err
	}
	return normalizeGTID(s), nil
}

// normalizeGTID sorts a GTID set's comma-separated members and removes white space.
func normalizeGTID(s string) string {
	s = strings.Join(strings.Fields(s), "")
	parts := strings.Split(s, ",")
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
