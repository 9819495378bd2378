package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// Flavor is a server family. Its capabilities depend on the Version as well.
type Flavor string

const (
	MySQL   Flavor = "mysql"   // Oracle MySQL community
	MariaDB Flavor = "mariadb" // MariaDB Server (with Galera as MariaDB Galera Cluster)
	Percona Flavor = "percona" // Percona Server for MySQL
	PXC     Flavor = "pxc"     // Percona XtraDB Cluster
)

// Flavors lists the known flavors in display order.
var Flavors = []Flavor{MySQL, MariaDB, Percona, PXC}

// ParseFlavor maps a user-given name to a Flavor. Error if unknown.
func ParseFlavor(s string) (Flavor, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "mysql":
		return MySQL, nil
	case "mariadb":
		return MariaDB, nil
	case "percona", "ps", "percona-server":
		return Percona, nil
	case "pxc", "percona-xtradb-cluster":
		return PXC, nil
	}
	return "", fmt.Errorf("unknown flavor %q (want one of mysql, mariadb, percona, pxc)", s)
}

// mysqlLike reports whether the flavor follows Oracle MySQL's syntax and version numbers.
func (f Flavor) mysqlLike() bool { return f == MySQL || f == Percona || f == PXC }

// Capabilities is what a flavor at a version supports and how it spells it. Built by
// CapabilitiesFor from documented version boundaries; every field says where it comes from.
type Capabilities struct {
	Flavor  Flavor
	Version Version

	// ServerBinary is the daemon's file name: "mariadbd" (MariaDB >= 10.5.2) or "mysqld".
	ServerBinary string
	// InstallDBBinary is the datadir initialiser for MariaDB ("mariadb-install-db",
	// >= 10.4.6, else "mysql_install_db"); empty for MySQL, which uses mysqld --initialize-insecure.
	InstallDBBinary string

	// SourceTerms: MySQL >= 8.0.23 CHANGE REPLICATION SOURCE TO with SOURCE_* options
	// (CHANGE MASTER removed in 8.4/9.x); MariaDB and older MySQL: CHANGE MASTER TO MASTER_*.
	SourceTerms bool
	// ReplicaStatements: START/STOP REPLICA and SHOW REPLICA STATUS exist
	// (MySQL >= 8.0.22, MariaDB >= 10.5.1). Otherwise START/STOP SLAVE, SHOW SLAVE STATUS.
	ReplicaStatements bool
	// ReplicaStatusColumns: SHOW REPLICA STATUS columns say Replica_*/Source_* (MySQL >= 8.0.22);
	// MariaDB keeps Slave_IO_Running, Slave_SQL_Running, Seconds_Behind_Master.
	ReplicaStatusColumns bool
	// BinaryLogStatus: SHOW BINARY LOG STATUS (MySQL >= 8.2.0; SHOW MASTER STATUS removed in 8.4).
	BinaryLogStatus bool
	// ResetBinaryLogs: RESET BINARY LOGS AND GTIDS (MySQL >= 8.2.0; RESET MASTER removed in 8.4).
	ResetBinaryLogs bool
	// ReplicaVarNames: log_replica_updates, replica_parallel_workers, ... (MySQL >= 8.0.26).
	ReplicaVarNames bool

	// GTIDKind: "mysql" (gtid_mode=ON, SOURCE_AUTO_POSITION=1) or "mariadb"
	// (domain-server-seqno, MASTER_USE_GTID=slave_pos).
	GTIDKind string
	// CachingSHA2: default authentication is caching_sha2_password (MySQL >= 8.0.4),
	// so a replica without TLS needs GET_SOURCE_PUBLIC_KEY=1 (GET_MASTER_PUBLIC_KEY before 8.0.23).
	CachingSHA2 bool

	// SemiSyncBuiltin: semi-sync is part of the server (MariaDB >= 10.3.3), no plugin to load.
	SemiSyncBuiltin bool
	// SemiSyncSourceTerms: plugins semisync_source/semisync_replica and rpl_semi_sync_source_*
	// / rpl_semi_sync_replica_* names (MySQL >= 8.0.26); before and on MariaDB: *_master_* / *_slave_*.
	SemiSyncSourceTerms bool
	// SemiSyncWaitCount: rpl_semi_sync_*_wait_for_*_count exists (MySQL >= 5.7.3; not in MariaDB).
	SemiSyncWaitCount bool
	// SemiSyncWaitPoint: rpl_semi_sync_*_wait_point exists (MySQL >= 5.7.2, MariaDB >= 10.3.3).
	SemiSyncWaitPoint bool

	// GroupReplication: the group_replication plugin ships (MySQL/Percona >= 5.7.17).
	GroupReplication bool
	// GRNeedsChecksumNone: Group Replication refuses binlog_checksum other than NONE before
	// MySQL 8.0.21.
	GRNeedsChecksumNone bool
	// GRNeedsLegacyRepos: before MySQL 8.0.2 Group Replication needs
	// transaction_write_set_extraction=XXHASH64 and master_info_repository /
	// relay_log_info_repository=TABLE set explicitly (the defaults from 8.0.2 on).
	GRNeedsLegacyRepos bool
	// GRStreamPrivilege: the GROUP_REPLICATION_STREAM privilege exists (MySQL >= 8.0.27, with
	// group_replication_communication_stack).
	GRStreamPrivilege bool
	// GRSwitchMode: the functions group_replication_switch_to_multi_primary_mode() and
	// group_replication_switch_to_single_primary_mode([uuid]) exist (MySQL >= 8.0.13).
	GRSwitchMode bool
	// GRFlowControlStats: component_group_replication_flow_control_stats and its
	// Gr_flow_control_throttle_* status variables (MySQL community >= 9.7.0; measured on MySQL 9.7.4).
	GRFlowControlStats bool
	// Galera: the server is built with wsrep (MariaDB >= 10.1 with galera-4 installed, PXC).
	Galera bool
	// WsrepApplierThreads: wsrep_applier_threads (PXC >= 8.0.26, MySQL-wsrep >= 8.0.26);
	// before, and on MariaDB: wsrep_slave_threads (MariaDB 10.11.19 answers
	// `SELECT @@wsrep_applier_threads` with ER 1193 unknown variable; MariaDB's
	// documentation lists only wsrep_slave_threads, through 11.4).
	WsrepApplierThreads bool
	// WsrepProviderPlugin: MariaDB >= 11.0 loads the provider's options as system variables
	// wsrep_provider_<option, dots as underscores> (MDEV-22570; on by default in 11.8.9,
	// checked), and refuses SET GLOBAL wsrep_provider_options while that plugin is loaded.
	// Option files and the command line still take wsrep_provider_options.
	WsrepProviderPlugin bool
	// PXCStrictMode: pxc_strict_mode exists (PXC >= 5.7; default ENFORCING refuses, among
	// others, tables without a primary key and LOCK TABLES).
	PXCStrictMode bool
	// WsrepProvider is the Galera provider library (libgalera_smm.so) as the server sees it:
	// a fact of the installation, not of the version. CapabilitiesFor leaves it empty; the
	// provider that resolved the installation fills it in ("" when none was found).
	WsrepProvider string
}

