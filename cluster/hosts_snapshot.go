package cluster

// Data snapshots on the user's hosts (the hosts provider's SnapshotStore): a snapshot is
// made once on the first host, kept there under HOST_DIR/snapshots/NAME (snapshot.json
// and data/, as on this machine), copied to every other host of a deployment that needs
// it by streaming a tar through this machine, and each node on a host starts from a
// local copy of it. Like a node directory, a snapshot directory is recorded on its host
// (HOST_DIR/snapshots/NAME.habench.json, a HostRecord of "cluster" snapshots) before it
// is created, so that `habench snapshot list|rm --hosts` finds and removes exactly
// those. A cluster's destroy leaves snapshots alone: they are not the cluster's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// HostSnapshotsDir is the directory under HOST_DIR where a host keeps its snapshots
// (and their records); no cluster may have this name on hosts.
const HostSnapshotsDir = "snapshots"

// snapshotLayout is where snapshot name lives on a host with habench directory hostDir
// (as the host sees it): HOST_DIR/snapshots/NAME, its record beside it.
func snapshotLayout(hostDir, name string) hostLayout {
	return hostLayout{HostDir: hostDir, Cluster: HostSnapshotsDir, Node: name}
}

// hostsSnapshotSpec is spec with its defaults and absolute ssh paths, and the first host
// (where snapshots are made and looked up) over SSH.
func hostsSnapshotSpec(spec topology.Spec) (topology.Spec, *host.SSH, error) {
	spec.Defaults()
	var err error
	if spec.SSH, err = absSSHSpec(spec.SSH); err != nil {
		return spec, nil, err
	}
	if len(spec.Hosts) == 0 {
		return spec, nil, &topology.FieldError{Field: "hosts", Value: "", Reason: "want at least one host"}
	}
	return spec, sshHostFor(spec.SSH, spec.Hosts[0]), nil
}

// LoadSnapshot is the hosts provider's SnapshotStore.LoadSnapshot: snapshot name on
// spec's first host, complete (its snapshot.json written).
func (hostsProvider) LoadSnapshot(ctx context.Context, spec topology.Spec, name string) (*Snapshot, error) {
	if err := validSnapshotName(name); err != nil {
		return nil, err
	}
	spec, h, err := hostsSnapshotSpec(spec)
	if err != nil {
		return nil, err
	}
	return readHostSnapshot(ctx, h, hostsRootDir(spec), name)
}

