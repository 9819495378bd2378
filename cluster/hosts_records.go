package cluster

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/habench/habench/host"
	"github.com/habench/habench/topology"
)

// DestroyFromHosts removes cluster name from hosts without its state file (lost, or the
// cluster deployed by another habench): on each host (ssh destinations, with sp's ssh
// options; sp may be nil) it reads the records habench left under hostDir/name
// (NODE.habench.json, see HostRecord) and removes exactly what they list, as destroy
// does from the state: the recorded processes and every process under the node
// directory, the node directory, the record, then the parent directories habench created
// when empty. hostDir is the directory on the hosts (for a root filesystem installation,
// ROOT/HOST_DIR, where the records are). It returns one line per host for the command's
// output: what was removed, no record, or unreachable (nothing done there). Errors: a bad
// name (or "snapshots", the hosts' snapshot directory) or hostDir (*topology.FieldError),
// or what could not be removed on a reachable host (its record stays, so that destroy can
// be run again).
func (s *Store) DestroyFromHosts(ctx context.Context, name string, hosts []string, hostDir string, sp *topology.SSHSpec) ([]string, error) {
	if err := topology.ValidName(name); err != nil {
		return nil, err
	}
	if name == HostSnapshotsDir {
		return nil, &topology.FieldError{Field: "name", Value: name, Reason: "HOST_DIR/" + HostSnapshotsDir + " holds the data snapshots, not a cluster: habench snapshot rm NAME|--all --hosts ..."}
	}
	if err := checkHostDirArg(hostDir); err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return nil, &topology.FieldError{Field: "hosts", Value: "", Reason: "want at least one host"}
	}
	var dests []string
	for _, d := range hosts {
		if !slices.Contains(dests, d) {
			dests = append(dests, d)
		}
	}
	// One host after the other: hosts sharing the directory (network storage) see the
	// same records, and each is removed once.
	lines := make([]string, len(dests))
	errs := make([]error, len(dests))
	for i, dest := range dests {
		lines[i], errs[i] = destroyRecordsOn(ctx, sshHostFor(sp, dest), dest, name, path.Clean(hostDir))
	}
	return lines, errors.Join(errs...)
}

// destroyRecordsOn removes on h (destination dest) what the records of cluster name under
// hostDir list, and says what it did in one line.
func destroyRecordsOn(ctx context.Context, h host.Host, dest, name, hostDir string) (string, error) {
	dir := path.Join(hostDir, name)
	out, err := shRun(ctx, h, `cd "$1" 2>/dev/null || exit 0
for f in *.habench.json; do [ -f "$f" ] && printf '%s\n' "${f%.habench.json}"; done; true`, dir)
	var ce *host.ConnError
	if errors.As(err, &ce) {
		return fmt.Sprintf("%s: unreachable, nothing removed there (%v)", dest, err), nil
	}
	if err != nil {
		return fmt.Sprintf("%s: could not list %s", dest, dir), fmt.Errorf("%s: %w", dest, err)
	}
	nodes := strings.Fields(string(out))
	if len(nodes) == 0 {
		return fmt.Sprintf("%s: no habench record of %s under %s, nothing removed", dest, name, dir), nil
	}
	var removed, kept []string
	var parents []string
	var errs []error
	for _, node := range nodes {
		l := hostLayout{HostDir: hostDir, Cluster: name, Node: node}
		rec, err := readHostRecord(ctx, h, l)
		if err == nil && (rec.Cluster != name || rec.Node != node) {
			err = fmt.Errorf("%s names cluster %s node %s", l.record(), rec.Cluster, rec.Node)
		}
		if err != nil {
			kept = append(kept, node)
			errs = append(errs, fmt.Errorf("%s: node %s: %w", dest, node, err))
			continue
		}
		l.Root = rec.Root
		ps, err := destroyHostNode(ctx, h, l, 0, 0)
		if err != nil {
			kept = append(kept, node)
			errs = append(errs, fmt.Errorf("%s: node %s: %w", dest, node, err))
			continue
		}
		removed = append(removed, node)
		parents = append(parents, ps...)
	}
	removeEmptyDirs(ctx, h, parents)
	line := fmt.Sprintf("%s: removed %s of %s (from the records under %s)", dest, strings.Join(removed, ", "), name, dir)
	if len(removed) == 0 {
		line = fmt.Sprintf("%s: nothing removed of %s", dest, name)
	}
	if len(kept) > 0 {
		line += fmt.Sprintf("; kept %s (see the error)", strings.Join(kept, ", "))
	}
	return line, errors.Join(errs...)
}
