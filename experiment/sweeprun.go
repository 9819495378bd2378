package experiment

import (
	"context"
	"errors"
	"fmt"
	"github.com/habench/habench/internal/words"
	"github.com/habench/habench/schema"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"golang.org/x/sys/unix"
)

// checkPlan is the pre-flight of the plan as a whole, before anything is deployed or
// written: the estimate over LongRun without YesLong (with it, its WARNING is the first
// line on Stdout), the knob names (Plan.CheckKnobNames), drop_caches without root. Errors
// are *topology.FieldError.
func (r *ScenarioRun) checkPlan(ctx context.Context, plan *scenario.Plan, torun func(*scenario.Cell) bool) error {
	if warn := plan.LongWarning(torun); warn != "" {
		if !r.YesLong {
			total, _, _ := plan.Estimate(torun)
			return &topology.FieldError{Field: "estimate", Value: scenario.FormatDuration(total),
				Reason: fmt.Sprintf("over %.0f h: give --yes-long to run it (--dry-run shows the plan)", scenario.LongRun.Hours())}
		}
		if r.Stdout != nil {
			fmt.Fprintln(r.Stdout, warn+" (given)")
		}
	}
	if err := CheckKnobNames(ctx, plan, r.Store, torun); err != nil {
		return err
	}
	if plan.Policy.DropCaches && slices.ContainsFunc(plan.Deployments, func(d *scenario.Deployment) bool {
		return slices.ContainsFunc(d.Cells, torun) && localSandbox(d.Spec)
	}) {
		if err := CheckDropCaches(); err != nil {
			return &topology.FieldError{Field: "cell.drop_caches", Value: "true", Reason: err.Error()}
		}
	}
	return nil
}

// localSandbox reports whether spec deploys a sandbox on this machine (provider sandbox):
// its page cache is this machine's.
func localSandbox(spec topology.Spec) bool {
	return spec.Provider == "" || spec.Provider == topology.ProviderSandbox
}

// runSweep is ScenarioRun.Run: see there.
func (r *ScenarioRun) runSweep(ctx context.Context) (string, []schema.ComparisonRow, error) {
	s := r.Scenario
	dir := r.ResumeDir
	plan, file, err := ResumePlan(s, dir, r.Scale)
	if err != nil {
		return "", nil, err
	}
	torun := cellsToRun(file)
	if err := r.checkPlan(ctx, plan, torun); err != nil {
		return "", nil, err
	}
	if err := r.preflight(ctx, plan, torun); err != nil {
		return "", nil, err
	}
	clients, err := r.openClients(ctx, plan, torun)
	if err != nil {
		return "", nil, err
	}
	if file == nil {
		dir = filepath.Join(r.ResultsDir, RunDirName(sanitize(s.Name), time.Now()))
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(RedactText(string(s.Raw()))), 0o640); err != nil {
			return "", nil, err
		}
		file = newSweepFile(plan, s.Raw())
	}
	if !s.Links.IsZero() {
		file.Links = s.Links.String() // also into the sweep.json of an older run resumed
	}
	unlock, err := lockSweep(dir)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	inv := schema.Invocation{Started: time.Now().UTC(), CommandLine: RedactArgs(r.CommandLine), Resume: r.ResumeDir != "", CellsRun: []int{}}
	file.Invocations = append(file.Invocations, inv)
	sw := &sweepRun{r: r, plan: plan, file: file, dir: dir, inv: &file.Invocations[len(file.Invocations)-1], torun: torun, t0: time.Now(), clients: clients}
	if err := sw.save(); err != nil {
		return dir, nil, err
	}
	out := r.Stdout
	if out == nil {
		out = io.Discard
	}
	sw.out = r.Progress.Wrap(out)
	total, _, _ := plan.Estimate(torun)
	n := 0
	for _, c := range plan.Cells {
		if torun(c) {
			n++
		}
	}
	sw.ntodo = n
	sw.announce(s.Name, n, total)

	var runErr error
	for _, d := range plan.Deployments {
		if ctx.Err() != nil {
			break
		}
		if !slices.ContainsFunc(d.Cells, torun) {
			continue
		}
		if err := sw.deployment(ctx, d); err != nil {
			runErr = err
			break
		}
	}
	r.Progress.Close()
	if runErr == nil {
		runErr = ctx.Err()
	}
	rows, ferr := sw.finish()
	if runErr == nil {
		runErr = ferr
	}
	now := time.Now().UTC()
	sw.inv.Finished = &now
	failed := 0
	for _, c := range file.Cells {
		if c.Status == schema.StatusFailed {
			failed++
		}
	}
	if runErr == nil && failed > 0 {
		runErr = fmt.Errorf("%d of %d cells failed (sweep.json says why; habench run FILE --resume %s runs them again)", failed, len(file.Cells), dir)
	}
	if runErr == nil {
		runErr = strictVerdict(r.Scenario.Checker, file.Cells)
	}
	if runErr != nil {
		sw.inv.Error = runErr.Error()
	}
	if err := sw.save(); err != nil && runErr == nil {
		runErr = err
	}
	return dir, rows, runErr
}