// readHostSnapshot reads snapshot name's snapshot.json on h: an error wrapping
// fs.ErrNotExist when there is none (or its copy is incomplete).
func readHostSnapshot(ctx context.Context, h host.Host, hostDir, name string) (*Snapshot, error) {
	dir := snapshotLayout(hostDir, name).nodeDir()
	p := path.Join(dir, "snapshot.json")
	out, err := shRun(ctx, h, `test -f "$1" || exit 3; cat "$1"`, p)
	var ee *host.ExitError
	if errors.As(err, &ee) && ee.Code == 3 {
		return nil, fmt.Errorf("snapshot %s on %s: %w (see `habench snapshot list --hosts`)", name, h.Name(), fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	var s Snapshot
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", p, h.Name(), err)
	}
	s.dir = dir
	return &s, nil
}

// MakeSnapshot is the hosts provider's SnapshotStore.MakeSnapshot: it records and creates
// the snapshot's directory on spec's first host, deploys there a single node named name
// with the hosts' server, runs prep on it (over TCP), forgets the node's identity, stops
// it and moves its datadir into the snapshot directory without its identity files, then
// writes snapshot.json (last: a snapshot without it is incomplete). The node is destroyed
// in any case; the snapshot directory too when the snapshot could not be made.
func (hostsProvider) MakeSnapshot(ctx context.Context, s *Store, spec topology.Spec, name string, shape DataShape, prep func(context.Context, *Cluster) error) (_ *Snapshot, err error) {
	spec, h, err := hostsSnapshotSpec(spec)
	if err != nil {
		return nil, err
	}
	bins, err := s.SpecBinaries(ctx, spec)
	if err != nil {
		return nil, err
	}
	inst := InstallationOf(bins)
	sname := SnapshotName(inst, shape)
	unlock, err := lockSnapshot(sname)
	if err != nil {
		return nil, err
	}
	defer unlock()
	l := snapshotLayout(hostsRootDir(spec), sname)
	if old, err := readHostSnapshot(ctx, h, l.HostDir, sname); err == nil && !old.Unchecked() {
		return old, nil // an unchecked one is made again, in its directory (claimHostSnapshotDir)
	}
	// The snapshot's directory first: its record then owns the host directory habench
	// creates, which the snapshot server's destroy leaves while the snapshot is there.
	if err := claimHostSnapshotDir(ctx, h, l); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if _, rerr := removeHostSnapshot(cctx, h, l); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	keep := func(ctx context.Context, c *Cluster, snap *Snapshot) error { return s.keepHostDatadir(ctx, c, snap, l) }
	return s.snapshotFromServer(ctx, snapshotServerSpec(spec, name, bins), &Snapshot{Name: sname, Installation: inst, Shape: shape}, prep, keep)
}

// snapshotServerSpec is the one-node deployment that makes a snapshot for hosts spec: a
// single node named name on spec's first host, with the Galera options of
// snapshotGaleraOptions (its group communication on 127.0.0.1, SQL port + 10000, so that
// it takes no Galera port of the host).
func snapshotServerSpec(spec topology.Spec, name string, bins *Binaries) topology.Spec {
	one := topology.Spec{Name: name, Kind: topology.Single, Nodes: 1, Flavor: spec.Flavor, Installation: spec.Installation,
		Credentials: spec.Credentials, Provider: topology.ProviderHosts, HostsSpec: spec.HostsSpec}
	one.Hosts, one.SSH = spec.Hosts[:1], spec.SSH
	one.Options = snapshotGaleraOptions(bins)
	if one.Options != nil {
		one.Options["wsrep_provider_options"] = "gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(spec.BasePort+10000)
	}
	return one
}

// claimHostSnapshotDir makes snapshot directory l on h habench's and empty: recorded,
// then created (createNodeDir), when it is not there; emptied when its record is there
// (an incomplete copy, or one made again). A directory there without habench's record
// is refused (*topology.FieldError on host_dir): habench touches nothing it did not make.
func claimHostSnapshotDir(ctx context.Context, h host.Host, l hostLayout) error {
	p, err := probeHost(ctx, h, l)
	if err != nil {
		return err
	}
	if !p.Record {
		if p.NodeDir {
			return &topology.FieldError{Field: "host_dir", Value: l.HostDir, Reason: fmt.Sprintf("%s exists on %s and habench did not create it", l.nodeDir(), h.Name())}
		}
		rec := &HostRecord{Cluster: l.Cluster, Node: l.Node, Controller: controllerName(), Time: time.Now().UTC()}
		return createNodeDir(ctx, h, l, p, rec)
	}
	rec, err := readHostRecord(ctx, h, l)
	if err != nil {
		return err
	}
	if rec.Cluster != l.Cluster || rec.Node != l.Node || !slices.Contains(rec.Created, l.nodeDir()) {
		return fmt.Errorf("%s on %s does not record snapshot %s", l.record(), h.Name(), l.Node)
	}
	_, err = shRun(ctx, h, `rm -rf --one-file-system -- "$1" && mkdir -m 0700 "$1"`, l.nodeDir())
	return err
}

// keepHostDatadir forgets c's single node's identity, stops it cleanly and moves its
// datadir into snapshot directory l on its host, removes the identity files there
// (identityFiles) and writes snap's snapshot.json last.
func (s *Store) keepHostDatadir(ctx context.Context, c *Cluster, snap *Snapshot, l hostLayout) error {
	n := c.Nodes[0]
	if err := forgetIdentity(ctx, c, n); err != nil {
		return err
	}
	if err := s.StopNode(c, n.Name); err != nil {
		return fmt.Errorf("stop snapshot server: %w", err)
	}
	h := c.hostsSSH(n)
	src := path.Join(n.Dir, "data")
	if c.Spec.Options["wsrep_on"] == "ON" {
		p := path.Join(src, "grastate.dat")
		b, err := h.ReadFile(ctx, p)
		if err != nil {
			return fmt.Errorf("%s on %s: %w", p, h.Name(), err)
		}
		if snap.GaleraPosition, err = parseGaleraPosition(p+" on "+h.Name(), b); err != nil {
			return err
		}
	}
	// The identity files are the fixed patterns of identityFiles, expanded by the shell in
	// the snapshot's datadir.
	script := `set -e
mv "$1" "$2/data"
(cd "$2/data" && rm -rf -- ` + strings.Join(identityFiles, " ") + `)`
	if _, err := shRun(ctx, h, script, src, l.nodeDir()); err != nil {
		return fmt.Errorf("snapshot %s on %s: %w", snap.Name, h.Name(), err)
	}
	files, err := hostSnapshotFiles(ctx, h, path.Join(l.nodeDir(), "data"))
	if err != nil {
		return fmt.Errorf("snapshot %s on %s: %w", snap.Name, h.Name(), err)
	}
	snap.Files, snap.Created = files, time.Now().UTC()
	b, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		return err
	}
	script = `set -e
umask 022
cat > "$1/snapshot.json.tmp"
mv -f "$1/snapshot.json.tmp" "$1/snapshot.json"`
	if _, err := host.RunInput(ctx, h, append(b, '\n'), "sh", "-c", script, "sh", l.nodeDir()); err != nil {
		return fmt.Errorf("snapshot %s on %s: %w", snap.Name, h.Name(), err)
	}
	snap.dir = l.nodeDir()
	return nil
}

