package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Scenario is a whole experiment in one file: topologies to deploy one after the other
// and the workload to run on each, with sysbench's option names.
type Scenario struct {
	Name        string           `yaml:"name"`
	Description string           `yaml:"description"`
	Network     string           `yaml:"network"` // auto (default), netns, loopback
	Topologies  []topology.Spec  `yaml:"topologies"`
	Workload    ScenarioWorkload `yaml:"workload"`
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

	options workload.Options
	raw     []byte
}

// ScenarioWorkload is the workload part of a scenario: the test name and sysbench options
// by their sysbench names ("table-size: 10000", "time: 30", "report-interval: 1").
type ScenarioWorkload struct {
	Test    string         `yaml:"test"`
	Options map[string]any `yaml:"options"`
}

// ParseScenario decodes and validates a scenario. Unknown keys are errors naming the line;
// workload options go through the same parser as the command line, so they fail the same way.
func ParseScenario(b []byte) (*Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("empty scenario")
		}
		return nil, fmt.Errorf("%s", topology.YAMLError(err))
	}
	if len(s.Topologies) == 0 {
		return nil, &topology.FieldError{Field: "topologies", Value: "", Reason: "want at least one topology"}
	}
	seen := map[string]bool{}
	for i := range s.Topologies {
		t := &s.Topologies[i]
		t.Defaults()
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("topologies[%d]: %w", i, err)
		}
		if t.IsExisting() {
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
	switch s.Network {
	case "", "auto", cluster.NetNamespaces, cluster.NetLoopback:
	default:
		return nil, &topology.FieldError{Field: "network", Value: s.Network, Reason: "want auto, netns or loopback"}
	}
	if !s.Links.IsZero() {
		for i, t := range s.Topologies {
			if t.IsExisting() && t.SSH == nil {
				return nil, &topology.FieldError{Field: fmt.Sprintf("topologies[%d].provider", i), Value: t.Provider,
					Reason: "links on an existing cluster need ssh access to its hosts: give dsns with ssh: (tc over SSH)"}
			}
		}
		if s.Network == cluster.NetLoopback {
			v := s.Links.String()
			if (netem.Request{All: s.Links.All}).String() == v {
				v = s.Links.All
			}
			return nil, &topology.FieldError{Field: "links", Value: v, Reason: "impairing links needs network netns (nodes on loopback share one interface)"}
		}
		// Checked against every multi-node topology's node names now, not after the first
		// deploy (against n1, n2 when there is none, so the values are still checked).
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
			if _, err := s.Links.Build(names); err != nil {
				var re *netem.RequestError
				if errors.As(err, &re) {
					return nil, &topology.FieldError{Field: "links." + re.Field, Value: re.Value, Reason: fmt.Sprintf("topology %s: %v", t.Name, re.Err)}
				}
				return nil, &topology.FieldError{Field: "links", Value: s.Links.String(), Reason: err.Error()}
			}
		}
	}
	if s.Baseline != "" && !seen[s.Baseline] {
		return nil, &topology.FieldError{Field: "baseline", Value: s.Baseline, Reason: "not one of the topologies' names"}
	}
	if _, err := workload.Lookup(s.Workload.Test); err != nil {
		return nil, &topology.FieldError{Field: "workload.test", Value: s.Workload.Test, Reason: err.Error()}
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
		if err := fs.Set(k, v); err != nil {
			return nil, &topology.FieldError{Field: "workload.options." + k, Value: v, Reason: err.Error()}
		}
	}
	if err := s.options.Validate(); err != nil {
		return nil, fmt.Errorf("workload.options: %w", err)
	}
	switch s.Cell.Prepare {
	case "", PrepareReuse, PrepareReprepare:
	default:
		return nil, &topology.FieldError{Field: "cell.prepare", Value: s.Cell.Prepare, Reason: "want reuse or reprepare"}
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
	// Scale is small, medium or full ("": full, or the resumed directory's scale).
	Scale string
	// ResumeDir, when set, is a sweep directory to complete: only its cells that are not
	// done run, and results are added to it. The scenario file must be the one it ran.
	ResumeDir string
	// Progress, when set, shows the progress line (cell i of n, ETA).
	Progress *Progress
	// OnCell, when set, sees each cell's record after it ran (tests, live views).
	OnCell func(CellRecord)
	// BenchHook, when set, is called with each topology's Bench just before it runs (to
	// attach live metrics to OnInterval/OnSamples); the function it returns, if not nil,
	// is called when that run has ended.
	BenchHook func(b *Bench) (done func())
}

