// Package report renders habench results directories for people: a self-contained HTML
// file with inline SVG charts (gonum.org/v1/plot, vgsvg backend; no JavaScript, nothing
// fetched), Markdown and CSV. It reads only the files a run writes (manifest.json,
// summary.json, intervals.csv, samples.csv; comparison.json for a scenario;
// sweep_points.json and sweep.json's axes for a sweep), so it renders results of any
// habench version that wrote those files, and it imports nothing of experiment
// (experiment calls it). Its percentages come from package stats, as the sweep's own.
//
// Three kinds of directory load:
//   - a run directory (manifest.json): one topology, one workload run;
//   - a scenario directory (comparison.json, or subdirectories holding manifest.json):
//     several runs compared against a baseline;
//   - a sweep directory (sweep_points.json, see SweepPoint): a scenario whose runs are
//     the cells of a grid, plus curves of TPS and p95 against the swept value.
package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// Kinds of results directory.
const (
	KindRun      = "run"
	KindScenario = "scenario"
	KindSweep    = "sweep"
)

// Results is a loaded results directory: one run, a scenario's runs, or a sweep's cells.
type Results struct {
	// Dir is the directory as given to Load.
	Dir string
	// Kind is KindRun, KindScenario or KindSweep.
	Kind string
	// Name is the scenario's name (manifest extra "scenario"), else the directory's base name.
	Name string
	// Runs in the order they ran (comparison.json's order, else by start time).
	Runs []*Run
	// Sweep is the sweep's points (KindSweep only).
	Sweep []SweepPoint
	// Missing lists comparison.json rows whose run directory has no manifest.json (a
	// run killed before it wrote one, a directory removed): reported, not drawn.
	Missing []string
	// Axes are a sweep's axes but topology and repeat (sweep.json's, else from the runs'
	// manifests), which Cells groups and compares the runs by; nil outside sweeps.
	Axes []stats.Axis
}

// Run is one run directory, loaded.
type Run struct {
	// Name is the topology's name (manifest topology.name), else extra "topology", else
	// the directory's base name. With Cell set (a sweep), Name is "<topology> <cell>".
	Name string
	// Topology is the topology's name alone ("" for a run without a cluster).
	Topology string
	// Cell names the sweep cell (manifest extra "cell"), "" outside sweeps.
	Cell string
	Dir  string
	// Manifest is manifest.json.
	Manifest schema.Manifest
	// ManifestOther holds manifest.json's top-level keys the report has no section of its
	// own for (faults and link_changes among them, and keys of newer habench versions),
	// raw, shown as they are.
	ManifestOther map[string]json.RawMessage
	// topology is manifest.json's "topology" as the file has it (every key, also of older
	// or newer habench versions), nil without one.
	topology map[string]any
	// Summary is summary.json; nil when the run did not get to write it (killed).
	Summary *schema.Summary
	// SummaryOther holds summary.json's sections the report has no table of its own for
	// (semisync, group, galera, ...), raw, shown as they are.
	SummaryOther map[string]json.RawMessage
	// Intervals are intervals.csv's rows (elapsed_s on the workload's clock).
	Intervals []schema.Interval
	// Samples are samples.csv's rows (elapsed_s on the samplers' clock).
	Samples []schema.Sample
	// LatencyLog is latency.hlog (nil without one: older results): the latency histograms
	// per report interval, From on intervals.csv's clock.
	LatencyLog *schema.LatencyLog
	// Error says why the run is incomplete ("" when it completed): summary.json's error,
	// comparison.json's row error, or a missing summary.
	Error string
	// DeploySecs is the deploy time from comparison.json (0 when unknown).
	DeploySecs float64
}

// summaryKnown are the summary.json keys the report shows in its own tables or leaves
// out on purpose; the others (semisync, group, galera, ...) go to Run.SummaryOther.
var summaryKnown = []string{"workload", "threads", "time_s", "tps", "qps", "transactions", "reads", "writes", "others",
	"ignored_errors", "reconnects", "latency_ms", "errors_by_code", "per_endpoint", "nodes", "hosts", "data_check",
	"replicas_consistent", "rand_type", "db_ps_mode", "error", "outages", "samples_window"}

// LoadError is a directory that is not a habench results directory, or a file in it
// that cannot be read.
type LoadError struct {
	Path   string
	Reason string
}

func (e *LoadError) Error() string { return fmt.Sprintf("results %q: %s", e.Path, e.Reason) }