// CapabilitiesFor returns the capability set of flavor f at version v. An unknown or zero
// version yields the capabilities of the newest release line habench knows for that flavor.
func CapabilitiesFor(f Flavor, v Version) Capabilities {
	if v.IsZero() {
		switch f {
		case MariaDB:
			v = V(11, 8, 0)
		default:
			v = V(9, 7, 0)
		}
	}
	c := Capabilities{Flavor: f, Version: v}
	switch {
	case f == MariaDB:
		c.ServerBinary = "mysqld"
		if v.AtLeast(V(10, 5, 2)) {
			c.ServerBinary = "mariadbd"
		}
		c.InstallDBBinary = "mysql_install_db"
		if v.AtLeast(V(10, 4, 6)) {
			c.InstallDBBinary = "mariadb-install-db"
		}
		c.ReplicaStatements = v.AtLeast(V(10, 5, 1))
		c.GTIDKind = "mariadb"
		c.SemiSyncBuiltin = v.AtLeast(V(10, 3, 3))
		c.SemiSyncWaitPoint = v.AtLeast(V(10, 3, 3))
		c.Galera = v.AtLeast(V(10, 1, 0))
		c.WsrepProviderPlugin = v.AtLeast(V(11, 0, 0))
	case f.mysqlLike():
		c.ServerBinary = "mysqld"
		c.SourceTerms = v.AtLeast(V(8, 0, 23))
		c.ReplicaStatements = v.AtLeast(V(8, 0, 22))
		c.ReplicaStatusColumns = v.AtLeast(V(8, 0, 22))
		c.BinaryLogStatus = v.AtLeast(V(8, 2, 0))
		c.ResetBinaryLogs = v.AtLeast(V(8, 2, 0))
		c.ReplicaVarNames = v.AtLeast(V(8, 0, 26))
		c.GTIDKind = "mysql"
		c.CachingSHA2 = v.AtLeast(V(8, 0, 4))
		c.SemiSyncSourceTerms = v.AtLeast(V(8, 0, 26))
		c.SemiSyncWaitCount = v.AtLeast(V(5, 7, 3))
		c.SemiSyncWaitPoint = v.AtLeast(V(5, 7, 2))
		c.GroupReplication = v.AtLeast(V(5, 7, 17))
		c.GRNeedsChecksumNone = c.GroupReplication && !v.AtLeast(V(8, 0, 21))
		c.GRNeedsLegacyRepos = c.GroupReplication && !v.AtLeast(V(8, 0, 2))
		c.GRStreamPrivilege = v.AtLeast(V(8, 0, 27))
		c.GRSwitchMode = v.AtLeast(V(8, 0, 13))
		c.GRFlowControlStats = f == MySQL && v.AtLeast(V(9, 7, 0))
		c.Galera = f == PXC
		c.WsrepApplierThreads = f == PXC && v.AtLeast(V(8, 0, 26))
		c.PXCStrictMode = f == PXC && v.AtLeast(V(5, 7, 0))
	}
	return c
}

