package topology

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is a topology kind.
type Kind string

const (
	Single   Kind = "single"   // one primary, no replicas
	Async    Kind = "async"    // one source, N-1 asynchronous replicas, GTID auto-positioning
	SemiSync Kind = "semisync" // like async, the source waits for replica acknowledgements
	Group    Kind = "group"    // MySQL Group Replication
	Galera   Kind = "galera"   // Galera (MariaDB Galera Cluster, PXC)
)

// Role is a node's part in a topology.
type Role string

const (
	RoleSource    Role = "source"    // async/semi-sync source, or the single primary
	RoleReplica   Role = "replica"   // async/semi-sync replica
	RolePrimary   Role = "primary"   // GR primary
	RoleSecondary Role = "secondary" // GR secondary
	RoleNode      Role = "node"      // Galera node (every node writable)
)

// Writable reports whether the role accepts writes.
func (r Role) Writable() bool {
	return r == RoleSource || r == RolePrimary || r == RoleNode
}

// FieldError is bad input: the field (as the user spelled it), the value, and why.
// Its message is one line: `field "kind": value "ring": want one of single, async, semisync`.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Field, fmt.Sprint(e.Value), e.Reason)
}

// InstallKind says where a topology's server binaries come from.
type InstallKind string

const (
	InstallSystem  InstallKind = "system"  // binaries from the host's packages (/usr/sbin)
	InstallBasedir InstallKind = "basedir" // an unpacked tarball: BASEDIR/bin/mysqld
	InstallRootfs  InstallKind = "rootfs"  // a root filesystem, servers run with chroot
)

// Installation names where the binaries are. Path is the basedir or rootfs directory
// (empty for system).
type Installation struct {
	Kind InstallKind `json:"kind" yaml:"kind"`
	Path string      `json:"path,omitempty" yaml:"path,omitempty"`
}

// SemiSyncOptions configure semi-synchronous replication.
type SemiSyncOptions struct {
	// WaitPoint is AFTER_SYNC (default, lossless) or AFTER_COMMIT.
	WaitPoint string `json:"wait_point" yaml:"wait_point"`
	// Timeout before the source falls back to async (default 10s; server unit is ms).
	Timeout time.Duration `json:"timeout" yaml:"timeout"`
	// WaitForReplicas is how many acknowledgements a commit waits for (default 1;
	// MySQL only: MariaDB always waits for one).
	WaitForReplicas int `json:"wait_for_replicas" yaml:"wait_for_replicas"`
}

// semiSyncJSON is SemiSyncOptions with the timeout as a Go duration string ("10s").
type semiSyncJSON struct {
	WaitPoint       string `json:"wait_point"`
	Timeout         string `json:"timeout"`
	WaitForReplicas int    `json:"wait_for_replicas"`
}

// MarshalJSON writes the timeout as "10s", not nanoseconds.
func (o SemiSyncOptions) MarshalJSON() ([]byte, error) {
	return json.Marshal(semiSyncJSON{o.WaitPoint, o.Timeout.String(), o.WaitForReplicas})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *SemiSyncOptions) UnmarshalJSON(b []byte) error {
	var j semiSyncJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	d, err := time.ParseDuration(j.Timeout)
	if err != nil && j.Timeout != "" {
		return fmt.Errorf("semisync.timeout %q: %w", j.Timeout, err)
	}
	*o = SemiSyncOptions{WaitPoint: j.WaitPoint, Timeout: d, WaitForReplicas: j.WaitForReplicas}
	return nil
}

// Spec is what a user asks to deploy. Pure data; Validate checks it.
type Spec struct {
	Name         string          `json:"name" yaml:"name"`
	Kind         Kind            `json:"kind" yaml:"kind"`
	Nodes        int             `json:"nodes" yaml:"nodes"`
	Flavor       Flavor          `json:"flavor" yaml:"flavor"`
	Installation Installation    `json:"installation" yaml:"installation"`
	SemiSync     SemiSyncOptions `json:"semisync" yaml:"semisync"`
	// Group configures kind group (Group Replication); ignored by other kinds.
	Group GroupOptions `json:"group,omitzero" yaml:"group,omitempty"`
	// Galera configures kind galera (state transfer method).
	Galera GaleraOptions `json:"galera,omitzero" yaml:"galera,omitempty"`
	// Sites place the members in named sites (`sites: {dc1: [n1, n2], dc2: [n3]}`):
	// links are given per site pair, reports group nodes by site, a partition can cut a
	// site off. Empty: no sites. Every member is in exactly one site when given.
	Sites Sites `json:"sites,omitempty" yaml:"sites,omitempty"`
	// Proxy puts a proxy in front of the servers (`proxy: haproxy`), a member called
	// ProxyName; see ProxySpec.
	Proxy ProxySpec `json:"proxy,omitzero" yaml:"proxy,omitempty"`
	// Options are server variables written to every node's option file ("innodb_buffer_pool_size": "256M").
	Options map[string]string `json:"options,omitempty" yaml:"options,omitempty"`
	// Knobs are runtime knobs ("[NODES:]NAME": VALUE, see KnobSetting and package knob):
	// set with SET GLOBAL before a run, read back from every node, restored after it.
	Knobs map[string]string `json:"knobs,omitempty" yaml:"knobs,omitempty"`

	// Provider is "sandbox" (default: habench deploys local servers) or "existing"
	// (servers someone else runs; see ExistingSpec and existing.go).
	Provider string `json:"provider,omitempty" yaml:"provider,omitempty"`
	// ExistingSpec: where an existing cluster's servers are (provider existing only).
	ExistingSpec `yaml:",inline"`
	// HostsSpec: the user's hosts a hosts deployment runs on (provider hosts only).
	HostsSpec `yaml:",inline"`

	// Credentials are the passwords the plan gives the accounts it creates (set by the
	// provider before BuildPlan; never read from a file nor written with the spec).
	Credentials Credentials `json:"-" yaml:"-"`
}

