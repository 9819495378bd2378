package scenario

import (
	"fmt"
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
	if !p.Scenario.SnapshotsOn() || !Deploys(sp) || cluster.SnapshotRefusal(sp) != "" {
		return ""
	}
	shape := DataShape(p.Scenario.Workload.Test, p.Options)
	return fmt.Sprintf("%s|%s|%s|%s", sp.Flavor, sp.Installation.Kind, sp.Installation.Path, shape)
}

// estimateSnapshotPrepare sets dep's prepare estimate with snapshots: the first deployment
// of an installation and shape makes the snapshot (a one-node deploy and prepare) and
// copies it, the later ones only copy it.
func (p *Plan) estimateSnapshotPrepare(dep *Deployment) {
	dep.SnapKey = p.snapshotKey(dep.Spec)
	if dep.SnapKey == "" {
		return
	}
	copyD := EstimateSnapshotCopy(dep.Spec, p.Options)
	for _, d := range p.Deployments {
		if d.SnapKey == dep.SnapKey {
			dep.Prepare = copyD
			return
		}
	}
	one := dep.Spec
	one.Kind, one.Nodes = topology.Single, 1
	dep.Prepare = EstimateDeploy(one) + EstimatePrepare(one, p.Options) + EstimateDestroy + copyD
}

// DataShape is the shape of the data test's prepare makes with o, as snapshots record it.
func DataShape(test string, o workload.Options) cluster.DataShape {
	return cluster.DataShape(workload.DataShape(test, o))
}
