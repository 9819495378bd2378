package scenario

import (
	"fmt"
	"time"

	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// LongRun is the estimated total above which a run is refused without confirmation
// (experiment.ScenarioRun.YesLong, habench run --yes-long) and a dry run warns.
const LongRun = 24 * time.Hour

// LongWarning is the WARNING for a plan whose cells to run (all when run is nil) are
// estimated over LongRun, "" otherwise: the first line of a dry run and of a run.
func (p *Plan) LongWarning(run func(*Cell) bool) string {
	total, _, _ := p.Estimate(run)
	if total <= LongRun {
		return ""
	}
	return fmt.Sprintf("WARNING: estimated %s (%.1f days), over %.0f h: a run needs --yes-long", FormatDuration(total), total.Hours()/24, LongRun.Hours())
}

// The estimate model. Deploy, prepare and per-cell overheads were measured on the 2-core
// development VM (MariaDB 10.11 system packages, MySQL 9.7 in the root filesystem, network
// namespaces); Group Replication and Galera from their deploy times measured there. They are
// rough on purpose: the progress line rescales the remaining estimate by how the finished
// part compared with its estimate.
var (
	// EstimatePerCell is what every cell adds to warmup + time: inspection, catch-up
	// wait, final reads and results.
	EstimatePerCell = 2 * time.Second
	// EstimateLinks is the round-trip probing before and after applying links.
	EstimateLinks = 4 * time.Second
	// EstimateDropCaches is sync + drop_caches.
	EstimateDropCaches = time.Second
	// EstimateDestroy is one cluster's destroy.
	EstimateDestroy = time.Second
)

// EstimateDeploy is the deploy time of spec: the kind's estimate (galera 3 s + 3 s per
// node, group 5 s + 3 s per node), else the flavor's (topology.FlavorEstimates: MariaDB
// 0.5 s + 0.6 s per node, MySQL 1 s + 2.5 s per node); 1 s to load or register an existing
// cluster.
func EstimateDeploy(spec topology.Spec) time.Duration {
	n := time.Duration(spec.Nodes)
	def := topology.KindOf(spec.Kind)
	switch {
	case !Deploys(spec):
		return time.Second
	case def.Deploy != nil:
		base, per := def.Deploy(spec)
		return base + n*per
	}
	e := topology.FlavorEstimatesOf(spec.Flavor)
	return e.DeployBase + n*e.DeployPerNode
}

// EstimatePrepare is one prepare of o's tables: 1 s + rows at the flavor's rate
// (topology.FlavorEstimates: MariaDB 120k rows/s on one node, 50k rows/s with replicas
// applying on the same machine; MySQL 85k and 28k rows/s).
func EstimatePrepare(spec topology.Spec, o workload.Options) time.Duration {
	e := topology.FlavorEstimatesOf(spec.Flavor)
	rate := e.PrepareRows
	if spec.Nodes > 1 {
		rate = e.PrepareRowsReplicated
	}
	return time.Second + time.Duration(float64(o.Tables)*float64(o.TableSize)/rate*float64(time.Second))
}

// EstimateRestart is a restart of every node: the kind's per-node time (3 s per Galera
// node, IST; 9 s per group member, measured on MySQL 9.7: a clean shutdown takes 6 s, of
// which 3 s leaving the group, then 2-3 s to start and rejoin), else the flavor's
// (1.5 s per node on MariaDB, 3 s per node on MySQL: clean shutdown, start, replicas
// reconnected).
func EstimateRestart(spec topology.Spec) time.Duration {
	if d := topology.KindOf(spec.Kind).RestartPerNode; d > 0 {
		return time.Duration(spec.Nodes) * d
	}
	return time.Duration(spec.Nodes) * topology.FlavorEstimatesOf(spec.Flavor).RestartPerNode
}

// EstimateCell is a cell's wall time: warmup + time + EstimatePerCell (times the
// objective's max_probes for a capacity search, and its failover run), plus EstimateLinks with links, a
// restart, EstimateDropCaches, a cleanup + prepare with reprepare, and two restarts of
// the proxy (EstimateProxyRestart: with the via value's checks, then its own) when the
// via value changes its checks. Events-limited
// runs (time 0) count only the overheads.
func (p *Plan) EstimateCell(c *Cell) time.Duration {
	d := c.Options.Warmup + c.Options.Time + EstimatePerCell
	if ob := p.Scenario.Objective; ob != nil {
		d *= time.Duration(ob.MaxProbes)
		if ob.Failover > 0 {
			d += c.Options.Warmup + c.Options.Time + ob.Failover + EstimatePerCell
		}
	}
	if !c.Links.IsZero() && c.Deployment.Spec.Nodes > 1 {
		d += EstimateLinks
	}
	if p.Policy.Restart {
		d += EstimateRestart(c.Deployment.Spec)
	}
	if p.Policy.DropCaches {
		d += EstimateDropCaches
	}
	if c.RestartsProxy() {
		own := c.Deployment.Spec.Proxy
		d += EstimateProxyRestart(own.With(c.ProxyChecks)) + EstimateProxyRestart(own)
	}
	if p.Policy.Prepare == PrepareReprepare {
		d += time.Second + c.Deployment.Prepare
	}
	return d
}

// Estimate is the estimated wall time of the cells run (all when run is nil): the
// deployments that have a cell to run (deploy, one prepare with reuse, destroy) and
// those cells.
func (p *Plan) Estimate(run func(*Cell) bool) (total, deploys, cells time.Duration) {
	for _, d := range p.Deployments {
		any := false
		for _, c := range d.Cells {
			if c.Reuse == nil && (run == nil || run(c)) {
				any = true
				cells += c.Estimate
			}
		}
		if any {
			deploys += d.Deploy + EstimateDestroy
			if p.Policy.Prepare == PrepareReuse {
				deploys += d.Prepare
			}
		}
	}
	return deploys + cells, deploys, cells
}

// FormatDuration renders d rounded to seconds, "4m10s", "1h2m0s", "12s".
func FormatDuration(d time.Duration) string {
	return d.Round(time.Second).String()
}