// hostSnapshotFiles lists data directory datadir on h as listSnapshotFiles does here
// (hostSnapshotFilesScript); nil, nil when it is not there.
func hostSnapshotFiles(ctx context.Context, h host.Host, datadir string) ([]SnapshotFile, error) {
	out, err := shRun(ctx, h, hostSnapshotFilesScript, datadir)
	var ee *host.ExitError
	if errors.As(err, &ee) && ee.Code == 3 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", datadir, err)
	}
	return parseHostSnapshotFiles(string(out))
}

// verifyHostSnapshot checks snap's copy in directory l on h (ssh destination dest of
// spec) against its file list (Snapshot.checkFiles): the error names dest and, on spec's
// first host (where the snapshot was made, the source of the copies), the command that
// removes the snapshot from spec's hosts; on another host, the command that removes that
// host's copy only (the next deployment copies it there again from the first).
func verifyHostSnapshot(ctx context.Context, h host.Host, dest string, l hostLayout, snap *Snapshot, spec topology.Spec) error {
	have, err := hostSnapshotFiles(ctx, h, path.Join(l.nodeDir(), "data"))
	if err != nil {
		return fmt.Errorf("snapshot %s on %s: %w", snap.Name, h.Name(), err)
	}
	fix := RemoveAdvice(hostSnapshotRm(snap.Name, spec.Hosts, l.HostDir))
	if dest != spec.Hosts[0] {
		fix = fmt.Sprintf("remove %s's copy with `%s` (the next deployment copies it there again from %s)", dest, hostSnapshotRm(snap.Name, []string{dest}, l.HostDir), spec.Hosts[0])
	}
	return snap.checkFiles(have, " on "+dest, fix)
}

