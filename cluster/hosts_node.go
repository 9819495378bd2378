package cluster

// Host-side primitives of the hosts provider: what habench does on one of the user's
// hosts for one node, over host.Host (an SSH host in production; anything with a POSIX
// shell, /proc and base64). Nothing here knows about plans or kinds.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// hostLayout is where node Node of cluster Cluster lives on its host: the node directory
// HostDir/Cluster/Node (option file, datadir, logs, socket) and its record
// HostDir/Cluster/Node.habench.json, beside the node directory so that it is written
// before the directory exists.
type hostLayout struct {
	HostDir, Cluster, Node string
	// Root is the root filesystem the node's server runs chrooted in ("" for none);
	// HostDir is then under it.
	Root string
}

// serverNodeDir is the node directory as a chrooted server sees it ("" without Root).
func (l hostLayout) serverNodeDir() string {
	if l.Root == "" {
		return ""
	}
	return "/" + strings.TrimPrefix(strings.TrimPrefix(l.nodeDir(), l.Root), "/")
}

func (l hostLayout) clusterDir() string { return path.Join(l.HostDir, l.Cluster) }
func (l hostLayout) nodeDir() string    { return path.Join(l.HostDir, l.Cluster, l.Node) }
func (l hostLayout) record() string {
	return path.Join(l.HostDir, l.Cluster, l.Node+".habench.json")
}

// HostRecord is what habench created on one host for one node, kept on that host as
// JSON (hostLayout.record) and written there before anything it lists is created, so
// that destroy removes exactly that, also after habench was killed and from another
// habench process. Created are absolute directories in creation order: the host
// directory and the cluster directory when habench made them (removed only when empty),
// then the node directory (removed with everything in it).
type HostRecord struct {
	Cluster    string    `json:"cluster"`
	Node       string    `json:"node"`
	Created    []string  `json:"created"`
	Port       int       `json:"port"`
	PID        int       `json:"pid,omitempty"`
	StartTicks uint64    `json:"start_ticks,omitempty"`
	Controller string    `json:"controller"` // the machine habench ran on (its host name)
	Time       time.Time `json:"time"`
	// Root is the root filesystem the node's server runs chrooted in ("" for none), so
	// that `destroy --hosts` finds its processes without the state file.
	Root string `json:"root,omitempty"`
	// Copies are the files habench copied onto the host for the node, recorded before
	// each copy is made: its own program (hosts_selfcopy.go), always inside the node
	// directory, which destroy removes with them.
	Copies []string `json:"copies,omitempty"`
}

// errNoRecord: the host has no record for the node.
var errNoRecord = errors.New("no habench record")

// shRun runs a POSIX shell script on h with args as $1, $2, ...
func shRun(ctx context.Context, h host.Host, script string, args ...string) ([]byte, error) {
	return h.Run(ctx, append([]string{"sh", "-c", script, "sh"}, args...)...)
}

// hostWriteFile writes data to p on h atomically (p.tmp, then rename) with mode (octal,
// e.g. 0o600; the file is never readable by others while written). The content travels on
// the command's standard input, never in its arguments (they are world-readable in
// /proc/PID/cmdline, here and on the host). The error names the host and file.
func hostWriteFile(ctx context.Context, h host.Host, p string, data []byte, mode os.FileMode) error {
	const script = `umask 077; cat > "$1.tmp" && chmod "$2" "$1.tmp" && mv -f "$1.tmp" "$1"`
	if _, err := host.RunInput(ctx, h, data, "sh", "-c", script, "sh", p, fmt.Sprintf("%o", mode.Perm())); err != nil {
		return fmt.Errorf("write %s on %s: %w", p, h.Name(), err)
	}
	return nil
}

// readHostRecord reads node l's record on h: errNoRecord when there is none.
func readHostRecord(ctx context.Context, h host.Host, l hostLayout) (*HostRecord, error) {
	out, err := shRun(ctx, h, `test -e "$1" || exit 3; cat "$1"`, l.record())
	var ee *host.ExitError
	if errors.As(err, &ee) && ee.Code == 3 {
		return nil, errNoRecord
	}
	if err != nil {
		return nil, err
	}
	r := &HostRecord{}
	if err := json.Unmarshal(out, r); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", l.record(), h.Name(), err)
	}
	return r, nil
}

