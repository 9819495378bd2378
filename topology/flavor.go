package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Flavor is a server family (mysql, mariadb, percona, pxc). Its capabilities depend on the
// Version as well. Each flavor is one FlavorDef registered from its own file
// (flavor_mysql.go, flavor_mariadb.go, ...); the rest of habench asks the registry
// (FlavorOf, CapabilitiesFor, RecognizeFlavor) instead of comparing flavor names.
type Flavor string

// FlavorDef is one server flavor as habench knows it: its names, how a server or an
// installation is recognised as it, its capability table, its installation, its Galera
// state transfers and option lines, and what reports say about it. Adding a flavor is one
// file that calls RegisterFlavor from init.
type FlavorDef struct {
	// Flavor is the name users write (flavor: NAME).
	Flavor Flavor
	// Aliases are other names ParseFlavor accepts ("ps", "percona-server").
	Aliases []string
	// Title is the product name reports print before the version: "MySQL", "MariaDB".
	Title string
	// Order places the flavor in listings and messages (lower first).
	Order int
	// Base is the flavor this one is built on ("" for none): its capability table is applied
	// first, and Flavor.Is(Base) holds (Percona Server is a MySQL; PXC is a Percona Server).
	Base Flavor
	// Newest is the version CapabilitiesFor assumes when the version is unknown.
	Newest Version
	// Caps fills in the flavor's capability table for c.Version, after its Base's.
	Caps func(c *Capabilities)
	// Recognize reports whether a server is this flavor from what it says about itself:
	// SELECT VERSION() or `mysqld --version` (e.Version), @@version_comment (e.Comment,
	// "" for --version) and the variables named by EvidenceVars (e.Vars, SHOW GLOBAL
	// VARIABLES; absent when the server has none). nil: never recognised by itself (the
	// flavor with the lowest Rank that has no Recognize is the fallback, MySQL).
	Recognize func(e FlavorEvidence) bool
	// Rank orders recognition: higher ranks are asked first (the most specific flavor
	// first: PXC before Percona Server before MySQL).
	Rank int
	// EvidenceVars are the global variables whose presence or value Recognize reads
	// (e.g. pxc_strict_mode); discovery of an existing cluster reads them.
	EvidenceVars []string
	// Install is how the flavor's binaries are found and a datadir is initialised.
	Install FlavorInstall
	// SandboxKinds are the kinds a habench-deployed cluster of this flavor can be (and the
	// kinds extending them); nil with AllKinds false: none (a flavor only discovered).
	SandboxKinds []Kind
	// AllKinds: every kind can be deployed with this flavor (the kind's own checks still
	// apply, e.g. a group refuses MariaDB).
	AllKinds bool
	// Galera is the flavor's Galera support for a deployed galera cluster; nil: a galera
	// sandbox refuses the flavor.
	Galera *GaleraFlavor
	// Caveat is what reports say next to runs of this flavor ("" for none).
	Caveat string
	// Estimates are a plan's time estimates for the flavor's servers where the kind gives
	// none (zero fields: MySQL's, measured on MySQL 9.7).
	Estimates FlavorEstimates
}

// FlavorEstimates are the times a sweep plan estimates for one flavor's sandbox.
type FlavorEstimates struct {
	// DeployBase + DeployPerNode per node is a deploy (MySQL: 1 s + 2.5 s).
	DeployBase, DeployPerNode time.Duration
	// PrepareRows and PrepareRowsReplicated are habench's prepare rates (8 threads) in
	// rows/s on one node and with replicas applying on the same machine (MySQL: 85k and
	// 28k; measured with `make bench-snapshot`, 8 x 1,000,000 rows, 2026-12-05: a one-node
	// MySQL 9.7 prepared them in about 90 s, a 3-member group in about 285 s).
	PrepareRows, PrepareRowsReplicated float64
	// RestartPerNode is a clean restart of one node (MySQL: 3 s).
	RestartPerNode time.Duration
}

// FlavorEstimatesOf returns f's estimates with MySQL's for the fields f leaves zero.
func FlavorEstimatesOf(f Flavor) FlavorEstimates {
	e := FlavorOf(f).Estimates
	if e.DeployBase == 0 && e.DeployPerNode == 0 {
		e.DeployBase, e.DeployPerNode = time.Second, 2500*time.Millisecond
	}
	if e.PrepareRows == 0 {
		e.PrepareRows = 85000
	}
	if e.PrepareRowsReplicated == 0 {
		e.PrepareRowsReplicated = 28000
	}
	if e.RestartPerNode == 0 {
		e.RestartPerNode = 3 * time.Second
	}
	return e
}

