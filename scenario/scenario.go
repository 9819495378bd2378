// Package scenario is habench's scenario language: a scenario file (topologies, workload,
// links, faults, checker, sweep, cell policy, scales) parsed and checked (ParseScenario,
// each error a *topology.FieldError naming the field, with its line), and expanded into a
// Plan of deployments and cells with its time estimate and dry-run text (Scenario.Plan,
// Plan.Print). Pure data: nothing here contacts a server; experiment runs a plan. The
// fault actions' specs (FaultSpec) are registered here by the files that implement them
// (experiment/fault_<name>.go).
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/schema"
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
	// ProbeInterval is how often the probe writer commits (0: ProbeInterval, 5 ms), between
	// MinProbeInterval and MaxProbeInterval: a longer one costs the servers less, a shorter
	// one misses fewer commits around a fault.
	ProbeInterval schema.Duration `yaml:"probe_interval"`
	// Checker runs a checker workload beside the workload in every cell (see
	// CheckerSpec), e.g. {workload: register, isolation: REPEATABLE-READ}.
	Checker *CheckerSpec `yaml:"checker"`
	// Snapshots starts every deployment of a sandbox from a data snapshot of its
	// installation and data shape instead of a prepare (made once, on the first such
	// deployment; docs/scenarios.md). Snapshot names one to use (`habench snapshot list`),
	// refused when it was made for another installation or shape; it implies Snapshots.
	Snapshots bool   `yaml:"snapshots"`
	Snapshot  string `yaml:"snapshot"`
	// Clients are the client hosts the workload is driven from (topology.Clients:
	// `clients: [lg1, lg2]` or a mapping with ssh:, bin:, allow_shared:); none: habench's
	// own process drives it. The checker and the probe writer stay on this machine.
	Clients topology.Clients `yaml:"clients"`
	// Objective makes every cell a capacity search: the highest open-loop rate at which
	// its bounds hold (see Objective); nil: one closed-loop run per cell.
	Objective *Objective `yaml:"objective"`

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
	// ReadNodes are the nodes the read-only statements go to (as `habench sysbench
	// --read-nodes`; default none: reads stay on the workers' nodes), a list or a mapping
	// like Nodes: each transaction that changed a row reads it back there and counts stale
	// reads (summary.json per_endpoint read_checks, stale_reads; sweep.json stale_reads).
	ReadNodes ReadNodes `yaml:"read_nodes"`
	// Writer is auto (the workers follow the writer after a failover or a promote) or
	// fixed; default auto for single-primary groups, fixed otherwise (DefaultWriterMode).
	// auto is refused with workload.nodes and for kinds without a single writer.
	Writer string `yaml:"writer"`
	// Failover is auto (default: on a topology where every node takes writes, the
	// workers fail over between their nodes when the faults take away a node they write
	// to) or off (never: a node's failure ends the cell unless its error is ignored, as
	// in sysbench); FailoverAuto, FailoverOff.
	Failover string `yaml:"failover"`
	// Via is how the workers reach the servers: direct (default) or proxy (every
	// topology's proxy, its write endpoint: the proxy picks the node); a via axis in the
	// sweep puts both side by side.
	Via string `yaml:"via"`
}

// WorkloadNodes is workload.nodes: All for every topology, or ByTopology per topology.
type WorkloadNodes struct {
	All        []string
	ByTopology map[string][]string
	Line       int
}

// ReadNodes is workload.read_nodes: WorkloadNodes under its own field name.
type ReadNodes struct{ WorkloadNodes }

// UnmarshalYAML reads a list of node names or a mapping of topology name to such a list.
func (w *ReadNodes) UnmarshalYAML(n *yaml.Node) error {
	return w.unmarshal(n, "workload.read_nodes")
}

// CheckerReadNodes is checker.read_nodes: WorkloadNodes under its own field name.
type CheckerReadNodes struct{ WorkloadNodes }

// UnmarshalYAML reads a list of node names or a mapping of topology name to such a list.
func (w *CheckerReadNodes) UnmarshalYAML(n *yaml.Node) error {
	return w.unmarshal(n, "checker.read_nodes")
}

// UnmarshalYAML reads a list of node names or a mapping of topology name to such a list.
func (w *WorkloadNodes) UnmarshalYAML(n *yaml.Node) error {
	return w.unmarshal(n, "workload.nodes")
}