// writeHostRecord writes r as node l's record on h (mode 0600).
func writeHostRecord(ctx context.Context, h host.Host, l hostLayout, r *HostRecord) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return hostWriteFile(ctx, h, l.record(), append(b, '\n'), 0o600)
}

// hostProbe is what a host has before a node is created on it.
type hostProbe struct {
	HostDir, ClusterDir, NodeDir, Record bool // exist already
	UID                                  int  // of the ssh user
	Listening                            map[int]bool
}

// probeHost reads, in one command, whether node l's directories and record exist on h,
// the ssh user's uid, and the TCP ports listening on h (/proc/net/tcp and tcp6, state 0A).
func probeHost(ctx context.Context, h host.Host, l hostLayout) (*hostProbe, error) {
	const script = `for p in "$1" "$2" "$3" "$4"; do if [ -e "$p" ]; then echo 1; else echo 0; fi; done
id -u
cat /proc/net/tcp /proc/net/tcp6 2>/dev/null`
	out, err := shRun(ctx, h, script, l.HostDir, l.clusterDir(), l.nodeDir(), l.record())
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) < 5 {
		return nil, fmt.Errorf("%s: unexpected probe output %q", h.Name(), out)
	}
	p := &hostProbe{HostDir: lines[0] == "1", ClusterDir: lines[1] == "1", NodeDir: lines[2] == "1", Record: lines[3] == "1"}
	if p.UID, err = strconv.Atoi(strings.TrimSpace(lines[4])); err != nil {
		return nil, fmt.Errorf("%s: id -u: %q", h.Name(), lines[4])
	}
	p.Listening = listeningPorts(strings.Join(lines[5:], "\n"))
	return p, nil
}

// listeningPorts parses /proc/net/tcp{,6} text into the set of local ports in state
// LISTEN (0A). Pure.
func listeningPorts(procNet string) map[int]bool {
	ports := map[int]bool{}
	for _, line := range strings.Split(procNet, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
			ports[int(p)] = true
		}
	}
	return ports
}

// createNodeDir records on h, then creates, node l's directory (mode 0700) and the host
// and cluster directories that probe p found missing. rec gets Created filled in. The
// record is written in the same shell command right after the missing parents (which it
// lives in) and before the node directory.
func createNodeDir(ctx context.Context, h host.Host, l hostLayout, p *hostProbe, rec *HostRecord) error {
	mkHost, mkCluster := "0", "0"
	rec.Created = nil
	if !p.HostDir {
		mkHost = "1"
		rec.Created = append(rec.Created, l.HostDir)
	}
	if !p.ClusterDir {
		mkCluster = "1"
		rec.Created = append(rec.Created, l.clusterDir())
	}
	rec.Created = append(rec.Created, l.nodeDir())
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	const script = `set -e
if [ "$5" = 1 ]; then mkdir -m 0755 "$1"; fi
if [ "$6" = 1 ]; then mkdir -m 0755 "$2"; fi
umask 077
printf %s "$7" | base64 -d > "$4.tmp"
mv -f "$4.tmp" "$4"
mkdir -m 0700 "$3"`
	_, err = shRun(ctx, h, script, l.HostDir, l.clusterDir(), l.nodeDir(), l.record(), mkHost, mkCluster,
		base64.StdEncoding.EncodeToString(append(b, '\n')))
	if err != nil {
		return fmt.Errorf("create %s on %s: %w", l.nodeDir(), h.Name(), err)
	}
	return nil
}

// startHostProcess starts argv on h, in one command: it removes the files in rm, then
// starts argv in its own session (it outlives the SSH session and habench) in directory
// dir with stdout and stderr appended to dir/mysqld.out, and returns its PID, its start
// ticks (/proc/PID/stat field 22 on h; 0 if it already exited) and the size mysqld.out
// had before (where this start's output begins).
func startHostProcess(ctx context.Context, h host.Host, dir string, rm []string, argv []string) (pid int, ticks uint64, outStart int64, err error) {
	return startHostProcessLog(ctx, h, dir, "mysqld.out", rm, argv)
}