// ChangeSource renders the statement that points a replica at its source with GTID
// auto-positioning. Shapes: MySQL >= 8.0.23 CHANGE REPLICATION SOURCE TO SOURCE_HOST=...,
// older MySQL CHANGE MASTER TO MASTER_HOST=..., MariaDB CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos.
// The password is quoted as an SQL string literal.
func (c Capabilities) ChangeSource(host string, port int, user, password string) string {
	q := quoteString
	if c.GTIDKind == "mariadb" {
		return fmt.Sprintf("CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_CONNECT_RETRY=1, MASTER_USE_GTID=slave_pos",
			q(host), port, q(user), q(password))
	}
	if c.SourceTerms {
		s := fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST=%s, SOURCE_PORT=%d, SOURCE_USER=%s, SOURCE_PASSWORD=%s, SOURCE_CONNECT_RETRY=1, SOURCE_AUTO_POSITION=1",
			q(host), port, q(user), q(password))
		if c.CachingSHA2 {
			s += ", GET_SOURCE_PUBLIC_KEY=1"
		}
		return s
	}
	s := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_CONNECT_RETRY=1, MASTER_AUTO_POSITION=1",
		q(host), port, q(user), q(password))
	if c.CachingSHA2 {
		s += ", GET_MASTER_PUBLIC_KEY=1"
	}
	return s
}

// StartReplica is START REPLICA or START SLAVE.
func (c Capabilities) StartReplica() string {
	if c.ReplicaStatements {
		return "START REPLICA"
	}
	return "START SLAVE"
}

// StopReplica is STOP REPLICA or STOP SLAVE; thread is "", "IO_THREAD" or "SQL_THREAD".
func (c Capabilities) StopReplica(thread string) string {
	s := "STOP SLAVE"
	if c.ReplicaStatements {
		s = "STOP REPLICA"
	}
	if thread != "" {
		s += " " + thread
	}
	return s
}

// StartReplicaThread is START REPLICA|SLAVE thread ("IO_THREAD" or "SQL_THREAD").
func (c Capabilities) StartReplicaThread(thread string) string {
	return c.StartReplica() + " " + thread
}

// ShowReplicaStatus is SHOW REPLICA STATUS or SHOW SLAVE STATUS.
func (c Capabilities) ShowReplicaStatus() string {
	if c.ReplicaStatements {
		return "SHOW REPLICA STATUS"
	}
	return "SHOW SLAVE STATUS"
}

// ReplicaStatusColumn maps a neutral column name ("io_running", "sql_running",
// "seconds_behind", "source_host", "last_io_error", "last_sql_error") to this flavor's
// SHOW REPLICA|SLAVE STATUS column.
func (c Capabilities) ReplicaStatusColumn(neutral string) string {
	mysqlNew := map[string]string{
		"io_running": "Replica_IO_Running", "sql_running": "Replica_SQL_Running",
		"seconds_behind": "Seconds_Behind_Source", "source_host": "Source_Host",
		"last_io_error": "Last_IO_Error", "last_sql_error": "Last_SQL_Error",
	}
	old := map[string]string{
		"io_running": "Slave_IO_Running", "sql_running": "Slave_SQL_Running",
		"seconds_behind": "Seconds_Behind_Master", "source_host": "Master_Host",
		"last_io_error": "Last_IO_Error", "last_sql_error": "Last_SQL_Error",
	}
	if c.ReplicaStatusColumns {
		return mysqlNew[neutral]
	}
	return old[neutral]
}