// FlavorEvidence is what a server says about itself (FlavorDef.Recognize).
type FlavorEvidence struct {
	Version string            // SELECT VERSION(), or the output of mysqld --version
	Comment string            // @@version_comment ("" when unknown)
	Vars    map[string]string // the registered flavors' EvidenceVars the server has
}

// FlavorInstall is how a flavor's installation looks.
type FlavorInstall struct {
	// Servers are the daemon's file names in order of preference ("mariadbd", "mysqld").
	Servers []string
	// InstallDB: a datadir is initialised with Capabilities.InstallDBBinary
	// (mariadb-install-db); otherwise with mysqld --initialize-insecure.
	InstallDB bool
	// MySQLX: the server has the X plugin and secure_file_priv: a sandbox node sets
	// mysqlx=OFF and secure_file_priv to its own directory.
	MySQLX bool
	// InitWsrepOff: the init file of a node on a host starts with SET SESSION wsrep_on=OFF
	// (the server has the wsrep session variable).
	InitWsrepOff bool
	// DefaultKind is the installation of a sandbox that names none (system when empty).
	DefaultKind InstallKind
	// Rootfs is the default root filesystem path of a rootfs installation (DefaultRootfs
	// when empty).
	Rootfs string
	// SystemHint is what to install when a system installation has no server ("" for the
	// generic message): "apt-get install mariadb-server galera-4".
	SystemHint string
}

// GaleraFlavor is a flavor's Galera: the state transfers a joiner can use and the node
// options of its own that a galera plan writes.
type GaleraFlavor struct {
	// SST are the state snapshot transfer methods, the default first.
	SST []SSTMethod
	// NodeOptions are option lines of the flavor's own for node i (1-based) of a galera
	// cluster, written after the common wsrep options and before the user's (nil: none).
	NodeOptions func(spec Spec, caps Capabilities, node int) []Option
}

// SSTMethod is one value of wsrep_sst_method and what it needs.
type SSTMethod struct {
	// Name is the wsrep_sst_method value (the script is wsrep_sst_<Name>).
	Name string
	// Tool is the program the script runs ("rsync", "mariabackup", "xtrabackup"; "" for
	// none), Package the package that has it.
	Tool, Package string
	// ToolPaths are where the tool may be, relative to the installation's bin directories
	// (BASEDIR/bin, /usr/bin, ...), any one will do (empty: Tool itself); e.g. PXC 8.0's
	// own xtrabackup under bin/pxc_extra/pxb-8.0/bin.
	ToolPaths []string
	// Stream: the script streams with socat (or nc), which must be installed.
	Stream bool
	// Auth: the donor's script logs into its server with wsrep_sst_auth (root over the
	// socket, no password, in a sandbox).
	Auth bool
	// From and Until bound the server versions that have the method (zero: unbounded;
	// Until is the first version without it).
	From, Until Version
	// AuthUntil, when set, is the first version whose script needs no wsrep_sst_auth.
	AuthUntil Version
}

// Available reports whether the method exists at version v (a zero v: yes).
func (m SSTMethod) Available(v Version) bool {
	if v.IsZero() {
		return true
	}
	return (m.From.IsZero() || v.AtLeast(m.From)) && (m.Until.IsZero() || !v.AtLeast(m.Until))
}

// ToolCandidates are the paths ToolPaths names, or Tool; nil when the method runs no tool.
func (m SSTMethod) ToolCandidates() []string {
	if len(m.ToolPaths) > 0 {
		return m.ToolPaths
	}
	if m.Tool == "" {
		return nil
	}
	return []string{m.Tool}
}

// NeedsAuth reports whether the method's script needs wsrep_sst_auth at version v.
func (m SSTMethod) NeedsAuth(v Version) bool {
	return m.Auth && (m.AuthUntil.IsZero() || v.IsZero() || !v.AtLeast(m.AuthUntil))
}

var (
	flavorDefs = map[Flavor]*FlavorDef{}
	flavorErrs []string
)

// RegisterFlavor adds a flavor. Flavors register from init functions in their own files.
// A flavor without a name or a title, or a name or alias registered twice, is refused and
// recorded in FlavorRegistrationErrors (a unit test keeps that empty).
func RegisterFlavor(d FlavorDef) {
	if d.Flavor == "" || d.Title == "" {
		flavorErrs = append(flavorErrs, fmt.Sprintf("flavor %q: needs a name and a title", d.Flavor))
		return
	}
	for _, n := range append([]string{string(d.Flavor)}, d.Aliases...) {
		if _, err := ParseFlavor(n); err == nil {
			flavorErrs = append(flavorErrs, fmt.Sprintf("flavor %q: name %q registered twice", d.Flavor, n))
			return
		}
	}
	flavorDefs[d.Flavor] = &d
}