// Load reads a results directory: a run (manifest.json), a sweep (sweep_points.json) or
// a scenario (comparison.json, or subdirectories with manifest.json). Error
// (*LoadError) when dir is none of these or a file is malformed; a run whose
// summary.json is missing loads with Error set (it was interrupted).
func Load(dir string) (*Results, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, &LoadError{Path: dir, Reason: err.Error()}
	}
	if !st.IsDir() {
		return nil, &LoadError{Path: dir, Reason: "not a directory"}
	}
	if exists(filepath.Join(dir, schema.ManifestFile)) {
		r, err := LoadRun(dir)
		if err != nil {
			return nil, err
		}
		return &Results{Dir: dir, Kind: KindRun, Name: r.Name, Runs: []*Run{r}}, nil
	}
	res := &Results{Dir: dir, Kind: KindScenario, Name: filepath.Base(filepath.Clean(dir))}
	if exists(filepath.Join(dir, SweepFile)) {
		pts, err := ReadSweepPoints(dir)
		if err != nil {
			return nil, err
		}
		res.Kind, res.Sweep = KindSweep, pts
	}
	if exists(filepath.Join(dir, "comparison.json")) {
		if err := res.loadComparison(); err != nil {
			return nil, err
		}
	} else {
		if err := res.loadSubdirs(); err != nil {
			return nil, err
		}
	}
	if len(res.Runs) == 0 && len(res.Sweep) == 0 {
		return nil, &LoadError{Path: dir, Reason: "no manifest.json, comparison.json, " + SweepFile + " or run directories: not a habench results directory"}
	}
	for _, r := range res.Runs {
		if s, ok := r.Manifest.Extra["scenario"].(string); ok && s != "" {
			res.Name = s
			break
		}
	}
	if err := res.loadAxes(); err != nil {
		return nil, err
	}
	return res, nil
}

// comparisonRow is the part of a comparison.json row the loader needs.
type comparisonRow struct {
	Topology   string  `json:"topology"`
	Dir        string  `json:"dir"`
	DeploySecs float64 `json:"deploy_s"`
	Error      string  `json:"error"`
	// ReusedFrom: a cell not run (its group's runs stand for it); no directory of its own.
	ReusedFrom string `json:"reused_from"`
}

func (res *Results) loadComparison() error {
	path := filepath.Join(res.Dir, "comparison.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return &LoadError{Path: path, Reason: err.Error()}
	}
	var rows []comparisonRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return &LoadError{Path: path, Reason: err.Error()}
	}
	for _, row := range rows {
		if row.ReusedFrom != "" {
			continue
		}
		// The row's dir is relative to where the scenario ran; the run directory is
		// inside the scenario directory under the same base name.
		d := filepath.Join(res.Dir, filepath.Base(row.Dir))
		if !exists(filepath.Join(d, schema.ManifestFile)) && exists(filepath.Join(row.Dir, schema.ManifestFile)) {
			d = row.Dir
		}
		if !exists(filepath.Join(d, schema.ManifestFile)) {
			res.Missing = append(res.Missing, fmt.Sprintf("%s (%s: no manifest.json)", row.Topology, d))
			continue
		}
		r, err := LoadRun(d)
		if err != nil {
			return err
		}
		r.DeploySecs = row.DeploySecs
		if row.Error != "" && r.Error == "" {
			r.Error = row.Error
		}
		res.Runs = append(res.Runs, r)
	}
	return nil
}

func (res *Results) loadSubdirs() error {
	ents, err := os.ReadDir(res.Dir)
	if err != nil {
		return &LoadError{Path: res.Dir, Reason: err.Error()}
	}
	for _, e := range ents {
		d := filepath.Join(res.Dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if !exists(filepath.Join(d, schema.ManifestFile)) {
			continue
		}
		r, err := LoadRun(d)
		if err != nil {
			return err
		}
		res.Runs = append(res.Runs, r)
	}
	sort.SliceStable(res.Runs, func(i, j int) bool {
		return res.Runs[i].Manifest.Started.Before(res.Runs[j].Manifest.Started)
	})
	return nil
}

// LoadRun reads one run directory. manifest.json is required; summary.json,
// intervals.csv, samples.csv and latency.hlog are read when present.
func LoadRun(dir string) (*Run, error) {
	r, err := LoadRunSummary(dir)
	if err != nil {
		return nil, err
	}
	if r.Intervals, err = readIntervals(filepath.Join(dir, schema.IntervalsFile)); err != nil {
		return nil, err
	}
	if r.Samples, err = readSamples(filepath.Join(dir, schema.SamplesFile)); err != nil {
		return nil, err
	}
	if r.LatencyLog, err = readLatencyLog(filepath.Join(dir, schema.LatencyLogFile)); err != nil {
		return nil, err
	}
	return r, nil
}

// readLatencyLog reads latency.hlog (nil when there is none). Error: *LoadError naming
// the file and the interval that does not decode.
func readLatencyLog(path string) (*schema.LatencyLog, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &LoadError{Path: path, Reason: err.Error()}
	}
	log, err := schema.ReadLatencyLog(b)
	if err != nil {
		return nil, &LoadError{Path: path, Reason: err.Error()}
	}
	return log, nil
}