var (
	nameRE   = regexp.MustCompile(`^[a-z][a-z0-9]{0,9}$`)
	optionRE = regexp.MustCompile(`^[a-z0-9_.-]+$`)
)

// DefaultRootfs is where `make rootfs` (scripts/mysql-rootfs.sh) builds the MySQL root
// filesystem, and the path a rootfs installation without one uses.
const DefaultRootfs = "/var/cache/habench/rootfs/mysql-sid"

// DefaultMariaDBRootfs is where `make rootfs-mariadb` (scripts/mariadb-rootfs.sh) builds a
// root filesystem with Debian sid's MariaDB and galera-4, the path a MariaDB rootfs
// installation without one uses.
const DefaultMariaDBRootfs = "/var/cache/habench/rootfs/mariadb-sid"

// MaxNodes is the largest node count a sandbox accepts.
const MaxNodes = 9

// Defaults fills zero fields with their defaults: 1 node for single, 3 otherwise; the
// flavor's canonical name (MySQL -> mysql);
// installation system for MariaDB, rootfs for MySQL; semi-sync AFTER_SYNC, 10s, 1 replica;
// group mode single-primary (kind group only).
func (s *Spec) Defaults() {
	if s.Provider == ProviderExisting {
		s.existingDefaults()
		return
	}
	if s.IsHosts() {
		s.hostsDefaults()
	}
	s.Kind = claim(s)
	def := KindOf(s.Kind)
	if s.Nodes == 0 {
		s.Nodes = def.DefaultNodes
	}
	if f, err := ParseFlavor(string(s.Flavor)); err == nil {
		s.Flavor = f
	}
	inst := FlavorOf(s.Flavor).Install
	if s.Installation.Kind == "" {
		s.Installation.Kind = inst.DefaultKind
		if s.Installation.Kind == "" {
			s.Installation.Kind = InstallSystem
		}
	}
	if s.Installation.Kind == InstallRootfs && s.Installation.Path == "" {
		s.Installation.Path = inst.Rootfs
		if s.Installation.Path == "" {
			s.Installation.Path = DefaultRootfs
		}
	}
	if s.SemiSync.WaitPoint == "" {
		s.SemiSync.WaitPoint = "AFTER_SYNC"
	}
	if s.SemiSync.Timeout == 0 {
		s.SemiSync.Timeout = 10 * time.Second
	}
	if s.SemiSync.WaitForReplicas == 0 {
		s.SemiSync.WaitForReplicas = 1
	}
	// A kind's base's defaults first (a galera-arbitrator is a galera), then its own.
	var chain []*KindDef
	for d, i := def, 0; d != nil && i < 8; i++ {
		chain = append([]*KindDef{d}, chain...)
		if d.Base == "" {
			break
		}
		d = KindOf(d.Base)
	}
	for _, d := range chain {
		if d.Defaults != nil {
			d.Defaults(s)
		}
	}
	s.proxyDefaults()
}

// reservedOptions are the server options a sandbox sets itself: overriding them would
// break addressing, identity or replication.
var reservedOptions = map[string]bool{
	"server_id": true, "port": true, "socket": true, "datadir": true, "bind_address": true,
	"pid_file": true, "log_error": true, "user": true, "tmpdir": true, "basedir": true,
	"report_host": true, "report_port": true, "log_bin": true, "relay_log": true,
	"gtid_mode": true, "enforce_gtid_consistency": true, "gtid_domain_id": true,
	"secure_file_priv": true, "mysqlx": true, "skip_networking": true,
}

// ValidName checks a cluster name: 1-10 lower-case letters and digits, starting with a
// letter (it becomes part of interface, namespace and directory names). *FieldError if not.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return &FieldError{"name", name, "want 1-10 characters, lower-case letters and digits, starting with a letter"}
	}
	return nil
}

