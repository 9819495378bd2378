package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// DoctorPorts is how many node ports CheckHosts checks from the base port (BasePort ..
// BasePort+3). Where and from which port a deployment on the user's hosts puts its nodes
// are the hosts provider's own defaults (topology.DefaultHostDir,
// topology.DefaultHostsBasePort), so that doctor and deploy cannot disagree.
const DoctorPorts = 4

// checkTimeout bounds each check on a host.
const checkTimeout = 20 * time.Second

// clusterPorts are the ports the cluster kinds use on a host besides node port p's own,
// from the functions the hosts provider places them with: Group Replication's XCom
// (topology.GroupPort), Galera's group communication, IST and SST with one node per host
// (the standard 4567, 4568, 4444) and with several (offsets from the SQL port).
func clusterPorts(nodePorts []int) []int {
	one := topology.Spec{Nodes: 1, HostsSpec: topology.HostsSpec{Hosts: []string{"h"}}}
	several := topology.Spec{Nodes: 2, HostsSpec: topology.HostsSpec{Hosts: []string{"h"}}}
	var ps []int
	add := func(p int) {
		if p > 0 && p <= 65535 && !slices.Contains(ps, p) && !slices.Contains(nodePorts, p) {
			ps = append(ps, p)
		}
	}
	for _, p := range nodePorts {
		for _, g := range []topology.GaleraPorts{topology.GaleraHostPorts(one, p), topology.GaleraHostPorts(several, p)} {
			add(g.Group)
			add(g.IST)
			add(g.SST)
		}
		add(topology.GroupPort(p))
	}
	return ps
}

// galeraLibs are where distributions install the Galera provider.
var galeraLibs = []string{"/usr/lib/galera/libgalera_smm.so", "/usr/lib/galera-4/libgalera_smm.so",
	"/usr/lib/libgalera_smm.so", "/usr/lib64/galera-4/libgalera_smm.so", "/usr/lib64/galera/libgalera_smm.so",
	"/usr/lib/x86_64-linux-gnu/galera/libgalera_smm.so"}

// HostsCheck says which hosts CheckHosts looks at and how.
type HostsCheck struct {
	// Hosts are ssh destinations (addresses, host names or ssh_config Host aliases), in
	// order, accepted as deploy --hosts accepts them (topology.ValidSSHDest; under the
	// network guard the address the ssh configuration resolves each to must be allowed).
	Hosts []string
	// SSH is how to reach them (its Hosts are ignored); nil: the user's ssh configuration.
	SSH *topology.SSHSpec
	// HostDir is habench's state directory on the hosts (default topology.DefaultHostDir); free disk
	// is read under it or its nearest existing parent.
	HostDir string
	// BasePort is the first node port (default topology.DefaultHostsBasePort); DoctorPorts ports from it
	// and the cluster ports derived from them (group communication, IST, SST, XCom: see
	// clusterPorts) are checked for listeners and between the hosts.
	BasePort int
	// ConnectTimeout bounds connecting to each host (default 5 s).
	ConnectTimeout time.Duration
	// Log receives, at debug level, each peer probe (from, to, port, result, ms) and
	// each host's probing; nil: none.
	Log *slog.Logger
}

func (o HostsCheck) log() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

// HostReport is what CheckHosts found on one host. Problems make the host unusable
// (no connection, neither root nor passwordless sudo, a port of another host it cannot
// reach); Warnings do not (a port in use, no packaged server or Galera library, little
// disk, a clock far off); Facts are what is fine.
type HostReport struct {
	Dest     string
	Addr     string // the address ssh connects to (ssh -G), for the other hosts' probes
	Problems []string
	Warnings []string
	Facts    []string

	ClockOffset, ClockUncertainty time.Duration
	Listening                     map[int]string // checked port -> the process listening ("" unknown)
	// ByHand is the command that repeats, by hand, a peer probe that failed (ProbeByHand);
	// "" when every port answered.
	ByHand    string
	connected bool
	h         *host.SSH
}

// Usable reports whether the report has no problem.
func (r *HostReport) Usable() bool { return len(r.Problems) == 0 }

// Line is the report on one line, "DEST: ok|warn|UNUSABLE: " then the problems, the
// warnings and the facts, comma-separated.
func (r *HostReport) Line() string {
	state := "ok"
	switch {
	case len(r.Problems) > 0:
		state = "UNUSABLE"
	case len(r.Warnings) > 0:
		state = "warn"
	}
	parts := append(append(slices.Clone(r.Problems), r.Warnings...), r.Facts...)
	return r.Dest + ": " + state + ": " + strings.Join(parts, ", ")
}

// Ports returns the ports o checks, node ports first.
func (o HostsCheck) Ports() []int {
	var ps []int
	for i := range DoctorPorts {
		ps = append(ps, o.BasePort+i)
	}
	return append(ps, clusterPorts(ps)...)
}

