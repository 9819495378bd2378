// Package knob sets server variables ("knobs") on a cluster's nodes at runtime, reads the
// value each node actually took back from the server, records requested / before /
// effective per node, and restores the previous values afterwards.
//
// A knob is any server variable. At deploy time it goes into the option file
// (topology.Spec.Options); at runtime it is one of:
//
//   - a plain variable: SET GLOBAL name = value, read back with SELECT @@GLOBAL.name;
//   - a Galera provider option (a dotted name: gcs.fc_limit, gcs.fc_factor, ...):
//     SET GLOBAL wsrep_provider_options = 'key=value', which on Galera changes only that
//     key; the whole string is read back and parsed;
//   - the replica applier parallelism (replica_parallel_workers, slave_parallel_workers,
//     MariaDB slave_parallel_threads, alias parallel_workers): on a replica the SQL
//     (applier) thread is stopped, the variable set and the thread started again, since
//     the server only takes it at START REPLICA (MariaDB refuses it with ER 1198 while
//     the replica runs);
//   - group_replication_mode (single-primary | multi-primary): a cluster-wide switch
//     through SwitchGroupMode;
//   - a variable the server refuses at runtime as read only (ER 1238): on a sandbox it is
//     written into the node's option file and the node restarted; on an existing cluster
//     it is refused.
//
// Names are mapped by flavor and version (topology.Capabilities): wsrep_applier_threads /
// wsrep_slave_threads (alias applier_threads), the parallel workers above. Catalog lists
// the knobs the published studies sweep (docs/studies.md) with their aliases.
//
// Apply works in phases so that a bad request changes nothing: resolve every knob for
// every node, read every current value (an unknown variable, ER 1193, or provider key
// fails here), set them in order (any failure rolls back what was set), restart nodes for
// read-only knobs, read everything back. Restore sets the previous values again (and
// restores option files, restarting nodes) and reads them back. While a run holds knobs,
// knobs-pending.json in the cluster's directory records the previous values, so
// `habench knob restore NAME` can put them back after a crash.
package knob

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/habench/habench/topology"
)

// Method is how a knob is applied on a node.
type Method string

const (
	// MethodSetGlobal: SET GLOBAL var = value.
	MethodSetGlobal Method = "set_global"
	// MethodApplierRestart: on a replica STOP REPLICA SQL_THREAD, SET GLOBAL, START
	// REPLICA SQL_THREAD (SET GLOBAL alone on other nodes).
	MethodApplierRestart Method = "set_global_applier_restart"
	// MethodProvider: SET GLOBAL wsrep_provider_options = 'key=value'.
	MethodProvider Method = "wsrep_provider_options"
	// MethodGroupMode: SwitchGroupMode, once for the whole group.
	MethodGroupMode Method = "group_mode_switch"
	// MethodRestart: written into the sandbox node's option file, node restarted (the
	// server refused SET GLOBAL with ER 1238, read only).
	MethodRestart Method = "option_file_restart"
)

// Entry is one knob of the catalog.
type Entry struct {
	// Name is the knob's name; Aliases are accepted as well.
	Name    string
	Aliases []string
	Method  Method
	// Doc says what the knob does and how habench applies it (habench knob list).
	Doc string
	// variable maps the knob to this server's variable (nil: Name).
	variable func(topology.Capabilities) string
	// check validates a value before anything is sent (nil: the server decides).
	check func(string) error
	// waitResize: after SET GLOBAL, wait until InnoDB finished resizing the buffer pool.
	waitResize bool
}

// grFlowControl are the ten group_replication_flow_control_* variables of MySQL 8.0, 8.4
// and 9.7 (all dynamic; checked with SHOW GLOBAL VARIABLES on 9.7.4 with the plugin loaded).
var grFlowControl = []struct{ suffix, doc string }{
	{"applier_threshold", "transactions waiting in a member's applier queue that trigger flow control (default 25000)"},
	{"certifier_threshold", "transactions waiting in certification that trigger flow control (default 25000)"},
	{"hold_percent", "percent of quota held back for members under flow control (default 10)"},
	{"max_quota", "maximum transactions per period a member may commit under flow control (0 = no limit)"},
	{"member_quota_percent", "percent of the quota assigned to each member (0 = evenly)"},
	{"min_quota", "lowest quota a member may get (default 0)"},
	{"min_recovery_quota", "lowest quota while a member recovers (default 0)"},
	{"mode", "QUOTA (default) or DISABLED"},
	{"period", "seconds between flow control iterations, 1-60 (default 1)"},
	{"release_percent", "how fast the quota grows again after throttling, percent per period (default 50)"},
}

