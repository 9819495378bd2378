package cluster

// SSH access to hosts, shared by the providers that have it (hosts, existing clusters
// with an ssh: section): one *host.SSH per destination and options, the test harness's
// network guard, the ssh: section's files made absolute.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// sshHosts caches one *host.SSH per set of parameters, so every Cluster.Host call for a
// node returns the same value (and the process keeps one master connection per host).
var sshHosts sync.Map // string -> *host.SSH

// guardSSH is the test harness's network guard for SSH: the destination must resolve, by
// the ssh configuration alone (ssh -G), to an address CheckDestination allows, directly.
func guardSSH(r host.Resolved) error {
	if r.Proxy != "" {
		return fmt.Errorf("%s: refused under %s=1 (no proxies)", r.Proxy, NetworkGuardEnv)
	}
	if net.ParseIP(r.HostName) == nil {
		return fmt.Errorf("ssh host name %q: want an IP address: under %s=1 (the test harness's network guard) habench resolves no names", r.HostName, NetworkGuardEnv)
	}
	return CheckDestination(r.HostName)
}

// absSSHSpec returns sp with ~/ and relative paths of Identity and Config made absolute
// (a registration is used from any directory), checking that the files exist. Errors are
// *topology.FieldError on ssh.identity or ssh.config.
func absSSHSpec(sp *topology.SSHSpec) (*topology.SSHSpec, error) {
	if sp == nil {
		return nil, nil
	}
	out := *sp
	out.Hosts = append([]string(nil), sp.Hosts...)
	out.Options = append([]string(nil), sp.Options...)
	for _, f := range []struct {
		field string
		p     *string
	}{{"ssh.identity", &out.Identity}, {"ssh.config", &out.Config}} {
		if *f.p == "" {
			continue
		}
		p := *f.p
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, &topology.FieldError{Field: f.field, Value: p, Reason: err.Error()}
			}
			p = filepath.Join(home, rest)
		}
		p, err := filepath.Abs(p)
		if err != nil {
			return nil, &topology.FieldError{Field: f.field, Value: *f.p, Reason: err.Error()}
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return nil, &topology.FieldError{Field: f.field, Value: *f.p, Reason: "no such file"}
		}
		*f.p = p
	}
	return &out, nil
}

// sshHostFor returns the cached *host.SSH for dest with sp's options (sp may be nil).
func sshHostFor(sp *topology.SSHSpec, dest string) *host.SSH {
	h := &host.SSH{Dest: dest}
	if sp != nil {
		h.User, h.Port, h.Identity, h.Config, h.Options = sp.User, sp.Port, sp.Identity, sp.Config, sp.Options
	}
	if NetworkGuard() {
		h.Check = guardSSH
	}
	key := fmt.Sprintf("%q %q %d %q %q %q %v", h.Dest, h.User, h.Port, h.Identity, h.Config, h.Options, h.Check != nil)
	v, _ := sshHosts.LoadOrStore(key, h)
	return v.(*host.SSH)
}
