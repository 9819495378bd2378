package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/report"
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

	options workload.Options
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
			if t.IsExisting() {
				return nil, &topology.FieldError{Field: fmt.Sprintf("topologies[%d].provider", i), Value: t.Provider,
					Reason: "links need the network namespaces of a habench sandbox; an existing cluster's network is not habench's"}
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
	return &s, nil
}

// Options returns the parsed workload options.
func (s *Scenario) Options() workload.Options { return s.options }

// ScenarioRun runs a scenario: for each topology deploy, prepare, run with sampling,
// destroy; then a comparison table. Every deployed cluster is destroyed also on error
// or interrupt.
type ScenarioRun struct {
	Scenario    *Scenario
	Sandbox     *cluster.Sandbox
	ResultsDir  string // parent directory; the run gets <time>-<scenario name> inside
	Stdout      io.Writer
	Log         *slog.Logger
	CommandLine []string
	// Keep leaves the clusters running after the run (for inspection).
	Keep bool
	// BenchHook, when set, is called with each topology's Bench just before it runs (to
	// attach live metrics to OnInterval/OnSamples); the function it returns, if not nil,
	// is called when that run has ended.
	BenchHook func(b *Bench) (done func())
}

// Row is one topology's line in the comparison.
type Row struct {
	Topology   string   `json:"topology"`
	Kind       string   `json:"kind"`
	Flavor     string   `json:"flavor"`
	Version    string   `json:"version"`
	Dir        string   `json:"dir"`
	Summary    *Summary `json:"summary"`
	TPSvsBase  float64  `json:"tps_vs_baseline_pct"`
	LatVsBase  float64  `json:"latency_vs_baseline_pct"`
	MaxLagS    *float64 `json:"max_replica_lag_s"` // null without replicas or lag samples
	DeploySecs float64  `json:"deploy_s"`
	// Error is why this topology's run did not complete (interrupted, failed), "" if it did.
	Error string `json:"error,omitempty"`
}

// Run executes the scenario and returns the run directory and comparison rows.
func (r *ScenarioRun) Run(ctx context.Context) (string, []Row, error) {
	s := r.Scenario
	// Pre-flight: every installation resolves before anything is deployed or written.
	for i, t := range s.Topologies {
		if t.IsExisting() && t.Cluster != "" {
			c, err := r.Sandbox.Load(t.Cluster)
			if err != nil {
				return "", nil, &topology.FieldError{Field: fmt.Sprintf("topologies[%d].cluster", i), Value: t.Cluster, Reason: "no such cluster (habench register it first, or give dsns)"}
			}
			if c.State != "ready" {
				return "", nil, &topology.FieldError{Field: fmt.Sprintf("topologies[%d].cluster", i), Value: t.Cluster, Reason: "state " + c.State + ", not ready"}
			}
			continue
		}
		if !t.IsExisting() {
			if _, err := cluster.ResolveInstallation(ctx, t.Installation, t.Flavor); err != nil {
				return "", nil, fmt.Errorf("topologies[%d] (%s): %w", i, t.Name, err)
			}
		}
		if _, err := r.Sandbox.Load(t.Name); err == nil {
			return "", nil, &topology.FieldError{Field: fmt.Sprintf("topologies[%d].name", i), Value: t.Name, Reason: "a cluster with this name exists (habench destroy " + t.Name + ")"}
		}
	}
	dir := filepath.Join(r.ResultsDir, RunDirName(sanitize(s.Name), time.Now()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	out := r.Stdout
	if out == nil {
		out = io.Discard
	}
	var rows []Row
	defer os.Remove(dir) // only if nothing was written (interrupted during the first deploy)
	for _, spec := range s.Topologies {
		if ctx.Err() != nil {
			break
		}
		row, err := r.one(ctx, spec, dir, out)
		if row != nil {
			rows = append(rows, *row)
		}
		if err != nil {
			r.finish(dir, rows)
			return dir, rows, fmt.Errorf("topology %s: %w", spec.Name, err)
		}
	}
	r.finish(dir, rows)
	return dir, rows, ctx.Err()
}

func (r *ScenarioRun) one(ctx context.Context, spec topology.Spec, dir string, out io.Writer) (row *Row, err error) {
	sb := *r.Sandbox
	sb.Network = r.Scenario.Network
	var c *cluster.Cluster
	var runKnobs []topology.KnobSetting
	t0 := time.Now()
	switch {
	case spec.IsExisting() && spec.Cluster != "":
		// A cluster of the state directory (registered, or a sandbox deployed before):
		// never deployed nor destroyed here; the row's knobs go on top of its own.
		if c, err = sb.Load(spec.Cluster); err != nil {
			return nil, err
		}
		if runKnobs, err = topology.KnobsFromMap(spec.Knobs); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "\n=== %s: cluster %s (%s, %s, %s %s, provider %s)\n", spec.Name, c.Name, c.Spec.Kind, Plural(len(c.Nodes), "node"), c.Spec.Flavor, c.Binaries.Version, c.Provider)
	case spec.IsExisting():
		fmt.Fprintf(out, "\n=== %s: registering existing cluster (%s)\n", spec.Name, Plural(len(spec.DSNs), "node"))
		if c, err = sb.Register(ctx, spec); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "discovered %s, %s, %s\n", c.Spec.Kind, Plural(len(c.Nodes), "node"), c.Binaries.VersionText)
		if !r.Keep {
			defer func() {
				if derr := sb.Destroy(context.WithoutCancel(ctx), c.Name); derr != nil {
					err = errors.Join(err, fmt.Errorf("forget %s: %w", c.Name, derr))
				}
			}()
		}
	}
	if c != nil {
		return r.bench(ctx, spec, c, runKnobs, 0, dir, out, true)
	}
	fmt.Fprintf(out, "\n=== %s: deploying %s, %s, %s\n", spec.Name, spec.Kind, Plural(spec.Nodes, "node"), spec.Flavor)
	c, err = sb.Deploy(ctx, spec)
	if err != nil {
		return nil, err
	}
	deploySecs := time.Since(t0).Seconds()
	if !r.Keep {
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if derr := sb.Destroy(cctx, c.Name); derr != nil {
				err = errors.Join(err, fmt.Errorf("destroy %s: %w", c.Name, derr))
			}
		}()
	}
	fmt.Fprintf(out, "deployed in %.1fs: %s\n", deploySecs, c.Binaries.VersionText)
	return r.bench(ctx, spec, c, nil, deploySecs, dir, out, false)
}

