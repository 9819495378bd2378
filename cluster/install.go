package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/topology"
)

// DefaultRootfs is where `make rootfs` (scripts/mysql-rootfs.sh) builds the MySQL root filesystem.
const DefaultRootfs = topology.DefaultRootfs

// DefaultMariaDBRootfs is where `make rootfs-mariadb` (scripts/mariadb-rootfs.sh) builds
// Debian sid's MariaDB and galera-4.
const DefaultMariaDBRootfs = topology.DefaultMariaDBRootfs

// Binaries are a resolved Installation: which server binary runs, its version, and
// how to run it (chroot into Root for a root filesystem). Paths are as the server sees them.
type Binaries struct {
	Installation topology.Installation `json:"installation"`
	Flavor       topology.Flavor       `json:"flavor"`
	Version      topology.Version      `json:"version"`
	VersionText  string                `json:"version_text"` // `mysqld --version` as printed
	Root         string                `json:"root,omitempty"`
	Server       string                `json:"server"`
	InstallDB    string                `json:"install_db,omitempty"`
	Basedir      string                `json:"basedir,omitempty"`
	// WsrepProvider is the Galera provider library as the server sees it ("" when the
	// installation has none).
	WsrepProvider string `json:"wsrep_provider,omitempty"`
}

// Caps returns the capability set of these binaries (with the installation's Galera provider).
func (b *Binaries) Caps() topology.Capabilities {
	c := topology.CapabilitiesFor(b.Flavor, b.Version)
	c.WsrepProvider = b.WsrepProvider
	return c
}

// HostPath maps a path as seen by the server to the host's path (prefixing Root).
func (b *Binaries) HostPath(p string) string {
	if b.Root == "" {
		return p
	}
	return filepath.Join(b.Root, p)
}

// ServerPath maps a host path under Root to the path the server sees (HostPath's
// inverse); a path outside Root is returned as it is.
func (b *Binaries) ServerPath(p string) string {
	if b.Root == "" {
		return p
	}
	rel, err := filepath.Rel(b.Root, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return p
	}
	return "/" + rel
}

// Command builds the command that runs bin (a path as the server sees it) with args,
// inside network namespace netns when not empty (nsenter) and chrooted into Root when set.
func (b *Binaries) Command(netns, bin string, args ...string) *exec.Cmd {
	var argv []string
	if netns != "" {
		argv = append(argv, "nsenter", "--net="+filepath.Join("/run/netns", netns), "--")
	}
	if b.Root != "" {
		argv = append(argv, "chroot", b.Root)
	}
	argv = append(argv, bin)
	argv = append(argv, args...)
	return exec.Command(argv[0], argv[1:]...)
}

