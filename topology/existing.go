package topology

import (
	"fmt"
	"slices"
	"strings"
)

// Providers: who runs a cluster's servers.
const (
	ProviderSandbox  = "sandbox"  // habench deploys, restarts and destroys local servers
	ProviderExisting = "existing" // someone else's servers: habench connects, never deploys, restarts or stops them
)

// ExistingSpec says where the servers of an existing cluster are: either Cluster, the
// name of a cluster already registered with `habench register` (or any cluster in the
// state directory), or DSNs, one per node in node order (n1, n2, ...), each
// "user:password@tcp(host:port)/" or "tcp(host:port)/" with User and Password for all.
// The Spec's Kind and Flavor are then hints: habench discovers both and refuses a
// mismatch. Passwords never go to JSON (state.json keeps them apart, manifests never).
type ExistingSpec struct {
	Cluster  string   `json:"cluster,omitempty" yaml:"cluster,omitempty"`
	DSNs     []string `json:"-" yaml:"dsns,omitempty"`
	User     string   `json:"user,omitempty" yaml:"user,omitempty"`
	Password string   `json:"-" yaml:"password,omitempty"`
	// SSH, when set, is how habench reaches the nodes' hosts (tc for link impairments,
	// /proc for host metrics). Without it everything that needs no host access works.
	SSH *SSHSpec `json:"ssh,omitempty" yaml:"ssh,omitempty"`
}

// SSHSpec is SSH access to an existing cluster's hosts with the OpenSSH client. Every
// field is optional: by default node i's host is its DSN's host, and the user, port and
// keys are what the user's own ssh configuration says (~/.ssh/config, agent, ProxyJump).
type SSHSpec struct {
	// Hosts are the ssh destinations, one per node in node order (an address, a host name
	// or a Host alias of the ssh configuration); default: each node's DSN host.
	Hosts []string `json:"hosts,omitempty" yaml:"hosts,omitempty"`
	// User and Port override the ssh configuration's for every host (Port 0: its default).
	User string `json:"user,omitempty" yaml:"user,omitempty"`
	Port int    `json:"port,omitempty" yaml:"port,omitempty"`
	// Identity is a private key file (ssh -i); "" for the agent and the configuration's keys.
	Identity string `json:"identity,omitempty" yaml:"identity,omitempty"`
	// Config is an ssh_config(5) file to use instead of the user's own (ssh -F).
	Config string `json:"config,omitempty" yaml:"config,omitempty"`
	// Options are extra ssh options "Key=Value" (ssh -o), e.g. "StrictHostKeyChecking=accept-new".
	Options []string `json:"options,omitempty" yaml:"options,omitempty"`
	// Faults are the shell commands habench fault runs on a node's host (see
	// FaultCommands); empty ones take the defaults.
	Faults FaultCommands `json:"faults,omitempty" yaml:"faults,omitempty"`
}

// FaultCommands are the shell commands (sh -c, on the node's host over SSH) that kill,
// stop and start a node's server on an existing cluster. Defaults: DefaultFaultCommands.
type FaultCommands struct {
	Kill  string `json:"kill,omitempty" yaml:"kill,omitempty"`
	Stop  string `json:"stop,omitempty" yaml:"stop,omitempty"`
	Start string `json:"start,omitempty" yaml:"start,omitempty"`
}

// DefaultFaultCommands are what a Debian/Ubuntu host with a packaged server takes.
var DefaultFaultCommands = FaultCommands{
	Kill:  "pkill -KILL -x mysqld || pkill -KILL -x mariadbd",
	Stop:  "systemctl stop mysql || systemctl stop mariadb",
	Start: "systemctl start mysql || systemctl start mariadb",
}

// Command returns the command for action (kill, stop or start), the default when unset.
func (f FaultCommands) Command(action string) string {
	pick := func(v, def string) string {
		if strings.TrimSpace(v) != "" {
			return v
		}
		return def
	}
	switch action {
	case "kill":
		return pick(f.Kill, DefaultFaultCommands.Kill)
	case "stop":
		return pick(f.Stop, DefaultFaultCommands.Stop)
	case "start":
		return pick(f.Start, DefaultFaultCommands.Start)
	}
	return ""
}

// validate checks the SSH fields for a cluster of nodes nodes (0: unknown); errors are
// *FieldError on "ssh.FIELD".
func (s *SSHSpec) validate(nodes int) error {
	if s == nil {
		return nil
	}
	bad := func(v string) bool {
		return strings.TrimSpace(v) != v || strings.ContainsAny(v, " \t\n\r\x00") || strings.HasPrefix(v, "-")
	}
	if nodes > 0 && len(s.Hosts) > 0 && len(s.Hosts) != nodes {
		return &FieldError{"ssh.hosts", strings.Join(s.Hosts, ","), fmt.Sprintf("%d host(s) for %d node(s): give one per node, in node order, or none (each node's DSN host)", len(s.Hosts), nodes)}
	}
	for i, h := range s.Hosts {
		if h == "" || bad(h) {
			return &FieldError{fmt.Sprintf("ssh.hosts[%d]", i), h, "want a host name, an address or an ssh_config Host"}
		}
	}
	if s.User != "" && bad(s.User) {
		return &FieldError{"ssh.user", s.User, "want a user name"}
	}
	if s.Port < 0 || s.Port > 65535 {
		return &FieldError{"ssh.port", s.Port, "want 1 to 65535 (or 0: the ssh configuration's)"}
	}
	if s.Identity != "" && strings.ContainsAny(s.Identity, "\n\x00") {
		return &FieldError{"ssh.identity", s.Identity, "want a private key file"}
	}
	for i, o := range s.Options {
		k, _, ok := strings.Cut(o, "=")
		if !ok || k == "" || bad(k) || strings.ContainsAny(o, "\n\x00") {
			return &FieldError{fmt.Sprintf("ssh.options[%d]", i), o, "want Key=Value, e.g. StrictHostKeyChecking=accept-new"}
		}
	}
	return nil
}