// bench prepares, runs and reports one topology on cluster c. A cluster habench does not
// destroy afterwards (existing, or given by name) gets its sbtest tables cleaned up.
func (r *ScenarioRun) bench(ctx context.Context, spec topology.Spec, c *cluster.Cluster, knobs []topology.KnobSetting, deploySecs float64, dir string, out io.Writer, cleanup bool) (row *Row, err error) {
	wl, _ := workload.Lookup(r.Scenario.Workload.Test)
	opts := r.Scenario.options
	target, err := ClusterTarget(c, "sbtest", nil)
	if err != nil {
		return nil, err
	}
	if err := wl.Prepare(ctx, target, opts, out); err != nil {
		if cleanup {
			return nil, fmt.Errorf("prepare: %w (the scenario prepares its own tables on cluster %s and removes them afterwards; remove leftovers with habench sysbench %s cleanup --cluster %s --tables N)", err, c.Name, r.Scenario.Workload.Test, c.Name)
		}
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if cleanup {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if cerr := wl.Cleanup(cctx, target, opts, io.Discard); cerr != nil {
				err = errors.Join(err, fmt.Errorf("cleanup on %s: %w", c.Name, cerr))
			}
		}()
	}
	b := &Bench{Workload: wl, Options: opts, Target: target, Cluster: c, ResultsDir: dir, Label: spec.Name,
		Stdout: out, Log: r.Log, CommandLine: r.CommandLine, Knobs: knobs, Restarter: r.Sandbox,
		Extra: map[string]any{"scenario": r.Scenario.Name, "topology": spec.Name}}
	if r.Scenario.Baseline != "" {
		b.Extra["baseline"] = r.Scenario.Baseline // for `habench report`
	}
	if !r.Scenario.Links.IsZero() && len(c.Nodes) > 1 {
		if b.Links, err = r.Scenario.Links.Build(NodeNames(c)); err != nil {
			return nil, err
		}
	}
	if r.BenchHook != nil {
		if done := r.BenchHook(b); done != nil {
			defer done()
		}
	}
	res, err := b.Run(ctx)
	if res == nil || res.Summary == nil {
		return nil, err
	}
	row = &Row{Topology: spec.Name, Kind: string(c.Spec.Kind), Flavor: string(c.Spec.Flavor), Version: c.Binaries.Version.String(),
		Dir: res.Dir, Summary: res.Summary, DeploySecs: deploySecs}
	if err != nil {
		row.Error = err.Error()
	}
	for _, n := range res.Summary.Nodes {
		if (n.Role == string(topology.RoleReplica) || n.Role == string(topology.RoleSecondary)) && n.LagMaxS != nil && (row.MaxLagS == nil || *n.LagMaxS > *row.MaxLagS) {
			row.MaxLagS = n.LagMaxS
		}
	}
	fmt.Fprintf(out, "results: %s\n", res.Dir)
	return row, err
}