// LoadRunSummary reads a run directory's manifest.json (required) and summary.json
// (when present), not its CSV files: what RunMarkdown needs. Error: *LoadError naming
// the file.
func LoadRunSummary(dir string) (*Run, error) {
	mpath := filepath.Join(dir, schema.ManifestFile)
	mb, err := os.ReadFile(mpath)
	if err != nil {
		return nil, &LoadError{Path: mpath, Reason: err.Error()}
	}
	spath := filepath.Join(dir, schema.SummaryFile)
	sb, err := os.ReadFile(spath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &LoadError{Path: spath, Reason: err.Error()}
	}
	return RunFromJSON(dir, mb, sb)
}

// RunFromJSON decodes a run of directory dir from the contents of its manifest.json and
// summary.json (summary nil: the run did not finish), without its CSV files. Error:
// *LoadError naming the file that does not decode.
func RunFromJSON(dir string, manifest, summary []byte) (*Run, error) {
	r := &Run{Dir: dir}
	mpath := filepath.Join(dir, schema.ManifestFile)
	if err := json.Unmarshal(manifest, &r.Manifest); err != nil {
		return nil, &LoadError{Path: mpath, Reason: err.Error()}
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(manifest, &all); err == nil {
		if raw, ok := all["topology"]; ok {
			_ = json.Unmarshal(raw, &r.topology)
		}
		for _, k := range []string{"habench", "command_line", "started", "finished", "host", "workload", "topology",
			"cluster", "binaries", "nodes", "links", "samplers", "hosts", "drop_caches", "intervals_offset_s", "samples_started", "extra", "knobs", "warnings"} {
			delete(all, k)
		}
		if len(all) > 0 {
			r.ManifestOther = all
		}
	}
	if err := r.decodeSummary(summary); err != nil {
		return nil, err
	}
	r.Topology, _ = r.topology["name"].(string)
	if r.Topology == "" {
		r.Topology, _ = r.Manifest.Extra["topology"].(string)
	}
	r.Cell, _ = r.Manifest.Extra["cell"].(string)
	r.Name = r.Topology
	if r.Name == "" {
		r.Name = filepath.Base(filepath.Clean(dir))
	}
	if r.Cell != "" {
		r.Name += " " + r.Cell
	}
	return r, nil
}

// decodeSummary sets r.Summary, its sections without a table of the report's own
// (SummaryOther) and r.Error from summary.json's contents b (nil: no summary.json).
func (r *Run) decodeSummary(b []byte) error {
	if b == nil {
		r.Error = "no summary.json (the run did not finish)"
		return nil
	}
	r.Summary = &schema.Summary{}
	if err := json.Unmarshal(b, r.Summary); err != nil {
		return &LoadError{Path: filepath.Join(r.Dir, schema.SummaryFile), Reason: err.Error()}
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(b, &all) == nil {
		for _, k := range summaryKnown {
			delete(all, k)
		}
		if len(all) > 0 {
			r.SummaryOther = all
		}
	}
	r.Error = r.Summary.Error
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// readCSV reads a CSV file with a header into rows of column name -> value. A missing
// file is no rows; a truncated last line (a killed run) is dropped.
func readCSV(path string) ([]string, [][]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &LoadError{Path: path, Reason: err.Error()}
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &LoadError{Path: path, Reason: err.Error()}
	}
	var rows [][]string
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, &LoadError{Path: path, Reason: err.Error()}
		}
		if len(rec) != len(header) {
			continue // a row cut short by a killed run
		}
		rows = append(rows, rec)
	}
	return header, rows, nil
}

func readIntervals(path string) ([]schema.Interval, error) {
	header, rows, err := readCSV(path)
	if err != nil || header == nil {
		return nil, err
	}
	out, err := schema.ParseIntervals(header, rows)
	if err != nil {
		return nil, &LoadError{Path: path, Reason: err.Error()}
	}
	return out, nil
}

func readSamples(path string) ([]schema.Sample, error) {
	header, rows, err := readCSV(path)
	if err != nil || header == nil {
		return nil, err
	}
	out, err := schema.ParseSamples(header, rows)
	if err != nil {
		return nil, &LoadError{Path: path, Reason: err.Error()}
	}
	return out, nil
}

// Kind is the topology kind from the manifest ("single", "async", ...), "" if none.
func (r *Run) Kind() string { s, _ := r.topology["kind"].(string); return s }

