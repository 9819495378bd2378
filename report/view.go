package report

import (
	"encoding/json"
	"fmt"
	"github.com/habench/habench/internal/words"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
)

// fact is one "key: value" line about a run.
type fact struct{ K, V string }

// nodeStats is one node's line: lag from summary.json, the rest from samples.csv.
type nodeStats struct {
	Node, Role, Version, Address string
	LagMax, LagAvg, BacklogMax   string
	// Queues: "metric max" per queue metric; Paused: "metric avg/max" per paused or
	// throttle metric.
	Queues, Paused string
	Samples        int
	SamplerErrors  string
}

// varTable is variables (rows) by column (nodes, or runs).
type varTable struct {
	Cols []string
	Rows []varRow
	// Same counts variables equal in every column that were left out; Common are they
	// with their value.
	Same   int
	Common []fact
	// Keys, when the columns are runs too many and too long-named to head a readable
	// table, say which run each column is: Cols are then short labels (a sweep's cell
	// "c3", else "r3"), Keys[i] the column's label, topology and full name.
	Keys []colKey
}

// colKey is a run's column in the settings table: Short heads it (with Topology under
// it), Full is the run's name (but the cell label Short is).
type colKey struct{ Short, Topology, Full string }

// Settings table columns: up to keyedCols runs are headed by their names; more, when a
// name is longer than shortName characters, by short labels and a key.
const (
	keyedCols = 4
	shortName = 12
)

type varRow struct {
	Name   string
	Values []string
	Differ bool
}

// runView is what the HTML and Markdown show for one run.
type runView struct {
	Run      *Run
	ID       string
	Heading  string
	Facts    []fact
	Warnings []string
	Chart    *Chart
	// Heatmap is the latency heatmap from latency.hlog (nil without one).
	Heatmap *Chart
	Nodes   []nodeStats
	Hosts   []hostStats
	// Clients are the client hosts' rows of a run driven from several (nil: none).
	Clients []clientStats
	// NodeWindow says which samples the node figures cover.
	NodeWindow string
	Impairment *schema.LinkImpairment
	Vars       varTable
	Requested  []fact
	Knobs      *schema.Knobs
	// Sections are summary.json's and manifest.json's sections this package does not
	// know, as tables where they are flat.
	Sections []section
	Row      Row
}

// section is an unknown results section: a table when it is an object of scalars or a
// list of such objects, else its JSON.
type section struct {
	Title string
	Cols  []string
	Rows  [][]string
	JSON  string
	// Note explains the columns ("" without one).
	Note string
}

// sectionCols are readable headings of known sections' columns, and what they mean
// (by section key: faults in summary.json and manifest.json).
var sectionCols = map[string]map[string]string{
	"faults": {"at_s": "at (s since samples start)", "recovery_s": "recovered after s", "caught_up_s": "caught up after s",
		"peak_lag_s": "peak lag s", "took_s": "took s", "new_writer_s": "new writer after s", "client_writer_s": "workers there after s",
		"view_change_s": "cluster view changed after s", "client_failover_s": "workers elsewhere after s", "failover_workers": "workers that left", "at": "at (UTC)", "errors_by_code": "failed attempts"},
}

// sectionNotes explain known sections' columns.
var sectionNotes = map[string]string{
	"faults": "at = when the fault was injected, in seconds since samples.csv's clock started (not since the start of measurement); " +
		"recovered after = seconds from the fault to the first commit of the workers it stopped (0: the workload did not notice); " +
		"caught up after = seconds from the fault until the node's visibility lag was back at or under 1 s (n/a: not seen); " +
		"peak lag = the largest visibility lag of any node from the fault to the end of the run, in seconds (≥ peak (n3 unknown for N s): that node's lag could not be measured for N s, as in the nodes table); took = how long injecting the fault took.",
}

// named gives the section key's columns their readable headings and its note; a fault's
// peak_lag_unknown is shown in its peak lag cell, as LagText does in every lag column.
func (sec section) named(key string) section {
	if key == "faults" {
		sec = sec.mergeLagUnknown("peak_lag_s", "peak_lag_unknown")
	}
	if names, ok := sectionCols[key]; ok {
		for i, c := range sec.Cols {
			if n, ok := names[c]; ok {
				sec.Cols[i] = n
			}
		}
	}
	if sec.Cols != nil {
		sec.Note = sectionNotes[key]
	}
	return sec
}