// CheckHosts checks every host of o for a deployment of habench's (provider hosts): ssh,
// root or passwordless sudo, the server binaries and their versions, the Galera library,
// listeners on the ports, free disk under the state directory, the clock offset to this
// machine, and whether each host reaches the others on the ports. Hosts are checked in
// parallel; one report per host, in o.Hosts's order. An error only for bad input: a host
// that is no ssh destination (or, under the network guard, resolves to a refused one), a
// port range out of 1..65535, a missing identity or config file (naming the field and the
// value).
func CheckHosts(ctx context.Context, o HostsCheck) ([]*HostReport, error) {
	if len(o.Hosts) == 0 {
		return nil, &topology.FieldError{Field: "hosts", Value: "", Reason: "want at least one host"}
	}
	if o.HostDir == "" {
		o.HostDir = topology.DefaultHostDir
	}
	if o.BasePort == 0 {
		o.BasePort = topology.DefaultHostsBasePort
	}
	if o.BasePort < 1 || o.BasePort+DoctorPorts-1 > 65535 {
		return nil, &topology.FieldError{Field: "base_port", Value: o.BasePort, Reason: fmt.Sprintf("want 1 to %d", 65536-DoctorPorts)}
	}
	if !strings.HasPrefix(o.HostDir, "/") || strings.ContainsAny(o.HostDir, " \t\n'\"$`\\") {
		return nil, &topology.FieldError{Field: "host_dir", Value: o.HostDir, Reason: "want an absolute directory without spaces or shell characters"}
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	sp, err := absSSHSpec(o.SSH)
	if err != nil {
		return nil, err
	}
	if sp == nil {
		sp = &topology.SSHSpec{}
	}
	reps := make([]*HostReport, len(o.Hosts))
	for i, d := range o.Hosts {
		if !topology.ValidSSHDest(d) {
			return nil, &topology.FieldError{Field: fmt.Sprintf("hosts[%d]", i), Value: d, Reason: "want a host name, an address or an ssh_config Host"}
		}
		h := &host.SSH{Dest: d, User: sp.User, Port: sp.Port, Identity: sp.Identity, Config: sp.Config, Options: sp.Options, ConnectTimeout: o.ConnectTimeout}
		if NetworkGuard() {
			// As deploy --hosts: the destination as the ssh configuration resolves it (an
			// alias to an address) must be an address the guard allows.
			h.Check = guardSSH
			res, err := h.Resolve(ctx)
			if err == nil {
				err = guardSSH(res)
			}
			if err != nil {
				return nil, &topology.FieldError{Field: fmt.Sprintf("hosts[%d]", i), Value: d, Reason: err.Error()}
			}
		}
		reps[i] = &HostReport{Dest: d, h: h}
	}
	var wg sync.WaitGroup
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			checkHost(ctx, o, r)
		}()
	}
	wg.Wait()
	for _, r := range reps {
		if r.connected {
			wg.Add(1)
			go func() {
				defer wg.Done()
				checkPeers(ctx, o, r, reps)
			}()
		}
	}
	wg.Wait()
	return reps, nil
}

// checkHost fills r with everything but the peers' reachability.
func checkHost(ctx context.Context, o HostsCheck, r *HostReport) {
	h := r.h
	if res, err := h.Resolve(ctx); err == nil {
		r.Addr = res.HostName
	}
	if err := h.Connect(ctx); err != nil {
		r.Problems = append(r.Problems, strings.TrimPrefix(err.Error(), h.Name()+": "))
		return
	}
	r.connected = true
	r.Facts = append(r.Facts, "ssh ok")
	// The checks run at once (sessions on the master connection), each under its own
	// timeout (one that hangs on the host spoils only its part), into parts merged in order.
	checks := []func(*HostReport, context.Context){ // method expressions: receiver first
		(*HostReport).checkPrivileges, (*HostReport).checkServers, (*HostReport).checkGalera,
		func(p *HostReport, ctx context.Context) { p.checkPorts(ctx, o.Ports()) },
		func(p *HostReport, ctx context.Context) { p.checkDisk(ctx, o.HostDir) },
	}
	parts := make([]*HostReport, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		parts[i] = &HostReport{h: h}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, checkTimeout)
			defer cancel()
			check(parts[i], cctx)
		}()
	}
	wg.Wait()
	for _, p := range parts {
		r.Problems = append(r.Problems, p.Problems...)
		r.Warnings = append(r.Warnings, p.Warnings...)
		r.Facts = append(r.Facts, p.Facts...)
		if p.Listening != nil {
			r.Listening = p.Listening
		}
	}
	// The clock alone: other sessions at once would lengthen its round trips.
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	off, unc, err := host.ClockOffset(cctx, h, host.DefaultClockRounds)
	switch {
	case err != nil:
		r.Warnings = append(r.Warnings, "clock: "+err.Error())
	case off.Abs()-unc > time.Second:
		r.Warnings = append(r.Warnings, "clock "+fmtOffset(off, unc)+" (more than 1 s off: is NTP running?)")
	default:
		r.Facts = append(r.Facts, "clock "+fmtOffset(off, unc))
	}
	r.ClockOffset, r.ClockUncertainty = off, unc
}