// Catalog lists the knobs the studies sweep (docs/studies.md, S1-S5). Any other server variable
// works as well (as a plain SET GLOBAL, or a restart on a sandbox).
var Catalog = func() []Entry {
	var c []Entry
	for _, f := range grFlowControl {
		c = append(c, Entry{Name: "group_replication_flow_control_" + f.suffix, Aliases: []string{"gr_fc_" + f.suffix},
			Method: MethodSetGlobal, Doc: "Group Replication flow control: " + f.doc})
	}
	c = append(c,
		Entry{Name: "group_replication_mode", Method: MethodGroupMode,
			Doc:   "single-primary or multi-primary: switches the whole group (group_replication_switch_to_*_mode()); no node list",
			check: oneOf("single-primary", "multi-primary")},
		Entry{Name: "wsrep_applier_threads", Aliases: []string{"wsrep_slave_threads", "applier_threads"}, Method: MethodSetGlobal,
			Doc:      "Galera applier threads: wsrep_applier_threads (PXC >= 8.0.26) or wsrep_slave_threads (MariaDB, older PXC)",
			variable: topology.Capabilities.WsrepApplierThreadsVar, check: intRange(1, 512)},
		Entry{Name: "gcs.fc_limit", Aliases: []string{"fc_limit"}, Method: MethodProvider,
			Doc: "Galera flow control: receive queue length (write-sets) above which a node pauses replication (default 16); a wsrep_provider_options key", check: intRange(1, math.MaxInt32)},
		Entry{Name: "gcs.fc_factor", Aliases: []string{"fc_factor"}, Method: MethodProvider,
			Doc: "Galera flow control: resume when the queue falls below fc_factor * fc_limit (0.0-1.0); a wsrep_provider_options key", check: floatRange(0, 1)},
		Entry{Name: "sync_binlog", Method: MethodSetGlobal, Doc: "binary log fsync every N commit groups (0 = the OS decides, 1 = every commit)", check: intRange(0, math.MaxUint32)},
		Entry{Name: "innodb_flush_log_at_trx_commit", Method: MethodSetGlobal, Doc: "redo log flush: 1 every commit, 2 write at commit + flush each second, 0 each second; 3 (MariaDB only, like 1)", check: oneOf("0", "1", "2", "3")},
		Entry{Name: "innodb_buffer_pool_size", Method: MethodSetGlobal, waitResize: true,
			Doc:   "InnoDB buffer pool (bytes, or with K/M/G); resized online in chunks: habench waits for the resize and records the size the server settled on",
			check: size},
		Entry{Name: "replica_parallel_workers", Aliases: []string{"slave_parallel_workers", "slave_parallel_threads", "parallel_workers"}, Method: MethodApplierRestart,
			Doc:      "replica applier threads: replica_parallel_workers (MySQL >= 8.0.26), slave_parallel_workers (older), slave_parallel_threads (MariaDB); the replica SQL thread is stopped and started again around the change",
			variable: topology.Capabilities.ParallelWorkersVar, check: intRange(0, 1024)},
	)
	return c
}()

// Lookup returns the catalog entry with this name or alias.
func Lookup(name string) (Entry, bool) {
	for _, e := range Catalog {
		if e.Name == name {
			return e, true
		}
		for _, a := range e.Aliases {
			if a == name {
				return e, true
			}
		}
	}
	return Entry{}, false
}

// Variable returns the server variable the entry maps to on servers with caps.
func (e Entry) Variable(caps topology.Capabilities) string {
	if e.variable != nil {
		return e.variable(caps)
	}
	if e.Method == MethodProvider {
		return "wsrep_provider_options"
	}
	if e.Method == MethodGroupMode {
		return "group_replication_single_primary_mode"
	}
	return e.Name
}

// Target is a knob resolved for one flavor/version: which variable (or provider option key)
// and how it is applied.
type Target struct {
	Knob     string // the name as requested ("wsrep_slave_threads", "fc_limit")
	Variable string // the server variable: "wsrep_applier_threads", "wsrep_provider_options"
	Key      string // provider option key ("gcs.fc_limit"), for MethodProvider
	Method   Method
	Value    string // the requested value
	// WaitResize: wait for the buffer pool resize after setting.
	WaitResize bool
}

// ID names what the target changes on a node: the variable, or variable/key.
func (t Target) ID() string {
	if t.Key != "" {
		return t.Variable + "/" + t.Key
	}
	return t.Variable
}

// Label is the variable (or provider option key) as shown to users.
func (t Target) Label() string {
	if t.Key != "" {
		return t.Key
	}
	return t.Variable
}

var (
	varRE      = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	providerRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)
	// provider option values: no ';' (separator), quotes or spaces.
	providerValueRE = regexp.MustCompile(`^[A-Za-z0-9_.:/+-]+$`)
)

// Resolve maps a setting to its Target on servers with caps: catalog names and aliases to
// the flavor's variable and method, dotted names to provider options, anything else to a
// plain SET GLOBAL. Errors (*topology.FieldError, field "knob" with the setting) for a
// value the catalog knows is wrong or a provider value that cannot be written safely.
func Resolve(k topology.KnobSetting, caps topology.Capabilities) (Target, error) {
	return resolve(k, caps, true)
}

