package experiment

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/atomicfile"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/report"
	"github.com/habench/habench/results"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"golang.org/x/sys/unix"
)

// Cell statuses in sweep.json (results.Status*).
const (
	StatusPending = results.StatusPending
	StatusRunning = results.StatusRunning
	StatusDone    = results.StatusDone
	StatusFailed  = results.StatusFailed
	StatusReused  = results.StatusReused
)

// SweepFormat is the layout version of sweep.json.
const SweepFormat = results.SweepFormat

// sweep.json is declared once, in package results, which the report package renders
// sweep.md and comparison.md from; these names keep the executor's code short.
type (
	SweepFile   = results.SweepFile
	SweepAxis   = results.SweepAxis
	Invocation  = results.Invocation
	CellLatency = results.CellLatency
	CellRecord  = results.CellRecord
)

// ReadSweepFile reads dir/sweep.json (results.ReadSweep).
func ReadSweepFile(dir string) (*SweepFile, error) { return results.ReadSweep(dir) }

// writeJSONAtomic writes v to path through a temporary file and a rename, so a crash
// never leaves half a sweep.json.
// The error names path.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o640)
}

// ScenarioSHA256 is the hex SHA-256 of a scenario file's bytes.
func ScenarioSHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// newSweepFile is the record of a fresh run of plan: every cell pending.
func newSweepFile(p *scenario.Plan, raw []byte) *SweepFile {
	s := p.Scenario
	f := &SweepFile{Format: SweepFormat, Scenario: s.Name, Description: strings.TrimSpace(s.Description),
		ScenarioFile: "scenario.yaml", ScenarioSHA256: ScenarioSHA256(raw), Scale: p.Scale,
		Workload: s.Workload.Test, WorkloadOptions: workload.OptionValues(p.Options), Policy: p.Policy.Record()}
	if p.Compared() {
		f.Baseline = p.Baseline()
	}
	for _, a := range p.Axes {
		f.Axes = append(f.Axes, SweepAxis{Name: a.Name, Kind: a.Kind, Values: a.Labels(), Variables: a.Variables(), Reference: a.Reference, Inert: p.Inert(a)})
	}
	for _, c := range p.Cells {
		sp := c.Deployment.Spec
		rec := CellRecord{Index: c.Index, Axes: c.Values, Topology: c.Topology, Kind: string(sp.Kind), Flavor: string(sp.Flavor),
			Test: c.Test, Threads: c.Options.Threads, Links: linksLabel(c.Links), Repeat: c.Repeat, Status: StatusPending}
		if c.Reuse != nil {
			rec.Status, rec.ReusedFrom, rec.Links = StatusReused, c.Reuse.Index, "none"
		}
		for _, as := range append(slices.Clone(c.ServerOptions), c.Knobs...) {
			for _, st := range as.Settings {
				if rec.Requested == nil {
					rec.Requested = map[string]string{}
				}
				rec.Requested[st.Name] = st.Value
			}
		}
		f.Cells = append(f.Cells, rec)
	}
	return f
}

func linksLabel(r netem.Request) string {
	if r.IsZero() {
		return "none"
	}
	if (netem.Request{All: r.All}).String() == r.String() {
		return r.All
	}
	return r.String()
}

// sweepMatches checks that a sweep.json describes the same grid as plan (same file, same
// scale, same habench grid rules).
func sweepMatches(f *SweepFile, p *scenario.Plan) error {
	if len(f.Cells) != len(p.Cells) {
		return fmt.Errorf("sweep.json has %d cells, the scenario at scale %s has %d", len(f.Cells), p.Scale, len(p.Cells))
	}
	for i, c := range p.Cells {
		if !maps.Equal(f.Cells[i].Axes, c.Values) || f.Cells[i].Index != c.Index {
			return fmt.Errorf("cell %d is %v in sweep.json, %v in the scenario", c.Index, f.Cells[i].Axes, c.Values)
		}
	}
	return nil
}