// mergeLagUnknown shows column unknown in column lag ("≥ 0.01 (n3 unknown for 9 s)") and
// drops it; the section is unchanged without both columns.
func (sec section) mergeLagUnknown(lag, unknown string) section {
	li, ui := slices.Index(sec.Cols, lag), slices.Index(sec.Cols, unknown)
	if li < 0 || ui < 0 {
		return sec
	}
	for i, row := range sec.Rows {
		if u := row[ui]; u != "" && u != "n/a" {
			if row[li] != "n/a" {
				row[li] = "≥ " + row[li]
			}
			row[li] += " (" + u + ")"
		}
		sec.Rows[i] = slices.Delete(row, ui, ui+1)
	}
	sec.Cols = slices.Delete(sec.Cols, ui, ui+1)
	return sec
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "n/a", true
	case string:
		return x, true
	case float64:
		return readableFloat(x), true
	case bool:
		return strconv.FormatBool(x), true
	case []any: // a list of scalars, comma-separated
		var out []string
		for _, e := range x {
			s, ok := scalar(e)
			if !ok || e == nil {
				return "", false
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return "none", true
		}
		return strings.Join(out, ", "), true
	}
	return "", false
}

func newSection(title string, raw json.RawMessage) section {
	sec := section{Title: title}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		sec.JSON = string(raw)
		return sec
	}
	flat := func(m map[string]any) bool {
		for _, x := range m {
			if _, ok := scalar(x); !ok {
				return false
			}
		}
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		if flat(x) {
			sec.Cols = []string{"field", "value"}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				val, _ := scalar(x[k])
				sec.Rows = append(sec.Rows, []string{k, val})
			}
			return sec
		}
	case []any:
		keys := map[string]bool{}
		ok := len(x) > 0
		for _, e := range x {
			m, isMap := e.(map[string]any)
			if !isMap || !flat(m) {
				ok = false
				break
			}
			for k := range m {
				keys[k] = true
			}
		}
		if ok {
			sec.Cols = slices.Sorted(maps.Keys(keys))
			if slices.Contains(sec.Cols, "node") { // the node first
				sec.Cols = append([]string{"node"}, slices.DeleteFunc(sec.Cols, func(c string) bool { return c == "node" })...)
			}
			for _, e := range x {
				m := e.(map[string]any)
				var row []string
				for _, c := range sec.Cols {
					val, _ := scalar(m[c])
					row = append(row, val)
				}
				sec.Rows = append(sec.Rows, row)
			}
			return sec
		}
	}
	pb, _ := json.MarshalIndent(roundFloats(v), "", "  ")
	sec.JSON = string(pb)
	return sec
}

