package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/report"
	"github.com/habench/habench/results"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/stats"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Scenario is a whole experiment in one file: topologies to deploy one after the other
// and the workload to run on each, with sysbench's option names.
type Scenario struct {
	Name        string          `yaml:"name"`
	Description string          `yaml:"description"`
	Network     string          `yaml:"network"` // auto (default), netns, loopback
	Topologies  []topology.Spec `yaml:"topologies"`
	// installationGiven[i]: row i named its installation (ParseScenario fills the others'
	// with this machine's default; InstallationGiven).
	installationGiven []bool
	Workload          ScenarioWorkload `yaml:"workload"`
	// Baseline names the topology the comparison's percentages refer to (default: the first).
	Baseline string `yaml:"baseline"`
	// Links are the one-way impairments between the nodes of each multi-node topology
	// during its run: an impairment for every directed link ("0.6ms", "delay 5ms jitter
	// 1ms loss 0.1%"; round trip = twice the delay), or a mapping with all, groups, node,
	// link and partition as in `habench netem apply` (netem.Request). Needs network
	// namespaces (root).
	Links netem.Request `yaml:"links"`
	// Sweep is the grid of cells (see Sweep); without it every topology is one cell.
	Sweep *Sweep `yaml:"sweep"`
	// Cell is the per-cell policy: prepare reuse|reprepare, restart, drop_caches, warmup.
	Cell CellPolicy `yaml:"cell"`
	// Scales are the file's own small and medium profiles (see Plan and ScaleCaps).
	Scales Scales `yaml:"scales"`
	// Faults are injected into every cell's cluster at their times after the workload
	// starts (warm-up included), e.g. [{at: 10s, action: kill, node: writer}].
	Faults []FaultEvent `yaml:"faults"`
	// Probe runs the probe writer in every cell (lost acknowledged commits); default: on
	// when the scenario has faults.
	Probe *bool `yaml:"probe"`
	// Checker runs a checker workload beside the workload in every cell (see
	// CheckerSpec), e.g. {workload: register, isolation: REPEATABLE-READ}.
	Checker *CheckerSpec `yaml:"checker"`

	options workload.Options
	raw     []byte
}

// ScenarioWorkload is the workload part of a scenario: the test name and sysbench options
// by their sysbench names ("table-size: 10000", "time: 30", "report-interval: 1").
type ScenarioWorkload struct {
	Test    string         `yaml:"test"`
	Options map[string]any `yaml:"options"`
	// Nodes are the nodes the workers connect to, round-robin (as `habench sysbench
	// --nodes`; default: the writable nodes): a list for every topology ([n1]), or a
	// mapping of topology name to list ({galera3: [n1], group3: [n1, n2]}, the others the
	// default). Checked against each topology's node names when the file is parsed.
	// Prepare and cleanup always use the writable nodes.
	Nodes WorkloadNodes `yaml:"nodes"`
	// Writer is auto (the workers follow the writer after a failover or a promote) or
	// fixed; default auto for single-primary groups, fixed otherwise (DefaultWriterMode).
	// auto is refused with workload.nodes and for kinds without a single writer.
	Writer string `yaml:"writer"`
}

// WorkloadNodes is workload.nodes: All for every topology, or ByTopology per topology.
type WorkloadNodes struct {
	All        []string
	ByTopology map[string][]string
	Line       int
}

// UnmarshalYAML reads a list of node names or a mapping of topology name to such a list.
func (w *WorkloadNodes) UnmarshalYAML(n *yaml.Node) error {
	w.Line = n.Line
	list := func(v *yaml.Node, field string) ([]string, error) {
		var out []string
		if err := eachScalar(v, field, func(it *yaml.Node) error {
			if slices.Contains(out, it.Value) {
				return lineError(it.Line, field, it.Value, "node given twice")
			}
			out = append(out, it.Value)
			return nil
		}); err != nil {
			return nil, err
		}
		return out, nil
	}
	if n.Kind == yaml.MappingNode {
		w.ByTopology = map[string][]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			l, err := list(v, "workload.nodes."+k.Value)
			if err != nil {
				return err
			}
			w.ByTopology[k.Value] = l
		}
		return nil
	}
	var err error
	w.All, err = list(n, "workload.nodes")
	return err
}

// For is the nodes the workers of topology use (nil: the writable nodes).
func (w WorkloadNodes) For(topology string) []string {
	if w.ByTopology != nil {
		return w.ByTopology[topology]
	}
	return w.All
}

// InstallationGiven reports whether topology row i named its installation in the file;
// false for a row whose installation ParseScenario defaulted for this machine (a MySQL
// row's local root filesystem), which `run --hosts` replaces with the hosts' server.
func (s *Scenario) InstallationGiven(i int) bool {
	return i < len(s.installationGiven) && s.installationGiven[i]
}

