package scenario

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/report"
	"github.com/habench/habench/results"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"github.com/spf13/pflag"
)

// Plan is a scenario expanded for one scale: the effective workload options, the axes in
// expansion order, every cell of the grid, and the deployments the cells share.
type Plan struct {
	Scenario *Scenario
	Scale    string
	// Options are the workload options every cell starts from (scaled).
	Options workload.Options
	// Policy is the effective cell policy (warmup scaled).
	Policy CellPolicy
	// Axes are the grid's axes in expansion order (outermost first). The topology axis is
	// always there; the others only when the sweep names them.
	Axes        []*Axis
	Cells       []*Cell
	Deployments []*Deployment
	// Failover are the dry run's lines on the workers' client failover in each topology
	// (printed after the fault schedule; set by the caller, experiment.ResumePlan, which
	// knows which faults take nodes away).
	Failover []string
}

// Deployment is one deployed cluster the plan's cells run on, in order: a topology with
// the option axes' values merged into its options.
type Deployment struct {
	Index int
	Spec  topology.Spec
	// Options are the option axes' values of this deployment, by axis name.
	Options map[string]string
	Cells   []*Cell
	// Deploy and Prepare are the estimated deploy time and one prepare (see EstimateDeploy,
	// EstimatePrepare).
	Deploy, Prepare time.Duration

	key string
	// SnapKey identifies the data snapshot the deployment starts from ("" without).
	SnapKey string
}

// Cell is one point of the grid: what to run, on which deployment.
type Cell struct {
	// Index is 1-based, in grid order.
	Index      int
	Deployment *Deployment
	// Values are the requested value labels by axis name ("topology": "async",
	// "threads": "16", "knob.sync_binlog": "1").
	Values   map[string]string
	Topology string
	Test     string
	Options  workload.Options
	Links    netem.Request
	// Knobs are the runtime variables to SET GLOBAL on every node before the run, by axis.
	Knobs []AxisSettings
	// ServerOptions are the deploy-time option axes' settings (already in the deployment's spec).
	ServerOptions []AxisSettings
	Repeat        int
	// Note says how the cell differs from what its values ask for ("" = it does not).
	Note string
	// Reuse, when set, is the cell whose runs stand for this one: it cannot differ (a
	// single node under a links axis), so it is not run.
	Reuse *Cell
	// Estimate is the cell's estimated wall time (EstimateCell).
	Estimate time.Duration
}

// AxisSettings are the variables one option or knob axis sets in a cell.
type AxisSettings struct {
	Axis     string    `json:"axis"`
	Settings []Setting `json:"settings"`
}

// Label is "topology=async links=0.6ms threads=16": the cell's axis values in plan order.
func (p *Plan) Label(c *Cell) string {
	var parts []string
	for _, a := range p.Axes {
		parts = append(parts, a.Name+"="+c.Values[a.Name])
	}
	return strings.Join(parts, " ")
}

// Plan expands the scenario for scale (small, medium or full; "" is full): applies
// ScaleCaps and the file's own profile, checks every axis value against the scenario, and
// builds the cells in expansion order (topology, option.*, knob.*, links, test, threads,
// repeat; the option and knob axes among themselves in the file's order), so a deployment
// serves a contiguous run of cells. Errors are *topology.FieldError (with the file line
// where known).
func (s *Scenario) Plan(scale string) (*Plan, error) {
	if scale == "" {
		scale = ScaleFull
	}
	prof, err := s.scaleProfile(scale)
	if err != nil {
		return nil, err
	}
	p := &Plan{Scenario: s, Scale: scale, Options: s.options, Policy: s.Cell}
	if p.Policy.Prepare == "" {
		p.Policy.Prepare = PrepareReuse
	}
	if err := p.scaleOptions(prof); err != nil {
		return nil, err
	}
	axes, names, err := s.scaledAxes(scale, prof)
	if err != nil {
		return nil, err
	}
	if err := s.checkAxes(p, axes); err != nil {
		return nil, err
	}
	if err := s.setReferences(scale, prof, axes); err != nil {
		return nil, err
	}
	if axes["topology"] == nil {
		a := &Axis{Name: "topology", Kind: AxisTopology}
		for _, t := range s.Topologies {
			a.Values = append(a.Values, AxisValue{Label: t.Name})
		}
		axes["topology"] = a
		names = append(names, "topology")
	}
	for _, k := range axisOrder {
		for _, n := range names {
			if axes[n].Kind == k {
				p.Axes = append(p.Axes, axes[n])
			}
		}
	}
	if err := p.expand(); err != nil {
		return nil, err
	}
	return p, nil
}

