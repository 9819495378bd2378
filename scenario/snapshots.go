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
	return time.Second + time.Duration(float64(spec.Nodes)*snapshotBytes(o)/400e6*float64(time.Second))
}

// snapshotBytes is the size of a snapshot of o's data: about 250 bytes a row with its index.
func snapshotBytes(o workload.Options) float64 {
	return float64(o.Tables) * float64(o.TableSize) * 250
}

// EstimateSnapshotStream is copying a snapshot of o's data to one more of the user's
// hosts (a tar stream through habench's machine): one datadir at 100 MB/s (a 1 Gbit/s
// network), and 1 s.
func EstimateSnapshotStream(o workload.Options) time.Duration {
	return time.Second + time.Duration(snapshotBytes(o)/100e6*float64(time.Second))
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
// of an installation and shape makes the snapshot (a one-node deploy and prepare, on the
// first host for sandboxes on the user's hosts) and copies it, the later ones only copy
// it; on the user's hosts each host that has no copy yet gets one streamed
// (EstimateSnapshotStream).
func (p *Plan) estimateSnapshotPrepare(dep *Deployment) {
	dep.SnapKey = p.snapshotKey(dep.Spec)
	if dep.SnapKey == "" {
		return
	}
	dep.Prepare = EstimateSnapshotCopy(dep.Spec, p.Options)
	have, made := map[string]bool{}, false
	for _, d := range p.Deployments {
		if d.SnapKey == dep.SnapKey {
			made = true
			for _, h := range d.Spec.Hosts {
				have[h] = true
			}
		}
	}
	if !made {
		one := dep.Spec
		one.Kind, one.Nodes = topology.Single, 1
		dep.Prepare += EstimateDeploy(one) + EstimatePrepare(one, p.Options) + EstimateDestroy
		if len(dep.Spec.Hosts) > 0 {
			have[dep.Spec.Hosts[0]] = true
		}
	}
	for _, h := range dep.Spec.Hosts {
		if !have[h] {
			have[h] = true
			dep.Prepare += EstimateSnapshotStream(p.Options)
		}
	}
}

// DataShape is the shape of the data test's prepare makes with o, as snapshots record it.
func DataShape(test string, o workload.Options) cluster.DataShape {
	return cluster.DataShape(workload.DataShape(test, o))
}