// ParseScenario decodes and validates a scenario. Unknown keys are errors naming the line,
// and so is a byte that is not text (topology.CheckText, naming the enclosing key too);
// workload options go through the same parser as the command line, so they fail the same way.
func ParseScenario(b []byte) (*Scenario, error) {
	var s Scenario
	if err := decodeScenario(b, &s); err != nil {
		return nil, err
	}
	seen, err := s.checkTopologies()
	if err != nil {
		return nil, err
	}
	switch s.Network {
	case "", "auto", cluster.NetNamespaces, cluster.NetLoopback:
	default:
		return nil, &topology.FieldError{Field: "network", Value: s.Network, Reason: "want auto, netns or loopback"}
	}
	if err := s.checkLinks(); err != nil {
		return nil, err
	}
	if err := s.checkWorkloadNodes(seen); err != nil {
		return nil, err
	}
	if s.Baseline != "" && !seen[s.Baseline] {
		return nil, &topology.FieldError{Field: "baseline", Value: s.Baseline, Reason: "not one of the topologies' names"}
	}
	if err := s.parseWorkload(); err != nil {
		return nil, err
	}
	if s.Checker != nil {
		if err := s.Checker.Validate(); err != nil {
			return nil, err
		}
	}
	if err := validateFaults(s.Faults, s.Topologies, s.Network, s.options.Warmup+s.options.Time); err != nil {
		return nil, err
	}
	switch s.Cell.Prepare {
	case "", PrepareReuse, PrepareReprepare:
	default:
		return nil, &topology.FieldError{Field: "cell.prepare", Value: s.Cell.Prepare, Reason: "want reuse or reprepare"}
	}
	if err := dropCachesNeedHosts(s.Cell, s.Topologies); err != nil {
		return nil, err
	}
	if err := faultsNeedFreeLinks(&s); err != nil {
		return nil, err
	}
	s.raw = slices.Clone(b)
	// Every scale must expand, whichever one is run; the file as written first, so that
	// its own errors are not reported as a scale's.
	for _, sc := range []string{ScaleFull, ScaleSmall, ScaleMedium} {
		if _, err := s.Plan(sc); err != nil {
			if sc != ScaleFull {
				return nil, fmt.Errorf("scale %s: %w", sc, err)
			}
			return nil, err
		}
	}
	return &s, nil
}

// checkTopologies fills in and validates every topology (its dsns too, for an existing
// cluster given by them) and refuses none or a name used twice. It returns the names seen.
func (s *Scenario) checkTopologies() (map[string]bool, error) {
	if len(s.Topologies) == 0 {
		return nil, &topology.FieldError{Field: "topologies", Value: "", Reason: "want at least one topology"}
	}
	seen := map[string]bool{}
	for i := range s.Topologies {
		t := &s.Topologies[i]
		s.installationGiven = append(s.installationGiven, t.Installation.Kind != "")
		t.Defaults()
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("topologies[%d]: %w", i, err)
		}
		if !deploys(*t) {
			// dsns registered for the run: bad ones (syntax, or refused by the test
			// harness's network guard) are bad input now, not a failed cell after the run has begun.
			if _, err := cluster.ExistingNodes(*t); err != nil {
				return nil, fmt.Errorf("topologies[%d]: %w", i, err)
			}
		}
		if seen[t.Name] {
			return nil, &topology.FieldError{Field: fmt.Sprintf("topologies[%d].name", i), Value: t.Name, Reason: "used twice"}
		}
		seen[t.Name] = true
	}
	return seen, nil
}

// checkLinks checks the standing links: they need ssh: on an existing cluster and network
// netns, and are built against every multi-node topology's node names now, not after the
// first deploy (against n1, n2 when there is none, so the values are still checked).
func (s *Scenario) checkLinks() error {
	if s.Links.IsZero() {
		return nil
	}
	for i, t := range s.Topologies {
		if !deploys(t) && t.SSH == nil {
			return &topology.FieldError{Field: fmt.Sprintf("topologies[%d].provider", i), Value: t.Provider,
				Reason: "links on an existing cluster need ssh access to its hosts: give dsns with ssh: (tc over SSH)"}
		}
	}
	if s.Network == cluster.NetLoopback {
		v := s.Links.String()
		if (netem.Request{All: s.Links.All}).String() == v {
			v = s.Links.All
		}
		return &topology.FieldError{Field: "links", Value: v, Reason: "impairing links needs network netns (nodes on loopback share one interface)"}
	}
	sizes := map[string]int{}
	for _, t := range s.Topologies {
		if t.Nodes > 1 {
			sizes[t.Name] = t.Nodes
		}
	}
	if len(sizes) == 0 {
		sizes[s.Topologies[0].Name] = 2
	}
	for _, t := range s.Topologies {
		if sizes[t.Name] == 0 {
			continue
		}
		var names []string
		for i := 1; i <= sizes[t.Name]; i++ {
			names = append(names, topology.NodeName(i))
		}
		if sizes[t.Name] == t.Nodes {
			names = t.MemberNames() // with aux members (an arbitrator)
		}
		if _, err := s.Links.WithSites(LinkSites(t.Sites)).Build(names); err != nil {
			var re *netem.RequestError
			if errors.As(err, &re) {
				return &topology.FieldError{Field: "links." + re.Field, Value: re.Value, Reason: fmt.Sprintf("topology %s: %v", t.Name, re.Err)}
			}
			return &topology.FieldError{Field: "links", Value: s.Links.String(), Reason: err.Error()}
		}
	}
	return nil
}

