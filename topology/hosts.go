package topology

import (
	"fmt"
	"path"
	"strings"
)

// ProviderHosts: habench deploys the servers on the user's own hosts over SSH (HostsSpec).
const ProviderHosts = "hosts"

// Defaults of a hosts deployment.
const (
	// DefaultHostDir is the state directory habench uses on each host: one directory per
	// cluster and node under it, nothing else is written on the host.
	DefaultHostDir = "/var/lib/habench-hosts"
	// DefaultHostsBasePort is the port of the first node on each host; the next node on the
	// same host takes the next port.
	DefaultHostsBasePort = 23306
)

// HostsSpec places a topology on the user's own hosts (provider hosts), reached with the
// OpenSSH client as the ssh: section says (user, port, identity, config, options; its hosts
// list must stay empty). Node i runs on Hosts[(i-1) mod len(Hosts)], so several nodes may
// share a host, each with its own port and directory.
type HostsSpec struct {
	// Hosts are the ssh destinations in placement order: addresses, host names or Host
	// aliases of the ssh configuration.
	Hosts []string `json:"hosts,omitempty" yaml:"hosts,omitempty"`
	// HostDir is habench's state directory on every host (an absolute path; default
	// DefaultHostDir). habench creates it if missing and removes it again when empty.
	HostDir string `json:"host_dir,omitempty" yaml:"host_dir,omitempty"`
	// BasePort is the first node's port on each host (default DefaultHostsBasePort).
	BasePort int `json:"base_port,omitempty" yaml:"base_port,omitempty"`
}

// HostsKinds are the kinds habench deploys on hosts today.
var HostsKinds = map[Kind]bool{Single: true, Async: true, SemiSync: true, Galera: true, Group: true, GaleraArbitrator: true, GroupDR: true}

// IsHosts reports whether the spec deploys on the user's hosts.
func (s *Spec) IsHosts() bool { return s.Provider == ProviderHosts }

// hostsDefaults fills HostDir, BasePort and the installation (system: the server the
// hosts have, whatever the flavor).
func (s *Spec) hostsDefaults() {
	if s.Installation.Kind == "" {
		s.Installation.Kind = InstallSystem
	}
	if s.HostDir == "" {
		s.HostDir = DefaultHostDir
	}
	if s.BasePort == 0 {
		s.BasePort = DefaultHostsBasePort
	}
}

// HostOf returns the index in Hosts of node i's host (1-based node, 0-based host) and
// the node's slot on that host (0 for the first node placed there). Pure.
func (h HostsSpec) HostOf(i int) (host, slot int) {
	if len(h.Hosts) == 0 || i < 1 {
		return 0, 0
	}
	return (i - 1) % len(h.Hosts), (i - 1) / len(h.Hosts)
}

// validateHosts checks the hosts fields of a hosts spec; *FieldError naming the field.
// Sandbox-only fields (hosts, host_dir, base_port) are refused on other providers.
func (s *Spec) validateHosts() error {
	if !s.IsHosts() {
		switch {
		case len(s.Hosts) > 0:
			return &FieldError{"hosts", strings.Join(s.Hosts, ","), "only with provider: hosts"}
		case s.HostDir != "":
			return &FieldError{"host_dir", s.HostDir, "only with provider: hosts"}
		case s.BasePort != 0:
			return &FieldError{"base_port", s.BasePort, "only with provider: hosts"}
		}
		return nil
	}
	if len(s.Hosts) == 0 {
		return &FieldError{"hosts", "", "provider hosts needs hosts: the ssh destinations, e.g. [db1, db2, db3]"}
	}
	for i, h := range s.Hosts {
		if !ValidSSHDest(h) {
			return &FieldError{fmt.Sprintf("hosts[%d]", i), h, "want a host name, an address or an ssh_config Host"}
		}
	}
	if s.SSH != nil && len(s.SSH.Hosts) > 0 {
		return &FieldError{"ssh.hosts", strings.Join(s.SSH.Hosts, ","), "with provider hosts the hosts are in hosts:, not ssh.hosts"}
	}
	if err := s.SSH.validate(0); err != nil {
		return err
	}
	d := s.HostDir
	if !path.IsAbs(d) || path.Clean(d) != d || d == "/" || strings.ContainsAny(d, " \t\n\r\x00'\"\\$`;*?[]") || len(d) > 60 {
		return &FieldError{"host_dir", d, "want a clean absolute directory other than / of at most 60 bytes, without spaces or shell characters"}
	}
	perHost := (s.Nodes + len(s.Hosts) - 1) / len(s.Hosts)
	if s.BasePort < 1024 || s.BasePort+perHost-1 > 65535 {
		return &FieldError{"base_port", s.BasePort, fmt.Sprintf("want 1024 to %d for %d node(s) per host", 65536-perHost, perHost)}
	}
	if s.Is(Galera) && GaleraHostPorts(*s, s.BasePort+perHost-1).SST > 65535 {
		return &FieldError{"base_port", s.BasePort, fmt.Sprintf("a Galera node on a host also listens on its SQL port + %d, + %d and + %d: want at most %d for %d node(s) per host",
			galeraPortOffset, 2*galeraPortOffset, 3*galeraPortOffset, 65536-3*galeraPortOffset-perHost, perHost)}
	}
	switch s.Installation.Kind {
	case InstallSystem, InstallBasedir, InstallRootfs:
	default:
		return &FieldError{"installation.kind", s.Installation.Kind, "on hosts: system (the host's packaged server), basedir (a directory on every host) or rootfs (a root filesystem on every host)"}
	}
	if !HostsKinds[s.Kind] {
		return &FieldError{"kind", s.Kind, "not deployable on hosts yet (single, async, semisync, galera, galera-arbitrator, group and group-dr are)"}
	}
	return nil
}

// ValidSSHDest reports whether h can be an ssh destination of provider hosts (a host
// name, an address or an ssh_config Host alias): not empty, no spaces, quotes or shell
// characters, not starting with "-" (an option to ssh).
func ValidSSHDest(h string) bool {
	return h != "" && strings.TrimSpace(h) == h && !strings.ContainsAny(h, " \t\n\r\x00'\"\\$`;") && !strings.HasPrefix(h, "-")
}
