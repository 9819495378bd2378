package experiment

import (
	"context"
	"errors"
	"fmt"
	"github.com/habench/habench/schema"
	"io/fs"
	"slices"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/mysqlerr"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// checkSnapshots is the pre-flight of the snapshots deployment d of installation bins
// would start from: a snapshot the scenario names (snapshot:, --snapshot) exists, was
// made with that installation and the data shape of each of d's cells to run; that one,
// or with snapshots: true each one made before for a cell's shape, has its files as they
// were made (Store.VerifySnapshot: on every host with a copy). With snapshots: true a
// snapshot made by an older habench (cluster.Snapshot.Unchecked) is not checked but made
// again: notes says so, one line each. Errors are one line (*topology.FieldError on
// snapshot). Nothing to check when d does not start from a snapshot
// (cluster.SnapshotRefusal).
func checkSnapshots(ctx context.Context, sb *cluster.Store, plan *scenario.Plan, d *scenario.Deployment, bins *cluster.Binaries, torun func(*scenario.Cell) bool) (notes []string, err error) {
	name := plan.Scenario.Snapshot
	if d.SnapKey == "" || cluster.SnapshotRefusal(d.Spec) != "" {
		return nil, nil
	}
	inst := cluster.InstallationOf(bins)
	checked := map[string]bool{}
	for _, cell := range d.Cells {
		if !torun(cell) {
			continue
		}
		shape := scenario.DataShape(cell.Test, cell.Options)
		want := name
		if want == "" {
			want = cluster.SnapshotName(inst, shape)
		}
		snap, err := sb.LoadSnapshot(ctx, d.Spec, want)
		switch {
		case errors.Is(err, fs.ErrNotExist) && name == "":
			continue // made by the run
		case errors.Is(err, fs.ErrNotExist):
			return nil, &topology.FieldError{Field: "snapshot", Value: name, Reason: "no such snapshot (habench snapshot list)"}
		case err != nil:
			return nil, err
		}
		if err := snap.Match(inst, shape); err != nil {
			return nil, fmt.Errorf("topology %s, cell %d: %w", d.Spec.Name, cell.Index, err)
		}
		if checked[want] {
			continue
		}
		checked[want] = true
		if snap.Unchecked() && name == "" {
			notes = append(notes, remakeNote(snap))
			continue
		}
		if err := sb.VerifySnapshot(ctx, d.Spec, snap); err != nil {
			return nil, err
		}
	}
	return notes, nil
}

// DryRunSnapshots is the dry run's part of the run's pre-flight on snapshots (the run's
// checkSnapshots, on every deployment habench deploys with cells to run; resumed: those
// of file not done): a snapshot named that does not exist or does not fit, or one that is
// damaged, is the same one-line *topology.FieldError as the run's. notes are the lines a
// NOTE gives: a snapshot the run makes again (made by an older habench), and a deployment
// whose snapshots could not be checked here (its installation or hosts not reachable: the
// run's pre-flight reports it).
func DryRunSnapshots(ctx context.Context, sb *cluster.Store, plan *scenario.Plan, file *schema.SweepFile) (notes []string, err error) {
	torun := cellsToRun(file)
	for _, d := range plan.Deployments {
		sp := d.Spec
		if d.SnapKey == "" || sp.Cluster != "" || !scenario.Deploys(sp) || !slices.ContainsFunc(d.Cells, torun) {
			continue
		}
		bins, err := sb.SpecBinaries(ctx, sp)
		if err == nil {
			var n []string
			n, err = checkSnapshots(ctx, sb, plan, d, bins, torun)
			notes = append(notes, n...)
		}
		var fe *topology.FieldError
		switch {
		case errors.As(err, &fe):
			return nil, err
		case err != nil:
			notes = append(notes, fmt.Sprintf("the snapshots of topology %s were not checked: %v", sp.Name, err))
		}
	}
	return notes, nil
}

// snapshotSuspect is err, the failure of a cell whose deployment started from snapshot
// snap (nil: not from one) on spec, with the snapshot named when the server refused with
// a storage error (mysqlerr.Storage: a missing or corrupt table file): "ERR (data from
// snapshot NAME: it may be damaged in a way its file list does not show; remove it with
// `habench snapshot rm NAME`)". Other errors, and cells not from a snapshot, are err.
func snapshotSuspect(err error, snap *cluster.Snapshot, spec topology.Spec) error {
	if snap == nil || !mysqlerr.Storage(mysqlerr.Code(err)) {
		return err
	}
	return fmt.Errorf("%w (data from snapshot %s: it may be damaged in a way its file list does not show; %s)",
		err, snap.Name, cluster.RemoveAdvice(cluster.SnapshotRmCommand(spec, snap.Name)))
}

// remakeNote is the NOTE of a run with snapshots: true that makes snapshot snap again
// because it was made by an older habench (cluster.Snapshot.Unchecked).
func remakeNote(snap *cluster.Snapshot) string {
	return fmt.Sprintf("snapshot %s is %s, without the list of its files a deployment checks it by: it is made again", snap.Name, cluster.SnapshotUnchecked)
}

// deployFromSnapshot deploys sp with sb from the snapshot of its installation and the
// data shape of cell's options, making the snapshot first (a one-node deployment and a
// prepare) when there is none, or when the one there was made by an older habench and
// cannot be checked (with a NOTE). A snapshot named in the scenario is used when it
// matches and refused in one line (field, both values) when it does not.
func (sw *sweepRun) deployFromSnapshot(ctx context.Context, sb *cluster.Store, sp topology.Spec, cell *scenario.Cell) (*cluster.Cluster, *cluster.Snapshot, error) {
	bins, err := sb.SpecBinaries(ctx, sp)
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
	case err == nil && snap.Unchecked() && sw.r.Scenario.Snapshot == "":
		fmt.Fprintf(sw.out, "NOTE: %s\n", remakeNote(snap))
		if snap, err = sw.makeSnapshot(ctx, sb, sp, cell, shape); err != nil {
			return nil, nil, err
		}
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
func (sw *sweepRun) makeSnapshot(ctx context.Context, sb *cluster.Store, sp topology.Spec, cell *scenario.Cell, shape cluster.DataShape) (*cluster.Snapshot, error) {
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