// parseWorkload checks workload.test, parses workload.options into s.options (the command
// line's parser, sorted by key) and checks workload.writer against every topology.
func (s *Scenario) parseWorkload() error {
	if _, err := workload.Lookup(s.Workload.Test); err != nil {
		return &topology.FieldError{Field: "workload.test", Value: s.Workload.Test, Reason: err.Error()}
	}
	s.options = workload.DefaultOptions()
	fs := pflag.NewFlagSet("scenario", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workload.BindFlags(fs, &s.options)
	keys := make([]string, 0, len(s.Workload.Options))
	for k := range s.Workload.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fmt.Sprint(s.Workload.Options[k])
		if k == "nodes" {
			return &topology.FieldError{Field: "workload.options.nodes", Value: v, Reason: "the workers' nodes are workload.nodes (a list, or a mapping of topology name to list), next to workload.options"}
		}
		if err := fs.Set(k, v); err != nil {
			return &topology.FieldError{Field: "workload.options." + k, Value: v, Reason: err.Error()}
		}
	}
	if err := s.options.Validate(); err != nil {
		return fmt.Errorf("workload.options: %w", err)
	}
	switch s.Workload.Writer {
	case "", WriterFixed:
	case WriterAuto:
		for i, t := range s.Topologies {
			if why := CanFollow(t); why != "" {
				return &topology.FieldError{Field: "workload.writer", Value: s.Workload.Writer, Reason: fmt.Sprintf("topologies[%d] %s: %s", i, t.Name, why)}
			}
			if len(s.Workload.Nodes.For(t.Name)) > 0 {
				return &topology.FieldError{Field: "workload.writer", Value: s.Workload.Writer, Reason: "workload.nodes chooses the nodes: auto follows the writer instead"}
			}
		}
	default:
		return &topology.FieldError{Field: "workload.writer", Value: s.Workload.Writer, Reason: "want auto or fixed"}
	}
	return nil
}

// dropCachesNeedHosts refuses cell.drop_caches for a topology whose hosts habench cannot
// reach: an existing cluster given by dsns without ssh: (one registered in the state
// directory, cluster:, is checked when the run loads it). *topology.FieldError.
func dropCachesNeedHosts(p CellPolicy, ts []topology.Spec) error {
	if !p.DropCaches {
		return nil
	}
	for i, t := range ts {
		if !deploys(t) && t.Cluster == "" && t.SSH == nil {
			return &topology.FieldError{Field: "cell.drop_caches", Value: "true",
				Reason: fmt.Sprintf("topologies[%d] %s is an existing cluster without ssh: habench cannot reach its hosts to drop their page cache (give ssh:, or drop_caches: false)", i, t.Name)}
		}
	}
	return nil
}

// decodeScenario checks that b is text (topology.CheckText) and decodes it into s,
// strictly (unknown keys are errors naming the line). Errors are one line.
func decodeScenario(b []byte, s *Scenario) error {
	if err := topology.CheckText(b); err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("empty scenario")
		}
		return fmt.Errorf("%s", topology.YAMLError(err))
	}
	return nil
}

// checkWorkloadNodes checks workload.nodes against each topology's node names (n1..nN
// for a sandbox or a dsns: list; a cluster: of the state directory is checked when it is
// loaded).
func (s *Scenario) checkWorkloadNodes(topologies map[string]bool) error {
	w := s.Workload.Nodes
	for _, t := range slices.Sorted(maps.Keys(w.ByTopology)) {
		if !topologies[t] {
			return lineError(w.Line, "workload.nodes", t, "not one of the topologies' names")
		}
	}
	for _, t := range s.Topologies {
		nodes, field := w.For(t.Name), "workload.nodes"
		if w.ByTopology != nil {
			field += "." + t.Name
		}
		size := t.Nodes
		if t.Cluster != "" {
			continue // a cluster of the state directory: its nodes are known at the run
		}
		if !deploys(t) {
			size = len(t.DSNs)
		}
		for _, n := range nodes {
			found := false
			for i := 1; i <= size; i++ {
				found = found || topology.NodeName(i) == n
			}
			if !found {
				return lineError(w.Line, field, n, fmt.Sprintf("topology %s has no such node (its nodes are n1..n%d)", t.Name, size))
			}
		}
	}
	return nil
}