// IsExisting reports whether the spec describes an existing cluster.
func (s *Spec) IsExisting() bool { return s.Provider == ProviderExisting }

// existingDefaults: a topology row that only names a registered cluster takes its name.
func (s *Spec) existingDefaults() {
	if s.Name == "" && s.Cluster != "" {
		s.Name = s.Cluster
	}
	if s.Flavor != "" {
		if f, err := ParseFlavor(string(s.Flavor)); err == nil {
			s.Flavor = f
		}
	}
}

// validateExisting checks an existing-cluster spec: a name, exactly one of cluster and
// dsns, hints that are known kinds and flavors, and none of the sandbox-only fields
// (options, installation): habench never writes an existing server's configuration.
func (s *Spec) validateExisting() error {
	switch {
	case s.Cluster == "" && len(s.DSNs) == 0:
		return &FieldError{"dsns", "", "an existing cluster needs dsns (one per node) or cluster (a registered cluster's name)"}
	case s.Cluster != "" && len(s.DSNs) > 0:
		return &FieldError{"cluster", s.Cluster, "give cluster or dsns, not both"}
	case len(s.DSNs) > MaxNodes:
		return &FieldError{"dsns", len(s.DSNs), fmt.Sprintf("want 1 to %d nodes", MaxNodes)}
	}
	if s.Cluster != "" {
		if err := ValidName(s.Cluster); err != nil {
			return &FieldError{"cluster", s.Cluster, err.(*FieldError).Reason}
		}
		if s.User != "" || s.Password != "" {
			return &FieldError{"user", s.User, "a registered cluster already has its user; give user and password with dsns"}
		}
		if s.SSH != nil {
			return &FieldError{"ssh", s.Cluster, "a registered cluster already has its ssh access (habench register --ssh...); give ssh with dsns"}
		}
	}
	for i, d := range s.DSNs {
		if strings.TrimSpace(d) == "" || strings.ContainsAny(d, "\n\r\x00") {
			return &FieldError{fmt.Sprintf("dsns[%d]", i), d, "want user:password@tcp(host:port)/ or tcp(host:port)/"}
		}
	}
	if s.Kind != "" {
		known := ExistingKinds()
		if d, ok := kindDefs[s.Kind]; ok && !d.Existing && d.Base != "" && kindDefs[d.Base] != nil && kindDefs[d.Base].Existing {
			return &FieldError{"kind", s.Kind, fmt.Sprintf("not discovered on existing servers: register them as %s (habench reports the members it does not manage)", d.Base)}
		}
		if !slices.Contains(known, s.Kind) {
			names := make([]string, len(known))
			for i, k := range known {
				names[i] = string(k)
			}
			return &FieldError{"kind", s.Kind, "want one of " + strings.Join(names, ", ") + " (a hint; habench discovers the kind)"}
		}
	}
	if s.Flavor != "" {
		if _, err := ParseFlavor(string(s.Flavor)); err != nil {
			return &FieldError{"flavor", s.Flavor, "want " + FlavorList() + " (a hint; habench discovers the flavor)"}
		}
	}
	if s.Nodes != 0 && len(s.DSNs) > 0 && s.Nodes != len(s.DSNs) {
		return &FieldError{"nodes", s.Nodes, fmt.Sprintf("%d dsns given", len(s.DSNs))}
	}
	if err := s.SSH.validate(len(s.DSNs)); err != nil {
		return err
	}
	if len(s.Options) > 0 {
		return &FieldError{"options", strings.Join(sortedKeys(s.Options), ","), "an existing cluster's option files are not habench's to write: use knobs (runtime, restored after each run)"}
	}
	if s.Installation != (Installation{}) {
		return &FieldError{"installation", s.Installation.Kind, "an existing cluster is not installed by habench"}
	}
	if _, err := KnobsFromMap(s.Knobs); err != nil {
		return err
	}
	return nil
}

// validateSandboxOnly refuses existing-cluster fields on a sandbox spec.
func (s *Spec) validateSandboxOnly() error {
	switch {
	case s.Cluster != "":
		return &FieldError{"cluster", s.Cluster, "only with provider: existing"}
	case len(s.DSNs) > 0:
		return &FieldError{"dsns", len(s.DSNs), "only with provider: existing"}
	case s.User != "" || s.Password != "":
		return &FieldError{"user", s.User, "only with provider: existing (a sandbox's benchmark user is habench)"}
	case s.SSH != nil && !s.IsHosts():
		return &FieldError{"ssh", s.Name, "only with provider: existing or hosts (a sandbox's hosts are this machine)"}
	}
	return nil
}