// preflight checks, before anything is deployed or written, the deployments with cells
// to run: a named cluster exists, is ready and offers host access when caches are dropped;
// an installation to deploy resolves; a snapshot the scenario names exists and fits it and
// every cell's data shape, and the snapshots to start from have their files as they were
// made (checkSnapshots); no cluster has the name of one to deploy.
func (r *ScenarioRun) preflight(ctx context.Context, plan *scenario.Plan, torun func(*scenario.Cell) bool) error {
	for _, d := range plan.Deployments {
		if !slices.ContainsFunc(d.Cells, torun) {
			continue
		}
		if sp := d.Spec; sp.Cluster != "" {
			c, err := r.Store.Load(sp.Cluster)
			if err != nil {
				return &topology.FieldError{Field: "topologies.cluster", Value: sp.Cluster, Reason: "no such cluster (habench register it first, or give dsns)"}
			}
			if c.State != "ready" {
				return &topology.FieldError{Field: "topologies.cluster", Value: sp.Cluster, Reason: "state " + c.State + ", not ready"}
			}
			if plan.Policy.DropCaches && !c.Offers(cluster.OpHostAccess) {
				return &topology.FieldError{Field: "cell.drop_caches", Value: "true",
					Reason: fmt.Sprintf("topology %s: habench cannot drop the page cache of cluster %s's hosts: %s", sp.Name, sp.Cluster, c.Provider().Why(c, cluster.OpHostAccess))}
			}
			continue
		} else if scenario.Deploys(sp) {
			bins, err := r.Store.SpecBinaries(ctx, sp)
			if err != nil {
				return fmt.Errorf("topology %s: %w", sp.Name, err)
			}
			if _, err := checkSnapshots(ctx, r.Store, plan, d, bins, torun); err != nil {
				return err
			}
			if err := checkHostsNetem(ctx, d, torun); err != nil {
				return err
			}
		}
		if _, err := r.Store.Load(d.Spec.Name); err == nil {
			return &topology.FieldError{Field: "topologies.name", Value: d.Spec.Name, Reason: "a cluster with this name exists (habench destroy " + d.Spec.Name + ")"}
		}
	}
	return nil
}

// announce prints what this invocation runs: cells to run of the grid's, the estimate,
// the results directory, and the grid's cells it does not run (reused, already done).
func (sw *sweepRun) announce(name string, n int, total time.Duration) {
	fmt.Fprintf(sw.out, "scenario %s (scale %s): %s to run of %d, estimated %s; results in %s\n", name, sw.plan.Scale, words.Plural(n, "cell"), len(sw.plan.Cells), scenario.FormatDuration(total), sw.dir)
	// Cells counted "i/n" below are this invocation's; the grid's cells not among them say why.
	var reused, done []string
	for _, c := range sw.plan.Cells {
		switch {
		case c.Reuse != nil:
			reused = append(reused, fmt.Sprintf("%d (%s: the runs of cell %d)", c.Index, sw.plan.Label(c), c.Reuse.Index))
		case !sw.torun(c):
			done = append(done, fmt.Sprint(c.Index))
		}
	}
	if len(reused) > 0 {
		fmt.Fprintf(sw.out, "not run, cannot differ: grid cell %s\n", strings.Join(reused, ", "))
	}
	if len(done) > 0 {
		fmt.Fprintf(sw.out, "already done (resumed): grid cell %s\n", strings.Join(done, ", "))
	}
}