// Raw returns the scenario file's bytes as parsed.
func (s *Scenario) Raw() []byte { return s.raw }

// Options returns the parsed workload options.
func (s *Scenario) Options() workload.Options { return s.options }

// ScenarioRun runs a scenario: the cells of its plan (every topology once without a
// sweep), deployment by deployment: deploy, prepare, the cells (restart, drop caches,
// knobs, run with sampling), destroy; then sweep.json, sweep.md, comparison.md/json and
// the sweep's curve points. Every deployed cluster is destroyed also on error or
// interrupt.
type ScenarioRun struct {
	Scenario    *Scenario
	Sandbox     *cluster.Sandbox
	ResultsDir  string // parent directory; the run gets <time>-<scenario name> inside
	Stdout      io.Writer
	Log         *slog.Logger
	CommandLine []string
	// Keep leaves the clusters running after the run (for inspection).
	Keep bool
	// YesLong confirms a run estimated over LongRun (24 h): without it such a run is
	// refused before anything is deployed; with it the WARNING is printed first.
	YesLong bool
	// Scale is small, medium or full ("": full, or the resumed directory's scale).
	Scale string
	// ResumeDir, when set, is a sweep directory to complete: only its cells that are not
	// done run, and results are added to it. The scenario file must be the one it ran.
	ResumeDir string
	// Injector, when set, injects the scenario's faults (its Links start the link process
	// of partitions); without it faults other than partitions still work.
	Injector *Injector
	// Progress, when set, shows the progress line (cell i of n, ETA).
	Progress *Progress
	// OnCell, when set, sees each cell's record after it ran (tests, live views).
	OnCell func(CellRecord)
	// LiveNodes prints a line per report interval with every node's lag, backlog, queues
	// and flow control (LiveNodes), for clusters; off by default (the sysbench layout).
	LiveNodes bool
	// BenchHook, when set, is called with each topology's Bench just before it runs (to
	// attach live metrics to OnInterval/OnSamples); the function it returns, if not nil,
	// is called when that run has ended.
	BenchHook func(b *Bench) (done func())
}

// Row is one run's line in the comparison (comparison.json; results.ComparisonRow).
type Row = results.ComparisonRow

// Run executes the scenario (see ScenarioRun) and returns the results directory and the
// comparison rows. Errors: bad input (*topology.FieldError: resume of another file,
// drop_caches without root, a cluster name in use), a missing installation, an
// interrupt (ctx's error), or how many cells failed.
func (r *ScenarioRun) Run(ctx context.Context) (string, []Row, error) {
	return r.runSweep(ctx)
}

// point is one point of the comparison: a cell and its repeats' rows.
type point struct {
	c    *stats.Cell
	rows []Row
}

// points groups rows by their point (Row.Stats), in the rows' order; a row without
// Stats is a point of its own (its own numbers, no percentages).
func points(rows []Row) []point {
	var out []point
	idx := map[*stats.Cell]int{}
	for _, r := range rows {
		c := r.Stats
		if c == nil {
			var s Summary
			if r.Summary != nil {
				s = *r.Summary
			}
			c = &stats.Cell{Topology: r.Topology, TPS: stats.Of([]float64{s.TPS}), QPS: stats.Of([]float64{s.QPS}),
				AvgMs: stats.Of([]float64{s.LatencyMs["avg"]}), P95Ms: stats.Of([]float64{s.LatencyMs["p95"]}), P99Ms: stats.Of([]float64{s.LatencyMs["p99"]})}
		} else if i, ok := idx[c]; ok {
			out[i].rows = append(out[i].rows, r)
			continue
		}
		idx[c] = len(out)
		out = append(out, point{c: c, rows: []Row{r}})
	}
	return out
}

// name is the point's topology with what qualifies it in the table itself (incomplete
// runs); the longer notes (reused, same path) are footnotes (see footnotes).
func (pt point) name() string {
	name := pt.rows[0].Topology
	failed := 0
	for _, x := range pt.rows {
		if x.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		name += fmt.Sprintf(" (%d of %d runs incomplete, left out)", failed, len(pt.rows))
	}
	return name
}

// footnotes collects the notes on a table's points: a marker per kind of note ("a",
// "b", ...) after the topology, and the notes under the table, each once.
type footnotes struct {
	marks []string          // in order of first use
	texts map[string]string // marker -> text
	by    map[string]string // note kind -> marker
	names map[string][]string
}

