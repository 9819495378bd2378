package schema

import (
	"time"

	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// ManifestFile is the name of a run's manifest in its results directory.
const ManifestFile = "manifest.json"

// HostInfo is one machine the run's nodes ran on, as manifest.json "hosts" lists it: the
// name its machine-wide samples carry (samples.csv node "host:<name>") and its nodes. For
// a host other than this machine (a node reached over SSH: hosts provider, existing
// cluster with ssh:) also its clock offset, measured once at the start of the run
// (host.ClockOffset), and its server where known; a local sandbox's "local" shares this
// machine's clock and has neither.
type HostInfo struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
	// OffsetMs is the host's wall clock minus this machine's, in milliseconds; the true
	// offset lies within OffsetMs ± UncertaintyMs (half the shortest round trip). Both
	// are absent on this machine and when the clock could not be read (ClockError).
	OffsetMs      *float64 `json:"offset_ms,omitempty"`
	UncertaintyMs *float64 `json:"uncertainty_ms,omitempty"`
	// ClockError says why the clock was not measured: its nodes' applier_lag_s is then
	// not corrected.
	ClockError string `json:"clock_error,omitempty"`
	// Server is the server the nodes run there: the binary and its version the hosts
	// provider found on the host, else the version the nodes report (@@version).
	Server string `json:"server,omitempty"`
}

// ClockMeasured reports whether the host's clock was measured or tried (a host other
// than this machine).
func (h HostInfo) ClockMeasured() bool { return h.OffsetMs != nil || h.ClockError != "" }

// CacheDrop is one entry of manifest.json "drop_caches": the page cache of a host of the
// cluster dropped before the run (a scenario's cell: {drop_caches: true}): the host, its
// nodes, when (UTC) and how long sync and the drop took, in seconds.
type CacheDrop struct {
	Host  string    `json:"host"`
	Nodes []string  `json:"nodes"`
	At    time.Time `json:"at"`
	TookS float64   `json:"took_s"`
}

// Manifest is manifest.json: everything needed to know what ran, where and under which
// settings. Runs write it (experiment), reports and compare read it back (report).
// Sections another package produces are recorded here in their file form (Binaries,
// Knobs, LinkImpairment, LinkChange, RunFault); the generic ones (host, cluster, links,
// extra) are maps whose keys docs/results.md lists.
type Manifest struct {
	Habench     map[string]string `json:"habench"`
	CommandLine []string          `json:"command_line"`
	Started     time.Time         `json:"started"`
	Finished    time.Time         `json:"finished"`
	Host        map[string]any    `json:"host"`
	Workload    ManifestWorkload  `json:"workload"`
	Topology    *topology.Spec    `json:"topology,omitempty"`
	Cluster     map[string]any    `json:"cluster,omitempty"`
	Binaries    *Binaries         `json:"binaries,omitempty"`
	// Proxy is the cluster's proxy as it ran (nil without one).
	Proxy *ManifestProxy `json:"proxy,omitempty"`
	Nodes []NodeInfo     `json:"nodes"`
	// Links: "impairment" ("none", or a LinkImpairment), "network" and "description" (the
	// provider's words for the network between the nodes).
	Links    map[string]any `json:"links"`
	Samplers []string       `json:"samplers,omitempty"`
	// Hosts are the machines the nodes ran on, each with its nodes: samples.csv carries
	// each host's machine-wide metrics once, under node "host:<name>".
	Hosts []HostInfo `json:"hosts,omitempty"`
	// Clients are the client hosts the workload was driven from (nil: habench's own
	// process drove it).
	Clients []ClientHost `json:"clients,omitempty"`
	// CacheDrops are the hosts whose page cache was dropped just before the run (a
	// scenario's cell: {drop_caches: true}); nil when none was.
	CacheDrops []CacheDrop `json:"drop_caches,omitempty"`
	// Warnings are what the run found wrong with its own setup: deploy-time options the
	// servers do not run with, links changed during the run.
	Warnings []string `json:"warnings,omitempty"`
	// LinkChanges are the standing links applied or cleared by other commands while the
	// run went on (nil: none).
	LinkChanges []LinkChange `json:"link_changes,omitempty"`
	// Faults are the faults injected into the cluster during the run, by its own
	// schedule (RunFault.Scheduled) or `habench fault` (times on samples.csv's clock).
	Faults []RunFault `json:"faults,omitempty"`
	// IntervalsOffsetS is where intervals.csv's elapsed_s=0 (start of measurement, after
	// connecting and warmup) lies on samples.csv's clock, in seconds. Both clocks start
	// with the run: samples.csv's just before the samplers start, intervals.csv's when the
	// workload's measurement starts.
	IntervalsOffsetS float64 `json:"intervals_offset_s"`
	// SamplesStarted is samples.csv's time zero on the wall clock (UTC), to line samples up
	// with events outside the run (a partition applied by another command, a node
	// killed); zero when nothing was sampled.
	SamplesStarted time.Time `json:"samples_started,omitzero"`
	// Knobs are the runtime knobs of the run: per node requested, before, effective and,
	// after the run, restored.
	Knobs *Knobs         `json:"knobs,omitempty"`
	Extra map[string]any `json:"extra,omitempty"`
}