// VerifySnapshot is the hosts provider's SnapshotStore.VerifySnapshot: snap on spec's
// first host, and the copy on every other host of spec that has one of it (the same
// snapshot.json), all at once (checkHostCopies); a host without a copy gets one at the
// deploy, checked then.
func (hostsProvider) VerifySnapshot(ctx context.Context, spec topology.Spec, snap *Snapshot) error {
	spec, _, err := hostsSnapshotSpec(spec)
	if err != nil {
		return err
	}
	_, err = checkHostCopies(ctx, spec, snapshotLayout(hostsRootDir(spec), snap.Name), snap)
	return err
}

// checkHostCopies checks snap (directory l) on spec's first host and on each other host of
// spec with a copy of it, the hosts at once, and returns the hosts that have no copy
// (snapshotCopyHosts' order). The error is that of the first host, in spec's order, that
// fails.
func checkHostCopies(ctx context.Context, spec topology.Spec, l hostLayout, snap *Snapshot) ([]string, error) {
	dests := append([]string{spec.Hosts[0]}, snapshotCopyHosts(spec)...)
	errs := make([]error, len(dests))
	lacks := make([]bool, len(dests))
	var wg sync.WaitGroup
	for i, dest := range dests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sshHostFor(spec.SSH, dest)
			if i > 0 {
				have, err := readHostSnapshot(ctx, h, l.HostDir, snap.Name)
				if err != nil || !have.Created.Equal(snap.Created) {
					lacks[i] = true // no copy (or another one): the deploy streams it there
					return
				}
			}
			errs[i] = verifyHostSnapshot(ctx, h, dest, l, snap, spec)
		}()
	}
	wg.Wait()
	var missing []string
	for i, dest := range dests {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if lacks[i] {
			missing = append(missing, dest)
		}
	}
	return missing, nil
}

// snapshotCopyHosts are the hosts of spec other than the first with a node of spec: those
// a deployment from a snapshot copies it to.
func snapshotCopyHosts(spec topology.Spec) []string {
	done := []string{spec.Hosts[0]}
	var out []string
	for i := 1; i <= spec.Nodes; i++ {
		hi, _ := spec.HostOf(i)
		if dest := spec.Hosts[hi]; !slices.Contains(done, dest) {
			done = append(done, dest)
			out = append(out, dest)
		}
	}
	return out
}

// DeployFromSnapshot is the hosts provider's SnapshotStore.DeployFromSnapshot: snap's
// files are checked on spec's first host and on the other hosts with a copy
// (checkHostCopies), snap is copied to every other host with a node of spec that has no
// complete copy of it (copyHostSnapshot) and checked there, then spec is deployed with each
// node's datadir a local copy of its host's (prepareHostNode).
func (hostsProvider) DeployFromSnapshot(ctx context.Context, s *Store, spec topology.Spec, snap *Snapshot) (*Cluster, error) {
	spec, src, err := hostsSnapshotSpec(spec)
	if err != nil {
		return nil, err
	}
	l := snapshotLayout(hostsRootDir(spec), snap.Name)
	missing, err := checkHostCopies(ctx, spec, l, snap)
	if err != nil {
		return nil, err
	}
	for _, dest := range missing {
		h := sshHostFor(spec.SSH, dest)
		if err := copyHostSnapshot(ctx, src, h, l, snap); err != nil {
			return nil, err
		}
		if err := verifyHostSnapshot(ctx, h, dest, l, snap, spec); err != nil {
			return nil, err
		}
	}
	s.memo() // the copy shares the store's installations
	sb := *s
	sb.snapshot = snap
	return sb.Provide(ctx, spec)
}