// Validate checks the spec and returns a *FieldError naming the first bad field.
func (s *Spec) Validate() error {
	if err := ValidName(s.Name); err != nil {
		return err
	}
	switch s.Provider {
	case "", ProviderSandbox, ProviderHosts:
	case ProviderExisting:
		if err := s.validateExisting(); err != nil {
			return err
		}
		if err := s.validateProxy(); err != nil {
			return err
		}
		return s.validateSites()
	default:
		return &FieldError{"provider", s.Provider, "want sandbox, hosts or existing"}
	}
	if err := s.validateSandboxOnly(); err != nil {
		return err
	}
	if err := s.validateHosts(); err != nil {
		return err
	}
	knobs, err := KnobsFromMap(s.Knobs)
	if err != nil {
		return err
	}
	def, err := LookupKind(s.Kind)
	if err != nil {
		return err
	}
	// A kind whose own section decides its flavors and node counts (a group) first.
	if def.Precheck != nil {
		if err := def.Precheck(s); err != nil {
			return err
		}
	}
	if !s.Is(Group) && s.Group != (GroupOptions{}) {
		return &FieldError{"group.mode", s.Group.Mode, "only for kind group"}
	}
	if _, err := ParseFlavor(string(s.Flavor)); err != nil || !sandboxFlavor(s.Kind, s.Flavor) {
		return &FieldError{"flavor", s.Flavor, "want " + sandboxFlavors(s.Kind) + " for a sandbox"}
	}
	if s.Nodes < 1 || s.Nodes > MaxNodes {
		return &FieldError{"nodes", s.Nodes, fmt.Sprintf("want 1 to %d", MaxNodes)}
	}
	// Then the kind's own checks: its node counts, its section.
	if def.Validate != nil {
		if err := def.Validate(s); err != nil {
			return err
		}
	}
	for _, k := range knobs {
		for _, n := range k.Nodes {
			if i, _ := strconv.Atoi(strings.TrimPrefix(n, "n")); i > s.Nodes {
				have := "n1"
				if s.Nodes > 1 {
					have += " to " + NodeName(s.Nodes)
				}
				return &FieldError{"knob", k.String(), fmt.Sprintf("no node %s (the topology's nodes: %s)", n, have)}
			}
		}
	}
	switch s.Installation.Kind {
	case InstallSystem:
	case InstallBasedir, InstallRootfs:
		if s.Installation.Path == "" {
			return &FieldError{"installation.path", "", fmt.Sprintf("a %s installation needs a path", s.Installation.Kind)}
		}
	default:
		return &FieldError{"installation.kind", s.Installation.Kind, "want system, basedir or rootfs"}
	}
	if err := s.validateGalera(); err != nil {
		return err
	}
	if err := s.validateProxy(); err != nil {
		return err
	}
	if err := s.validateSites(); err != nil {
		return err
	}
	for k, v := range s.Options {
		if strings.ContainsAny(v, "\n\r\x00") {
			return &FieldError{"options." + k, v, "a value must be one line"}
		}
		if !optionRE.MatchString(k) {
			return &FieldError{"options", k, "not a server variable name"}
		}
		if reservedOptions[strings.TrimPrefix(strings.ReplaceAll(k, "-", "_"), "loose_")] {
			return &FieldError{"options", k, "set by habench for every sandbox node (addresses, paths, identity, GTIDs); not overridable"}
		}
	}
	return nil
}

// validateGalera checks the galera fields and the options the Galera plan owns; nil for
// other kinds (whose galera field must stay empty).
func (s *Spec) validateGalera() error {
	if !s.Is(Galera) {
		if !s.Galera.IsZero() {
			return &FieldError{"galera.sst", s.Galera.SST, "only for kind galera"}
		}
		return nil
	}
	fd := FlavorOf(s.Flavor)
	if fd.Galera == nil {
		var with []string
		for _, f := range Flavors() {
			if d := FlavorOf(f); d.Galera != nil {
				with = append(with, fmt.Sprintf("%s (%s)", f, d.Title))
			}
		}
		return &FieldError{"flavor", s.Flavor, "a galera sandbox needs a flavor with Galera: " + strings.Join(with, ", ")}
	}
	for k := range s.Galera.Extra {
		if !slices.Contains(KindOf(s.Kind).Keys, "galera."+k) {
			return &FieldError{"galera." + k, s.Galera.Extra[k], "not a galera field (sst" + extraKeys(Galera, "galera.") + ")"}
		}
	}
	if _, ok := fd.SSTMethod(s.Galera.SST); !ok {
		return &FieldError{"galera.sst", s.Galera.SST, "want " + fd.SSTNames()}
	}
	for k := range s.Options {
		if why, ok := galeraReserved[normOption(k)]; ok {
			return &FieldError{"options", k, "set by habench for every galera node (addresses, identity, GTID domains, SST)" + why + "; not overridable"}
		}
	}
	if _, err := ParseProviderOptions(userProviderOptions(*s)); err != nil {
		return err
	}
	return nil
}