// roundFloats is v with every non-integer number rounded as readableFloat does (a
// reader's JSON: "took_s": 3.034, not 3.033882895).
func roundFloats(v any) any {
	switch x := v.(type) {
	case float64:
		return json.Number(readableFloat(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = roundFloats(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = roundFloats(e)
		}
		return out
	}
	return v
}

func workloadLine(r *Run) string {
	w := r.Manifest.Workload
	o := w.Options
	if w.Name == "" {
		return ""
	}
	s := fmt.Sprintf("%s, %s threads, %s tables x %s rows, %s s", w.Name, o["threads"], o["tables"], o["table-size"], o["time"])
	if ri := o["report-interval"]; ri != "" && ri != "0" {
		s += ", report interval " + ri + " s"
	}
	if w.RandType != "" {
		s += ", rand-type " + w.RandType
	}
	if w.PSMode != "" {
		s += ", db-ps-mode " + w.PSMode
	}
	return s
}

func topologyLine(r *Run) string {
	t := r.topology
	if t == nil {
		return ""
	}
	s := humanValue(t["kind"])
	if n, ok := t["nodes"].(float64); ok {
		s += ", " + words.Plural(int(n), "node")
	}
	s += ", " + r.Flavor()
	if v := r.Version(); v != "" {
		s += " " + v
	}
	if ss, ok := t["semisync"].(map[string]any); ok && t["kind"] == "semisync" {
		s += ", semi-sync " + humanValue(ss["wait_point"]) + ", timeout " + humanValue(ss["timeout"])
	}
	return s
}

// newRunView is run r's section of the report (the idx-th run; compared: the results are
// of more than one topology, so a baseline is named).
func newRunView(r *Run, row Row, chart *Chart, idx int, compared bool) runView {
	v := runView{Run: r, ID: fmt.Sprintf("run-%d", idx+1), Heading: r.Name, Chart: chart, Row: row, Impairment: r.Impairment()}
	v.whatRan(r)
	v.impairmentFacts(&r.Manifest)
	v.provenance(r, compared)
	v.outcome(r)
	v.Nodes = nodeTable(r)
	v.NodeWindow = nodeWindow(r)
	v.Hosts = hostTable(r)
	v.Clients = clientTable(r)
	v.Vars = nodeVars(r)
	if opts, ok := r.topology["options"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			v.Requested = append(v.Requested, fact{k, humanValue(opts[k])})
		}
	}
	v.otherSections(r)
	return v
}

// add appends the fact k: val to the run's facts, unless val is "".
func (v *runView) add(k, val string) {
	if val != "" {
		v.Facts = append(v.Facts, fact{k, val})
	}
}

// whatRan adds the facts on what ran where: topology, servers, workload, endpoints,
// links, hosts (and the clock warning) and page cache drops.
func (v *runView) whatRan(r *Run) {
	m := &r.Manifest
	v.add("topology", topologyLine(r))
	if m.Binaries != nil {
		inst := string(m.Binaries.Installation.Kind)
		if p := m.Binaries.Installation.Path; p != "" {
			inst += " " + p
		}
		v.add("servers", strings.TrimSpace(m.Binaries.VersionText+" ("+inst+" installation)"))
	}
	v.add("workload", workloadLine(r))
	if len(m.Workload.Endpoints) > 0 {
		v.add("workers connect to", strings.Join(m.Workload.Endpoints, ", "))
	}
	v.add("links", r.LinkDescription())
	if hl := HostsLine(m.Hosts); hl != "" {
		v.add("hosts", hl)
		if w := ClockWarning(m.Hosts, r.ApplierLagMax()); w != "" {
			v.Warnings = append(v.Warnings, w)
		}
	}
	v.add("page cache", CacheDropsLine(m.CacheDrops))
}

// impairmentFacts adds the links impairment (backend, one-way impairment per directed
// link, how it was applied) and its warnings; "none" when links were recorded unimpaired.
func (v *runView) impairmentFacts(m *schema.Manifest) {
	if li := v.Impairment; li != nil {
		var ls []string
		for _, l := range slices.Sorted(maps.Keys(li.Links)) {
			ls = append(ls, l+" "+li.Links[l])
		}
		desc := fmt.Sprintf("%s backend, one-way per directed link: %s", li.Backend, strings.Join(ls, ", "))
		if li.AppliedBy == "netem apply" {
			desc += fmt.Sprintf(" (standing, `habench netem apply %s`)", li.Request)
		}
		if li.LinkThread != "" {
			desc += ", link thread " + li.LinkThread
		}
		v.add("link impairment", desc)
		if li.Note != "" {
			v.add("note", li.Note)
		}
		v.Warnings = append(v.Warnings, li.Warnings...)
	} else if len(m.Links) > 0 {
		v.add("link impairment", "none")
	}
}

// provenance adds when and how the run was made: times, deploy time, habench and host,
// command line, samplers and manifest extra's values (the baseline only when compared).
func (v *runView) provenance(r *Run, compared bool) {
	m := &r.Manifest
	if !m.Started.IsZero() {
		v.add("ran", fmt.Sprintf("%s to %s (UTC)", m.Started.UTC().Format("2006-01-02 15:04:05"), m.Finished.UTC().Format("15:04:05")))
	}
	if r.DeploySecs > 0 {
		v.add("deployed in", fmt.Sprintf("%.1f s", r.DeploySecs))
	}
	if hv := m.Habench["version"]; hv != "" {
		v.add("habench", hv+" ("+m.Habench["go"]+")")
	}
	if h := m.Host; h != nil {
		v.add("host", fmt.Sprintf("%s, %s CPUs, kernel %s", humanValue(h["hostname"]), humanValue(h["cpus"]), humanValue(h["kernel"])))
	}
	v.add("command", strings.Join(m.CommandLine, " "))
	if len(m.Samplers) > 0 {
		v.add("samplers", strings.Join(m.Samplers, ", "))
	}
	for _, f := range extraFacts(m.Extra, compared) {
		v.add(f.K, f.V)
	}
}

// outcome adds the probe writer's lost commits, the catch-up verdict and ignored errors,
// and the run's warnings: data check, incomplete run, the manifest's and the knobs'.
func (v *runView) outcome(r *Run) {
	m := &r.Manifest
	if p := r.Probe(); p != nil {
		if p.Error != "" {
			v.add("lost acknowledged commits", "not checked: "+p.Error)
		} else {
			v.add("lost acknowledged commits", fmt.Sprintf("%d of %d (probe writer, checked on %s)", p.LostAcknowledged, p.Acknowledged, p.CheckedOn))
		}
	}
	if s := r.Summary; s != nil {
		if s.DataCheck != "" {
			v.Warnings = append(v.Warnings, s.DataCheck)
		}
		if s.ReplicasCaught != nil {
			if *s.ReplicasCaught {
				v.add("after the run", "every node's executed GTID set equals the writer's")
			} else {
				v.Warnings = append(v.Warnings, "after the run some nodes' GTID sets still differ from the writer's")
			}
		}
		if len(s.ErrorsByCode) > 0 {
			var es []string
			for _, k := range slices.Sorted(maps.Keys(s.ErrorsByCode)) {
				es = append(es, fmt.Sprintf("%s: %d", k, s.ErrorsByCode[k]))
			}
			v.add("ignored errors by code", strings.Join(es, ", "))
		}
	}
	if r.Error != "" {
		v.Warnings = append(v.Warnings, "the run did not complete: "+r.Error+" (its numbers cover only the part that ran)")
	}
	// The run's own warnings: server options not in effect, links changed during the run.
	v.Warnings = append(v.Warnings, m.Warnings...)
	if k := m.Knobs; k != nil {
		v.Knobs = k
		for _, n := range k.Nodes {
			if !n.Matches {
				v.Warnings = append(v.Warnings, fmt.Sprintf("knob %s on %s: requested %s, the server runs with %s", n.Knob, n.Node, n.Requested, n.Effective))
			}
		}
		if k.Restored != nil && !*k.Restored {
			v.Warnings = append(v.Warnings, "knobs: a value read back after the run differs from its value before (not restored)")
		}
	}
}

// otherSections shows summary.json's and manifest.json's sections without a table of
// their own: a single number as a fact, anything else as a JSON section.
func (v *runView) otherSections(r *Run) {
	if r.Summary != nil {
		for _, k := range slices.Sorted(maps.Keys(r.SummaryOther)) {
			if f, ok := scalarFact(k, r.SummaryOther[k]); ok {
				v.add(f.K, f.V) // a single number is a line, not a section
				continue
			}
			v.Sections = append(v.Sections, newSection(k+" (summary.json)", r.SummaryOther[k]).named(k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.ManifestOther)) {
		v.Sections = append(v.Sections, newSection(k+" (manifest.json)", r.ManifestOther[k]).named(k))
	}
}

// extraNames are the readable names of manifest extra's keys ("" leaves one out: it is
// said with another).
var extraNames = map[string]string{"axes": "axes", "baseline": "baseline", "baseline_why": "", "cell_index": "cell",
	"scale": "scale", "scenario": "scenario", "topology": "topology"}

// extraFacts are manifest extra's values as lines a reader reads: "axes:
// topology=qsingle", "baseline: dfasync (the scenario's baseline)", "cell: 1"; a key
// not listed in extraNames with its underscores as spaces. The baseline only when
// compared: results of one topology have none (a manifest of an older habench names it).
func extraFacts(extra map[string]any, compared bool) []fact {
	var out []fact
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if k == "baseline" && !compared {
			continue
		}
		name, ok := extraNames[k]
		if !ok {
			name = strings.ReplaceAll(k, "_", " ")
		}
		if name == "" {
			continue
		}
		val := humanValue(extra[k])
		if k == "baseline" {
			if why, ok := extra["baseline_why"].(string); ok && why != "" {
				val += " (" + why + ")"
			}
		}
		out = append(out, fact{name, val})
	}
	return out
}

// scalarNames are readable names and units of summary.json's single-number sections.
var scalarNames = map[string]struct{ name, unit string }{
	"client_cpu_cores": {"client CPU", "cores"},
}

// scalarFact is a summary.json section that is a single number or string as a line
// ("client CPU: 0.39 cores"); false for anything else.
func scalarFact(key string, raw json.RawMessage) (fact, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return fact{}, false
	}
	switch x := v.(type) {
	case float64, string, bool:
		n, ok := scalarNames[key]
		if !ok {
			n.name = strings.ReplaceAll(key, "_", " ")
		}
		s, _ := scalar(x)
		if f, isNum := x.(float64); isNum && n.unit != "" {
			s = strconv.FormatFloat(f, 'f', 2, 64) + " " + n.unit
		}
		return fact{n.name, s}, true
	}
	return fact{}, false
}

// measuredSamples are the samples of the measured window (from the start of
// measurement, Manifest.IntervalsOffsetS on samples.csv's clock: warm-up excluded, as
// summary.json's figures), all of them when the offset is unknown.
func (r *Run) measuredSamples() []schema.Sample {
	from := r.Manifest.IntervalsOffsetS
	if from <= 0 {
		return r.Samples
	}
	var out []schema.Sample
	for _, s := range r.Samples {
		if s.ElapsedS >= from {
			out = append(out, s)
		}
	}
	return out
}

// nodeWindow says which window the node figures cover.
func nodeWindow(r *Run) string {
	if r.Summary != nil && r.Summary.SamplesWindow != "" {
		return "Lag, backlog, queues and flow control " + r.Summary.SamplesWindow + "."
	}
	if r.Manifest.IntervalsOffsetS > 0 {
		return fmt.Sprintf("Queues and flow control from the start of measurement (%.1f s on samples.csv's clock); lag and backlog as summary.json has them (this run's habench counted every sample, warm-up included).", r.Manifest.IntervalsOffsetS)
	}
	return "Every sample (the start of measurement is not known)."
}

// nodeTable summarises each node: lag from summary.json (n/a without samples), queue
// maxima and paused-fraction averages from samples.csv (by sampler.Classify).
func nodeTable(r *Run) []nodeStats {
	type acc struct {
		max, sum float64
		n        int
	}
	by := map[string]map[string]*acc{} // node -> metric -> acc
	for _, s := range r.measuredSamples() {
		c := sampler.Classify(s.Metric)
		if c != sampler.ClassQueue && c != sampler.ClassPaused && c != sampler.ClassThrottle {
			continue
		}
		if math.IsNaN(s.Value) {
			continue
		}
		if by[s.Node] == nil {
			by[s.Node] = map[string]*acc{}
		}
		a := by[s.Node][s.Metric]
		if a == nil {
			a = &acc{max: s.Value}
			by[s.Node][s.Metric] = a
		}
		a.max = max(a.max, s.Value)
		a.sum += s.Value
		a.n++
	}
	sum := map[string]schema.NodeLag{}
	if r.Summary != nil {
		for _, n := range r.Summary.Nodes {
			sum[n.Node] = n
		}
	}
	info := map[string]schema.NodeInfo{}
	for _, n := range r.Manifest.Nodes {
		info[n.Name] = n
	}
	var out []nodeStats
	for _, name := range r.NodeNames() {
		if sampler.IsHostNode(name) {
			continue // a host's machine-wide samples: the Hosts table
		}
		label := name
		if site := r.SiteOf(name); site != "" {
			label = name + " (" + site + ")"
		}
		ns := nodeStats{Node: label, Role: info[name].Role, Version: info[name].Version, Address: info[name].Address,
			LagMax: "n/a", LagAvg: "n/a", BacklogMax: "n/a", SamplerErrors: "n/a"}
		if s, ok := sum[name]; ok {
			if ns.Role == "" {
				ns.Role = s.Role
			}
			if s.RoleEnd != "" {
				ns.Role += " → " + s.RoleEnd
			}
			if s.DownAtEnd {
				ns.Role += " (down)"
			}
			ns.LagMax, ns.LagAvg = NodeLagText(s.LagMaxS, s.LagUnknownS, "%.3f"), fmtOpt(s.LagAvgS, "%.3f")
			ns.BacklogMax = fmtOpt(s.BacklogMaxTrx, "%.0f")
			ns.Samples = s.Samples
			ns.SamplerErrors = fmt.Sprintf("%.0f", s.SamplerErrors)
		}
		var qs, ps []string
		for _, m := range slices.Sorted(maps.Keys(by[name])) {
			a := by[name][m]
			switch sampler.Classify(m) {
			case sampler.ClassQueue:
				if m != sampler.MetricBacklog {
					qs = append(qs, fmt.Sprintf("%s max %.0f", m, a.max))
				}
			case sampler.ClassPaused, sampler.ClassThrottle:
				ps = append(ps, fmt.Sprintf("%s avg %.3f, max %.3f", m, a.sum/float64(a.n), a.max))
			}
		}
		ns.Queues, ns.Paused = strings.Join(qs, "; "), strings.Join(ps, "; ")
		out = append(out, ns)
	}
	return out
}

// hiddenVars are identities, not settings.
var hiddenVars = map[string]bool{"version_comment": true, "server_uuid": true, "hostname": true}

// nodeVars is the run's settings read back, variable by node.
func nodeVars(r *Run) varTable {
	var t varTable
	names := map[string]bool{}
	for _, n := range r.Manifest.Nodes {
		t.Cols = append(t.Cols, n.Name)
		for k := range n.Variables {
			if !hiddenVars[k] {
				names[k] = true
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(names)) {
		row := varRow{Name: k}
		for i, n := range r.Manifest.Nodes {
			row.Values = append(row.Values, n.Variables[k])
			row.Differ = row.Differ || (i > 0 && n.Variables[k] != row.Values[0])
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// settingsAcross compares the first node's (the writer's) settings read back across
// runs; onlyDiffer leaves out variables equal in all runs (counted in Same). Identity
// variables (server_id, port, version) are left out.
func settingsAcross(runs []*Run, onlyDiffer bool) varTable {
	var t varTable
	names := map[string]bool{}
	for _, r := range runs {
		t.Cols = append(t.Cols, r.Name)
		if len(r.Manifest.Nodes) == 0 {
			continue
		}
		for k := range r.Manifest.Nodes[0].Variables {
			if !hiddenVars[k] && k != "server_id" && k != "port" && k != "version" {
				names[k] = true
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(names)) {
		row := varRow{Name: k}
		for i, r := range runs {
			val := "n/a"
			if len(r.Manifest.Nodes) > 0 {
				if x, ok := r.Manifest.Nodes[0].Variables[k]; ok {
					val = x
				}
			}
			row.Values = append(row.Values, val)
			row.Differ = row.Differ || (i > 0 && val != row.Values[0])
		}
		if onlyDiffer && !row.Differ {
			t.Same++
			t.Common = append(t.Common, fact{k, row.Values[0]})
			continue
		}
		t.Rows = append(t.Rows, row)
	}
	t.Keys = columnKeys(runs)
	if t.Keys != nil {
		for i, k := range t.Keys {
			t.Cols[i] = k.Short
		}
	}
	return t
}

// cellLabel is the "c3" a sweep cell's name starts with ("c3 links=0.6ms threads=16").
var cellLabel = regexp.MustCompile(`^c[0-9]+$`)

// columnKeys are the runs' short column labels and key (see varTable.Keys); nil when the
// runs' names head a table readably (few runs, or short names).
func columnKeys(runs []*Run) []colKey {
	long := false
	for _, r := range runs {
		long = long || len(r.Name) > shortName
	}
	if len(runs) <= keyedCols || !long {
		return nil
	}
	var keys []colKey
	seen := map[string]bool{}
	for i, r := range runs {
		k := colKey{Short: fmt.Sprintf("r%d", i+1), Topology: r.cellTopology(), Full: r.Name}
		if f := strings.Fields(r.Cell); len(f) > 0 && cellLabel.MatchString(f[0]) && !seen[f[0]] {
			k.Short = f[0]
			k.Full = strings.Join(append([]string{k.Topology}, f[1:]...), " ") // the label heads the column
		}
		seen[k.Short] = true
		keys = append(keys, k)
	}
	return keys
}

// versions lists the distinct server versions and habench versions of the runs.
func versions(runs []*Run) (servers, habench []string) {
	s, h := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		if r.Manifest.Binaries != nil && r.Manifest.Binaries.VersionText != "" {
			s[r.Manifest.Binaries.VersionText] = true
		}
		if v := r.Manifest.Habench["version"]; v != "" {
			h[v] = true
		}
	}
	servers, habench = slices.Sorted(maps.Keys(s)), slices.Sorted(maps.Keys(h))
	sort.Strings(servers)
	return servers, habench
}