// copyHostSnapshot makes sure dst has a complete copy of snap (directory l on src and
// dst): nothing to do when dst's snapshot.json is snap's (copied before, or the hosts
// share the directory); else the directory is claimed (recorded first) and src's
// streamed into it (copyHostDir, snapshot.json last) and checked.
func copyHostSnapshot(ctx context.Context, src, dst host.Host, l hostLayout, snap *Snapshot) error {
	have, err := readHostSnapshot(ctx, dst, l.HostDir, snap.Name)
	switch {
	case err == nil && have.Created.Equal(snap.Created):
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err // not proof that it lacks the copy (it may be src's own directory)
	}
	if err := claimHostSnapshotDir(ctx, dst, l); err != nil {
		return err
	}
	if err := copyHostDir(ctx, src, l.nodeDir(), dst, l.nodeDir(), "data", "snapshot.json"); err != nil {
		return fmt.Errorf("copy snapshot %s to %s: %w", snap.Name, dst.Name(), err)
	}
	have, err = readHostSnapshot(ctx, dst, l.HostDir, snap.Name)
	if err != nil {
		return fmt.Errorf("copy snapshot %s to %s: %w", snap.Name, dst.Name(), err)
	}
	if !have.Created.Equal(snap.Created) {
		return fmt.Errorf("copy snapshot %s to %s: created %s there, %s on %s", snap.Name, dst.Name(), have.Created, snap.Created, src.Name())
	}
	return nil
}

// streamer is a host that streams a command's input and output (host.SSH).
type streamer interface {
	host.Host
	Stream(ctx context.Context, stdin io.Reader, stdout io.Writer, argv ...string) error
}

// copyHostDir copies entries (in that order) of directory srcDir on src into dstDir on
// dst (which exists), as one tar stream through this machine: `tar -c` on src, `tar -x` on
// dst, the data on the commands' standard input and output, never in arguments. The
// entries are extracted in order, so the last one is written only when the others are.
func copyHostDir(ctx context.Context, src host.Host, srcDir string, dst host.Host, dstDir string, entries ...string) error {
	from, ok1 := src.(streamer)
	to, ok2 := dst.(streamer)
	if !ok1 || !ok2 {
		return fmt.Errorf("copy %s from %s to %s: the hosts cannot stream", srcDir, src.Name(), dst.Name())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := from.Stream(ctx, nil, pw, append([]string{"tar", "-C", srcDir, "-c", "--"}, entries...)...)
		pw.CloseWithError(err)
		if err != nil {
			cancel()
		}
		errc <- err
	}()
	err := to.Stream(ctx, pr, nil, "tar", "-C", dstDir, "-x", "-p")
	pr.CloseWithError(errors.New("the receiving tar ended"))
	if err != nil {
		cancel()
	}
	serr := <-errc
	if serr != nil {
		return fmt.Errorf("tar on %s: %w", src.Name(), serr)
	}
	if err != nil {
		return fmt.Errorf("tar on %s: %w", dst.Name(), err)
	}
	return nil
}

// removeHostSnapshot removes snapshot directory l on h by its record (destroyHostNode),
// then the parent directories the record says habench created, when empty. false when h
// has no record of it.
func removeHostSnapshot(ctx context.Context, h host.Host, l hostLayout) (bool, error) {
	rec, err := readHostRecord(ctx, h, l)
	if errors.Is(err, errNoRecord) {
		return false, nil
	}
	if err == nil && (rec.Cluster != l.Cluster || rec.Node != l.Node) {
		err = fmt.Errorf("%s on %s names %s/%s", l.record(), h.Name(), rec.Cluster, rec.Node)
	}
	if err != nil {
		return false, err
	}
	parents, err := destroyHostNode(ctx, h, l, 0, 0)
	if err != nil {
		return true, err
	}
	removeEmptyDirs(ctx, h, parents)
	return true, nil
}

// HostSnapshot is one snapshot directory on one host, as `habench snapshot list --hosts`
// shows it: Snapshot nil when its copy is incomplete (no snapshot.json); Size in bytes
// (du), -1 when unknown; State that copy's files against the snapshot's list ("ok",
// SnapshotUnchecked, "damaged: ..." as Snapshot.LocalState; "" without Snapshot).
type HostSnapshot struct {
	Dest     string
	Name     string
	Snapshot *Snapshot
	Size     int64
	State    string
}

