package experiment

import (
	"context"
	"errors"
	"fmt"
	"github.com/habench/habench/internal/words"
	"github.com/habench/habench/schema"
	"maps"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// cellState is what cells of one deployment share.
type cellState struct {
	sb       *cluster.Store
	c        *cluster.Cluster
	deployS  float64
	prepared bool
	// knobs are an existing cluster row's own knobs (a deployed sandbox has them in its spec).
	knobs []topology.KnobSetting
	// snapshot is the data snapshot the deployment started from (nil: prepared).
	snapshot *cluster.Snapshot
}

// cell runs one cell and records it; errors end up in the record.
func (sw *sweepRun) cell(ctx context.Context, cs *cellState, cell *scenario.Cell) {
	rec := sw.rec(cell)
	start := time.Now()
	sw.ndone++
	sw.r.Progress.Cell(fmt.Sprintf("cell %d/%d %s", sw.ndone, sw.ntodo, sw.plan.Label(cell)), func() time.Duration { return sw.eta(cell, start, false) })
	fmt.Fprintf(sw.out, "\n--- cell %d/%d: %s (grid cell %d of %d)\n", sw.ndone, sw.ntodo, sw.plan.Label(cell), cell.Index, len(sw.plan.Cells))
	if rec.Dir != "" {
		rec.PreviousDirs = append(rec.PreviousDirs, rec.Dir)
	}
	now := start.UTC()
	*rec = schema.CellRecord{Index: rec.Index, Axes: rec.Axes, Topology: rec.Topology, Kind: string(cs.c.Spec.Kind), Flavor: string(cs.c.Spec.Flavor),
		Version: cs.c.Binaries.Version.String(), Test: rec.Test, Threads: rec.Threads, Links: rec.Links, Repeat: rec.Repeat,
		Requested: rec.Requested, PreviousDirs: rec.PreviousDirs, Status: schema.StatusRunning, Started: &now, DeployS: cs.deployS}
	sw.inv.CellsRun = append(sw.inv.CellsRun, cell.Index)
	if err := sw.save(); err != nil {
		// Not run: --resume must be able to tell what ran (deployment stops the sweep).
		rec.Status, rec.Error = schema.StatusFailed, err.Error()
		return
	}
	err := sw.runCell(ctx, cs, cell, rec)
	fin := time.Now().UTC()
	rec.Finished = &fin
	rec.WallS = fin.Sub(start).Seconds()
	switch {
	case err == nil:
		rec.Status = schema.StatusDone
	case ctx.Err() != nil:
		rec.Status, rec.Error = schema.StatusFailed, "interrupted: "+err.Error()
	default:
		err = snapshotSuspect(err, cs.snapshot, cs.c.Spec)
		rec.Status, rec.Error = schema.StatusFailed, err.Error()
		fmt.Fprintf(sw.out, "cell %d failed: %v\n", cell.Index, err)
		sw.keepNodeLog(cs.c, cell, rec, err)
	}
	sw.estDone += cell.Estimate
	sw.save() // an error is kept in sw.saveErr: deployment stops the sweep on it
	if sw.r.OnCell != nil {
		sw.r.OnCell(*rec)
	}
}

// runCell: restart, drop caches, prepare, knobs, run.
func (sw *sweepRun) runCell(ctx context.Context, cs *cellState, cell *scenario.Cell, rec *schema.CellRecord) error {
	drops, err := sw.resetCell(ctx, cs, rec)
	if err != nil {
		return err
	}
	wl, err := workload.Lookup(cell.Test)
	if err != nil {
		return err
	}
	runTarget, err := sw.prepareCell(ctx, cs, cell, wl)
	if err != nil {
		return err
	}
	if sw.clients != nil {
		wl = sw.clients.Workload(wl, sw.out)
	}
	knobs, optNames := cellSettings(cell)
	// Option axes: what every node reports now. Knob axes are set by the run (package
	// knob: SET GLOBAL, read back, restored afterwards) and read from its manifest.
	rec.ReadBack = map[string]map[string]string{}
	if len(optNames) > 0 {
		rb, err := ReadGlobals(ctx, cs.c, optNames)
		if err != nil {
			return fmt.Errorf("read back options: %w", err)
		}
		maps.Copy(rec.ReadBack, rb)
	}
	base := Bench{Workload: wl, Options: cell.Options, Target: runTarget, Cluster: cs.c, ResultsDir: sw.dir,
		Label: fmt.Sprintf("c%03d-%s", cell.Index, cell.Topology), Stdout: sw.out, Log: sw.r.Log, CommandLine: sw.r.CommandLine,
		Knobs: knob.Merge(cs.knobs, knobs), Restarter: cs.sb, CacheDrops: drops, Via: viaOf(cell),
		ProxyChecks: cell.ProxyChecks, ProxyRestarter: cs.sb, ProxyOwn: cell.Deployment.Spec.Proxy.Checks(),
		Extra: cellExtra(sw.plan, cell)}
	if cs.snapshot != nil && sw.plan.Policy.Prepare == scenario.PrepareReuse {
		base.Extra["data"] = cs.snapshot.Describe()
	}
	newBench := func(rec *schema.CellRecord) (*Bench, error) {
		b := base
		b.Extra = maps.Clone(base.Extra)
		return &b, sw.equipBench(&b, cs, cell, rec, len(optNames) > 0)
	}
	if ob := sw.plan.Scenario.Objective; ob != nil {
		return sw.searchCapacity(ctx, cs, ob, cell, rec, knobs, newBench)
	}
	b, err := newBench(rec)
	if err != nil {
		return err
	}
	res, err := sw.runBench(ctx, b)
	sw.recordCell(rec, cell, b, res, knobs, err == nil)
	return err
}

// runBench runs b with the scenario run's BenchHook around it.
func (sw *sweepRun) runBench(ctx context.Context, b *Bench) (*Outcome, error) {
	if sw.r.BenchHook != nil {
		if done := sw.r.BenchHook(b); done != nil {
			defer done()
		}
	}
	return b.Run(ctx)
}

// resetCell applies the cell policy before a cell: restart the servers (a restart that
// escalated to a kill is a warning on rec, not an error) and drop the page caches. It
// returns the cache drops done (nil without policy.drop_caches).
func (sw *sweepRun) resetCell(ctx context.Context, cs *cellState, rec *schema.CellRecord) ([]schema.CacheDrop, error) {
	p := sw.plan
	c := cs.c
	if p.Policy.Restart {
		fmt.Fprintf(sw.out, "restarting %s\n", words.Plural(len(c.Nodes), "server"))
		if err := RestartCluster(ctx, cs.sb, c); err != nil {
			var se *cluster.StopEscalatedError
			if !errors.As(err, &se) {
				return nil, fmt.Errorf("restart: %w", err)
			}
			// Restarted, but some server crashed on the way: the cell starts after a crash.
			w := "⚠ the restart before the cell was not clean: " + strings.ReplaceAll(err.Error(), "\n", "; ")
			rec.Warnings = append(rec.Warnings, w)
			fmt.Fprintf(sw.out, "WARNING: %s\n", w)
		}
	}
	if !p.Policy.DropCaches {
		return nil, nil
	}
	drops, err := DropClusterCaches(ctx, c)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(sw.out, "page cache %s\n", report.CacheDropsLine(drops))
	return drops, nil
}

// prepareCell prepares (or, with policy.prepare reprepare, cleans up and prepares again)
// the cell's tables on the writable nodes and waits for the replicas, and returns the
// target of the run's workers: workload.nodes, following the writer under writer auto.
// A bad workload.nodes is a *topology.FieldError.
func (sw *sweepRun) prepareCell(ctx context.Context, cs *cellState, cell *scenario.Cell, wl workload.Workload) (workload.Target, error) {
	p := sw.plan
	c := cs.c
	// Prepare and cleanup on the writable nodes; the run's workers on workload.nodes.
	target, err := ClusterTarget(c, "sbtest", nil)
	if err != nil {
		return workload.Target{}, err
	}
	runTarget, err := ClusterTarget(c, "sbtest", p.Scenario.Workload.Nodes.For(cell.Topology))
	if err != nil {
		return workload.Target{}, &topology.FieldError{Field: "workload.nodes", Value: strings.Join(p.Scenario.Workload.Nodes.For(cell.Topology), ","), Reason: err.Error()}
	}
	if rn := p.Scenario.Workload.ReadNodes.For(cell.Topology); len(rn) > 0 {
		if err := WithReadNodes(c, &runTarget, rn); err != nil {
			var fe *topology.FieldError
			if errors.As(err, &fe) {
				fe.Field = "workload.read_nodes"
			}
			return workload.Target{}, err
		}
	}
	writerMode := p.Scenario.Workload.Writer
	if writerMode == "" && len(p.Scenario.Workload.Nodes.For(cell.Topology)) == 0 {
		writerMode = scenario.DefaultWriterMode(c.Spec)
	}
	switch {
	case cell.Via == scenario.ViaProxy:
		read := runTarget.ReadEndpoints
		if runTarget, err = ProxyTarget(c, "sbtest", "workload.via"); err != nil {
			return workload.Target{}, err
		}
		runTarget.ReadEndpoints = read
	case writerMode == scenario.WriterAuto && c.Deployed(): // roles from the state file habench keeps
		runTarget.Follow = FollowWriter(cs.sb, c.Name)
	}
	if p.Policy.Prepare == scenario.PrepareReprepare && cs.prepared {
		if err := wl.Cleanup(ctx, target, cell.Options, sw.out); err != nil {
			return workload.Target{}, fmt.Errorf("cleanup: %w", err)
		}
		cs.prepared = false
	}
	if !cs.prepared {
		if err := wl.Prepare(ctx, target, cell.Options, sw.out); err != nil {
			return workload.Target{}, fmt.Errorf("prepare: %w", err)
		}
		cs.prepared = true
		if err := waitReplicas(ctx, c, 5*time.Minute); err != nil {
			return workload.Target{}, fmt.Errorf("after prepare: %w", err)
		}
	}
	return runTarget, nil
}

// cellSettings returns the cell's knob settings (set by the run) and the names of its
// server options (read back before the run).
func cellSettings(cell *scenario.Cell) (knobs []topology.KnobSetting, optNames []string) {
	for _, k := range cell.Knobs {
		for _, st := range k.Settings {
			knobs = append(knobs, topology.KnobSetting{Name: st.Name, Value: st.Value})
		}
	}
	for _, o := range cell.ServerOptions {
		for _, st := range o.Settings {
			optNames = append(optNames, st.Name)
		}
	}
	return knobs, optNames
}

// equipBench adds to b what the scenario and the cell ask for beyond the workload: fault
// injection, the probe, links, the same-path control, notes and the live node lines;
// readBack says whether the cell read server options back (recorded in b.Extra).
func (sw *sweepRun) equipBench(b *Bench, cs *cellState, cell *scenario.Cell, rec *schema.CellRecord, readBack bool) error {
	c := cs.c
	if fs := sw.r.Scenario.Faults; len(fs) > 0 {
		in := Injector{Store: cs.sb}
		if sw.r.Injector != nil {
			in = *sw.r.Injector
			in.Store, in.paused = cs.sb, nil // the cell's own pauses
		}
		b.Faults, b.Injector = fs, &in
	}
	if sw.r.Scenario.ProbeOn() {
		if b.Injector == nil {
			b.Injector = &Injector{Store: cs.sb}
		}
		b.Probe, b.ProbeInterval = true, sw.r.Scenario.ProbeEvery()
	}
	b.FailoverOff = sw.r.Scenario.Workload.Failover == scenario.FailoverOff
	b.Checker = sw.r.Scenario.Checker
	if b.Checker != nil {
		b.CheckerReadNodes = b.Checker.ReadNodes.For(cell.Topology)
	}
	if rec.Requested != nil {
		b.Extra["requested"] = rec.Requested
	}
	if readBack {
		b.Extra["read_back"] = rec.ReadBack
	}
	var err error
	if !cell.Links.IsZero() && len(c.Nodes) > 1 {
		if b.Links, err = links.Build(cell.Links, c); err != nil {
			return err
		}
	}
	if sw.plan.SamePathControl(cell) && userspaceLinks() {
		// The delayed cells go through the userspace link: so does this one, at zero delay,
		// so that the difference is the delay and not the link's own cost.
		if b.Links, err = netem.NewSpec(links.NodeNames(c)); err != nil {
			return err
		}
		rec.LinksControl = "same path: the userspace link at zero delay"
		b.Extra["links_control"] = rec.LinksControl
	}
	if cell.Note != "" {
		rec.Warnings = append(rec.Warnings, cell.Note)
		b.Extra["note"] = cell.Note
		rec.Links = "none"
	}
	if sw.r.LiveNodes {
		(&LiveNodes{W: sw.out}).Attach(b)
	}
	return nil
}

// userspaceLinks reports whether links are impaired with the userspace link here (no
// kernel netem): what netem.Apply chooses. A variable so that tests can choose.
var userspaceLinks = func() bool { return netem.KernelAvailable() != nil }

// waitReplicas waits until every node of c has applied everything the writer has (GTID
// positions equal), bounded by timeout; nil at once for a single node.
func waitReplicas(ctx context.Context, c *cluster.Cluster, timeout time.Duration) error {
	if len(c.Nodes) < 2 {
		return nil
	}
	b := &Bench{Cluster: c}
	nodes, closeNodes, err := b.openNodes()
	if err != nil {
		return err
	}
	defer closeNodes()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = waitConsistent(wctx, c, nodes)
	return err
}