// finish computes baseline percentages and writes comparison.md and comparison.json.
func (r *ScenarioRun) finish(dir string, rows []Row) {
	if len(rows) == 0 {
		return
	}
	base := rows[0]
	baseNote := ""
	found := false
	for _, row := range rows {
		if row.Topology == r.Scenario.Baseline {
			base, found = row, true
		}
	}
	if r.Scenario.Baseline != "" && !found {
		baseNote = fmt.Sprintf(" (the configured baseline %s did not run)", r.Scenario.Baseline)
	}
	if base.Error != "" {
		baseNote += " (the baseline itself is incomplete)"
	}
	for i := range rows {
		if base.Summary.TPS > 0 {
			rows[i].TPSvsBase = 100 * rows[i].Summary.TPS / base.Summary.TPS
		}
		if l := base.Summary.LatencyMs["avg"]; l > 0 {
			rows[i].LatVsBase = 100 * rows[i].Summary.LatencyMs["avg"] / l
		}
	}
	res := &Results{Dir: dir}
	res.WriteJSON("comparison.json", rows)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", r.Scenario.Name)
	if d := strings.TrimSpace(r.Scenario.Description); d != "" {
		b.WriteString(d + "\n\n")
	}
	fmt.Fprintf(&b, "Baseline: %s%s. Workload: %s.", base.Topology, baseNote, r.Scenario.Workload.Test)
	if !r.Scenario.Links.IsZero() {
		fmt.Fprintf(&b, " Links between nodes (one-way, as `habench netem apply %s`; requested and achieved round trips in each run's manifest.json).", r.Scenario.Links.String())
	}
	b.WriteString("\n\n")
	b.WriteString(ComparisonTable(rows))
	ran := map[string]bool{}
	for _, row := range rows {
		ran[row.Topology] = true
		if row.Error != "" {
			fmt.Fprintf(&b, "\n**%s did not complete:** %s (its numbers cover only the part that ran).\n", row.Topology, row.Error)
		}
	}
	for _, t := range r.Scenario.Topologies {
		if !ran[t.Name] {
			fmt.Fprintf(&b, "\n**%s was not run** (the scenario stopped before it).\n", t.Name)
		}
	}
	res.WriteFile("comparison.md", b.String())
	// report.html, report.md and report.csv over all runs (baseline from the manifests'
	// extra.baseline, else the single primary).
	if _, err := report.Write(dir, report.Options{}); err != nil && r.Log != nil {
		r.Log.Warn("cannot render the scenario's report", "dir", dir, "err", err)
	}
}

// ComparisonTable renders rows as a Markdown table (S1's shape: TPS, latency, % of baseline, lag).
func ComparisonTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| topology | kind | flavor | version | TPS | QPS | avg ms | p95 ms | p99 ms | TPS vs base | latency vs base | max replica lag s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		l := r.Summary.LatencyMs
		name := r.Topology
		if r.Error != "" {
			name += " (incomplete)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f%% | %.1f%% | %s |\n",
			name, r.Kind, r.Flavor, r.Version, r.Summary.TPS, r.Summary.QPS, l["avg"], l["p95"], l["p99"], r.TPSvsBase, r.LatVsBase, fmtOpt(r.MaxLagS, "%.3f"))
	}
	return b.String()
}

// PrintComparison writes the comparison as an aligned text table.
func PrintComparison(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "topology\tkind\tTPS\tavg ms\tp95 ms\tTPS vs base\tlat vs base\tmax replica lag s\t")
	for _, r := range rows {
		l := r.Summary.LatencyMs
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f%%\t%.1f%%\t%s\t\n", r.Topology, r.Kind, r.Summary.TPS, l["avg"], l["p95"], r.TPSvsBase, r.LatVsBase, fmtOpt(r.MaxLagS, "%.3f"))
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