// ListHostSnapshots lists the snapshots habench recorded under hostDir/snapshots on each
// host (ssh destinations, with sp's options; hostDir as the hosts see it, ROOT/HOST_DIR
// for a root filesystem installation), host by host in order, by name, each copy's files
// checked against its list (State). Errors name the host; an unreachable host is an
// error.
func ListHostSnapshots(ctx context.Context, hosts []string, hostDir string, sp *topology.SSHSpec) ([]HostSnapshot, error) {
	if err := checkHostDirArg(hostDir); err != nil {
		return nil, err
	}
	sp, err := absSSHSpec(sp)
	if err != nil {
		return nil, err
	}
	var out []HostSnapshot
	for _, dest := range hosts {
		h := sshHostFor(sp, dest)
		names, err := hostSnapshotNames(ctx, h, hostDir)
		if err != nil {
			return out, fmt.Errorf("%s: %w", dest, err)
		}
		for _, name := range names {
			hs := HostSnapshot{Dest: dest, Name: name, Size: -1}
			if s, err := readHostSnapshot(ctx, h, hostDir, name); err == nil {
				hs.Snapshot = s
				hs.State = "damaged: cannot list data/"
				if have, err := hostSnapshotFiles(ctx, h, path.Join(s.dir, "data")); err == nil {
					hs.State = s.stateOf(have)
				}
			}
			if o, err := shRun(ctx, h, `du -sk -- "$1" | cut -f1`, snapshotLayout(hostDir, name).nodeDir()); err == nil {
				if k, err := strconv.ParseInt(strings.TrimSpace(string(o)), 10, 64); err == nil {
					hs.Size = k * 1024
				}
			}
			out = append(out, hs)
		}
	}
	return out, nil
}

// hostSnapshotNames are the names of the snapshot records under hostDir/snapshots on h.
func hostSnapshotNames(ctx context.Context, h host.Host, hostDir string) ([]string, error) {
	out, err := shRun(ctx, h, `cd "$1" 2>/dev/null || exit 0
for f in *.habench.json; do [ -f "$f" ] && printf '%s\n' "${f%.habench.json}"; done; true`, path.Join(hostDir, HostSnapshotsDir))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// RemoveHostSnapshots removes snapshots names (every recorded one when names is empty)
// from each host by their records there, one host after the other (hosts sharing the
// directory see the same records, each removed once), and returns one line per host.
// Errors: a bad name or hostDir (*topology.FieldError), what could not be removed on a
// host (its record stays), an unreachable host.
func RemoveHostSnapshots(ctx context.Context, names, hosts []string, hostDir string, sp *topology.SSHSpec) ([]string, error) {
	if err := checkHostDirArg(hostDir); err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := validSnapshotName(n); err != nil {
			return nil, err
		}
	}
	sp, err := absSSHSpec(sp)
	if err != nil {
		return nil, err
	}
	var lines []string
	var errs []error
	for _, dest := range hosts {
		h := sshHostFor(sp, dest)
		todo := names
		if len(todo) == 0 {
			if todo, err = hostSnapshotNames(ctx, h, hostDir); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", dest, err))
				continue
			}
		}
		var removed, none []string
		for _, name := range todo {
			ok, err := removeHostSnapshot(ctx, h, snapshotLayout(hostDir, name))
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: snapshot %s: %w", dest, name, err))
			case ok:
				removed = append(removed, name)
			default:
				none = append(none, name)
			}
		}
		line := dest + ": removed " + strings.Join(removed, ", ")
		if len(removed) == 0 {
			line = dest + ": no snapshot removed"
		}
		if len(none) > 0 {
			line += "; no record of " + strings.Join(none, ", ")
		}
		lines = append(lines, line)
	}
	return lines, errors.Join(errs...)
}

// checkHostDirArg refuses a host directory that is not absolute or is /.
func checkHostDirArg(hostDir string) error {
	if !path.IsAbs(hostDir) || path.Clean(hostDir) == "/" {
		return &topology.FieldError{Field: "host_dir", Value: hostDir, Reason: "want an absolute directory below /"}
	}
	return nil
}