// Flavor is the server flavor ("mariadb", "mysql"), "" if unknown.
func (r *Run) Flavor() string {
	if r.Manifest.Binaries != nil && r.Manifest.Binaries.Flavor != "" {
		return r.Manifest.Binaries.Flavor
	}
	s, _ := r.topology["flavor"].(string)
	return s
}

// Version is the server version ("10.11.19"), else the first node's version string.
func (r *Run) Version() string {
	if r.Manifest.Binaries != nil && r.Manifest.Binaries.Version != "" {
		return r.Manifest.Binaries.Version
	}
	if len(r.Manifest.Nodes) > 0 {
		return r.Manifest.Nodes[0].Version
	}
	return ""
}

// Latency returns the run's latency statistic ("avg", "p95", "p99", "max", ...) in ms,
// and false when there is no summary.
func (r *Run) Latency(stat string) (float64, bool) {
	if r.Summary == nil {
		return 0, false
	}
	v, ok := r.Summary.LatencyMs[stat]
	return v, ok
}

// MaxLagS is the largest visibility lag any node showed (summary.json), false when no
// node has a lag sample or there is a single node (no replicas: the console's n/a).
func (r *Run) MaxLagS() (float64, bool) {
	m, _ := r.MaxLag()
	if m == nil {
		return 0, false
	}
	return *m, true
}

// MaxLag is MaxLagS as MaxLag computes it over summary.json's nodes, with the nodes whose
// lag was unknown for a while ("n3 unknown for 9 s"); nil and "" for a single node.
func (r *Run) MaxLag() (*float64, string) {
	if r.Summary == nil || len(r.Summary.Nodes) < 2 {
		return nil, ""
	}
	var figs []NodeLagFigure
	for _, n := range r.Summary.Nodes {
		figs = append(figs, NodeLagFigure{Node: n.Node, MaxS: n.LagMaxS, UnknownS: n.LagUnknownS})
	}
	return MaxLag(figs)
}

// Impairment decodes manifest links.impairment: nil when the links were not impaired
// ("none") or the field is absent.
func (r *Run) Impairment() *schema.LinkImpairment {
	v, ok := r.Manifest.Links["impairment"]
	if !ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var li schema.LinkImpairment
	if err := json.Unmarshal(raw, &li); err != nil || li.Backend == "" {
		return nil
	}
	return &li
}

// LinkDescription is manifest links.description and network ("" when absent).
func (r *Run) LinkDescription() string {
	d, _ := r.Manifest.Links["description"].(string)
	return d
}

// Sites returns the topology's sites from the manifest (topology.sites: a list of
// {name, nodes}, in the topology file's order); nil without sites.
func (r *Run) Sites() []RunSite {
	raw, ok := r.topology["sites"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var out []RunSite
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// RunSite is one site of a run's topology.
type RunSite struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
}

// SiteOf returns node's site ("" without sites).
func (r *Run) SiteOf(node string) string {
	for _, s := range r.Sites() {
		if slices.Contains(s.Nodes, node) {
			return s.Name
		}
	}
	return ""
}

// NodeNames lists the nodes of the run: the manifest's, then any others seen in samples;
// with sites, grouped by site in the sites' order.
func (r *Run) NodeNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range r.Sites() {
		for _, n := range s.Nodes {
			if !seen[n] && slices.ContainsFunc(r.Manifest.Nodes, func(m schema.NodeInfo) bool { return m.Name == n }) {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	for _, n := range r.Manifest.Nodes {
		if !seen[n.Name] {
			seen[n.Name] = true
			out = append(out, n.Name)
		}
	}
	var extra []string
	for _, s := range r.Samples {
		if !seen[s.Node] {
			seen[s.Node] = true
			extra = append(extra, s.Node)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// TPSStats are the per-interval TPS's mean, minimum, maximum and coefficient of
// variation (stddev/mean, 0..): the jitter a TPS-over-time chart shows. ok is false
// without intervals.
func (r *Run) TPSStats() (mean, lo, hi, cv float64, ok bool) {
	if len(r.Intervals) == 0 {
		return 0, 0, 0, 0, false
	}
	lo, hi = r.Intervals[0].TPS, r.Intervals[0].TPS
	for _, iv := range r.Intervals {
		mean += iv.TPS
		lo, hi = min(lo, iv.TPS), max(hi, iv.TPS)
	}
	mean /= float64(len(r.Intervals))
	var ss float64
	for _, iv := range r.Intervals {
		ss += (iv.TPS - mean) * (iv.TPS - mean)
	}
	if mean > 0 {
		cv = math.Sqrt(ss/float64(len(r.Intervals))) / mean
	}
	return mean, lo, hi, cv, true
}
