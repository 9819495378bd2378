package topology

import (
	"fmt"
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

// AllKinds lists every topology kind habench knows (deployable or only discoverable on an
// existing cluster).
var AllKinds = []Kind{Single, Async, SemiSync, Group, Galera}

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
	}
	for i, d := range s.DSNs {
		if strings.TrimSpace(d) == "" || strings.ContainsAny(d, "\n\r\x00") {
			return &FieldError{fmt.Sprintf("dsns[%d]", i), d, "want user:password@tcp(host:port)/ or tcp(host:port)/"}
		}
	}
	if s.Kind != "" {
		known := false
		for _, k := range AllKinds {
			known = known || k == s.Kind
		}
		if !known {
			return &FieldError{"kind", s.Kind, "want one of single, async, semisync, group, galera (a hint; habench discovers the kind)"}
		}
	}
	if s.Flavor != "" {
		if _, err := ParseFlavor(string(s.Flavor)); err != nil {
			return &FieldError{"flavor", s.Flavor, "want mysql, mariadb, percona or pxc (a hint; habench discovers the flavor)"}
		}
	}
	if s.Nodes != 0 && len(s.DSNs) > 0 && s.Nodes != len(s.DSNs) {
		return &FieldError{"nodes", s.Nodes, fmt.Sprintf("%d dsns given", len(s.DSNs))}
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
	}
	return nil
}