// lockSweep takes an exclusive lock on dir/sweep.lock: one run per sweep directory. The
// file exists only while a run holds it: unlocking removes it (resume needs nothing of
// it). A lock taken on a file another run removed meanwhile is taken again on the new one.
func lockSweep(dir string) (func(), error) {
	p := filepath.Join(dir, "sweep.lock")
	for {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o640)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: another habench run is working on this sweep directory", dir)
		}
		// The holder before us may have removed the file between our open and our lock.
		held, err1 := f.Stat()
		now, err2 := os.Stat(p)
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		return func() { os.Remove(p); unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
	}
}

// sweepRun is the state of one invocation.
type sweepRun struct {
	r     *ScenarioRun
	plan  *scenario.Plan
	file  *schema.SweepFile
	dir   string
	inv   *schema.Invocation
	out   io.Writer
	torun func(*scenario.Cell) bool
	ntodo int
	ndone int
	t0    time.Time
	// estDone is the estimate of the work finished so far (ETA calibration).
	estDone time.Duration
	// saveErr is the first failed write of sweep.json: the sweep stops at the next cell,
	// since --resume could no longer tell what ran.
	saveErr error
	// clients are the client hosts every cell's workload runs from (nil: this process).
	clients *ClientHosts
}

// save writes sweep.json (see writeJSONAtomic); the first error is also kept in saveErr.
func (sw *sweepRun) save() error {
	err := writeJSONAtomic(filepath.Join(sw.dir, "sweep.json"), sw.file)
	if err != nil && sw.saveErr == nil {
		sw.saveErr = err
	}
	return err
}

func (sw *sweepRun) rec(c *scenario.Cell) *schema.CellRecord { return &sw.file.Cells[c.Index-1] }

// eta is the estimated time left: the estimate of what remains (current cell's remaining
// estimate, then the rest), scaled by how long the finished work took against its estimate.
func (sw *sweepRun) eta(cur *scenario.Cell, curStart time.Time, pendingDeploy bool) time.Duration {
	var rest time.Duration
	started := false
	for _, d := range sw.plan.Deployments {
		anyLeft := false
		for _, c := range d.Cells {
			if c == cur {
				started = true
				if left := c.Estimate - time.Since(curStart); left > 0 {
					rest += left
				}
				continue
			}
			if started && sw.torun(c) && sw.rec(c).Status != schema.StatusDone {
				rest += c.Estimate
				anyLeft = true
			}
		}
		if started && anyLeft && d != cur.Deployment {
			rest += d.Deploy + scenario.EstimateDestroy
			if sw.plan.Policy.Prepare == scenario.PrepareReuse {
				rest += d.Prepare
			}
		}
		if d == cur.Deployment && pendingDeploy {
			rest += d.Deploy + d.Prepare
		}
	}
	factor := 1.0
	if sw.estDone > 30*time.Second {
		factor = min(max(float64(time.Since(sw.t0))/float64(sw.estDone), 0.5), 4)
	}
	return time.Duration(float64(rest) * factor)
}

