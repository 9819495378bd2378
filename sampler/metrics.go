package sampler

// MetricInfo documents one metric name: its unit, the sampler that emits it, on which nodes,
// and where the value comes from.
type MetricInfo struct {
	Name    string // metric name as in Sample.Metric; a contract
	Unit    string // "s", "us", "transactions", "seqs", "bool" (0/1), "count", "errors", "code" (an enumeration), "sessions"
	Sampler string // the Sampler's Name, or "runner"
	Nodes   string // which nodes carry it
	Kind    string // "gauge", "delta" (per tick) or "counter" (cumulative since the run started)
	Source  string // where the value comes from
}

// Metrics lists every metric this package emits, for READMEs and reports. Each tick also
// carries one sampler_errors_<name> per sampler that supports the node (see the runner rows).
var Metrics = []MetricInfo{
	{"lag_s", "s", "heartbeat", "every node", "gauge",
		"0 if the node shows the latest committed habench.heartbeat seq, else now minus the commit time of the oldest write it has not shown"},
	{"heartbeat_seq_behind", "seqs", "heartbeat", "every node", "gauge",
		"latest committed heartbeat seq minus the node's habench.heartbeat seq"},
	{"heartbeat_write_age_s", "s", "heartbeat", "writer (first writable node)", "gauge",
		"now minus the commit time of the latest heartbeat write (about HeartbeatPeriod when healthy; grows when commits stall)"},
	{"heartbeat_write_errors", "errors", "heartbeat", "writer (first writable node)", "counter",
		"failed REPLACE INTO habench.heartbeat since the run started"},
	{"backlog_trx", "transactions", "gtid", "replicas", "gauge",
		"MySQL: |@@gtid_executed(source) - @@gtid_executed(replica)|; MariaDB: per-domain seqno of @@gtid_binlog_pos(source) minus @@gtid_slave_pos(replica), summed"},
	{"io_running", "bool", "replica", "replicas", "gauge",
		"SHOW REPLICA|SLAVE STATUS Replica_IO_Running|Slave_IO_Running = Yes (Connecting = 0)"},
	{"sql_running", "bool", "replica", "replicas", "gauge",
		"SHOW REPLICA|SLAVE STATUS Replica_SQL_Running|Slave_SQL_Running = Yes"},
	{"seconds_behind_source", "s", "replica", "replicas", "gauge",
		"SHOW REPLICA|SLAVE STATUS Seconds_Behind_Source|Master; -1 when NULL"},
	{"applier_lag_s", "s", "replica", "MySQL-like replicas", "gauge",
		"max over performance_schema.replication_applier_status_by_worker of LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP - LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"},
	{"semisync_on", "bool", "semisync", "writable node", "gauge",
		"Rpl_semi_sync_source|master_status = ON"},
	{"semisync_clients", "count", "semisync", "writable node", "gauge",
		"Rpl_semi_sync_source|master_clients"},
	{"semisync_yes_tx", "transactions", "semisync", "writable node", "delta",
		"delta of Rpl_semi_sync_source|master_yes_tx since the previous tick (0 on the first)"},
	{"semisync_no_tx", "transactions", "semisync", "writable node", "delta",
		"delta of Rpl_semi_sync_source|master_no_tx since the previous tick (0 on the first)"},
	{"semisync_avg_wait_us", "us", "semisync", "writable node", "gauge",
		"Rpl_semi_sync_source|master_tx_avg_wait_time (server's average since startup)"},
	{"semisync_interval_avg_wait_us", "us", "semisync", "writable node", "gauge",
		"delta tx_wait_time / delta tx_waits of Rpl_semi_sync_source|master_* over the last tick (0 without waits)"},
	{"semisync_replica_on", "bool", "semisync", "replicas", "gauge",
		"Rpl_semi_sync_replica|slave_status = ON"},
	{"gr_member_state", "code", "group", "group members", "gauge",
		"own row of performance_schema.replication_group_members: 0 OFFLINE (or no row), 1 ONLINE, 2 RECOVERING, 3 UNREACHABLE, 4 ERROR"},
	{"gr_member_role", "code", "group", "group members", "gauge",
		"own MEMBER_ROLE: 0 none, 1 PRIMARY, 2 SECONDARY"},
	{"gr_member_changes", "count", "group", "group members", "counter",
		"changes of the member's (MEMBER_STATE, MEMBER_ROLE) since the run started"},
	{"gr_certifier_queue_trx", "transactions", "group", "group members", "gauge",
		"own row of performance_schema.replication_group_member_stats: COUNT_TRANSACTIONS_IN_QUEUE (waiting for certification)"},
	{"gr_applier_queue_trx", "transactions", "group", "group members", "gauge",
		"COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE (certified remote transactions waiting to be applied)"},
	{"gr_conflicts_trx", "transactions", "group", "group members", "delta",
		"delta of COUNT_CONFLICTS_DETECTED (transactions that failed certification)"},
	{"gr_checked_trx", "transactions", "group", "group members", "delta",
		"delta of COUNT_TRANSACTIONS_CHECKED (certified, local and remote)"},
	{"gr_remote_applied_trx", "transactions", "group", "group members", "delta",
		"delta of COUNT_TRANSACTIONS_REMOTE_APPLIED"},
	{"gr_local_rollback_trx", "transactions", "group", "group members", "delta",
		"delta of COUNT_TRANSACTIONS_LOCAL_ROLLBACK (local transactions rolled back by certification)"},
	{"gr_fc_throttle_count", "transactions", "group", "group members with component_group_replication_flow_control_stats (MySQL 9.7+)", "delta",
		"delta of Gr_flow_control_throttle_count: transactions held back by flow control"},
	{"gr_fc_throttle_time_s", "s", "group", "group members with the flow-control stats component", "delta",
		"delta of Gr_flow_control_throttle_time_sum (µs, summed over throttled transactions), in seconds"},
	{"gr_fc_throttle_active", "count", "group", "group members with the flow-control stats component", "gauge",
		"Gr_flow_control_throttle_active_count: sessions being throttled at the read"},
	{"gr_fc_throttled_sessions_avg", "sessions", "group", "group members with the flow-control stats component", "gauge",
		"gr_fc_throttle_time_s / seconds since the previous read: average number of sessions held by flow control"},
	{"gr_fc_throttle_inferred", "bool", "group", "group members without the flow-control stats component", "gauge",
		"inferred, not measured: 1 when the member's group_replication_flow_control_mode is QUOTA and its certifier or applier queue exceeds the lowest group_replication_flow_control_certifier_threshold / _applier_threshold of the writable members in QUOTA mode (each writer throttles by its own thresholds; read at the start)"},
	{"sampler_errors", "errors", "runner", "every node", "counter",
		"failed, timed-out or still-running sampler calls on the node since the run started, all samplers"},
	{"sampler_errors_<name>", "errors", "runner", "every node the sampler supports", "counter",
		"the same for sampler <name> (heartbeat, gtid, replica, semisync, group)"},
}
