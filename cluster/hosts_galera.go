package cluster

// Galera on the user's hosts: what a Galera node needs there besides what every hosts
// node gets (hosts_deploy.go): the provider library and SST tools checked on each host, the
// rsync wrapper in the node's bin directory, and the server's PATH.

import (
	"context"
	"fmt"
	"path"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// galeraToolDirs are the directories (on a host) where a Galera node's SST script and
// tools are looked for, in order: the basedir's, the server's, then the system's.
func galeraToolDirs(b *Binaries) []string {
	var dirs []string
	if b.Basedir != "" {
		dirs = append(dirs, path.Join(b.Basedir, "bin"), path.Join(b.Basedir, "scripts"))
	}
	return append(dirs, path.Dir(b.Server), "/usr/bin", "/usr/local/bin", "/bin")
}

func inDirs(dirs []string, name string) []string {
	var out []string
	for _, d := range dirs {
		out = append(out, path.Join(d, name))
	}
	return out
}

// checkHostGalera says, before anything is created, why host h (with server b) cannot
// run a Galera node of spec: a server without wsrep, no provider library, no SST script
// or tool. It returns the path of rsync on h ("" for mariabackup SST). Errors are
// *topology.FieldError naming the host; habench installs nothing there.
func checkHostGalera(ctx context.Context, h host.Host, b *Binaries, spec topology.Spec) (string, error) {
	if b.Root != "" {
		return "", &topology.FieldError{Field: "installation.kind", Value: b.Installation.Kind, Reason: "galera on hosts: the host's system server or a basedir (its SST scripts need /proc, which a chroot lacks)"}
	}
	if !b.Caps().Galera {
		return "", &topology.FieldError{Field: "installation", Value: b.Server, Reason: b.VersionText + " on " + h.Name() + " has no Galera (wsrep) support"}
	}
	if b.WsrepProvider == "" {
		return "", &topology.FieldError{Field: "installation", Value: b.Server, Reason: "no Galera provider libgalera_smm.so on " + h.Name() + " (package galera-4)"}
	}
	m, err := sstMethodFor(b, spec.Galera.SST)
	if err != nil {
		return "", err
	}
	sst := m.Name
	dirs := galeraToolDirs(b)
	var tools []string
	for _, t := range m.ToolCandidates() {
		tools = append(tools, inDirs(dirs, t)...)
	}
	found, err := firstFilesOn(ctx, h, inDirs(dirs, "wsrep_sst_"+sst), tools, append(inDirs(dirs, "socat"), inDirs(dirs, "nc")...))
	if err != nil {
		return "", err
	}
	switch {
	case found[0] == "":
		return "", &topology.FieldError{Field: "galera.sst", Value: sst, Reason: fmt.Sprintf("no wsrep_sst_%s script on %s", sst, h.Name())}
	case len(tools) > 0 && found[1] == "":
		return "", &topology.FieldError{Field: "galera.sst", Value: sst, Reason: fmt.Sprintf("no %s on %s; habench installs nothing on a host", m.Tool, h.Name())}
	case m.Stream && found[2] == "":
		return "", &topology.FieldError{Field: "galera.sst", Value: sst, Reason: sst + " SST streams with socat (or nc): neither is on " + h.Name()}
	}
	if sst != topology.SSTRsync {
		return "", nil
	}
	return found[1], nil
}

// prepareHostGalera writes, on node n's host, what a Galera node needs besides its option
// file: when the server runs as root with rsync SST, the rsync wrapper (rsyncWrapper) in
// DIR/bin, which the server's PATH names first (hostServerArgv).
func prepareHostGalera(ctx context.Context, c *Cluster, n *Node, asRoot bool) error {
	if !asRoot || c.Spec.Galera.SST != topology.SSTRsync {
		return nil
	}
	h := c.hostsSSH(n)
	rsync, err := checkHostGalera(ctx, h, c.Binaries, c.Spec)
	if err != nil {
		return err
	}
	if _, err := h.Run(ctx, "mkdir", "-p", "-m", "0700", path.Join(n.Dir, "bin")); err != nil {
		return fmt.Errorf("node %s: mkdir %s/bin on %s: %w", n.Name, n.Dir, h.Name(), err)
	}
	return hostWriteFile(ctx, h, path.Join(n.Dir, "bin", "rsync"), []byte(fmt.Sprintf(rsyncWrapper, rsync)), 0o700)
}

// hostServerArgv is the command that starts node n's server on its host with extra
// arguments: the server with its option file; for Galera under env with the node's PATH
// (galeraPATH), env exec'ing the server so that the PID is the server's.
func hostServerArgv(c *Cluster, n *Node, extra []string) []string {
	argv := c.Binaries.hostArgv(c.Binaries.Server, append([]string{"--defaults-file=" + n.ServerDir + "/my.cnf"}, extra...)...)
	if c.Spec.Is(topology.Galera) {
		argv = append([]string{"env", "PATH=" + galeraPATH(c, path.Join(n.ServerDir, "bin"))}, argv...)
	}
	return argv
}

// hostsExtraPorts are the ports node n (SQL port sqlPort) of a hosts spec needs on its
// host besides its SQL port: the kind's (KindOps.ExtraPorts) and, for Galera, its group
// communication, IST and SST ports (topology.GaleraHostPorts).
func hostsExtraPorts(spec topology.Spec, sqlPort int) []int {
	var ports []int
	if f := OpsOf(spec.Kind).ExtraPorts; f != nil {
		ports = f(spec, sqlPort)
	}
	if spec.Is(topology.Galera) {
		g := topology.GaleraHostPorts(spec, sqlPort)
		ports = append(ports, g.Group, g.IST, g.SST)
	}
	return ports
}
