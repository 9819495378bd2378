package experiment

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// checkNamedSnapshot is the pre-flight of a snapshot the scenario names (snapshot:,
// --snapshot) for deployment d of installation bins: it exists, and was made with that
// installation and the data shape of each of d's cells to run. Errors are one line
// (*topology.FieldError on snapshot). Nothing to check without a named snapshot, or when
// d's deployments do not start from snapshots (cluster.SnapshotRefusal).
func checkNamedSnapshot(ctx context.Context, sb *cluster.Sandbox, plan *scenario.Plan, d *scenario.Deployment, bins *cluster.Binaries, torun func(*scenario.Cell) bool) error {
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
		if err := snap.Match(inst, scenario.DataShape(cell.Test, cell.Options)); err != nil {
			return fmt.Errorf("topology %s, cell %d: %w", d.Spec.Name, cell.Index, err)
		}
	}
	return nil
}

// deployFromSnapshot deploys sp with sb from the snapshot of its installation and the
// data shape of cell's options, making the snapshot first (a one-node deployment and a
// prepare) when there is none. A snapshot named in the scenario is used when it matches
// and refused in one line (field, both values) when it does not.
func (sw *sweepRun) deployFromSnapshot(ctx context.Context, sb *cluster.Sandbox, sp topology.Spec, cell *scenario.Cell) (*cluster.Cluster, *cluster.Snapshot, error) {
	bins, err := cluster.SpecBinaries(ctx, sp)
	if err != nil {
		return nil, nil, err
	}
	inst := cluster.InstallationOf(bins)
	shape := scenario.DataShape(cell.Test, cell.Options)
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
func (sw *sweepRun) makeSnapshot(ctx context.Context, sb *cluster.Sandbox, sp topology.Spec, cell *scenario.Cell, shape cluster.DataShape) (*cluster.Snapshot, error) {
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