// mark returns the marker of the note of kind (text is the note's lead, names the
// point's topology and its detail, e.g. "s1async +0.015 ms").
func (f *footnotes) mark(kind, text, detail string) string {
	if f.by == nil {
		f.by, f.texts, f.names = map[string]string{}, map[string]string{}, map[string][]string{}
	}
	m, ok := f.by[kind]
	if !ok {
		m = string(rune('a' + len(f.marks)))
		f.by[kind], f.texts[m] = m, text
		f.marks = append(f.marks, m)
	}
	if detail != "" && !slices.Contains(f.names[m], detail) {
		f.names[m] = append(f.names[m], detail)
	}
	return m
}

// of is the point's name with its markers: "s1async (a)".
func (f *footnotes) of(pt point) string {
	r := pt.rows[0]
	var ms []string
	switch {
	case r.ReusedFrom != "":
		ms = append(ms, f.mark("reused:"+r.ReusedFrom, "1 node, no links: the runs of "+r.ReusedFrom+", not run again", ""))
	case strings.Contains(r.Note, "1 node, no links"):
		ms = append(ms, f.mark("1node", "1 node, no links", ""))
	}
	if r.LinksControl != "" {
		detail := r.Topology
		if c := linkCost(pt.rows); c != "" {
			detail += " " + c
		}
		ms = append(ms, f.mark("control:"+r.LinksControl, r.LinksControl+"; the link's own cost (the round trip it added to the plain bridge)", detail))
	}
	name := pt.name()
	if len(ms) > 0 {
		name += " (" + strings.Join(ms, ",") + ")"
	}
	return name
}

// lines are the footnotes, one per marker: "(a) same path: ...: s1async +0.015 ms, ...".
func (f *footnotes) lines() []string {
	var out []string
	for _, m := range f.marks {
		l := "(" + m + ") " + f.texts[m]
		if ns := f.names[m]; len(ns) > 0 {
			l += ": " + strings.Join(ns, ", ")
		}
		out = append(out, l+".")
	}
	return out
}

// controlNote is "same path: the userspace link at zero delay, its cost +0.085 ms round
// trip" (the median over the rows' runs of the round trip the link added).
func controlNote(rows []Row) string {
	s := rows[0].LinksControl
	if c := linkCost(rows); c != "" {
		s += ", its cost " + c + " round trip"
	}
	return s
}

// linkCost is the median over the rows' runs of the round trip the link added ("+0.085
// ms"), "" without one.
func linkCost(rows []Row) string {
	var added []float64
	for _, r := range rows {
		if r.LinkAddedMs != nil {
			added = append(added, *r.LinkAddedMs)
		}
	}
	if len(added) == 0 {
		return ""
	}
	slices.Sort(added)
	return fmt.Sprintf("%+.3f ms", added[len(added)/2])
}

// cpuBound says a run of the point had its busiest host CPU-saturated.
func (pt point) cpuBound() bool {
	for _, r := range pt.rows {
		if r.Summary != nil {
			if h := r.Summary.BusiestHost(); h != nil && h.CPUSaturated {
				return true
			}
		}
	}
	return false
}

// probed says a run of the point had a probe writer.
func (pt point) probed() bool {
	for _, r := range pt.rows {
		if r.Summary != nil && r.Summary.Probe != nil {
			return true
		}
	}
	return false
}

// lostAcked is "550 of 1424": the acknowledged commits the probe writer lost, summed
// over the point's runs; "n/a" without a probe, "not checked" when no check was made.
func (pt point) lostAcked() string {
	var lost, acked int64
	n, failed := 0, 0
	for _, r := range pt.rows {
		if r.Summary == nil || r.Summary.Probe == nil {
			continue
		}
		p := r.Summary.Probe
		if p.Error != "" {
			failed++
			continue
		}
		n++
		lost, acked = lost+p.LostAcknowledged, acked+p.Acknowledged
	}
	switch {
	case n == 0 && failed > 0:
		return "not checked"
	case n == 0:
		return "n/a"
	}
	return fmt.Sprintf("%d of %d", lost, acked)
}

// anyProbed says a point of pts had a probe writer (the table gets the lost column).
func anyProbed(pts []point) bool {
	return slices.ContainsFunc(pts, point.probed)
}

// caveat is report.Caveat over the scenario's points: it marks ratios that compare
// CPU-bound cells or have no confidence interval, for the note under the table.
type caveat struct{ report.Caveat }

// Warn is the mark after a ratio of questionable meaning (report.Warn).
const Warn = report.Warn

// mark is text with " ⚠" when the change c (of pt against ref, which may be nil)
// compares CPU-bound cells or has no confidence interval; text as it is for the
// reference itself and "n/a".
func (cv *caveat) mark(text string, c *stats.Change, pt point, ref *point) string {
	if text == "ref" || text == "n/a" || !cv.Applies(c, pt.cpuBound() || (ref != nil && ref.cpuBound())) {
		return text
	}
	return text + " " + Warn
}