// FlavorRegistrationErrors lists the flavor registrations that were refused.
func FlavorRegistrationErrors() []string { return slices.Clone(flavorErrs) }

// FlavorOf returns f's definition, or an empty definition (Flavor and Title f, nothing
// supported) for an unregistered flavor: never nil.
func FlavorOf(f Flavor) *FlavorDef {
	if d, ok := flavorDefs[f]; ok {
		return d
	}
	return &FlavorDef{Flavor: f, Title: string(f)}
}

// Flavors returns the registered flavors in their listing order.
func Flavors() []Flavor {
	ds := make([]*FlavorDef, 0, len(flavorDefs))
	for _, d := range flavorDefs {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b *FlavorDef) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(string(a.Flavor), string(b.Flavor))
	})
	out := make([]Flavor, len(ds))
	for i, d := range ds {
		out[i] = d.Flavor
	}
	return out
}

// FlavorList is the registered flavors for messages: "mysql, mariadb, percona or pxc".
func FlavorList() string { return orList(Flavors(), nil) }

// orList joins the flavors that keep passes (all when keep is nil) as "a, b or c".
func orList(fs []Flavor, keep func(*FlavorDef) bool) string {
	var names []string
	for _, f := range fs {
		if keep == nil || keep(FlavorOf(f)) {
			names = append(names, string(f))
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseFlavor maps a user-given name or alias (any case) to a registered Flavor. Error
// naming the value and the known flavors if unknown.
func ParseFlavor(s string) (Flavor, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	for f, d := range flavorDefs {
		if string(f) == n || slices.Contains(d.Aliases, n) {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown flavor %q (want one of %s)", s, strings.ReplaceAll(FlavorList(), " or ", ", "))
}

// Is reports whether f is base or is built on it (FlavorDef.Base, transitively): a
// Percona Server is a MySQL.
func (f Flavor) Is(base Flavor) bool {
	for i := 0; f != "" && i < 8; i++ {
		if f == base {
			return true
		}
		d, ok := flavorDefs[f]
		if !ok {
			return false
		}
		f = d.Base
	}
	return false
}

// mysqlLike reports whether the flavor follows Oracle MySQL's syntax and version numbers.
func (f Flavor) mysqlLike() bool { return f.Is(MySQL) }

// MySQLLike reports whether the flavor follows Oracle MySQL's syntax and version numbers
// (MySQL and the flavors built on it).
func (f Flavor) MySQLLike() bool { return f.Is(MySQL) }

// RecognizeFlavor names the flavor of a server from what it says about itself: the
// registered flavors' Recognize, highest Rank first; MySQL when none recognises it.
func RecognizeFlavor(e FlavorEvidence) Flavor {
	ds := make([]*FlavorDef, 0, len(flavorDefs))
	for _, d := range flavorDefs {
		if d.Recognize != nil {
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, func(a, b *FlavorDef) int {
		if a.Rank != b.Rank {
			return b.Rank - a.Rank
		}
		return strings.Compare(string(a.Flavor), string(b.Flavor))
	})
	for _, d := range ds {
		if d.Recognize(e) {
			return d.Flavor
		}
	}
	return MySQL
}

// EvidenceVars are the global variables of every registered flavor's EvidenceVars, sorted.
func EvidenceVars() []string {
	var out []string
	for _, d := range flavorDefs {
		for _, v := range d.EvidenceVars {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// FlavorTitle is the product name and version reports print: "MySQL 9.7.4", "MariaDB
// 10.11.19"; an unregistered flavor is printed as given.
func FlavorTitle(flavor, version string) string {
	f := FlavorOf(Flavor(flavor)).Title
	return strings.TrimSpace(f + " " + version)
}

// FlavorCaveats are the caveats (FlavorDef.Caveat) of the flavors named, each once, in
// the order first named; nil when none has one.
func FlavorCaveats(flavors []string) []string {
	var out []string
	for _, f := range flavors {
		if c := FlavorOf(Flavor(f)).Caveat; c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// SSTMethod returns the flavor's state transfer method name (FlavorDef.Galera.SST), false
// when the flavor has no Galera or no such method.
func (d *FlavorDef) SSTMethod(name string) (SSTMethod, bool) {
	if d.Galera == nil {
		return SSTMethod{}, false
	}
	for _, m := range d.Galera.SST {
		if m.Name == name {
			return m, true
		}
	}
	return SSTMethod{}, false
}

// DefaultSST is the flavor's default state transfer method (its first), rsync for a
// flavor without Galera.
func (d *FlavorDef) DefaultSST() string {
	if d.Galera == nil || len(d.Galera.SST) == 0 {
		return SSTRsync
	}
	return d.Galera.SST[0].Name
}

// SSTNames lists the flavor's state transfer methods for messages: "rsync or mariabackup".
func (d *FlavorDef) SSTNames() string {
	var names []string
	if d.Galera != nil {
		for _, m := range d.Galera.SST {
			names = append(names, m.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// sstMethodAny finds state transfer method name in f's Galera, else in any registered
// flavor's (a plan built for capabilities the spec was not validated against).
func sstMethodAny(f Flavor, name string) (SSTMethod, bool) {
	if m, ok := FlavorOf(f).SSTMethod(name); ok {
		return m, true
	}
	for _, g := range Flavors() {
		if m, ok := FlavorOf(g).SSTMethod(name); ok {
			return m, true
		}
	}
	return SSTMethod{}, false
}

// sandboxFlavors lists, for messages, the flavors a cluster habench deploys of kind k can
// run: "mysql or mariadb".
func sandboxFlavors(k Kind) string {
	return orList(Flavors(), func(d *FlavorDef) bool { return sandboxFlavor(k, d.Flavor) })
}

// sandboxFlavor reports whether a cluster habench deploys of kind k can run flavor f:
// the flavor's AllKinds or SandboxKinds (k or a kind k extends), or the kind's Flavors.
func sandboxFlavor(k Kind, f Flavor) bool {
	d, ok := flavorDefs[f]
	if !ok {
		return false
	}
	if d.AllKinds || slices.ContainsFunc(d.SandboxKinds, k.Is) {
		return true
	}
	for i := 0; k != "" && i < 8; i++ {
		kd, ok := kindDefs[k]
		if !ok {
			return false
		}
		if slices.Contains(kd.Flavors, f) {
			return true
		}
		k = kd.Base
	}
	return false
}

// GTIDKind is a flavor's kind of global transaction identifiers.
type GTIDKind string

// The GTID kinds: MySQL's (source_uuid:1-N sets, also Percona's and PXC's) and MariaDB's
// (domain-server-seqno positions).
const (
	GTIDMySQL   GTIDKind = "mysql"
	GTIDMariaDB GTIDKind = "mariadb"
)

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

	// GTIDKind: GTIDMySQL (gtid_mode=ON, SOURCE_AUTO_POSITION=1) or GTIDMariaDB
	// (domain-server-seqno, MASTER_USE_GTID=slave_pos); "" for none.
	GTIDKind GTIDKind
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
	// Clone: the clone plugin (mysql_clone.so, MySQL >= 8.0.17): CLONE INSTANCE FROM a donor
	// replaces a server's data (a group member's rebuild; distributed recovery by clone).
	Clone bool
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
	// PXCMaintMode: pxc_maint_mode exists (PXC >= 5.7.16: DISABLED, SHUTDOWN, MAINTENANCE;
	// a proxy stops routing to a node not DISABLED).
	PXCMaintMode bool
	// WsrepProvider is the Galera provider library (libgalera_smm.so) as the server sees it:
	// a fact of the installation, not of the version. CapabilitiesFor leaves it empty; the
	// provider that resolved the installation fills it in ("" when none was found).
	WsrepProvider string
}

// CapabilitiesFor returns the capability set of flavor f at version v: the table of f's
// FlavorDef (after its Base's, transitively). An unknown or zero version yields the
// capabilities of the newest release line habench knows for that flavor (FlavorDef.Newest);
// an unregistered flavor yields only Flavor and Version.
func CapabilitiesFor(f Flavor, v Version) Capabilities {
	d := FlavorOf(f)
	if v.IsZero() {
		v = d.Newest
		if v.IsZero() {
			v = V(9, 7, 0)
		}
	}
	c := Capabilities{Flavor: f, Version: v}
	var chain []*FlavorDef
	for x, i := flavorDefs[f], 0; x != nil && i < 8; i++ {
		chain = append([]*FlavorDef{x}, chain...)
		x = flavorDefs[x.Base]
	}
	for _, x := range chain {
		if x.Caps != nil {
			x.Caps(&c)
		}
	}
	return c
}

// ChangeSource renders the statement that points a replica at its source with GTID
// auto-positioning. Shapes: MySQL >= 8.0.23 CHANGE REPLICATION SOURCE TO SOURCE_HOST=...,
// older MySQL CHANGE MASTER TO MASTER_HOST=..., MariaDB CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos.
// The password is quoted as an SQL string literal.
func (c Capabilities) ChangeSource(host string, port int, user, password string) string {
	q := quoteString
	if c.GTIDKind == GTIDMariaDB {
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
	case c.GTIDKind == GTIDMariaDB:
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