// SemiSyncVars names the semi-sync plugins and variables of this flavor/version.
type SemiSyncVars struct {
	SourcePlugin, SourceLibrary   string // "" when built in
	ReplicaPlugin, ReplicaLibrary string
	SourceEnabled                 string // rpl_semi_sync_source_enabled | rpl_semi_sync_master_enabled
	ReplicaEnabled                string
	Timeout                       string // milliseconds
	WaitPoint                     string // "" when unsupported
	WaitCount                     string // "" when unsupported (MariaDB)
	StatusPrefix                  string // "Rpl_semi_sync_source_" | "Rpl_semi_sync_master_"
	ReplicaStatus                 string // Rpl_semi_sync_replica_status | Rpl_semi_sync_slave_status
}

// SemiSyncNames returns the semi-sync names for these capabilities.
func (c Capabilities) SemiSyncNames() SemiSyncVars {
	var s SemiSyncVars
	src, rep := "master", "slave"
	if c.SemiSyncSourceTerms {
		src, rep = "source", "replica"
	}
	if !c.SemiSyncBuiltin {
		s.SourcePlugin, s.ReplicaPlugin = "rpl_semi_sync_"+src, "rpl_semi_sync_"+rep
		s.SourceLibrary, s.ReplicaLibrary = "semisync_"+src+".so", "semisync_"+rep+".so"
	}
	s.SourceEnabled = "rpl_semi_sync_" + src + "_enabled"
	s.ReplicaEnabled = "rpl_semi_sync_" + rep + "_enabled"
	s.Timeout = "rpl_semi_sync_" + src + "_timeout"
	if c.SemiSyncWaitPoint {
		s.WaitPoint = "rpl_semi_sync_" + src + "_wait_point"
	}
	if c.SemiSyncWaitCount {
		s.WaitCount = "rpl_semi_sync_" + src + "_wait_for_" + rep + "_count"
	}
	s.StatusPrefix = "Rpl_semi_sync_" + src + "_"
	s.ReplicaStatus = "Rpl_semi_sync_" + rep + "_status"
	return s
}

// LogReplicaUpdates is log_replica_updates (MySQL >= 8.0.26) or log_slave_updates.
func (c Capabilities) LogReplicaUpdates() string {
	if c.ReplicaVarNames {
		return "log_replica_updates"
	}
	return "log_slave_updates"
}

// ParallelWorkersVar is the replica applier parallelism variable: replica_parallel_workers
// (MySQL >= 8.0.26), slave_parallel_workers (older MySQL), slave_parallel_threads (MariaDB).
func (c Capabilities) ParallelWorkersVar() string {
	switch {
	case c.GTIDKind == "mariadb":
		return "slave_parallel_threads"
	case c.ReplicaVarNames:
		return "replica_parallel_workers"
	}
	return "slave_parallel_workers"
}

// SetProviderOption renders the statement that changes Galera provider option key (as in
// wsrep_provider_options: "evs.join_retrans_period") at run time: SET GLOBAL
// wsrep_provider_options='key=value', or with WsrepProviderPlugin SET GLOBAL
// wsrep_provider_<key>=value where a duration value in the provider's ISO 8601 form (PT1S,
// PT0.5S) becomes seconds and anything else a quoted string unless it is a number.
func (c Capabilities) SetProviderOption(key, value string) string {
	if !c.WsrepProviderPlugin {
		return fmt.Sprintf("SET GLOBAL wsrep_provider_options=%s", quoteString(key+"="+value))
	}
	v := value
	if secs, ok := strings.CutPrefix(value, "PT"); ok && strings.HasSuffix(secs, "S") {
		v = strings.TrimSuffix(secs, "S")
	}
	if _, err := strconv.ParseFloat(v, 64); err != nil {
		v = quoteString(value)
	}
	return fmt.Sprintf("SET GLOBAL wsrep_provider_%s=%s", strings.ReplaceAll(key, ".", "_"), v)
}

// WsrepApplierThreadsVar is wsrep_applier_threads or wsrep_slave_threads.
func (c Capabilities) WsrepApplierThreadsVar() string {
	if c.WsrepApplierThreads {
		return "wsrep_applier_threads"
	}
	return "wsrep_slave_threads"
}

// ResetBinlogs is RESET BINARY LOGS AND GTIDS or RESET MASTER.
func (c Capabilities) ResetBinlogs() string {
	if c.ResetBinaryLogs {
		return "RESET BINARY LOGS AND GTIDS"
	}
	return "RESET MASTER"
}

// quoteString renders s as a single-quoted SQL string literal.
func quoteString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(s) + "'"
}