// unmarshal reads w from n; errors name field.
func (w *WorkloadNodes) unmarshal(n *yaml.Node, field string) error {
	w.Line = n.Line
	list := func(v *yaml.Node, field string) ([]string, error) {
		var out []string
		if err := eachScalar(v, field, func(it *yaml.Node) error {
			if slices.Contains(out, it.Value) {
				return LineError(it.Line, field, it.Value, "node given twice")
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
			l, err := list(v, field+"."+k.Value)
			if err != nil {
				return err
			}
			w.ByTopology[k.Value] = l
		}
		return nil
	}
	var err error
	w.All, err = list(n, field)
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
	if err := s.checkWorkloadNodes(s.Workload.Nodes, "workload.nodes", seen); err != nil {
		return nil, err
	}
	if err := s.checkWorkloadNodes(s.Workload.ReadNodes.WorkloadNodes, "workload.read_nodes", seen); err != nil {
		return nil, err
	}
	if v := time.Duration(s.ProbeInterval); v != 0 && (v < MinProbeInterval || v > MaxProbeInterval) {
		return nil, &topology.FieldError{Field: "probe_interval", Value: v.String(), Reason: fmt.Sprintf("want %v to %v", MinProbeInterval, MaxProbeInterval)}
	}
	if s.Baseline != "" && !seen[s.Baseline] {
		return nil, &topology.FieldError{Field: "baseline", Value: s.Baseline, Reason: "not one of the topologies' names"}
	}
	if err := s.parseWorkload(); err != nil {
		return nil, err
	}
	if err := s.checkObjective(); err != nil {
		return nil, err
	}
	if s.Checker != nil {
		if err := s.Checker.Validate(); err != nil {
			return nil, err
		}
		if err := s.checkWorkloadNodes(s.Checker.ReadNodes.WorkloadNodes, "checker.read_nodes", seen); err != nil {
			return nil, err
		}
	}
	switch s.Cell.Prepare {
	case "", PrepareReuse, PrepareReprepare:
	default:
		return nil, &topology.FieldError{Field: "cell.prepare", Value: s.Cell.Prepare, Reason: "want reuse or reprepare"}
	}
	switch s.Cell.Order {
	case "", OrderInterleaved, OrderBlocked:
	default:
		return nil, &topology.FieldError{Field: "cell.order", Value: s.Cell.Order, Reason: "want interleaved (the repeats in turn: A B A B) or blocked (A A B B)"}
	}
	if err := dropCachesNeedHosts(s.Cell, s.Topologies); err != nil {
		return nil, err
	}
	if err := faultsNeedFreeLinks(&s); err != nil {
		return nil, err
	}
	if err := s.CheckClients("clients"); err != nil {
		return nil, err
	}
	s.raw = slices.Clone(b)
	// Every scale must expand, whichever one is run; the file as written first, so that
	// its own errors are not reported as a scale's.
	full, err := s.Plan(ScaleFull)
	if err != nil {
		return nil, err
	}
	// The faults' times against the workload as the file runs it, its warm-up (cell.warmup
	// or warmup-time) included, as the dry run and the run count it; a smaller scale's
	// shorter run leaves the late ones out (the dry run says which).
	if err := ValidateFaults(s.Faults, s.Topologies, s.Network, full.WorkloadEnd()); err != nil {
		return nil, err
	}
	for _, sc := range []string{ScaleSmall, ScaleMedium} {
		if _, err := s.Plan(sc); err != nil {
			return nil, fmt.Errorf("scale %s: %w", sc, err)
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
		if !Deploys(*t) {
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
		if !Deploys(t) && t.SSH == nil {
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
		if _, err := s.Links.WithSites(links.Sites(t.Sites)).Build(names); err != nil {
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
	switch s.Workload.Via {
	case "", ViaDirect, ViaProxy: // against the topologies of the sweep: Plan
	default:
		return &topology.FieldError{Field: "workload.via", Value: s.Workload.Via, Reason: "want direct or proxy"}
	}
	switch s.Workload.Failover {
	case "", FailoverAuto, FailoverOff:
	default:
		return &topology.FieldError{Field: "workload.failover", Value: s.Workload.Failover, Reason: "want auto (the workers fail over when the faults take away a node they write to) or off"}
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
		if !Deploys(t) && t.Cluster == "" && t.SSH == nil {
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

// checkWorkloadNodes checks w (workload.nodes or workload.read_nodes, named by name)
// against each topology's node names (n1..nN for a sandbox or a dsns: list; a cluster:
// of the state directory is checked when it is loaded).
// workload.read_nodes may also name the topology's proxy (its read endpoint).
func (s *Scenario) checkWorkloadNodes(w WorkloadNodes, name string, topologies map[string]bool) error {
	for _, t := range slices.Sorted(maps.Keys(w.ByTopology)) {
		if !topologies[t] {
			return LineError(w.Line, name, t, "not one of the topologies' names")
		}
	}
	for _, t := range s.Topologies {
		nodes, field := w.For(t.Name), name
		if w.ByTopology != nil {
			field += "." + t.Name
		}
		size := t.Nodes
		if t.Cluster != "" {
			continue // a cluster of the state directory: its nodes are known at the run
		}
		if !Deploys(t) {
			size = len(t.DSNs)
		}
		for _, n := range nodes {
			found := false
			for i := 1; i <= size; i++ {
				found = found || topology.NodeName(i) == n
			}
			if n == topology.ProxyName && name == "workload.read_nodes" {
				if !t.Proxy.HasRead() {
					return LineError(w.Line, field, n, fmt.Sprintf("topology %s has no proxy with a read endpoint (proxy: {type: %s, read: true})", t.Name, topology.HAProxy))
				}
				found = true // the proxy's read endpoint (experiment.WithReadNodes)
			}
			if !found {
				return LineError(w.Line, field, n, fmt.Sprintf("topology %s has no such node (its nodes are n1..n%d)", t.Name, size))
			}
		}
	}
	return nil
}

// Raw returns the scenario file's bytes as parsed.
func (s *Scenario) Raw() []byte { return s.raw }

// Options returns the parsed workload options.
func (s *Scenario) Options() workload.Options { return s.options }

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
		if a := faultOf(f.Action); a != nil && a.LinkEvent != "" {
			return &topology.FieldError{Field: fmt.Sprintf("faults[%d].action", i), Value: f.Action,
				Reason: "the scenario's runs impair the links (links: or a links axis), and a partition cannot be applied over them; put the partition in the links (links: {partition: [n3]}) or drop the impairments"}
		}
	}
	return nil
}