// startHostProcessLog is startHostProcess with stdout and stderr appended to dir/logName
// (a file name in dir) instead of mysqld.out.
func startHostProcessLog(ctx context.Context, h host.Host, dir, logName string, rm []string, argv []string) (pid int, ticks uint64, outStart int64, err error) {
	const script = `cd "$1" || exit 1; log=$2; shift 2
n=$1; shift
while [ "$n" -gt 0 ]; do rm -f -- "$1"; shift; n=$((n-1)); done
if [ -f "$log" ]; then wc -c < "$log"; else echo 0; fi
setsid "$@" </dev/null >>"$log" 2>&1 &
echo $!
cat /proc/$!/stat 2>/dev/null || echo`
	args := append(append([]string{dir, logName, strconv.Itoa(len(rm))}, rm...), argv...)
	out, err := shRun(ctx, h, script, args...)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("start %s on %s: %w", argv[0], h.Name(), err)
	}
	lines := strings.SplitN(string(out), "\n", 3)
	if len(lines) < 3 {
		return 0, 0, 0, fmt.Errorf("start %s on %s: unexpected output %q", argv[0], h.Name(), out)
	}
	outStart, _ = strconv.ParseInt(strings.TrimSpace(lines[0]), 10, 64)
	pid, err = strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || pid <= 0 {
		return 0, 0, 0, fmt.Errorf("start %s on %s: no pid in %q", argv[0], h.Name(), out)
	}
	ticks, _ = parseStatTicks([]byte(lines[2]))
	return pid, ticks, outStart, nil
}

// hostStartTicks returns field 22 of /proc/PID/stat on h and whether the process is
// alive (not gone, not a zombie).
func hostStartTicks(ctx context.Context, h host.Host, pid int) (uint64, bool) {
	t, alive, _ := hostStat(ctx, h, pid)
	return t, alive
}

// hostStat reads pid's start time and liveness on h from /proc/PID/stat; err is the read's
// error (a *host.ExitError when the host said the file is not there: the process is gone).
func hostStat(ctx context.Context, h host.Host, pid int) (uint64, bool, error) {
	b, err := h.ReadFile(ctx, fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false, err
	}
	t, alive := parseStatTicks(b)
	return t, alive, nil
}

// parseStatTicks reads the start time (field 22) of a /proc/PID/stat text and whether
// the process is alive (state not Z or X). Pure.
func parseStatTicks(b []byte) (uint64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	t, err := strconv.ParseUint(f[19], 10, 64)
	return t, err == nil
}

// hostProcessOurs reports whether pid on h is still the process started at ticks.
func hostProcessOurs(ctx context.Context, h host.Host, pid int, ticks uint64) bool {
	if pid <= 0 {
		return false
	}
	t, alive := hostStartTicks(ctx, h, pid)
	return alive && (ticks == 0 || t == ticks)
}

// hostProcessExited reports whether pid, started at ticks (0: any start), has ended on h
// for certain: the host says /proc/PID/stat is not there, or it shows a zombie or another
// process. A read that fails otherwise (the host unreachable, ctx's end) says nothing:
// false, ask again.
func hostProcessExited(ctx context.Context, h host.Host, pid int, ticks uint64) bool {
	if pid <= 0 {
		return true
	}
	t, alive, err := hostStat(ctx, h, pid)
	if err != nil {
		var gone *host.ExitError
		return errors.As(err, &gone) || errors.Is(err, fs.ErrNotExist)
	}
	return !alive || (ticks != 0 && t != ticks)
}

// hostSignal sends sig ("TERM", "KILL") to pid on h when it is still the process started
// at ticks, and waits up to d for it to exit; true when it is gone.
func hostSignal(ctx context.Context, h host.Host, pid int, ticks uint64, sig string, d time.Duration) bool {
	if !hostProcessOurs(ctx, h, pid, ticks) {
		return true
	}
	shRun(ctx, h, `kill -s "$1" "$2" 2>/dev/null; true`, sig, strconv.Itoa(pid))
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !hostProcessOurs(ctx, h, pid, ticks) {
			return true
		}
		if ctx.Err() != nil {
			break
		}
	}
	return !hostProcessOurs(ctx, h, pid, ticks)
}

// hostProcessesUnder lists the PIDs on h whose command line names a path under dir
// (dir + "/"): the node's server and its helpers, also those whose PID was never recorded.
// With root not "", only processes chrooted there (/proc/PID/root), dir as they see it.
func hostProcessesUnder(ctx context.Context, h host.Host, dir, root string) ([]int, error) {
	return hostProcessesNaming(ctx, h, dir+"/", root)
}