// basePoint is the baseline topology's point among pts (nil without one).
func basePoint(pts []point, group string) *point {
	for i := range pts {
		if pts[i].c.IsBase && pts[i].rows[0].Group == group {
			return &pts[i]
		}
	}
	return nil
}

// alongRef is the point pt is compared with along axis: the same topology and other
// axes, the axis at its reference value (nil when not among pts).
func alongRef(pts []point, pt point, axis string) *point {
	a := pt.c.AlongAxis(axis)
	if a == nil {
		return nil
	}
	for i := range pts {
		q := pts[i].c
		if q.Topology != pt.c.Topology || q.Axes[axis] != a.Reference {
			continue
		}
		same := true
		for k, v := range pt.c.Axes {
			if k != axis && q.Axes[k] != v {
				same = false
			}
		}
		if same {
			return &pts[i]
		}
	}
	return nil
}

// flavorNote is the footnote naming the points whose server flavor or version differs
// from the baseline's ("" when none does): their ratios compare servers too.
func flavorNote(pts []point) string {
	var base *Row
	for _, pt := range pts {
		if pt.c.IsBase {
			base = &pt.rows[0]
			break
		}
	}
	if base == nil || base.Flavor == "" {
		return ""
	}
	var other []string
	for _, pt := range pts {
		r := pt.rows[0]
		if r.Flavor == "" || (r.Flavor == base.Flavor && r.Version == base.Version) {
			continue
		}
		s := r.Topology + " (" + flavorName(r.Flavor, r.Version) + ")"
		if !slices.Contains(other, s) {
			other = append(other, s)
		}
	}
	if len(other) == 0 {
		return ""
	}
	return fmt.Sprintf("Other server than the baseline %s (%s): %s; their ratios vs base compare the servers as well as the topologies.",
		base.Topology, flavorName(base.Flavor, base.Version), strings.Join(other, ", "))
}

// flavorName is "MySQL 9.7.4", "MariaDB 10.11.19" (topology.FlavorTitle).
func flavorName(flavor, version string) string { return topology.FlavorTitle(flavor, version) }

// hostCPU is the busiest host's CPU of the point's busiest run ("n/a" without host samples).
func (pt point) hostCPU() string {
	var best *Summary
	bestBusy := -1.0
	for _, r := range pt.rows {
		if r.Summary == nil {
			continue
		}
		if h := r.Summary.BusiestHost(); h != nil && h.CPUBusyMean != nil && *h.CPUBusyMean > bestBusy {
			best, bestBusy = r.Summary, *h.CPUBusyMean
		}
	}
	if best == nil {
		return "n/a"
	}
	return busiestHostCell(best)
}

// maxLag is the largest lag of the point's rows and the rows' unknown lags (distinct,
// "; "-joined), as report.LagText shows them.
func (pt point) maxLag() (*float64, string) {
	var m *float64
	var unknown []string
	for _, r := range pt.rows {
		if r.MaxLagS != nil && (m == nil || *r.MaxLagS > *m) {
			m = r.MaxLagS
		}
		if r.LagUnknown != "" && !slices.Contains(unknown, r.LagUnknown) {
			unknown = append(unknown, r.LagUnknown)
		}
	}
	return m, strings.Join(unknown, "; ")
}

// maxLagText is the point's max lag cell.
func (pt point) maxLagText() string {
	m, unknown := pt.maxLag()
	return report.LagText(m, unknown, "%.3f")
}

func changeOfBase(c *stats.Change) string {
	if c == nil {
		return "n/a"
	}
	return c.OfBase()
}

// alongAxes are the axes the points have changes along (those with several values).
func alongAxes(pts []point) []string {
	for _, pt := range pts {
		if len(pt.c.Along) > 0 {
			var out []string
			for _, a := range pt.c.Along {
				out = append(out, a.Axis)
			}
			return out
		}
	}
	return nil
}

func alongText(c *stats.Cell, axis string) string {
	a := c.AlongAxis(axis)
	if a == nil || (!a.TPS.OK && a.TPS.Verdict == "") {
		return "n/a"
	}
	if a.TPS.Verdict == stats.Reference {
		return "ref"
	}
	return a.TPS.Signed()
}

// ciText is "1200.0-1260.1", or "n/a (1 run)".
func ciText(s stats.Sample) string {
	if !s.HasCI() {
		return fmt.Sprintf("n/a (%d run)", s.N)
	}
	return fmt.Sprintf("%.1f-%.1f", *s.CILo, *s.CIHi)
}