// ResumePlan is the plan at scale ("" = full, or the directory's scale when resuming) and,
// when dir is not "", the sweep.json of the directory being resumed, checked the way
// `habench run --resume` checks it before anything is deployed: dir must hold a sweep.json
// written with this very scenario file (same SHA-256), at the same scale, with the same
// grid. Errors are *topology.FieldError naming --resume or --scale (bad input).
func ResumePlan(s *scenario.Scenario, dir, scale string) (*scenario.Plan, *SweepFile, error) {
	var file *SweepFile
	if dir != "" {
		var err error
		if file, err = ReadSweepFile(dir); err != nil {
			return nil, nil, &topology.FieldError{Field: "--resume", Value: dir, Reason: "not a sweep directory: " + err.Error()}
		}
		if sum := ScenarioSHA256(s.Raw()); sum != file.ScenarioSHA256 {
			return nil, nil, &topology.FieldError{Field: "--resume", Value: dir, Reason: fmt.Sprintf(
				"it was run with another scenario file (sha256 %.12s, this one %.12s); resume with its copy: habench run %s --resume %s",
				file.ScenarioSHA256, sum, filepath.Join(dir, file.ScenarioFile), dir)}
		}
		if scale == "" {
			scale = file.Scale
		}
		if scale != file.Scale {
			return nil, nil, &topology.FieldError{Field: "--scale", Value: scale, Reason: fmt.Sprintf("%s was run at scale %s; resume at the same scale", dir, file.Scale)}
		}
	}
	plan, err := s.Plan(scale)
	if err != nil {
		return nil, nil, err
	}
	plan.Failover = planFailover(plan)
	if file != nil {
		if err := sweepMatches(file, plan); err != nil {
			return nil, nil, &topology.FieldError{Field: "--resume", Value: dir, Reason: err.Error()}
		}
	}
	return plan, file, nil
}

// cellsToRun reports whether a cell runs in this invocation: not reused from another,
// and not done in the run being resumed (file; nil: a fresh run).
func cellsToRun(file *SweepFile) func(*scenario.Cell) bool {
	return func(c *scenario.Cell) bool {
		return c.Reuse == nil && (file == nil || file.Cells[c.Index-1].Status != StatusDone)
	}
}

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
	if err := CheckKnobNames(ctx, plan, r.Sandbox, torun); err != nil {
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
func (r *ScenarioRun) runSweep(ctx context.Context) (string, []Row, error) {
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
	inv := Invocation{Started: time.Now().UTC(), CommandLine: RedactArgs(r.CommandLine), Resume: r.ResumeDir != "", CellsRun: []int{}}
	file.Invocations = append(file.Invocations, inv)
	sw := &sweepRun{r: r, plan: plan, file: file, dir: dir, inv: &file.Invocations[len(file.Invocations)-1], torun: torun, t0: time.Now()}
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
		if c.Status == StatusFailed {
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
			c, err := r.Sandbox.Load(sp.Cluster)
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
			bins, err := cluster.SpecBinaries(ctx, sp)
			if err != nil {
				return fmt.Errorf("topology %s: %w", sp.Name, err)
			}
			if _, err := checkSnapshots(ctx, r.Sandbox, plan, d, bins, torun); err != nil {
				return err
			}
			if err := checkHostsNetem(ctx, d, torun); err != nil {
				return err
			}
		}
		if _, err := r.Sandbox.Load(d.Spec.Name); err == nil {
			return &topology.FieldError{Field: "topologies.name", Value: d.Spec.Name, Reason: "a cluster with this name exists (habench destroy " + d.Spec.Name + ")"}
		}
	}
	return nil
}

// announce prints what this invocation runs: cells to run of the grid's, the estimate,
// the results directory, and the grid's cells it does not run (reused, already done).
func (sw *sweepRun) announce(name string, n int, total time.Duration) {
	fmt.Fprintf(sw.out, "scenario %s (scale %s): %s to run of %d, estimated %s; results in %s\n", name, sw.plan.Scale, report.Plural(n, "cell"), len(sw.plan.Cells), scenario.FormatDuration(total), sw.dir)
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
	file  *SweepFile
	dir   string
	inv   *Invocation
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
}

// save writes sweep.json (see writeJSONAtomic); the first error is also kept in saveErr.
func (sw *sweepRun) save() error {
	err := writeJSONAtomic(filepath.Join(sw.dir, "sweep.json"), sw.file)
	if err != nil && sw.saveErr == nil {
		sw.saveErr = err
	}
	return err
}