// hostProcessesNaming lists the PIDs on h whose command line contains text (a path, or a
// directory with its trailing slash); with root not "", only processes chrooted there.
// One grep over every process's cmdline (not a process per process on the host: a host
// running a test suite has hundreds); grep's own, which names the pattern, is gone when
// the list is read, and the shell's gets text in two arguments, so it does not name it.
func hostProcessesNaming(ctx context.Context, h host.Host, text, root string) ([]int, error) {
	if text == "" {
		return nil, fmt.Errorf("%s: no text to find processes by", h.Name())
	}
	const script = `for f in $(grep -lsF -- "$1$2" /proc/[0-9]*/cmdline); do
  p=${f%/cmdline}
  [ -d "$p" ] || continue
  if [ -n "$3" ] && [ "$(readlink "$p/root" 2>/dev/null)" != "$3" ]; then continue; fi
  echo "${p#/proc/}"
done
true`
	out, err := shRun(ctx, h, script, text[:len(text)-1], text[len(text)-1:], root)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// killHostProcessesUnder SIGKILLs every process on h under node l's directory (as
// chrooted processes see it too), scanning again until a scan finds none (at most 5
// rounds): a helper that was starting during a scan (an SST script starting its rsync
// daemon after the server was killed) is found by the next one. Errors: scans that
// failed, processes that survived SIGKILL, and processes still there after the last round.
func killHostProcessesUnder(ctx context.Context, h host.Host, l hostLayout) []error {
	nd := l.nodeDir()
	var errs []error
	for round := 0; round < 5; round++ {
		pids, err := hostProcessesUnder(ctx, h, nd, "")
		if err != nil {
			return append(errs, err)
		}
		if sd := l.serverNodeDir(); sd != "" {
			more, err := hostProcessesUnder(ctx, h, sd, l.Root)
			if err != nil {
				return append(errs, err)
			}
			pids = append(pids, more...)
		}
		if len(pids) == 0 {
			return errs
		}
		for _, p := range pids {
			if !hostSignal(ctx, h, p, 0, "KILL", 5*time.Second) {
				errs = append(errs, fmt.Errorf("%s: pid %d (under %s) survived SIGKILL", h.Name(), p, nd))
			}
		}
		if len(errs) > 0 {
			return errs
		}
		time.Sleep(200 * time.Millisecond)
	}
	return append(errs, fmt.Errorf("%s: processes under %s kept appearing after 5 rounds of SIGKILL", h.Name(), nd))
}

// destroyHostNode removes what node l's record on h lists: it kills the recorded process
// (checked against its start ticks) and every process under the node directory (as
// chrooted processes see it too, for a root filesystem), removes
// the node directory and the record, and returns the parent directories the record says
// habench created (for removeEmptyDirs once every node is gone). A host without a record
// for the node has nothing of it: nil, nil (a node directory there is not habench's and
// stays). pid/ticks are the state file's view of the process (0: unknown).
func destroyHostNode(ctx context.Context, h host.Host, l hostLayout, pid int, ticks uint64) ([]string, error) {
	rec, err := readHostRecord(ctx, h, l)
	if errors.Is(err, errNoRecord) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, p := range [][2]uint64{{uint64(rec.PID), rec.StartTicks}, {uint64(pid), ticks}} {
		if p[0] > 0 && !hostSignal(ctx, h, int(p[0]), p[1], "KILL", 10*time.Second) {
			errs = append(errs, fmt.Errorf("%s: pid %d survived SIGKILL", h.Name(), p[0]))
		}
	}
	nd := l.nodeDir()
	owned := false
	var parents []string
	for _, c := range rec.Created {
		switch c {
		case nd:
			owned = true
		case l.clusterDir(), l.HostDir:
			parents = append(parents, c)
		}
	}
	if owned {
		errs = append(errs, killHostProcessesUnder(ctx, h, l)...)
		if _, err := h.Run(ctx, "rm", "-rf", "--one-file-system", "--", nd); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err // the record stays: a later destroy tries again
	}
	if _, err := h.Run(ctx, "rm", "-f", "--", l.record(), l.record()+".tmp"); err != nil {
		return nil, err
	}
	return parents, nil
}

// removeEmptyDirs removes dirs on h, longest path first, each only when empty (rmdir):
// the parents habench created, which another cluster's nodes may still use.
func removeEmptyDirs(ctx context.Context, h host.Host, dirs []string) {
	dirs = slices.Clone(dirs)
	slices.SortFunc(dirs, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	for _, d := range slices.Compact(dirs) {
		shRun(ctx, h, `rmdir "$1" 2>/dev/null; true`, d)
	}
}

// firstFilesOn returns, for each list of candidates, the first that is a regular file on
// h ("" for none), in one command.
func firstFilesOn(ctx context.Context, h host.Host, lists ...[]string) ([]string, error) {
	const script = `found=""
for a in "$@"; do
  if [ "$a" = "--" ]; then echo "=$found"; found=""; continue; fi
  if [ -z "$found" ] && [ -f "$a" ]; then found="$a"; fi
done`
	var args []string
	for _, l := range lists {
		args = append(append(args, l...), "--")
	}
	out, err := shRun(ctx, h, script, args...)
	if err != nil {
		return nil, err
	}
	var res []string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "="); ok {
			res = append(res, v)
		}
	}
	if len(res) != len(lists) {
		return nil, fmt.Errorf("%s: unexpected output %q", h.Name(), out)
	}
	return res, nil
}

