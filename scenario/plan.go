package scenario

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
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
	// Via is how the workers reach the servers: ViaDirect, or ViaProxy (the topology's
	// proxy's write endpoint).
	Via string
	// ProxyChecks are the health checks the via value gives the topology's proxy for this
	// cell (zero: the topology's own): the proxy is restarted with them before the cell's
	// run and with its own after.
	ProxyChecks topology.ProxyChecks
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
// serves a contiguous run of cells; with cell.order interleaved (the default) each
// deployment runs its cells' first repeats, then their second ones, and so on. Errors are *topology.FieldError (with the file line
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
	if p.Policy.Order == "" {
		p.Policy.Order = OrderInterleaved
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
	if p.Policy.Order == OrderInterleaved {
		for _, d := range p.Deployments {
			slices.SortStableFunc(d.Cells, func(a, b *Cell) int { return a.Repeat - b.Repeat })
		}
	}
	return p, nil
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
			case AxisVia:
				if why := s.viaRefusal(viaOfValue(v), v.Proxy, axes["topology"], true); why != "" {
					return LineError(v.Line, field, v.Label, why)
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
	if s.Workload.Via != "" && axes["via"] == nil {
		if why := s.viaRefusal(s.Workload.Via, topology.ProxyChecks{}, axes["topology"], false); why != "" {
			return &topology.FieldError{Field: "workload.via", Value: s.Workload.Via, Reason: why}
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
	c := &Cell{Index: len(p.Cells) + 1, Values: map[string]string{}, Test: s.Workload.Test, Options: p.Options, Links: s.Links, Via: s.Workload.ViaOrDefault()}
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
		case AxisVia:
			c.Via, c.ProxyChecks = viaOfValue(v), v.Proxy
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