// fmtOffset renders an offset and its uncertainty in milliseconds: "+0.42ms ±0.70ms".
func fmtOffset(off, unc time.Duration) string {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return fmt.Sprintf("%+.2fms ±%.2fms", ms(off), ms(unc))
}

// firstLineOf returns s's first non-empty line, trimmed.
func firstLineOf(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// checkPrivileges: root, or passwordless sudo (sudo -n).
func (r *HostReport) checkPrivileges(ctx context.Context) {
	out, err := r.h.Run(ctx, "id", "-u")
	if err == nil && strings.TrimSpace(string(out)) == "0" {
		r.Facts = append(r.Facts, "root")
		return
	}
	if _, err := r.h.Run(ctx, "sudo", "-n", "true"); err == nil {
		r.Facts = append(r.Facts, "sudo")
		return
	}
	r.Problems = append(r.Problems, "neither root nor passwordless sudo (sudo -n true fails)")
}

// serverScript prints "PATH<TAB>RESOLVED<TAB>first line of --version" for mariadbd and
// mysqld, found in PATH or /usr/sbin.
const serverScript = `for b in mariadbd mysqld; do
  p=$(command -v $b 2>/dev/null) || p=
  [ -z "$p" ] && [ -x /usr/sbin/$b ] && p=/usr/sbin/$b
  [ -n "$p" ] && printf '%s\t%s\t%s\n' "$p" "$(readlink -f "$p")" "$("$p" --version 2>&1 | head -n 1)"
done; true`

// checkServers names the server binaries and their versions (a mysqld that is a link to
// mariadbd, as Debian installs it, counts once).
func (r *HostReport) checkServers(ctx context.Context) {
	out, err := r.h.Run(ctx, "sh", "-c", serverScript)
	if err != nil {
		r.Warnings = append(r.Warnings, "servers: "+err.Error())
		return
	}
	seen := map[string]bool{}
	var found []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) < 3 || seen[f[1]] {
			continue
		}
		seen[f[1]] = true
		found = append(found, serverVersion(f[1], f[2]))
	}
	if len(found) == 0 {
		r.Warnings = append(r.Warnings, "no server binary (mariadbd or mysqld in PATH or /usr/sbin): name a basedir")
		return
	}
	r.Facts = append(r.Facts, found...)
}

// serverVersion renders a binary and the version from its --version line, e.g.
// "mariadbd 10.11.6-MariaDB" from "/usr/sbin/mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for
// debian-linux-gnu ...". Pure.
func serverVersion(path, line string) string {
	name := path[strings.LastIndexByte(path, '/')+1:]
	f := strings.Fields(line)
	for i, w := range f {
		if w == "Ver" && i+1 < len(f) {
			v := f[i+1]
			if j := strings.Index(v, "-MariaDB"); j >= 0 {
				v = v[:j+len("-MariaDB")]
			}
			return name + " " + v
		}
	}
	return name + " (version unknown: " + firstLineOf(line) + ")"
}

// checkGalera names the first Galera library found.
func (r *HostReport) checkGalera(ctx context.Context) {
	argv := append([]string{"sh", "-c", `for f in "$@"; do [ -e "$f" ] && echo "$f"; done; true`, "sh"}, galeraLibs...)
	out, err := r.h.Run(ctx, argv...)
	if lib := firstLineOf(string(out)); err == nil && lib != "" {
		r.Facts = append(r.Facts, "galera "+lib)
		return
	}
	r.Warnings = append(r.Warnings, "no Galera library (galera kinds need it)")
}

// checkDisk reports the free space under dir, or its nearest existing parent.
func (r *HostReport) checkDisk(ctx context.Context, dir string) {
	out, err := r.h.Run(ctx, "sh", "-c", `d=$1; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; echo "$d"; df -Pk "$d" | tail -n 1`, "sh", dir)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var kb int64
	if err == nil && len(lines) == 2 {
		if f := strings.Fields(lines[1]); len(f) >= 4 {
			kb, err = strconv.ParseInt(f[3], 10, 64)
		}
	}
	if err != nil || len(lines) != 2 || kb == 0 && !strings.Contains(lines[1], " 0 ") {
		r.Warnings = append(r.Warnings, fmt.Sprintf("disk under %s: cannot read (%v %q)", dir, err, out))
		return
	}
	gib := float64(kb) / (1 << 20)
	fact := fmt.Sprintf("disk %.1f GiB free (%s)", gib, lines[0])
	if gib < 2 {
		r.Warnings = append(r.Warnings, "only "+fact)
		return
	}
	r.Facts = append(r.Facts, fact)
}