func (sw *sweepRun) rec(c *scenario.Cell) *CellRecord { return &sw.file.Cells[c.Index-1] }

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
			if started && sw.torun(c) && sw.rec(c).Status != StatusDone {
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
	fmt.Fprintf(sw.out, "\n=== deployment %d/%d: %s, %s, %s, %s", d.Index, len(sw.plan.Deployments), sp.Name, sp.Kind, report.Plural(sp.Nodes, "node"), sp.Flavor)
	for _, k := range slices.Sorted(maps.Keys(d.Options)) {
		fmt.Fprintf(sw.out, ", %s=%s", k, d.Options[k])
	}
	fmt.Fprintln(sw.out)
	sb := *r.Sandbox
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
		fmt.Fprintf(sw.out, "cluster %s: %s, %s, %s\n", c.Name, c.Spec.Kind, report.Plural(len(c.Nodes), "node"), c.Binaries.VersionText)
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
		rec.Status, rec.Error = StatusFailed, msg
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

// cellState is what cells of one deployment share.
type cellState struct {
	sb       *cluster.Sandbox
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
	*rec = CellRecord{Index: rec.Index, Axes: rec.Axes, Topology: rec.Topology, Kind: string(cs.c.Spec.Kind), Flavor: string(cs.c.Spec.Flavor),
		Version: cs.c.Binaries.Version.String(), Test: rec.Test, Threads: rec.Threads, Links: rec.Links, Repeat: rec.Repeat,
		Requested: rec.Requested, PreviousDirs: rec.PreviousDirs, Status: StatusRunning, Started: &now, DeployS: cs.deployS}
	sw.inv.CellsRun = append(sw.inv.CellsRun, cell.Index)
	if err := sw.save(); err != nil {
		// Not run: --resume must be able to tell what ran (deployment stops the sweep).
		rec.Status, rec.Error = StatusFailed, err.Error()
		return
	}
	err := sw.runCell(ctx, cs, cell, rec)
	fin := time.Now().UTC()
	rec.Finished = &fin
	rec.WallS = fin.Sub(start).Seconds()
	switch {
	case err == nil:
		rec.Status = StatusDone
	case ctx.Err() != nil:
		rec.Status, rec.Error = StatusFailed, "interrupted: "+err.Error()
	default:
		err = snapshotSuspect(err, cs.snapshot, cs.c.Spec)
		rec.Status, rec.Error = StatusFailed, err.Error()
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
func (sw *sweepRun) runCell(ctx context.Context, cs *cellState, cell *scenario.Cell, rec *CellRecord) error {
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
	b := &Bench{Workload: wl, Options: cell.Options, Target: runTarget, Cluster: cs.c, ResultsDir: sw.dir,
		Label: fmt.Sprintf("c%03d-%s", cell.Index, cell.Topology), Stdout: sw.out, Log: sw.r.Log, CommandLine: sw.r.CommandLine,
		Knobs: knob.Merge(cs.knobs, knobs), Restarter: cs.sb, CacheDrops: drops,
		Extra: cellExtra(sw.plan, cell)}
	if cs.snapshot != nil && sw.plan.Policy.Prepare == scenario.PrepareReuse {
		b.Extra["data"] = cs.snapshot.Describe()
	}
	if err := sw.equipBench(b, cs, cell, rec, len(optNames) > 0); err != nil {
		return err
	}
	if sw.r.BenchHook != nil {
		if done := sw.r.BenchHook(b); done != nil {
			defer done()
		}
	}
	res, err := b.Run(ctx)
	sw.recordCell(rec, cell, b, res, knobs, err == nil)
	return err
}

// resetCell applies the cell policy before a cell: restart the servers (a restart that
// escalated to a kill is a warning on rec, not an error) and drop the page caches. It
// returns the cache drops done (nil without policy.drop_caches).
func (sw *sweepRun) resetCell(ctx context.Context, cs *cellState, rec *CellRecord) ([]CacheDrop, error) {
	p := sw.plan
	c := cs.c
	if p.Policy.Restart {
		fmt.Fprintf(sw.out, "restarting %s\n", report.Plural(len(c.Nodes), "server"))
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
	if writerMode == scenario.WriterAuto && c.Deployed() { // roles from the state file habench keeps
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
func (sw *sweepRun) equipBench(b *Bench, cs *cellState, cell *scenario.Cell, rec *CellRecord, readBack bool) error {
	c := cs.c
	if fs := sw.r.Scenario.Faults; len(fs) > 0 {
		in := Injector{Sandbox: cs.sb}
		if sw.r.Injector != nil {
			in = *sw.r.Injector
			in.Sandbox, in.paused = cs.sb, nil // the cell's own pauses
		}
		b.Faults, b.Injector = fs, &in
	}
	if sw.r.Scenario.ProbeOn() {
		if b.Injector == nil {
			b.Injector = &Injector{Sandbox: cs.sb}
		}
		b.Probe = true
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

// recordCell fills rec from the run's result (res may be nil): its directory, the knobs
// read back from its manifest, the swept values, the summary and the links' added delay.
// ran says whether the run succeeded (its knobs were then set).
func (sw *sweepRun) recordCell(rec *CellRecord, cell *scenario.Cell, b *Bench, res *Outcome, knobs []topology.KnobSetting, ran bool) {
	if res != nil && res.Dir != "" {
		rec.Dir, _ = filepath.Rel(sw.dir, res.Dir)
		if len(knobs) > 0 {
			knobsReadBack(filepath.Join(res.Dir, "manifest.json"), knobs, rec.ReadBack)
		}
	}
	sw.cellValues(rec, cell, ran)
	if res != nil && res.Summary != nil {
		fillRecord(rec, res.Summary)
	}
	if res != nil && res.Dir != "" && b.Links != nil {
		rec.LinkAddedMs = linkAdded(filepath.Join(res.Dir, "manifest.json"))
	}
}

// cellValues fills the swept values from rec.ReadBack (after the run for knobs); ran
// says whether the run got as far as setting its knobs.
func (sw *sweepRun) cellValues(rec *CellRecord, cell *scenario.Cell, ran bool) {
	rec.Values = map[string]string{}
	for _, as := range append(slices.Clone(cell.ServerOptions), cell.Knobs...) {
		if !ran && rec.ReadBack[as.Settings[0].Name] == nil {
			continue // the run failed before its knobs were set
		}
		v, warns := readBackValue(sw.plan.AxisNamed(as.Axis), as.Settings, rec.ReadBack)
		rec.Values[as.Axis] = v
		for _, w := range warns {
			rec.Warnings = append(rec.Warnings, as.Axis+": "+w)
			fmt.Fprintf(sw.out, "WARNING: %s: %s\n", as.Axis, w)
		}
	}
	if len(rec.ReadBack) == 0 {
		rec.ReadBack = nil
	}
	if len(rec.Values) == 0 {
		rec.Values = nil
	}
}

// userspaceLinks reports whether links are impaired with the userspace link here (no
// kernel netem): what netem.Apply chooses. A variable so that tests can choose.
var userspaceLinks = func() bool { return netem.KernelAvailable() != nil }

// linkAdded is the median over the node pairs of the round trip the run's links added
// to the plain bridge (manifest links.impairment.rtt[].added_ms), nil without one.
func linkAdded(manifest string) *float64 {
	var m struct {
		Links struct {
			Impairment *struct {
				RTT []results.LinkRTT `json:"rtt"`
			} `json:"impairment"`
		} `json:"links"`
	}
	b, err := os.ReadFile(manifest)
	if err != nil || json.Unmarshal(b, &m) != nil || m.Links.Impairment == nil {
		return nil
	}
	c, ok := results.LinkCostMs(m.Links.Impairment.RTT)
	if !ok {
		return nil
	}
	return &c
}

// knobsReadBack adds to rb what the run's manifest says each node had in effect for the
// knobs (knobs.nodes[].effective, read back by package knob after setting them; for a
// variable with a session scope, knobs.nodes[].session: what a new session, as the
// workers' and the checker's, started with).
func knobsReadBack(manifest string, knobs []topology.KnobSetting, rb map[string]map[string]string) {
	var m struct {
		Knobs *knob.Report `json:"knobs"`
	}
	b, err := os.ReadFile(manifest)
	if err != nil || json.Unmarshal(b, &m) != nil || m.Knobs == nil {
		return
	}
	for _, v := range m.Knobs.Nodes {
		for _, k := range knobs {
			if v.Knob == k.Name {
				if rb[k.Name] == nil {
					rb[k.Name] = map[string]string{}
				}
				rb[k.Name][v.Node] = cmp.Or(v.Session, v.Effective)
			}
		}
	}
}

// cellExtra is a cell's manifest "extra": scenario, topology, cell index, axis values,
// scale, the baseline topology when the plan compares several (Plan.Baseline: the one
// comparison.md and sweep.json use, so `habench report` picks the same one) and, for a
// sweep, the cell's name.
func cellExtra(p *scenario.Plan, cell *scenario.Cell) map[string]any {
	e := map[string]any{"scenario": p.Scenario.Name, "topology": cell.Topology,
		"cell_index": cell.Index, "axes": cell.Values, "scale": p.Scale}
	if p.Compared() {
		e["baseline"], e["baseline_why"] = p.BaselineWhy()
	}
	if len(p.Axes) > 1 {
		// Reports name a sweep's runs "<topology> <cell>"; without a sweep, by topology.
		e["cell"] = cellName(p, cell)
	}
	return e
}

// cellName names a cell for reports (manifest extra "cell"): "c3 links=0.6ms threads=16",
// the axes other than the topology.
func cellName(p *scenario.Plan, c *scenario.Cell) string {
	parts := []string{fmt.Sprintf("c%d", c.Index)}
	for _, a := range p.Axes {
		if a.Kind != scenario.AxisTopology {
			parts = append(parts, a.Name+"="+c.Values[a.Name])
		}
	}
	return strings.Join(parts, " ")
}

func fillRecord(rec *CellRecord, s *Summary) {
	rec.TPS, rec.QPS, rec.Transactions, rec.IgnoredErrors = s.TPS, s.QPS, s.Transactions, s.IgnoredErrors
	if s.LatencyMs != nil {
		rec.LatencyMs = &CellLatency{Avg: s.LatencyMs["avg"], P95: s.LatencyMs["p95"], P99: s.LatencyMs["p99"], Max: s.LatencyMs["max"]}
	}
	rec.MaxReplicaLagS, rec.LagUnknown = maxReplicaLag(s)
	rec.Warnings = append(rec.Warnings, degradedWarnings(s)...)
	if c := s.Checks; c != nil {
		rec.Anomalies, rec.CheckerValid, rec.CheckerOK, rec.CheckerError = &c.AnomalyCount, &c.Valid, &c.OK, c.Error
		if len(c.AnomalyTypes) > 0 {
			rec.AnomalyTypes = maps.Clone(c.AnomalyTypes)
		}
	}
	if checks, stale, ok := s.StaleReads(); ok {
		rec.ReadChecks, rec.StaleReads = &checks, &stale
	}
}

// maxReplicaLag is the largest heartbeat lag of any node (report.MaxLag over summary.json's
// nodes) and the nodes whose lag was unknown for a while: replicas, secondaries, the other
// Galera nodes, and the first writer too (its own lag is 0 while it writes the heartbeat;
// after a failover it is a stale old primary). nil without any lag sample, and for a single
// node (no replica: the console's n/a).
func maxReplicaLag(s *Summary) (*float64, string) {
	if len(s.Nodes) < 2 {
		return nil, ""
	}
	return report.MaxLag(summaryLagFigures(s))
}

// readBackValue is an axis' value as read back, labelled like the axis' values: for each
// variable the nodes' common value (or "n1=a;n2=b" when they differ), one value when the
// axis' values set all their variables alike ("25000", when they also read back alike),
// else joined by "/" in the axis' order ("1/1"); with a warning per variable whose value
// differs from the request or between nodes.
func readBackValue(a *scenario.Axis, settings []scenario.Setting, rb map[string]map[string]string) (string, []string) {
	var parts, warns []string
	for _, st := range settings {
		byNode := rb[st.Name]
		var vals []string
		for _, n := range slices.Sorted(maps.Keys(byNode)) {
			if !slices.Contains(vals, byNode[n]) {
				vals = append(vals, byNode[n])
			}
		}
		v := ""
		switch len(vals) {
		case 0:
			v = "?"
			warns = append(warns, fmt.Sprintf("%s was not read back", st.Name))
		case 1:
			v = vals[0]
			if !SameValue(st.Value, v) {
				warns = append(warns, fmt.Sprintf("%s: requested %s, the servers report %s", st.Name, st.Value, v))
			}
		default:
			var nv []string
			for _, n := range slices.Sorted(maps.Keys(byNode)) {
				nv = append(nv, n+"="+byNode[n])
			}
			v = strings.Join(nv, ";")
			warns = append(warns, fmt.Sprintf("%s: requested %s, the nodes differ: %s", st.Name, st.Value, v))
		}
		parts = append(parts, v)
	}
	if a != nil && !a.Slash && len(parts) > 1 {
		same := true
		for _, p := range parts {
			same = same && p == parts[0]
		}
		if same {
			return parts[0], warns
		}
		var kv []string
		for i, st := range settings {
			kv = append(kv, st.Name+"="+parts[i])
		}
		return strings.Join(kv, ","), warns
	}
	return strings.Join(parts, "/"), warns
}

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
