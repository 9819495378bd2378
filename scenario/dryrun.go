package scenario

import (
	"fmt"
	"github.com/habench/habench/internal/words"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

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
	fmt.Fprintf(w, "scenario %s (scale %s): %s\n", s.Name, p.Scale, words.Plural(len(p.Axes[0].Values), "topology"))
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
	order := ""
	if p.AxisOf(AxisRepeat).Name != "" {
		order = ", order " + p.Policy.Order
		if p.Policy.Order == OrderInterleaved {
			order += " (each deployment runs every cell's repeat 1, then every cell's repeat 2, ...)"
		}
	}
	fmt.Fprintf(w, "cell policy: prepare %s, restart %s, drop caches %s%s\n", p.Policy.Prepare, yesNo(p.Policy.Restart), yesNo(p.Policy.DropCaches), order)
	if c := s.Checker; c != nil {
		fmt.Fprintln(w, c.PlanLine())
	}
	if ob := s.Objective; ob != nil {
		fmt.Fprintln(w, ob.PlanLine())
	}
	p.printSchedule(w)
	if s.Workload.Via == ViaProxy && p.AxisOf(AxisVia).Name == "" {
		fmt.Fprintln(w, "via proxy: the workers connect to each topology's proxy (its write endpoint), which picks the node")
	}
	if !s.Links.IsZero() {
		fmt.Fprintf(w, "links between the nodes of each multi-node topology (one-way), every cell: %s\n", s.Links.String())
	}
	if c := s.Clients; !c.IsZero() {
		prog := "a copy of this habench, made on each for every cell and removed after it"
		if c.Bin != "" {
			prog = "their habench " + c.Bin
		}
		fmt.Fprintf(w, "clients: the workload runs from %s (%s), each with its share of the threads and rate; the checker and the probe writer run here\n", strings.Join(c.Hosts, ", "), prog)
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
		fmt.Fprintf(w, "\ndeployment %d: %s (existing cluster, %s: registered for the run, kind and flavor discovered)%s\n", d.Index, sp.Name, words.Plural(len(sp.DSNs), "node"), prep)
	default:
		fmt.Fprintf(w, "\ndeployment %d: %s (%s, %s, %s, %s installation%s): deploy ~%s%s\n", d.Index, sp.Name, sp.Kind,
			words.Plural(sp.Nodes, "node"), sp.Flavor, inst, extra, FormatDuration(d.Deploy), prep)
	}
	if line := proxyLine(sp.Proxy); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
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
		if status[c.Index] == schema.StatusDone && c.Reuse == nil {
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
	case status[c.Index] == schema.StatusDone:
		line += "  done (not run again)"
	default:
		line += "  ~" + FormatDuration(c.Estimate)
		if c.Note != "" {
			line += " (" + c.Note + ")"
		}
		if n := proxyChecksNote(c); n != "" {
			line += " (" + n + ")"
		}
		if p.SamePathControl(c) {
			line += " (same-path control: with the userspace link, zero delay through it)"
		}
		if st := status[c.Index]; st != "" && st != schema.StatusPending {
			line += " (" + st + " before: runs again)"
		}
	}
	return line
}

// printTotals writes the last lines of Print: the counts (done is the number of cells
// done already), the estimated time and how it is computed.
func (p *Plan) printTotals(w io.Writer, status map[int]string, done int) {
	torun := func(c *Cell) bool { return status[c.Index] != schema.StatusDone }
	total, deploys, cells := p.Estimate(torun)
	reused := 0
	for _, c := range p.Cells {
		if c.Reuse != nil {
			reused++
		}
	}
	fmt.Fprintf(w, "\n%s in %s", words.Plural(len(p.Cells), "cell"), words.Plural(len(p.Deployments), "deployment"))
	if reused > 0 {
		fmt.Fprintf(w, " (%d not run: they reuse a cell that cannot differ)", reused)
	}
	if done > 0 {
		fmt.Fprintf(w, ", %d done already", done)
	}
	fmt.Fprintf(w, "; estimated %s (deploy, prepare, destroy %s; cells %s)\n", FormatDuration(total), FormatDuration(deploys), FormatDuration(cells))
	fmt.Fprintf(w, "estimate: per deployment deploy (MariaDB 0.5s + 0.6s/node, MySQL 1s + 2.5s/node, galera 3s + 3s/node, group 5s + 3s/node)"+
		" + prepare (rows at 120k/s MariaDB, 85k/s MySQL; 50k/s and 28k/s with replicas) + destroy 1s;"+
		" per cell warmup + time + %v, + %v with links, + restart 1.5s/node MariaDB 3s/node MySQL, + %v drop caches, + cleanup and prepare with reprepare,"+
		" + two proxy restarts (1s + fall x check interval each) when a via value changes its checks\n",
		EstimatePerCell, EstimateLinks, EstimateDropCaches)
	if ob := p.Scenario.Objective; ob != nil {
		fo := ""
		if ob.Failover > 0 {
			fo = fmt.Sprintf(", + the failover run (warmup + time + %v + %v; the catch-up after it not counted)", ob.Failover, EstimatePerCell)
		}
		fmt.Fprintf(w, "capacity search: a cell's warmup + time + %v counted %d times (max_probes: the most it runs)%s\n", EstimatePerCell, ob.MaxProbes, fo)
	}
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