// Row is one run's line in the comparison: a topology, in a sweep one cell.
type Row struct {
	Topology string `json:"topology"`
	// Cell is the sweep cell's index (1-based); Axes its other axes' values (the group
	// whose rows are compared with each other), absent without a sweep.
	Cell       int               `json:"cell,omitempty"`
	Axes       map[string]string `json:"axes,omitempty"`
	Kind       string            `json:"kind"`
	Flavor     string            `json:"flavor"`
	Version    string            `json:"version"`
	Dir        string            `json:"dir"`
	Summary    *Summary          `json:"summary"`
	TPSvsBase  float64           `json:"tps_vs_baseline_pct"`
	LatVsBase  float64           `json:"latency_vs_baseline_pct"`
	MaxLagS    *float64          `json:"max_replica_lag_s"` // null without replicas or lag samples
	DeploySecs float64           `json:"deploy_s"`
	// Error is why this topology's run did not complete (interrupted, failed), "" if it did.
	Error string `json:"error,omitempty"`
	// Note qualifies the row: "repeat 2", "1 node, no links" (a single node in a links
	// group runs without links).
	Note string `json:"note,omitempty"`

	group string
}

// Run executes the scenario (see ScenarioRun) and returns the results directory and the
// comparison rows. Errors: bad input (*topology.FieldError: resume of another file,
// drop_caches without root, a cluster name in use), a missing installation, an
// interrupt (ctx's error), or how many cells failed.
func (r *ScenarioRun) Run(ctx context.Context) (string, []Row, error) {
	return r.runSweep(ctx)
}

// ComparisonTable renders rows as a Markdown table (S1's shape: TPS, latency, % of baseline, lag).
func ComparisonTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| topology | kind | flavor | version | TPS | QPS | avg ms | p95 ms | p99 ms | TPS vs base | latency vs base | max replica lag s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		l := r.Summary.LatencyMs
		name := r.Topology
		if r.Note != "" {
			name += " (" + r.Note + ")"
		}
		if r.Error != "" {
			name += " (incomplete)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f%% | %.1f%% | %s |\n",
			name, r.Kind, r.Flavor, r.Version, r.Summary.TPS, r.Summary.QPS, l["avg"], l["p95"], l["p99"], r.TPSvsBase, r.LatVsBase, fmtOpt(r.MaxLagS, "%.3f"))
	}
	return b.String()
}

// PrintComparison writes the comparison as an aligned text table (with the sweep group
// of each row when there are several).
func PrintComparison(w io.Writer, rows []Row) {
	groups := false
	for _, r := range rows {
		groups = groups || r.group != ""
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', tabwriter.AlignRight)
	head := "topology\tkind\tTPS\tavg ms\tp95 ms\tTPS vs base\tlat vs base\tmax replica lag s\t"
	if groups {
		head = "cell\t" + head + "axes\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		l := r.Summary.LatencyMs
		name := r.Topology
		if r.Note != "" {
			name += " (" + r.Note + ")"
		}
		line := fmt.Sprintf("%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f%%\t%.1f%%\t%s\t", name, r.Kind, r.Summary.TPS, l["avg"], l["p95"], r.TPSvsBase, r.LatVsBase, fmtOpt(r.MaxLagS, "%.3f"))
		if groups {
			line = fmt.Sprintf("%d\t%s%s\t", r.Cell, line, r.group)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// fmtOpt formats *v with format, or "n/a" when v is nil.
func fmtOpt(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}