// resolve is Resolve; without checkValue the value is not looked at (knob show).
func resolve(k topology.KnobSetting, caps topology.Capabilities, checkValue bool) (Target, error) {
	bad := func(reason string) error {
		return &topology.FieldError{Field: "knob", Value: k.String(), Reason: reason}
	}
	t := Target{Knob: k.Name, Value: k.Value}
	if e, ok := Lookup(k.Name); ok {
		if e.check != nil && checkValue {
			if err := e.check(k.Value); err != nil {
				return t, bad(fmt.Sprintf("%s: %v", e.Name, err))
			}
		}
		t.Method, t.Variable, t.WaitResize = e.Method, e.Variable(caps), e.waitResize
		if e.Method == MethodProvider {
			t.Key = e.Name
		}
		if e.Method == MethodGroupMode && len(k.Nodes) > 0 {
			return t, bad("group_replication_mode switches the whole group: give it without a node list")
		}
	} else if strings.Contains(k.Name, ".") {
		if !providerRE.MatchString(k.Name) {
			return t, bad("not a wsrep_provider_options key")
		}
		t.Method, t.Variable, t.Key = MethodProvider, "wsrep_provider_options", k.Name
	} else {
		if !varRE.MatchString(k.Name) {
			return t, bad("not a server variable name")
		}
		t.Method, t.Variable = MethodSetGlobal, k.Name
	}
	if checkValue && t.Method == MethodProvider && !providerValueRE.MatchString(k.Value) {
		return t, bad("a wsrep_provider_options value may hold letters, digits and _ . : / + - only")
	}
	return t, nil
}

// SQLLiteral renders a value for SET GLOBAL: integers and decimals bare, sizes with a K,
// M, G or T suffix as bytes (SET GLOBAL takes no suffix; option files do), DEFAULT bare,
// anything else as a quoted string ('ON', 'QUOTA'). A single quote is written twice and a
// backslash escaped (\\): the literal ends where it should also when the server runs with
// sql_mode NO_BACKSLASH_ESCAPES (there a backslash arrives doubled, which the read-back
// reports as a value the server changed, never as another statement).
func SQLLiteral(v string) string {
	if numRE.MatchString(v) {
		return v
	}
	if b, ok := parseSize(v); ok {
		return strconv.FormatUint(b, 10)
	}
	if strings.EqualFold(v, "DEFAULT") {
		return "DEFAULT"
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `''`)
	return "'" + r.Replace(v) + "'"
}

var (
	numRE  = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	sizeRE = regexp.MustCompile(`^([0-9]+)([kKmMgGtT])$`)
)

// parseSize reads "256M" as bytes (K, M, G, T: powers of 1024, as option files do).
func parseSize(v string) (uint64, bool) {
	m := sizeRE.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	shift := map[byte]uint{'k': 10, 'm': 20, 'g': 30, 't': 40}[strings.ToLower(m[2])[0]]
	if n > math.MaxUint64>>shift {
		return 0, false
	}
	return n << shift, true
}

// normalize maps a value to a comparable form: booleans to "1"/"0", sizes to bytes,
// numbers to their float value, other text lower-cased.
func normalize(v string) string {
	s := strings.TrimSpace(v)
	switch strings.ToLower(s) {
	case "on", "true", "yes":
		return "1"
	case "off", "false", "no":
		return "0"
	}
	if b, ok := parseSize(s); ok {
		s = strconv.FormatUint(b, 10)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strings.ToLower(s)
}

// Same reports whether a value read back from the server is the requested one, up to
// spelling: ON = 1 = true = yes, 256M = 268435456, 1.0 = 1, case.
func Same(requested, effective string) bool { return normalize(requested) == normalize(effective) }

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, x := range vals {
			if strings.EqualFold(v, x) {
				return nil
			}
		}
		return fmt.Errorf("want %s", strings.Join(vals, " or "))
	}
}

func intRange(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want an integer from %d to %d", lo, hi)
		}
		return nil
	}
}

func floatRange(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < lo || f > hi {
			return fmt.Errorf("want a number from %g to %g", lo, hi)
		}
		return nil
	}
}

func size(v string) error {
	if _, ok := parseSize(v); ok {
		return nil
	}
	if _, err := strconv.ParseUint(v, 10, 64); err == nil {
		return nil
	}
	return fmt.Errorf("want bytes, or a size with K, M or G (256M)")
}

// Merge returns base without the settings over replaces (same name and same node list),
// followed by over: a run's --set overrides the cluster's own knobs for the same scope.
func Merge(base, over []topology.KnobSetting) []topology.KnobSetting {
	scope := func(k topology.KnobSetting) string { return strings.Join(k.Nodes, ",") + ":" + k.Name }
	replaced := map[string]bool{}
	for _, k := range over {
		replaced[scope(k)] = true
	}
	var out []topology.KnobSetting
	for _, k := range base {
		if !replaced[scope(k)] {
			out = append(out, k)
		}
	}
	return append(out, over...)
}