// hostBinaries finds the server of flavor f that host h already has: the packaged one
// (/usr/sbin/mariadbd or mysqld) for a system installation, or BASEDIR/bin/... for a
// basedir one (the same path on every host), reads its version there, and finds the
// MariaDB datadir initialiser and the Galera library beside it. habench installs
// nothing: a host without the server is a *topology.FieldError naming the host.
func hostBinaries(ctx context.Context, h host.Host, inst topology.Installation, f topology.Flavor) (*Binaries, error) {
	b := &Binaries{Installation: inst, Flavor: f}
	fd := topology.FlavorOf(f)
	var cands []string
	switch inst.Kind {
	case topology.InstallSystem:
		cands = append(serverPaths(fd, "/usr/sbin"), serverPaths(fd, "/usr/bin")...)
	case topology.InstallBasedir:
		b.Basedir = inst.Path
		cands = serverPaths(fd, path.Join(inst.Path, "bin"), path.Join(inst.Path, "sbin"))
	case topology.InstallRootfs:
		b.Root = inst.Path
		cands = serverPaths(fd, "/usr/sbin")
	default:
		return nil, &topology.FieldError{Field: "installation.kind", Value: inst.Kind, Reason: "on hosts: system, basedir or rootfs"}
	}
	dir := "/usr"
	if b.Basedir != "" {
		dir = b.Basedir
	}
	var installDB []string
	for _, name := range []string{"mariadb-install-db", "mysql_install_db"} {
		installDB = append(installDB, path.Join(dir, "bin", name), path.Join(dir, "scripts", name), "/usr/bin/"+name)
	}
	var wsrep []string
	if b.Basedir != "" {
		wsrep = append(wsrep, path.Join(b.Basedir, "lib", "libgalera_smm.so"), path.Join(b.Basedir, "lib", "galera", "libgalera_smm.so"))
	}
	wsrep = append(wsrep, topology.DefaultWsrepProvider, "/usr/lib/galera-4/libgalera_smm.so", "/usr/lib64/galera-4/libgalera_smm.so", "/usr/lib64/galera/libgalera_smm.so")
	// Paths as the server sees them, looked for under the root filesystem when there is one.
	lists := [][]string{cands, installDB, wsrep}
	for i := range lists {
		lists[i] = slices.Clone(lists[i])
		for j := range lists[i] {
			lists[i][j] = b.HostPath(lists[i][j])
		}
	}
	found, err := firstFilesOn(ctx, h, lists...)
	if err != nil {
		return nil, err
	}
	for i := range found {
		if found[i] != "" && b.Root != "" {
			found[i] = "/" + strings.TrimPrefix(strings.TrimPrefix(found[i], b.Root), "/")
		}
	}
	b.Server, b.WsrepProvider = found[0], found[2]
	if b.Server == "" {
		return nil, &topology.FieldError{Field: "installation", Value: string(inst.Kind) + ":" + inst.Path,
			Reason: fmt.Sprintf("no %s server on %s (looked for %s); habench installs nothing on a host", f, h.Name(), strings.Join(lists[0], ", "))}
	}
	out, err := h.Run(ctx, b.hostArgv(b.Server, "--version")...)
	if err != nil {
		return nil, err
	}
	b.VersionText = strings.TrimSpace(string(out))
	if b.Version, err = topology.ParseVersion(strings.TrimPrefix(b.VersionText, b.Server)); err != nil {
		return nil, fmt.Errorf("%s: %s --version: %w", h.Name(), b.Server, err)
	}
	if !installedFlavor(b.VersionText, b.Server).Is(f) {
		return nil, &topology.FieldError{Field: "flavor", Value: f, Reason: fmt.Sprintf("%s on %s is %q", b.Server, h.Name(), b.VersionText)}
	}
	if fd.Install.InstallDB {
		b.InstallDB = found[1]
		if b.InstallDB == "" {
			return nil, &topology.FieldError{Field: "installation", Value: b.Server, Reason: "no mariadb-install-db beside it on " + h.Name()}
		}
	}
	return b, nil
}