// ManifestWorkload is manifest.json's "workload": the test and its sysbench options (by
// sysbench name, as strings), the endpoints the workers used and notes on them.
type ManifestWorkload struct {
	PSMode string `json:"db_ps_mode"`
	// PSModeNote says why the run's statements were not prepared as asked.
	PSModeNote string   `json:"db_ps_mode_note,omitempty"`
	Endpoints  []string `json:"endpoints"`
	// Failover describes the workers' client failover ("" without it).
	Failover string `json:"failover,omitempty"`
	// IDSpace is the note on a stepped auto-increment id space (Galera), "" when none.
	IDSpace string `json:"id_space,omitempty"`
	// IgnoreErrorsNote says which errors --mysql-ignore-errors let the workers retry.
	IgnoreErrorsNote string            `json:"ignore_errors_note,omitempty"`
	Name             string            `json:"name"`
	Options          map[string]string `json:"options"`
	RandType         string            `json:"rand_type"`
	// ReadEndpoints are the endpoints of read-only transactions when reads are split.
	ReadEndpoints []string `json:"read_endpoints,omitempty"`
	// StatementMix is the statements of one event (nil for workloads without one).
	StatementMix       *workload.Mix `json:"statement_mix,omitempty"`
	SysbenchCompatible string        `json:"sysbench_compatible,omitempty"`
	// Writer is "auto" when the workers follow the cluster's writer.
	Writer string `json:"writer,omitempty"`
	// Via is "proxy" when the workers connected to the cluster's proxy (its write
	// endpoint, Endpoints ["proxy"]), which picked the node; "" when they connected to the
	// nodes.
	Via string `json:"via,omitempty"`
}

// Binaries is manifest.json's "binaries": the server installation that ran (as the
// cluster's state file has it).
type Binaries struct {
	Installation topology.Installation `json:"installation"`
	Flavor       string                `json:"flavor"`
	Version      string                `json:"version"`
	// VersionText is `mysqld --version` as printed.
	VersionText string `json:"version_text"`
	Root        string `json:"root,omitempty"`
	Server      string `json:"server"`
	InstallDB   string `json:"install_db,omitempty"`
	Basedir     string `json:"basedir,omitempty"`
	// WsrepProvider is the Galera provider library as the server sees it.
	WsrepProvider string `json:"wsrep_provider,omitempty"`
}

// NodeInfo is one node as recorded in the manifest: identity, role, version and the key
// variables read back from the server before the run.
type NodeInfo struct {
	Name      string            `json:"name"`
	Role      string            `json:"role"`
	Address   string            `json:"address"`
	Version   string            `json:"version"`
	Variables map[string]string `json:"variables"`
}

// Knobs is manifest.json's "knobs" (and a sweep cell's): the runtime knobs requested for
// the run and, per node, the value before, the value in effect (read back) and after the
// run the restored one.
type Knobs struct {
	// Requested are the settings as given ("wsrep_slave_threads=8", "n2:sync_binlog=0").
	Requested []string `json:"requested"`
	// Keep: the values were left in place after the run.
	Keep  bool        `json:"keep"`
	Nodes []KnobValue `json:"nodes"`
	// Restored: every value read back after the run equals its value before (nil: not
	// restored).
	Restored *bool    `json:"restored,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// KnobValue is one knob on one node. Values are the server's text (SHOW VARIABLES, or
// the wsrep_provider_options value).
type KnobValue struct {
	Node     string `json:"node"`
	Knob     string `json:"knob"`     // as requested (alias or name)
	Variable string `json:"variable"` // server variable, or the wsrep_provider_options key
	// Method is how it is set (knob.Method: set_global, restart, ...).
	Method    string `json:"method"`
	Requested string `json:"requested"`
	Before    string `json:"before"`
	Effective string `json:"effective"`
	// Matches: Effective equals Requested up to spelling (ON = 1, 256M = 268435456).
	// False means the server adjusted the value (rounded, truncated, capped): Effective is
	// what the run used.
	Matches bool `json:"matches"`
	// Restored is the value read back after the restore (nil: not restored, e.g. kept).
	Restored *string `json:"restored,omitempty"`
	// Session is the value a new session on the node starts with (SELECT @@SESSION.var on
	// a connection opened after the value was set), for variables with a session scope
	// such as group_replication_consistency and wsrep_sync_wait, which a session reads from
	// the global value when it connects: what the run's workers and checker sessions, all
	// opened after the knobs were set, ran with. Empty for global-only variables and
	// provider options.
	Session string `json:"session,omitempty"`
	// ProviderOptions is the whole wsrep_provider_options string read back after setting
	// (provider options only).
	ProviderOptions string `json:"provider_options,omitempty"`
	Note            string `json:"note,omitempty"`
}

// ManifestProxy is manifest.json's "proxy": the cluster's proxy member as the run found it.
type ManifestProxy struct {
	// Type is topology.ProxySpec.Type ("haproxy"); Version its program's own words
	// ("HAProxy version 2.6.12-1+deb12u4 ..."), "" when it could not be asked.
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
	// Write, Read and Stats are its endpoints' addresses ("host:port"; Read "" without one).
	Write string `json:"write"`
	Read  string `json:"read,omitempty"`
	Stats string `json:"stats,omitempty"`
	// Config is its configuration in effect (habench's, or the user's proxy.config), and
	// ConfigError why it could not be read.
	Config      string `json:"config,omitempty"`
	ConfigError string `json:"config_error,omitempty"`
}
