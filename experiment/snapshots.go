package experiment

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// SnapshotsOn reports whether the scenario's deployments start from data snapshots
// (snapshots: true, or a snapshot named; `habench run --snapshots`).
func (s *Scenario) SnapshotsOn() bool { return s.Snapshots || s.Snapshot != "" }

// EstimateSnapshotCopy is starting a deployment's nodes from a snapshot instead of a
// prepare: a copy of its datadir per node (at 400 MB/s, about 250 bytes a row with its
// index) and 1 s.
func EstimateSnapshotCopy(spec topology.Spec, o workload.Options) time.Duration {
	bytes := float64(spec.Nodes) * float64(o.Tables) * float64(o.TableSize) * 250
	return time.Second + time.Duration(bytes/400e6*float64(time.Second))
}

// snapshotKey identifies a deployment's snapshot in a plan: flavor, installation and data
// shape ("" when sp starts without one).
func (p *Plan) snapshotKey(sp topology.Spec) string {
	if !p.Scenario.SnapshotsOn() || !deploys(sp) || cluster.SnapshotRefusal(sp) != "" {
		return ""
	}
	shape := dataShape(p.Scenario.Workload.Test, p.Options)
	return fmt.Sprintf("%s|%s|%s|%s", sp.Flavor, sp.Installation.Kind, sp.Installation.Path, shape)
}

// estimateSnapshotPrepare sets dep's prepare estimate with snapshots: the first deployment
// of an installation and shape makes the snapshot (a one-node deploy and prepare) and
// copies it, the later ones only copy it.
func (p *Plan) estimateSnapshotPrepare(dep *Deployment) {
	dep.snapKey = p.snapshotKey(dep.Spec)
	if dep.snapKey == "" {
		return
	}
	copyD := EstimateSnapshotCopy(dep.Spec, p.Options)
	for _, d := range p.Deployments {
		if d.snapKey == dep.snapKey {
			dep.Prepare = copyD
			return
		}
	}
	one := dep.Spec
	one.Kind, one.Nodes = topology.Single, 1
	dep.Prepare = EstimateDeploy(one) + EstimatePrepare(one, p.Options) + EstimateDestroy + copyD
}

// dataShape is the shape of the data test's prepare makes with o, as snapshots record it.
func dataShape(test string, o workload.Options) cluster.DataShape {
	return cluster.DataShape(workload.DataShape(test, o))
}

// checkNamedSnapshot is the pre-flight of a snapshot the scenario names (snapshot:,
// --snapshot) for deployment d of installation bins: it exists, and was made with that
// installation and the data shape of each of d's cells to run. Errors are one line
// (*topology.FieldError on snapshot). Nothing to check without a named snapshot, or when
// d's deployments do not start from snapshots (cluster.SnapshotRefusal).
func checkNamedSnapshot(ctx context.Context, sb *cluster.Sandbox, plan *Plan, d *Deployment, bins *cluster.Binaries, torun func(*Cell) bool) error {
	name := plan.Scenario.Snapshot
	if name == "" || cluster.SnapshotRefusal(d.Spec) != "" {
		return nil
	}
	snap, err := sb.LoadSnapshot(ctx, d.Spec, name)
	if errors.Is(err, fs.ErrNotExist) {
		return &topology.FieldError{Field: "snapshot", Value: name, Reason: "no such snapshot (habench snapshot list)"}
	}
	if err != nil {
		return err
	}
	inst := cluster.InstallationOf(bins)
	for _, cell := range d.Cells {
		if !torun(cell) {
			continue
		}
		if err := snap.Match(inst, dataShape(cell.Test, cell.Options)); err != nil {
			return fmt.Errorf("topology %s, cell %d: %w", d.Spec.Name, cell.Index, err)
		}
	}
	return nil
}

// deployFromSnapshot deploys sp with sb from the snapshot of its installation and the
// data shape of cell's options, making the snapshot first (a one-node deployment and a
// prepare) when there is none. A snapshot named in the scenario is used when it matches
// and refused in one line (field, both values) when it does not.
func (sw *sweepRun) deployFromSnapshot(ctx context.Context, sb *cluster.Sandbox, sp topology.Spec, cell *Cell) (*cluster.Cluster, *cluster.Snapshot, error) {
	bins, err := cluster.SpecBinaries(ctx, sp)
	if err != nil {
		return nil, nil, err
	}
	inst := cluster.InstallationOf(bins)
	shape := dataShape(cell.Test, cell.Options)
	name := sw.r.Scenario.Snapshot
	if name == "" {
		name = cluster.SnapshotName(inst, shape)
	}
	snap, err := sb.LoadSnapshot(ctx, sp, name)
	switch {
	case err == nil:
		if err := snap.Match(inst, shape); err != nil {
			return nil, nil, err
		}
	case errors.Is(err, fs.ErrNotExist) && sw.r.Scenario.Snapshot == "":
		if snap, err = sw.makeSnapshot(ctx, sb, sp, cell, shape); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, err
	}
	fmt.Fprintf(sw.out, "%s\n", snap.Describe())
	c, err := sb.DeployFromSnapshot(ctx, sp, snap)
	return c, snap, err
}

// makeSnapshot prepares cell's tables on a one-node deployment of sp's installation and
// keeps them as a snapshot of shape.
func (sw *sweepRun) makeSnapshot(ctx context.Context, sb *cluster.Sandbox, sp topology.Spec, cell *Cell, shape cluster.DataShape) (*cluster.Snapshot, error) {
	wl, err := workload.Lookup(cell.Test)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(sw.out, "making a data snapshot (one %s server, prepare %s)\n", sp.Flavor, shape)
	prep := func(ctx context.Context, c *cluster.Cluster) error {
		target, err := ClusterTarget(c, "sbtest", nil)
		if err != nil {
			return err
		}
		if err := wl.Prepare(ctx, target, cell.Options, sw.out); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		return nil
	}
	return sb.MakeSnapshot(ctx, sp, snapshotServerName(sp.Name), shape, prep)
}

// snapshotServerName is the name of the one-node deployment that makes a snapshot for
// deployment name: its first 8 characters and "sx" (names have at most 10).
func snapshotServerName(name string) string {
	return name[:min(len(name), 8)] + "sx"
}