// deployment deploys d, runs its cells that are to run, and destroys it. Cells that fail
// are recorded and the next cells still run; the error returned stops the sweep
// (interrupt, or a deploy failure that was an interrupt).
func (sw *sweepRun) deployment(ctx context.Context, d *scenario.Deployment) (err error) {
	r := sw.r
	var cells []*scenario.Cell
	for _, c := range d.Cells {
		if sw.torun(c) {
			cells = append(cells, c)
		}
	}
	first := cells[0]
	r.Progress.Status(fmt.Sprintf("cell %d/%d %s: deploying", sw.ndone+1, sw.ntodo, sw.plan.Label(first)), func() time.Duration { return sw.eta(first, time.Now(), true) })
	sp := d.Spec
	fmt.Fprintf(sw.out, "\n=== deployment %d/%d: %s, %s, %s, %s", d.Index, len(sw.plan.Deployments), sp.Name, sp.Kind, words.Plural(sp.Nodes, "node"), sp.Flavor)
	for _, k := range slices.Sorted(maps.Keys(d.Options)) {
		fmt.Fprintf(sw.out, ", %s=%s", k, d.Options[k])
	}
	fmt.Fprintln(sw.out)
	sb := *r.Store
	sb.Network = r.Scenario.Network
	t0 := time.Now()
	var c *cluster.Cluster
	var runKnobs []topology.KnobSetting
	var snap *cluster.Snapshot
	switch {
	case sp.Cluster != "":
		// A cluster of the state directory (registered, or deployed before): never deployed
		// nor destroyed here; the row's knobs go on top of its own.
		if c, err = sb.Load(sp.Cluster); err == nil {
			runKnobs, err = topology.KnobsFromMap(sp.Knobs)
		}
	case d.SnapKey != "":
		c, snap, err = sw.deployFromSnapshot(ctx, &sb, sp, first)
	default:
		// Deployed (a sandbox) or registered for the run (an existing cluster's dsns).
		c, err = sb.Provide(ctx, sp)
	}
	deployS := time.Since(t0).Seconds()
	if err != nil {
		return sw.deployFailed(ctx, cells, err)
	}
	keep := r.Keep && sw.lastDeploymentOf(d)
	if !keep && sp.Cluster == "" {
		// Destroy a deployed sandbox; forget a cluster registered for the run (its servers
		// are someone else's and keep running).
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if derr := sb.Destroy(cctx, c.Name); derr != nil {
				err = errors.Join(err, fmt.Errorf("destroy %s: %w", c.Name, derr))
			}
		}()
	}
	cs := &cellState{sb: &sb, c: c, deployS: deployS, knobs: runKnobs, snapshot: snap, prepared: snap != nil}
	if !scenario.Deploys(sp) {
		// habench's tables on someone else's cluster are removed after the cells.
		defer func() {
			if !cs.prepared {
				return
			}
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			wl, _ := workload.Lookup(r.Scenario.Workload.Test)
			if target, terr := ClusterTarget(c, "sbtest", nil); terr == nil {
				if cerr := wl.Cleanup(cctx, target, sw.plan.Options, io.Discard); cerr != nil {
					err = errors.Join(err, fmt.Errorf("cleanup on %s: %w", c.Name, cerr))
				}
			}
		}()
		fmt.Fprintf(sw.out, "cluster %s: %s, %s, %s\n", c.Name, c.Spec.Kind, words.Plural(len(c.Nodes), "node"), c.Binaries.VersionText)
	}
	if scenario.Deploys(sp) {
		fmt.Fprintf(sw.out, "deployed in %.1fs: %s\n", deployS, c.Binaries.VersionText)
	}
	sw.estDone += d.Deploy
	if sw.plan.Policy.Prepare == scenario.PrepareReuse {
		sw.estDone += d.Prepare
	}
	for _, cell := range cells {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sw.cell(ctx, cs, cell)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if sw.saveErr != nil {
			return sw.saveErr
		}
	}
	return nil
}

// deployFailed records the deploy error derr on the deployment's cells (those not
// reached when interrupted stay as they were) and saves sweep.json. Its error stops the
// sweep: the interrupt, or sweep.json that could not be written; nil lets the next
// deployment run.
func (sw *sweepRun) deployFailed(ctx context.Context, cells []*scenario.Cell, derr error) error {
	msg := "deploy: " + derr.Error()
	for _, cell := range cells {
		if ctx.Err() != nil {
			break
		}
		rec := sw.rec(cell)
		rec.Status, rec.Error = schema.StatusFailed, msg
	}
	if err := sw.save(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(sw.out, "deploy failed: %v\n", derr)
	return nil
}

// lastDeploymentOf reports whether d is the last deployment of its topology with a cell
// to run (--keep keeps that one: names are unique while a cluster lives).
func (sw *sweepRun) lastDeploymentOf(d *scenario.Deployment) bool {
	for _, o := range sw.plan.Deployments[d.Index:] {
		if o.Spec.Name == d.Spec.Name && slices.ContainsFunc(o.Cells, sw.torun) {
			return false
		}
	}
	return true
}