// StatsNote explains the comparison's figures: means over repeats, the CI, the rule for
// "within noise", and when there is a single repeat per cell that there is no CI.
func StatsNote(rows []Row) string {
	maxN := 0
	for _, pt := range points(rows) {
		maxN = max(maxN, pt.c.TPS.N)
	}
	s := "TPS and latencies are the mean over a cell's repeats (warm-up excluded); 95% CI: Student t over the repeats." +
		" vs base: the baseline topology's cell with the same axis values; vs AXIS: the change from the axis' reference value (ref), the other axes the same." +
		" \"within noise\": the 95% CI of the difference of the two means (Welch) includes 0; without it the difference is outside the noise."
	if maxN < 2 {
		s += " One repeat per cell: no confidence intervals, so no difference can be told from noise (give the sweep repeats: 3)."
	}
	return s
}

// ComparisonTable renders rows as a Markdown table, one line per point (a cell and its
// repeats): TPS mean, min-max and 95% CI, latency means, % of the baseline, the change
// along each axis, the largest replica lag of the repeats, the acknowledged commits a
// probe writer lost (when a point had one); ratios of CPU-bound cells or without a CI
// marked ⚠; notes on the points, the marks and other servers than the baseline's under
// the table.
func ComparisonTable(rows []Row) string {
	var b strings.Builder
	pts := points(rows)
	along := alongAxes(pts)
	probe := anyProbed(pts)
	b.WriteString("| topology | kind | flavor | version | runs | TPS | TPS min-max | TPS 95% CI | QPS | avg ms | p95 ms | p99 ms | TPS vs base | latency vs base | p95 vs base |")
	for _, a := range along {
		b.WriteString(" TPS vs " + a + " |")
	}
	b.WriteString(" max replica lag s |")
	if probe {
		b.WriteString(" lost acked commits |")
	}
	b.WriteString(" busiest host CPU mean / max |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + strings.Repeat("---|", len(along)))
	if probe {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	var fn footnotes
	var cv caveat
	for _, pt := range pts {
		r, c := pt.rows[0], pt.c
		base := basePoint(pts, r.Group)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %.2f | %.1f-%.1f | %s | %.2f | %.2f | %.2f | %.2f | %s | %s | %s |",
			fn.of(pt), r.Kind, r.Flavor, r.Version, c.TPS.N, c.TPS.Mean, c.TPS.Min, c.TPS.Max, ciText(c.TPS),
			c.QPS.Mean, c.AvgMs.Mean, c.P95Ms.Mean, c.P99Ms.Mean, cv.mark(changeOfBase(c.VsBase), c.VsBase, pt, base),
			cv.mark(changeOfBase(c.LatVsBase), c.LatVsBase, pt, base), cv.mark(changeOfBase(c.P95VsBase), c.P95VsBase, pt, base))
		for _, a := range along {
			b.WriteString(" " + alongMarked(&cv, pts, pt, a) + " |")
		}
		fmt.Fprintf(&b, " %s |", pt.maxLagText())
		if probe {
			fmt.Fprintf(&b, " %s |", pt.lostAcked())
		}
		fmt.Fprintf(&b, " %s |\n", pt.hostCPU())
	}
	if ls := fn.lines(); len(ls) > 0 {
		b.WriteString("\n" + strings.Join(ls, "\n\n") + "\n")
	}
	var ran []Row
	for _, r := range rows {
		if r.ReusedFrom == "" && r.Summary != nil {
			ran = append(ran, r)
		}
	}
	if bound := cpuBoundRows(ran); bound != "" {
		fmt.Fprintf(&b, "\n**CPU-bound:** %s: the run's busiest host was CPU-saturated (busy >= %.0f%% in at least %.0f%% of the measured seconds), so these numbers measure the host's CPU as much as the topology.\n",
			bound, sampler.CPUSaturatedBusy*100, sampler.CPUSaturatedShare*100)
	}
	if n := cv.Note(); n != "" {
		b.WriteString("\n" + n + "\n")
	}
	if n := flavorNote(pts); n != "" {
		b.WriteString("\n" + n + "\n")
	}
	if probe {
		b.WriteString("\nlost acked commits = the probe writer's acknowledged commits missing on the writer after the run (summary.json probe), of those acknowledged.\n")
	}
	return b.String()
}

// alongMarked is the point's TPS change along axis, marked when it compares CPU-bound
// cells or has no CI.
func alongMarked(cv *caveat, pts []point, pt point, axis string) string {
	t := alongText(pt.c, axis)
	if a := pt.c.AlongAxis(axis); a != nil {
		return cv.mark(t, &a.TPS, pt, alongRef(pts, pt, axis))
	}
	return t
}

// PrintComparison writes the comparison as aligned text tables, one per sweep group
// (headed by its axis values), one line per point (a cell and its repeats), the notes
// on points and marks under them, then StatsNote. Kept to ~120 columns: ratios as
// "TPS/base", and with one repeat per cell the runs, TPS
// min-max and CI columns (1, the TPS itself, n/a) left out.
func PrintComparison(w io.Writer, rows []Row) {
	pts := points(rows)
	along := alongAxes(pts)
	probe := anyProbed(pts)
	repeats := false
	for _, pt := range pts {
		repeats = repeats || pt.c.TPS.N > 1
	}
	var groups []string
	for _, pt := range pts {
		if g := pt.rows[0].Group; !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	grouped := len(groups) > 1 || (len(groups) == 1 && groups[0] != "")
	short := func(t string) string {
		return strings.TrimSuffix(t, " (reference)")
	}
	var fn footnotes
	var cv caveat
	for gi, g := range groups {
		if grouped {
			if gi > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w, g+":")
		}
		tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', tabwriter.AlignRight)
		head := "topology\tkind\t"
		if repeats {
			head += "runs\tTPS\tTPS min-max\tTPS 95% CI\t"
		} else {
			head += "TPS\t"
		}
		head += "avg ms\tp95 ms\tTPS/base\tlat/base\tp95/base\t"
		for _, a := range along {
			head += "TPS vs " + a + "\t"
		}
		head += "max lag s\t"
		if probe {
			head += "lost acked\t"
		}
		head += "busiest host CPU\t"
		if grouped {
			head = "cell\t" + head
		}
		fmt.Fprintln(tw, head)
		for _, pt := range pts {
			if pt.rows[0].Group != g {
				continue
			}
			c := pt.c
			base := basePoint(pts, g)
			line := fmt.Sprintf("%s\t%s\t", fn.of(pt), pt.rows[0].Kind)
			if repeats {
				line += fmt.Sprintf("%d\t%.2f\t%.1f-%.1f\t%s\t", c.TPS.N, c.TPS.Mean, c.TPS.Min, c.TPS.Max, ciText(c.TPS))
			} else {
				line += fmt.Sprintf("%.2f\t", c.TPS.Mean)
			}
			line += fmt.Sprintf("%.2f\t%.2f\t%s\t%s\t%s\t", c.AvgMs.Mean, c.P95Ms.Mean, short(cv.mark(changeOfBase(c.VsBase), c.VsBase, pt, base)),
				short(cv.mark(changeOfBase(c.LatVsBase), c.LatVsBase, pt, base)), short(cv.mark(changeOfBase(c.P95VsBase), c.P95VsBase, pt, base)))
			for _, a := range along {
				line += alongMarked(&cv, pts, pt, a) + "\t"
			}
			line += pt.maxLagText() + "\t"
			if probe {
				line += pt.lostAcked() + "\t"
			}
			line += pt.hostCPU() + "\t"
			if grouped {
				var idx []string
				for _, r := range pt.rows {
					if r.Cell > 0 {
						idx = append(idx, fmt.Sprint(r.Cell))
					}
				}
				if len(idx) == 0 {
					idx = []string{"-"}
				}
				line = strings.Join(idx, ",") + "\t" + line
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
	for _, l := range fn.lines() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "TPS/base, lat/base, p95/base: TPS, average and p95 latency in % of the baseline's (100% = the same).")
	if n := cv.Note(); n != "" {
		fmt.Fprintln(w, n)
	}
	if n := flavorNote(pts); n != "" {
		fmt.Fprintln(w, n)
	}
	if probe {
		fmt.Fprintln(w, "lost acked = the probe writer's acknowledged commits missing on the writer after the run, of those acknowledged.")
	}
	fmt.Fprintln(w, StatsNote(rows))
}

// fmtOpt formats *v with format, or "n/a" when v is nil.
func fmtOpt(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}

// faultsNeedFreeLinks refuses partition and heal faults in a scenario whose runs impair
// the links (links:, or a links axis with an impairment): a partition is a standing
// impairment, and habench refuses one while a run's own links are applied, so the fault
// would fail in every cell. A links axis of none/bridge only is fine.
func faultsNeedFreeLinks(s *Scenario) error {
	linked := !s.Links.IsZero()
	if s.Sweep != nil {
		if a := s.Sweep.Axis("links"); a != nil {
			for _, v := range a.Values {
				linked = linked || !v.Links.IsZero()
			}
		}
	}
	if !linked {
		return nil
	}
	for i, f := range s.Faults {
		if a := FaultActionOf(f.Action); a != nil && a.LinkEvent != "" {
			return &topology.FieldError{Field: fmt.Sprintf("faults[%d].action", i), Value: f.Action,
				Reason: "the scenario's runs impair the links (links: or a links axis), and a partition cannot be applied over them; put the partition in the links (links: {partition: [n3]}) or drop the impairments"}
		}
	}
	return nil
}
