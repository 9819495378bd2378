package sampler

// MetricInfo documents one metric name: its unit, the sampler that emits it, on which nodes,
// and where the value comes from.
type MetricInfo struct {
	Name    string // metric name as in Sample.Metric; a contract
	Unit    string // "s", "us", "transactions", "seqs", "bool" (0/1), "count", "errors", "fraction" (0..1), "writesets", "state"
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
	{"galera_fc_paused_fraction", "fraction", "galera", "Galera nodes", "gauge",
		"delta of wsrep_flow_control_paused_ns / wall time between the node's reads: share of the interval replication was paused by flow control, 0..1 (omitted on a first read without baseline)"},
	{"galera_fc_sent", "count", "galera", "Galera nodes", "delta",
		"delta of wsrep_flow_control_sent: flow-control pause requests the node sent"},
	{"galera_fc_recv", "count", "galera", "Galera nodes", "delta",
		"delta of wsrep_flow_control_recv: flow-control pause requests the node received (its own included)"},
	{"galera_recv_queue", "writesets", "galera", "Galera nodes", "gauge",
		"wsrep_local_recv_queue: write sets received and not yet applied"},
	{"galera_send_queue", "writesets", "galera", "Galera nodes", "gauge",
		"wsrep_local_send_queue: write sets waiting to be sent"},
	{"galera_cert_failures", "transactions", "galera", "Galera nodes", "delta",
		"delta of wsrep_local_cert_failures: local transactions that failed certification"},
	{"galera_bf_aborts", "transactions", "galera", "Galera nodes", "delta",
		"delta of wsrep_local_bf_aborts: local transactions aborted by an applied write set"},
	{"galera_last_committed_gap", "seqs", "galera", "Galera nodes", "gauge",
		"max over the run's Galera nodes of wsrep_last_committed minus the node's, all read at once per tick"},
	{"galera_cluster_size", "count", "galera", "Galera nodes", "gauge",
		"wsrep_cluster_size: nodes in the node's component"},
	{"galera_primary", "bool", "galera", "Galera nodes", "gauge",
		"wsrep_cluster_status = Primary"},
	{"galera_local_state", "state", "galera", "Galera nodes", "gauge",
		"wsrep_local_state: 1 Joining, 2 Donor/Desynced, 3 Joined, 4 Synced (0 Undefined)"},
	{"galera_ready", "bool", "galera", "Galera nodes", "gauge",
		"wsrep_ready = ON (the node accepts queries)"},
	{"sampler_errors", "errors", "runner", "every node", "counter",
		"failed, timed-out or still-running sampler calls on the node since the run started, all samplers"},
	{"sampler_errors_<name>", "errors", "runner", "every node the sampler supports", "counter",
		"the same for sampler <name> (heartbeat, gtid, replica, semisync, galera)"},
}