// initDatadirArgv is the command that initialises dir/data (dir as the server sees it)
// with the host's server
// (MariaDB's mariadb-install-db, MySQL's mysqld --initialize-insecure), as root when
// asRoot (the ssh user is root: the server must be told to stay root).
func initDatadirArgv(b *Binaries, dir string, asRoot bool) []string {
	var argv []string
	if topology.FlavorOf(b.Flavor).Install.InstallDB {
		argv = []string{b.InstallDB, "--no-defaults", "--datadir=" + dir + "/data", "--tmpdir=" + dir + "/tmp", "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}
	} else {
		argv = []string{b.Server, "--no-defaults", "--initialize-insecure", "--datadir=" + dir + "/data", "--tmpdir=" + dir + "/tmp", "--log-error=" + dir + "/init.log"}
	}
	if b.Basedir != "" {
		argv = append(argv, "--basedir="+b.Basedir)
	}
	if asRoot {
		argv = append(argv, "--user=root")
	}
	return b.hostArgv(argv[0], argv[1:]...)
}

// hostArgv is the command line that runs bin (a path as the server sees it) with args on
// a host: chrooted into Root for a root filesystem.
func (b *Binaries) hostArgv(bin string, args ...string) []string {
	argv := append([]string{bin}, args...)
	if b.Root != "" {
		argv = append([]string{"chroot", b.Root}, argv...)
	}
	return argv
}

// prepareHostDir makes, in one command on h, node directory dir's tmp and data: an
// initialised datadir (initArgv, output in dir/init.log), or an empty one when initArgv
// is nil, tried twice (two initialisations at once on one machine have failed with
// "Unknown table 'mysql.tmp_user_sys'"); then writes files (name in dir -> content;
// mode 0600). The files travel on the command's standard input, one base64 line each
// read by the shell's own read and printf, never in an argument (the init file holds
// the admin password). The error carries the last error lines of init.log.
func prepareHostDir(ctx context.Context, h host.Host, dir string, initArgv []string, files map[string][]byte) error {
	script := `set -e
d="$1"; shift
umask 077
mkdir -p "$d/tmp"
`
	var stdin bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(files)) {
		script += fmt.Sprintf("IFS= read -r l; printf %%s \"$l\" | base64 -d > \"$d/%s\"\n", name)
		stdin.WriteString(base64.StdEncoding.EncodeToString(files[name]) + "\n")
	}
	script += "unset l\n"
	if initArgv == nil {
		script += `mkdir "$d/data"` + "\n"
	} else {
		script += `cd "$d"; "$@" >>init.log 2>&1 </dev/null || { rm -rf data; "$@" >>init.log 2>&1 </dev/null; } || { grep -i -E 'error|fail' init.log | tail -n 3 | tr '\n' ' '; exit 1; }` + "\n"
	}
	argv := append([]string{"sh", "-c", script, "sh", dir}, initArgv...)
	if out, err := host.RunInput(ctx, h, stdin.Bytes(), argv...); err != nil {
		if log := strings.TrimSpace(string(out)); log != "" {
			return fmt.Errorf("initialise the datadir in %s on %s: %s", dir, h.Name(), log)
		}
		return fmt.Errorf("prepare %s (datadir, option file): %w", dir, err)
	}
	return nil
}