// ResolveInstallation finds the server binary of flavor f in inst and reads its version.
// Errors are *topology.FieldError naming installation.path (or flavor) and the value,
// e.g. when the root filesystem has not been built.
func ResolveInstallation(ctx context.Context, inst topology.Installation, f topology.Flavor) (*Binaries, error) {
	b := &Binaries{Installation: inst, Flavor: f}
	fd := topology.FlavorOf(f)
	var candidates []string
	switch inst.Kind {
	case topology.InstallSystem:
		candidates = serverPaths(fd, "/usr/sbin")
	case topology.InstallRootfs:
		b.Root = inst.Path
		if fi, err := os.Stat(inst.Path); err != nil || !fi.IsDir() {
			hint := ""
			if inst.Path == DefaultRootfs {
				hint = " (build it with `make rootfs`)"
			}
			if inst.Path == DefaultMariaDBRootfs {
				hint = " (build it with `make rootfs-mariadb`)"
			}
			return nil, &topology.FieldError{Field: "installation.path", Value: inst.Path, Reason: "no root filesystem there" + hint}
		}
		candidates = serverPaths(fd, "/usr/sbin")
	case topology.InstallBasedir:
		b.Basedir = inst.Path
		candidates = serverPaths(fd, filepath.Join(inst.Path, "bin"), filepath.Join(inst.Path, "sbin"))
	default:
		return nil, &topology.FieldError{Field: "installation.kind", Value: inst.Kind, Reason: "want system, basedir or rootfs"}
	}
	for _, c := range candidates {
		if fi, err := os.Stat(b.HostPath(c)); err == nil && !fi.IsDir() {
			b.Server = c
			break
		}
	}
	if b.Server == "" {
		where := inst.Path
		if inst.Kind == topology.InstallSystem {
			where = "/usr/sbin"
			if fd.Install.SystemHint != "" {
				return nil, &topology.FieldError{Field: "installation", Value: "system", Reason: fmt.Sprintf("no %s in /usr/sbin (%s)", fd.Install.Servers[0], fd.Install.SystemHint)}
			}
		}
		return nil, &topology.FieldError{Field: "installation.path", Value: where, Reason: fmt.Sprintf("no %s server binary (looked for %s)", f, strings.Join(candidates, ", "))}
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := b.Command("", b.Server, "--version")
	out, err := exec.CommandContext(cctx, cmd.Path, cmd.Args[1:]...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w: %s", b.HostPath(b.Server), err, strings.TrimSpace(string(out)))
	}
	b.VersionText = strings.TrimSpace(string(out))
	if b.Version, err = topology.ParseVersion(strings.TrimPrefix(b.VersionText, b.Server)); err != nil {
		return nil, fmt.Errorf("%s --version: %w", b.Server, err)
	}
	if !installedFlavor(b.VersionText, b.Server).Is(f) {
		return nil, &topology.FieldError{Field: "flavor", Value: f, Reason: fmt.Sprintf("the installation holds %q", b.VersionText)}
	}
	if fd.Install.InstallDB {
		caps := b.Caps()
		dir := filepath.Dir(filepath.Dir(b.Server)) // /usr, or the basedir
		for _, c := range []string{filepath.Join(dir, "bin", caps.InstallDBBinary), filepath.Join(dir, "scripts", caps.InstallDBBinary), "/usr/bin/" + caps.InstallDBBinary} {
			if _, err := os.Stat(b.HostPath(c)); err == nil {
				b.InstallDB = c
				break
			}
		}
		if b.InstallDB == "" {
			return nil, &topology.FieldError{Field: "installation.path", Value: inst.Path, Reason: "no " + caps.InstallDBBinary + " beside " + b.Server}
		}
	}
	b.WsrepProvider = b.findWsrepProvider()
	return b, nil
}

// serverPaths are the paths of flavor d's daemons (FlavorInstall.Servers) in dirs, by
// daemon name first, then by directory.
func serverPaths(d *topology.FlavorDef, dirs ...string) []string {
	var out []string
	for _, name := range d.Install.Servers {
		for _, dir := range dirs {
			out = append(out, path.Join(dir, name))
		}
	}
	return out
}

// installedFlavor is the flavor that server's `mysqld --version` output names, without the
// binary's path it starts with (a basedir named mariadb-... holding a MySQL is a MySQL;
// topology.RecognizeFlavor). An installation of flavor f holds a server whose flavor Is f:
// a Percona Server binary serves flavor mysql, a MySQL binary does not serve mariadb.
func installedFlavor(versionText, server string) topology.Flavor {
	return topology.RecognizeFlavor(topology.FlavorEvidence{Version: strings.TrimPrefix(versionText, server)})
}

// findWsrepProvider looks for libgalera_smm.so where Debian's galera-4 (/usr/lib/galera),
// RPM packages (/usr/lib64/galera-4, /usr/lib64/galera) and tarballs (BASEDIR/lib) put
// it; "" when there is none. The path is as the server sees it.
func (b *Binaries) findWsrepProvider() string {
	var cands []string
	if b.Basedir != "" {
		cands = append(cands, filepath.Join(b.Basedir, "lib", "libgalera_smm.so"), filepath.Join(b.Basedir, "lib", "galera", "libgalera_smm.so"),
			filepath.Join(b.Basedir, "lib64", "libgalera_smm.so"))
	}
	cands = append(cands, topology.DefaultWsrepProvider, "/usr/lib/galera-4/libgalera_smm.so", "/usr/lib/galera4/libgalera_smm.so",
		"/usr/lib64/galera-4/libgalera_smm.so", "/usr/lib64/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so")
	for _, c := range cands {
		if fi, err := os.Stat(b.HostPath(c)); err == nil && !fi.IsDir() {
			return c
		}
	}
	return ""
}

// installMemo holds the installations a Store resolved: each is resolved once per store
// (one `habench run`, its sweep's checks, snapshots and deployments; one command), so
// every later check, snapshot and deploy of the same installation gets the binaries the
// first one found, without asking the server binary (or the hosts, over SSH) again.
// Failures are not kept: the next call tries again.
type installMemo struct {
	mu    sync.Mutex
	local map[string]Binaries      // by installation kind, path and flavor
	hosts map[string]hostsResolved // by hosts, ssh options, installation and flavor
}

// hostsResolved is what resolveHosts found on a spec's hosts: each host's address and
// binaries, in spec.Hosts order.
type hostsResolved struct {
	addrs []string
	bins  []Binaries
}

// installMemoInit guards the creation of a Store's memo.
var installMemoInit sync.Mutex

// memo returns s's installation memo, creating it on first use.
func (s *Store) memo() *installMemo {
	installMemoInit.Lock()
	defer installMemoInit.Unlock()
	if s.installs == nil {
		s.installs = &installMemo{local: map[string]Binaries{}, hosts: map[string]hostsResolved{}}
	}
	return s.installs
}

// Installation is ResolveInstallation, once per store for each installation and flavor
// (installMemo); the result is the caller's own copy.
func (s *Store) Installation(ctx context.Context, inst topology.Installation, f topology.Flavor) (*Binaries, error) {
	m := s.memo()
	key := fmt.Sprintf("%s\x00%s\x00%s", inst.Kind, inst.Path, f)
	m.mu.Lock()
	b, ok := m.local[key]
	m.mu.Unlock()
	if ok {
		return &b, nil
	}
	bins, err := ResolveInstallation(ctx, inst, f)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.local[key] = *bins
	m.mu.Unlock()
	return bins, nil
}

// SpecBinaries resolves the installation spec deploys with: on the user's hosts the
// hosts' (the first host's; each host's server is checked against it), else this
// machine's (ResolveInstallation); once per store for each installation (on hosts: each
// set of hosts, ssh options and installation; installMemo).
func (s *Store) SpecBinaries(ctx context.Context, spec topology.Spec) (*Binaries, error) {
	if !spec.IsHosts() {
		return s.Installation(ctx, spec.Installation, spec.Flavor)
	}
	_, bins, err := s.resolveHosts(ctx, spec)
	if err != nil {
		return nil, err
	}
	return bins[0], nil
}