// scaleProfile is the file's profile for scale (nil for full, or a scale the file has no
// profile for); error on --scale for an unknown scale.
func (s *Scenario) scaleProfile(scale string) (*ScaleProfile, error) {
	switch scale {
	case ScaleSmall:
		return s.Scales.Small, nil
	case ScaleMedium:
		return s.Scales.Medium, nil
	case ScaleFull:
		return nil, nil
	}
	return nil, &topology.FieldError{Field: "--scale", Value: scale, Reason: "want small, medium or full"}
}

// profField is field f as the file spells it: under scales.<scale>. when a profile sets it.
func (p *Plan) profField(prof *ScaleProfile, f string) string {
	if prof != nil {
		return "scales." + p.Scale + "." + f
	}
	return f
}

// scaleOptions applies the scale's caps (ScaleCaps) and then the profile's workload and
// warmup to p.Options, checks them, and records the effective warmup in p.Policy.
func (p *Plan) scaleOptions(prof *ScaleProfile) error {
	if p.Policy.Warmup != nil {
		p.Options.Warmup = time.Duration(*p.Policy.Warmup)
	}
	o := &p.Options
	if cp, capped := ScaleCaps[p.Scale]; capped {
		o.Tables = min(o.Tables, cp.Tables)
		o.TableSize = min(o.TableSize, cp.TableSize)
		o.Threads = min(o.Threads, cp.Threads)
		if o.Time > cp.Time || (o.Time == 0 && o.Events == 0) {
			o.Time = cp.Time
		}
		o.Warmup = min(o.Warmup, cp.Warmup)
	}
	if prof != nil {
		fs := pflag.NewFlagSet("scale", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		workload.BindFlags(fs, o)
		for _, k := range slices.Sorted(maps.Keys(prof.Workload)) {
			v := fmt.Sprint(prof.Workload[k])
			if err := fs.Set(k, v); err != nil {
				return &topology.FieldError{Field: p.profField(prof, "workload."+k), Value: v, Reason: err.Error()}
			}
		}
		if prof.Cell != nil && prof.Cell.Warmup != nil {
			o.Warmup = time.Duration(*prof.Cell.Warmup)
		}
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%s: %w", p.profField(prof, "workload"), err)
	}
	if o.Time == 0 && o.Events == 0 {
		// sysbench runs until interrupted; a scenario's cells must end for the next to run.
		return &topology.FieldError{Field: p.profField(prof, "workload.time"), Value: "0", Reason: "with events 0 a cell would never end: give time > 0 or events > 0"}
	}
	w := Duration(o.Warmup)
	p.Policy.Warmup = &w
	return nil
}

// scaledAxes are the sweep's axes at scale, by name, and their names in the file's order:
// the file's (copies), capped (threads, repeats; ScaleCaps), then replaced by the
// profile's, which may only change an axis' values (or add repeat).
func (s *Scenario) scaledAxes(scale string, prof *ScaleProfile) (map[string]*Axis, []string, error) {
	axes := map[string]*Axis{}
	var names []string
	if s.Sweep != nil {
		for _, a := range s.Sweep.Axes {
			c := *a
			c.Values = slices.Clone(a.Values)
			axes[a.Name] = &c
			names = append(names, a.Name)
		}
	}
	if cp, capped := ScaleCaps[scale]; capped {
		if a := axes["threads"]; a != nil {
			var vals []AxisValue
			for _, v := range a.Values {
				if v.Int > cp.Threads {
					v = AxisValue{Label: fmt.Sprint(cp.Threads), Int: cp.Threads, Line: v.Line}
				}
				if !slices.ContainsFunc(vals, func(x AxisValue) bool { return x.Int == v.Int }) {
					vals = append(vals, v)
				}
			}
			a.Values = vals
		}
		if a := axes["repeat"]; a != nil && len(a.Values) > cp.Repeats {
			a.Values = a.Values[:cp.Repeats]
		}
	}
	if prof != nil && prof.Sweep != nil {
		for _, a := range prof.Sweep.Axes {
			if axes[a.Name] == nil && a.Kind != AxisRepeat {
				return nil, nil, LineError(a.Line, "scales."+scale+".sweep."+a.Name, "", "not an axis of the scenario's sweep (a profile can only change an axis' values)")
			}
			if axes[a.Name] == nil {
				names = append(names, a.Name)
			} else if !slices.Equal(a.Variables(), axes[a.Name].Variables()) {
				return nil, nil, LineError(a.Line, "scales."+scale+".sweep."+a.Name, strings.Join(a.Variables(), ","), "must set the same variables as the sweep's axis ("+strings.Join(axes[a.Name].Variables(), ",")+")")
			}
			c := *a
			axes[a.Name] = &c
		}
	}
	return axes, names, nil
}

// setReferences sets each axis' Reference: the file's sweep.reference, then the profile's,
// each a value of its axis at this scale; else the axis' first value (none for a links
// axis that has it: the same-path control).
func (s *Scenario) setReferences(scale string, prof *ScaleProfile, axes map[string]*Axis) error {
	for _, sw := range []*Sweep{s.Sweep, profSweep(prof)} {
		if sw == nil {
			continue
		}
		pre := "sweep.reference."
		if sw != s.Sweep {
			pre = "scales." + scale + "." + pre
		}
		for _, n := range slices.Sorted(maps.Keys(sw.References)) {
			v, a := sw.References[n], axes[n]
			switch {
			case a == nil && (n == "topology" || n == "repeats" || n == "repeat"):
				return LineError(sw.RefLines[n], pre+n, v, "not an axis with a reference (the topologies' reference is baseline:)")
			case a == nil:
				return LineError(sw.RefLines[n], pre+n, v, "not an axis of the sweep")
			case a.Kind == AxisTopology || a.Kind == AxisRepeat:
				return LineError(sw.RefLines[n], pre+n, v, "not an axis with a reference (the topologies' reference is baseline:)")
			case !slices.Contains(a.Labels(), v):
				where := ""
				if scale != ScaleFull {
					where = " at scale " + scale
				}
				return LineError(sw.RefLines[n], pre+n, v, fmt.Sprintf("not one of the axis' values%s (%s)", where, strings.Join(a.Labels(), ", ")))
			}
			a.Reference = v
		}
	}
	for _, a := range axes {
		if a.Reference == "" && len(a.Values) > 0 {
			a.Reference = a.Values[0].Label
			if a.Kind == AxisLinks && slices.Contains(a.Labels(), "none") {
				a.Reference = "none" // the same-path control
			}
		}
	}
	return nil
}

// MaxCells bounds a plan's grid (the product of its axes' lengths), before it is expanded.
const MaxCells = 10000

// checkGrid refuses a grid over MaxCells (field sweep, value "topology 3 x threads 100 x
// repeat 1000": the axes' lengths) before it is built.
func (p *Plan) checkGrid() error {
	cells := 1
	var parts []string
	for _, a := range p.Axes {
		cells *= max(1, len(a.Values))
		parts = append(parts, fmt.Sprintf("%s %d", a.Name, len(a.Values)))
	}
	if cells > MaxCells {
		return &topology.FieldError{Field: "sweep", Value: strings.Join(parts, " x "), Reason: fmt.Sprintf("over %d cells: split the grid into several scenarios", MaxCells)}
	}
	return nil
}

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

func profSweep(p *ScaleProfile) *Sweep {
	if p == nil {
		return nil
	}
	return p.Sweep
}

// SamePathControl reports whether cell is the zero-delay control of a links axis: its
// links value is none, the axis has a delay, and the cell's topology has links between
// local sandboxes (not on hosts nor existing: tc over SSH there, never the userspace
// link). With the userspace link (no kernel netem here), such a cell runs through the
// link at zero delay.
func (p *Plan) SamePathControl(c *Cell) bool {
	a := p.AxisOf(AxisLinks)
	if a.Name == "" || c.Values[a.Name] != "none" || c.Deployment.Spec.Nodes < 2 {
		return false
	}
	if sp := c.Deployment.Spec; sp.IsHosts() || sp.IsExisting() {
		return false // tc over SSH on the hosts: the userspace link is local sandboxes' only
	}
	return slices.ContainsFunc(a.Values, func(v AxisValue) bool { return !v.Links.IsZero() })
}

// checkAxes checks every axis value against the scenario: topology names, test names,
// links against each topology's nodes, option values in a deployable spec.
func (s *Scenario) checkAxes(p *Plan, axes map[string]*Axis) error {
	names := map[string]bool{}
	for _, t := range s.Topologies {
		names[t.Name] = true
	}
	if a := axes["links"]; a != nil && !s.Links.IsZero() {
		return LineError(a.Line, "sweep.links", "", "the scenario also has links: (applied to every cell); give the impairments in one place")
	}
	if s.Workload.Options["warmup-time"] != nil || s.Workload.Options["warmup_time"] != nil {
		if s.Cell.Warmup != nil {
			return &topology.FieldError{Field: "cell.warmup", Value: time.Duration(*s.Cell.Warmup).String(), Reason: "workload.options.warmup-time is set too; give the warmup in one place"}
		}
	}
	for _, a := range axes {
		field := "sweep." + a.Name
		for _, v := range a.Values {
			switch a.Kind {
			case AxisTopology:
				if !names[v.Label] {
					return LineError(v.Line, field, v.Label, "not one of the topologies' names")
				}
			case AxisTest:
				if _, err := workload.Lookup(v.Label); err != nil {
					return LineError(v.Line, field, v.Label, err.Error())
				}
			case AxisLinks:
				if v.Links.IsZero() {
					continue
				}
				if s.Network == cluster.NetLoopback {
					return LineError(v.Line, field, v.Label, "impairing links needs network netns (nodes on loopback share one interface)")
				}
				for _, t := range s.Topologies {
					if t.Nodes < 2 {
						continue
					}
					if _, err := v.Links.WithSites(links.Sites(t.Sites)).Build(t.MemberNames()); err != nil {
						var re *netem.RequestError
						if errors.As(err, &re) {
							return LineError(v.Line, field+"."+re.Field, re.Value, fmt.Sprintf("topology %s: %v", t.Name, re.Err))
						}
						return LineError(v.Line, field, v.Label, err.Error())
					}
				}
			}
		}
	}
	if s.Baseline != "" {
		if a := axes["topology"]; a != nil && !slices.Contains(a.Labels(), s.Baseline) {
			return &topology.FieldError{Field: "baseline", Value: s.Baseline, Reason: "not in sweep.topology"}
		}
	}
	return nil
}

// expand builds the cells (cross product in p.Axes order) and the deployments.
func (p *Plan) expand() error {
	if err := p.checkGrid(); err != nil {
		return err
	}
	spec := map[string]topology.Spec{}
	for _, t := range p.Scenario.Topologies {
		spec[t.Name] = t
	}
	idx := make([]int, len(p.Axes))
	var dep *Deployment
	firstOf := map[string]*Cell{} // single-node cells by their values but links
	for {
		c, key := p.newCell(idx)
		if dep == nil || dep.key != key {
			var err error
			if dep, err = p.newDeployment(spec[c.Topology], c, key); err != nil {
				return err
			}
			p.Deployments = append(p.Deployments, dep)
		}
		c.Deployment = dep
		p.markReuse(c, firstOf)
		if c.Reuse == nil {
			c.Estimate = p.EstimateCell(c)
		}
		dep.Cells = append(dep.Cells, c)
		p.Cells = append(p.Cells, c)
		// Next index, innermost axis fastest.
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(p.Axes[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return nil
		}
	}
}

// newCell builds the next cell of the grid: the value of each axis at idx (one index
// per p.Axes). It returns the cell and the key of its deployment (topology and server
// option values: cells with the same key share a deployment).
func (p *Plan) newCell(idx []int) (*Cell, string) {
	s := p.Scenario
	c := &Cell{Index: len(p.Cells) + 1, Values: map[string]string{}, Test: s.Workload.Test, Options: p.Options, Links: s.Links}
	depKey := []string{}
	for i, a := range p.Axes {
		v := a.Values[idx[i]]
		c.Values[a.Name] = v.Label
		switch a.Kind {
		case AxisTopology:
			c.Topology = v.Label
			depKey = append(depKey, v.Label)
		case AxisOption:
			c.ServerOptions = append(c.ServerOptions, AxisSettings{a.Name, v.Settings})
			depKey = append(depKey, a.Name+"="+v.Label)
		case AxisKnob:
			c.Knobs = append(c.Knobs, AxisSettings{a.Name, v.Settings})
		case AxisLinks:
			c.Links = v.Links
		case AxisTest:
			c.Test = v.Label
		case AxisThreads:
			c.Options.Threads = v.Int
		case AxisRepeat:
			c.Repeat = v.Int
		}
	}
	return c, strings.Join(depKey, " ")
}

// newDeployment builds the deployment (index next in p.Deployments) of topology sp with
// the server options of its first cell c, key as newCell returned it, and checks it:
// *topology.FieldError for what an existing cluster or the kind cannot do (option axes,
// cell.restart, links), or sp's validation error with the options.
func (p *Plan) newDeployment(sp topology.Spec, c *Cell, key string) (*Deployment, error) {
	if len(c.ServerOptions) > 0 {
		sp.Options = maps.Clone(sp.Options)
		if sp.Options == nil {
			sp.Options = map[string]string{}
		}
		for _, so := range c.ServerOptions {
			for _, st := range so.Settings {
				sp.Options[st.Name] = st.Value
			}
		}
	}
	if !Deploys(sp) {
		for _, so := range c.ServerOptions {
			return nil, &topology.FieldError{Field: "sweep." + so.Axis, Value: c.Values[so.Axis], Reason: fmt.Sprintf("topology %s is an existing cluster: habench cannot deploy it with another option (use a knob axis)", sp.Name)}
		}
		if p.Policy.Restart {
			return nil, &topology.FieldError{Field: "cell.restart", Value: "true", Reason: fmt.Sprintf("topology %s is an existing cluster: habench does not restart its servers", sp.Name)}
		}
		if c.Values["links"] != "" && !c.Links.IsZero() {
			return nil, &topology.FieldError{Field: "sweep.links", Value: c.Values["links"], Reason: fmt.Sprintf("topology %s is an existing cluster: links need the network namespaces of a habench sandbox", sp.Name)}
		}
	} else if err := sp.Validate(); err != nil {
		return nil, fmt.Errorf("topology %s with %s: %w", sp.Name, key, err)
	}
	if p.Policy.Restart && !Restartable(sp.Kind) {
		return nil, &topology.FieldError{Field: "cell.restart", Value: "true", Reason: fmt.Sprintf("topology %s: restarting servers between cells is not supported for kind %s", sp.Name, sp.Kind)}
	}
	dep := &Deployment{Index: len(p.Deployments) + 1, Spec: sp, Options: map[string]string{}, key: key}
	for _, so := range c.ServerOptions {
		dep.Options[so.Axis] = c.Values[so.Axis]
	}
	dep.Deploy = EstimateDeploy(sp)
	dep.Prepare = EstimatePrepare(sp, p.Options)
	p.estimateSnapshotPrepare(dep)
	return dep, nil
}

// markReuse: a single node has no links, so its cells for the links axis' other values
// would be the same run again; they are not run (c.Reuse is the first one, firstOf keys
// the first cells by their label without links), and the reports reuse the first one
// (the comparison of each links value still has the single node's numbers).
func (p *Plan) markReuse(c *Cell, firstOf map[string]*Cell) {
	if la := p.AxisOf(AxisLinks); la.Name == "" || c.Deployment.Spec.Nodes >= 2 {
		return
	}
	k := p.Label(c)
	k = strings.Replace(k, "links="+c.Values["links"], "links=", 1)
	if src, ok := firstOf[k]; ok {
		c.Reuse = src
		c.Note = fmt.Sprintf("topology %s has 1 node (no links): cell %d's runs stand for this cell", c.Topology, src.Index)
		return
	}
	firstOf[k] = c
	if !c.Links.IsZero() {
		c.Note = fmt.Sprintf("topology %s has 1 node: runs without links", c.Topology)
	}
}

// Restartable: every registered kind's sandbox can restart its nodes.
func Restartable(k topology.Kind) bool {
	_, err := topology.LookupKind(k)
	return err == nil
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

// EstimateCell is a cell's wall time: warmup + time + EstimatePerCell, plus EstimateLinks
// with links, a restart, EstimateDropCaches, and a cleanup + prepare with reprepare.
// Events-limited runs (time 0) count only the overheads.
func (p *Plan) EstimateCell(c *Cell) time.Duration {
	d := c.Options.Warmup + c.Options.Time + EstimatePerCell
	if !c.Links.IsZero() && c.Deployment.Spec.Nodes > 1 {
		d += EstimateLinks
	}
	if p.Policy.Restart {
		d += EstimateRestart(c.Deployment.Spec)
	}
	if p.Policy.DropCaches {
		d += EstimateDropCaches
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

// Print writes the plan for --dry-run: the workload, the policy, the faults and the probe
// writer with their times (printSchedule), the axes, each
// deployment with its cells (axis values, estimate, skip reason, and with status the
// state recorded in a results directory), the counts and the estimated time with how it
// was computed.
func (p *Plan) Print(w io.Writer, status map[int]string) {
	p.printHeader(w)
	done := 0
	for _, d := range p.Deployments {
		done += p.printDeployment(w, d, status)
	}
	p.printTotals(w, status, done)
}

// printHeader writes the first lines of Print: the scenario, the workload, the cell
// policy, the standing links and the axes.
func (p *Plan) printHeader(w io.Writer) {
	s := p.Scenario
	o := p.Options
	fmt.Fprintf(w, "scenario %s (scale %s): %s\n", s.Name, p.Scale, report.Plural(len(p.Axes[0].Values), "topology"))
	if d := strings.TrimSpace(s.Description); d != "" {
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(d, "\n", "\n  "))
	}
	run := fmt.Sprintf("%v per cell", o.Time)
	if o.Time == 0 {
		run = fmt.Sprintf("%d events per cell", o.Events)
	}
	threads := fmt.Sprintf("%d threads, ", o.Threads)
	if p.AxisOf(AxisThreads).Name != "" {
		threads = ""
	}
	fmt.Fprintf(w, "workload %s: %d tables x %d rows, %s%s, warmup %v (excluded from results), report interval %v\n",
		s.Workload.Test, o.Tables, o.TableSize, threads, run, o.Warmup, o.ReportInterval)
	fmt.Fprintf(w, "cell policy: prepare %s, restart %s, drop caches %s\n", p.Policy.Prepare, yesNo(p.Policy.Restart), yesNo(p.Policy.DropCaches))
	if c := s.Checker; c != nil {
		fmt.Fprintln(w, c.PlanLine())
	}
	p.printSchedule(w)
	if !s.Links.IsZero() {
		fmt.Fprintf(w, "links between the nodes of each multi-node topology (one-way), every cell: %s\n", s.Links.String())
	}
	var axes []string
	for _, a := range p.Axes {
		name := a.Name
		if v := a.Variables(); len(v) > 1 {
			if a.Slash {
				name += " (" + strings.Join(v, "/") + ")"
			} else {
				name += " (" + strings.Join(v, ", ") + ": each)"
			}
		}
		ref := ""
		if a.Kind != AxisTopology && a.Kind != AxisRepeat && len(a.Values) > 1 {
			ref = " (changes against " + a.Reference + ")"
		}
		axes = append(axes, fmt.Sprintf("%s [%s]%s", name, strings.Join(a.Labels(), ", "), ref))
	}
	fmt.Fprintf(w, "axes (outermost first): %s\n", strings.Join(axes, " x "))
}

// printDeployment writes deployment d of Print: what is deployed (or registered) with
// its estimates, its knobs and worker nodes, and a line per cell. It returns how many of
// its cells status records as done.
func (p *Plan) printDeployment(w io.Writer, d *Deployment, status map[int]string) int {
	sp := d.Spec
	inst := string(sp.Installation.Kind)
	if sp.Installation.Path != "" {
		inst += " " + sp.Installation.Path
	}
	extra := ""
	for _, k := range slices.Sorted(maps.Keys(d.Options)) {
		extra += ", " + k + "=" + d.Options[k]
	}
	prep := ""
	if p.Policy.Prepare == PrepareReuse {
		prep = ", prepare ~" + FormatDuration(d.Prepare)
		if d.SnapKey != "" {
			prep = ", data from a snapshot ~" + FormatDuration(d.Prepare)
		}
		if !Deploys(sp) {
			prep = ": prepare ~" + FormatDuration(d.Prepare)
		}
	}
	switch {
	case sp.Cluster != "":
		fmt.Fprintf(w, "\ndeployment %d: %s (cluster %s of the state directory: never deployed nor destroyed by the run)%s\n", d.Index, sp.Name, sp.Cluster, prep)
	case !Deploys(sp):
		fmt.Fprintf(w, "\ndeployment %d: %s (existing cluster, %s: registered for the run, kind and flavor discovered)%s\n", d.Index, sp.Name, report.Plural(len(sp.DSNs), "node"), prep)
	default:
		fmt.Fprintf(w, "\ndeployment %d: %s (%s, %s, %s, %s installation%s): deploy ~%s%s\n", d.Index, sp.Name, sp.Kind,
			report.Plural(sp.Nodes, "node"), sp.Flavor, inst, extra, FormatDuration(d.Deploy), prep)
	}
	if len(sp.Knobs) > 0 {
		ks, _ := topology.KnobsFromMap(sp.Knobs)
		var kv []string
		for _, k := range ks {
			kv = append(kv, k.String())
		}
		fmt.Fprintf(w, "  knobs for every run: %s\n", strings.Join(kv, " "))
	}
	if nodes := p.Scenario.Workload.Nodes.For(sp.Name); len(nodes) > 0 {
		fmt.Fprintf(w, "  workers connect to %s (workload.nodes); prepare on the writable nodes\n", strings.Join(nodes, ", "))
	}
	if nodes := p.Scenario.Workload.ReadNodes.For(sp.Name); len(nodes) > 0 {
		fmt.Fprintf(w, "  read-only statements go to %s (workload.read_nodes), each written row read back there: stale reads counted\n", strings.Join(nodes, ", "))
	}
	if ck := p.Scenario.Checker; ck != nil && len(ck.ReadNodes.For(sp.Name)) > 0 {
		fmt.Fprintf(w, "  the checker's read-only transactions go to %s (checker.read_nodes)\n", strings.Join(ck.ReadNodes.For(sp.Name), ", "))
	}
	done := 0
	for _, c := range d.Cells {
		if status[c.Index] == results.StatusDone && c.Reuse == nil {
			done++
		}
		fmt.Fprintln(w, p.cellLine(c, status))
	}
	return done
}

// cellLine is the line of cell c in Print: its index, label and estimate, or why it
// does not run (reused, done), with notes.
func (p *Plan) cellLine(c *Cell, status map[int]string) string {
	line := fmt.Sprintf("  cell %*d  %s", len(fmt.Sprint(len(p.Cells))), c.Index, p.Label(c))
	switch {
	case c.Reuse != nil:
		line += fmt.Sprintf("  not run: reuses cell %d (%s has 1 node, no links)", c.Reuse.Index, c.Topology)
	case status[c.Index] == results.StatusDone:
		line += "  done (not run again)"
	default:
		line += "  ~" + FormatDuration(c.Estimate)
		if c.Note != "" {
			line += " (" + c.Note + ")"
		}
		if p.SamePathControl(c) {
			line += " (same-path control: with the userspace link, zero delay through it)"
		}
		if st := status[c.Index]; st != "" && st != results.StatusPending {
			line += " (" + st + " before: runs again)"
		}
	}
	return line
}

// printTotals writes the last lines of Print: the counts (done is the number of cells
// done already), the estimated time and how it is computed.
func (p *Plan) printTotals(w io.Writer, status map[int]string, done int) {
	torun := func(c *Cell) bool { return status[c.Index] != results.StatusDone }
	total, deploys, cells := p.Estimate(torun)
	reused := 0
	for _, c := range p.Cells {
		if c.Reuse != nil {
			reused++
		}
	}
	fmt.Fprintf(w, "\n%s in %s", report.Plural(len(p.Cells), "cell"), report.Plural(len(p.Deployments), "deployment"))
	if reused > 0 {
		fmt.Fprintf(w, " (%d not run: they reuse a cell that cannot differ)", reused)
	}
	if done > 0 {
		fmt.Fprintf(w, ", %d done already", done)
	}
	fmt.Fprintf(w, "; estimated %s (deploy, prepare, destroy %s; cells %s)\n", FormatDuration(total), FormatDuration(deploys), FormatDuration(cells))
	fmt.Fprintf(w, "estimate: per deployment deploy (MariaDB 0.5s + 0.6s/node, MySQL 1s + 2.5s/node, galera 3s + 3s/node, group 5s + 3s/node)"+
		" + prepare (rows at 120k/s MariaDB, 85k/s MySQL; 50k/s and 28k/s with replicas) + destroy 1s;"+
		" per cell warmup + time + %v, + %v with links, + restart 1.5s/node MariaDB 3s/node MySQL, + %v drop caches, + cleanup and prepare with reprepare\n",
		EstimatePerCell, EstimateLinks, EstimateDropCaches)
	if p.Scenario.SnapshotsOn() {
		fmt.Fprintln(w, "snapshots: one prepare per installation and data shape (a one-node deploy, prepare and destroy), then a copy of the data (400 MB/s per node) for each deployment")
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Inert lists the topologies axis a cannot change: a links axis on a single node.
func (p *Plan) Inert(a *Axis) []string {
	if a.Kind != AxisLinks {
		return nil
	}
	var out []string
	for _, d := range p.Deployments {
		if d.Spec.Nodes < 2 && !slices.Contains(out, d.Spec.Name) {
			out = append(out, d.Spec.Name)
		}
	}
	return out
}

// Baseline is the topology the comparison's percentages refer to: the scenario's
// baseline:, else the first single primary among its topologies (the default, and
// what `habench report` picks for runs outside a scenario), else its first topology.
func (p *Plan) Baseline() string {
	b, _ := p.BaselineWhy()
	return b
}

// BaselineWhy is Baseline and why it was chosen, in report.Baseline's words.
func (p *Plan) BaselineWhy() (string, string) {
	if p.Scenario.Baseline != "" {
		return p.Scenario.Baseline, "the scenario's baseline"
	}
	for _, t := range p.Scenario.Topologies {
		if t.Kind == topology.Single && slices.ContainsFunc(p.Axes[0].Values, func(v AxisValue) bool { return v.Label == t.Name }) {
			return t.Name, "the single primary, by default"
		}
	}
	return p.Axes[0].Values[0].Label, "the first topology, as none is a single primary"
}

// WorkloadEnd is when every cell's workload ends after it starts: the effective warm-up
// (cell.warmup, else warmup-time, as scaled) plus time, the clock fault times run on; 0
// when the workload runs for a number of events (time 0: its end is not known).
func (p *Plan) WorkloadEnd() time.Duration {
	if p.Options.Time == 0 {
		return 0
	}
	return p.Options.Warmup + p.Options.Time
}

// Compared reports whether the plan sweeps more than one topology, so that one of them
// is the baseline the others are compared with. A plan of one topology has no baseline:
// its results say none (no baseline in sweep.json or the manifests, no vs base columns).
func (p *Plan) Compared() bool { return len(p.Axes[0].Values) > 1 }

// GroupOf is the cell's values of the axes compared across (all but topology and repeat).
func (p *Plan) GroupOf(values map[string]string) (string, map[string]string) {
	var parts []string
	m := map[string]string{}
	for _, a := range p.Axes {
		if a.Kind == AxisTopology || a.Kind == AxisRepeat {
			continue
		}
		parts = append(parts, a.Name+"="+values[a.Name])
		m[a.Name] = values[a.Name]
	}
	if len(m) == 0 {
		m = nil
	}
	return strings.Join(parts, " "), m
}

// AxisNamed returns the axis called name, or nil.
func (p *Plan) AxisNamed(name string) *Axis {
	for _, a := range p.Axes {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// AxisOf returns the plan's axis of kind k, or an empty Axis when it has none.
func (p *Plan) AxisOf(k AxisKind) *Axis {
	for _, a := range p.Axes {
		if a.Kind == k {
			return a
		}
	}
	return &Axis{}
}
