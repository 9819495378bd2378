package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/netem"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"go.yaml.in/yaml/v3"
)

// AxisKind says what a sweep axis varies and therefore what a cell must do to change it.
type AxisKind = schema.AxisKind

// Axis kinds (schema.Axis*), in the order a sweep expands them.
const (
	AxisTopology = schema.AxisTopology
	AxisOption   = schema.AxisOption
	AxisKnob     = schema.AxisKnob
	AxisLinks    = schema.AxisLinks
	AxisVia      = schema.AxisVia
	AxisTest     = schema.AxisTest
	AxisThreads  = schema.AxisThreads
	AxisRepeat   = schema.AxisRepeat
)

// axisOrder is the expansion order: outermost first.
var axisOrder = []AxisKind{AxisTopology, AxisOption, AxisKnob, AxisLinks, AxisVia, AxisTest, AxisThreads, AxisRepeat}

// Setting is one server variable and the value to give it.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// AxisValue is one value of an axis. Label is how it is shown and recorded ("16",
// "0.6ms", "none", "sync_binlog=1,innodb_flush_log_at_trx_commit=1").
type AxisValue struct {
	Label string
	// Settings are the variables an option or knob value sets, in the file's order.
	Settings []Setting
	// Links is a links value (zero: "none").
	Links netem.Request
	// Int is a threads or repeat value.
	Int int
	// Proxy are a via value's health checks for the topology's proxy (zero: its own).
	Proxy topology.ProxyChecks
	// Line is where the value is in the scenario file (0 when derived).
	Line int
}

// Axis is one dimension of a sweep grid. Name is the key as written in the file:
// "topology", "threads", "links", "test", "repeat" (from repeats: N), "knob.NAME",
// "option.NAME".
type Axis struct {
	Name   string
	Kind   AxisKind
	Values []AxisValue
	Line   int
	// Slash: the values of a several-variable axis are labelled with their values joined
	// by "/" in Variables' order ("1/1", "0/2"); without it every value sets all its
	// variables to one value, which is the label ("25000").
	Slash bool
	// Reference is the value label the axis' changes are computed against (the sweep's
	// reference:, else the first value; see Plan).
	Reference string
}

// Labels returns the values' labels.
func (a *Axis) Labels() []string {
	var l []string
	for _, v := range a.Values {
		l = append(l, v.Label)
	}
	return l
}

// MaxRepeats bounds sweep.repeats: the confidence interval of a cell's mean narrows little
// past a few tens of repeats, and each repeat is a whole run.
const MaxRepeats = 1000

// Sweep is a scenario's `sweep:` section: the axes of the grid, in the file's order.
// The grid is their cross product, expanded in axisOrder (see Scenario.Plan).
//
//	sweep:
//	  topology: [single, async]          # default: every topology
//	  option.innodb_buffer_pool_size: [128M, 1G]   # redeploy per value
//	  knob.sync_binlog: [0, 1]           # SET GLOBAL per cell, read back
//	  knob.durability:                   # several variables per value
//	    - {sync_binlog: 1, innodb_flush_log_at_trx_commit: 1}
//	    - {sync_binlog: 0, innodb_flush_log_at_trx_commit: 2}
//	  links: [none, 0.6ms]               # netem.Request values
//	  via: [direct, proxy]               # the workers on the servers, or through the topology's proxy
//	  via: [proxy, {proxy: {check_interval: 2s, fall: 2}}]  # the proxy restarted with other health checks
//	  test: [oltp_read_write, oltp_read_only]
//	  threads: [1, 4, 16]
//	  repeats: 3
//	  reference: {threads: 4}            # per axis, the value changes are against (default: the first)
type Sweep struct {
	Axes []*Axis
	Line int
	// References are reference: (axis name -> value label), RefLines each entry's line.
	References map[string]string
	RefLines   map[string]int
}

// Axis returns the axis called name, or nil.
func (s *Sweep) Axis(name string) *Axis {
	if s == nil {
		return nil
	}
	for _, a := range s.Axes {
		if a.Name == name {
			return a
		}
	}
	return nil
}

var labelRE = regexp.MustCompile(`^[a-z0-9_.-]+$`)

// LineError is a FieldError at a line of the scenario file.
func LineError(line int, field string, value any, reason string) error {
	fe := &topology.FieldError{Field: field, Value: value, Reason: reason}
	if line <= 0 {
		return fe
	}
	return fmt.Errorf("line %d: %w", line, fe)
}

// UnmarshalYAML reads the sweep mapping; unknown axes and malformed values are errors
// naming their line.
func (s *Sweep) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return LineError(n.Line, "sweep", n.Value, "want a mapping of axes: topology, option.NAME, knob.NAME, links, test, threads, repeats")
	}
	*s = Sweep{Line: n.Line}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		field := "sweep." + name
		if s.Axis(name) != nil || (name == "repeats" && s.Axis("repeat") != nil) {
			return LineError(k.Line, field, "", "axis given twice")
		}
		if name == "reference" {
			if v.Kind != yaml.MappingNode {
				return LineError(v.Line, field, v.Value, "want a mapping of axis name to one of its values, e.g. {threads: 4}")
			}
			s.References, s.RefLines = map[string]string{}, map[string]int{}
			for j := 0; j+1 < len(v.Content); j += 2 {
				rk, rv := v.Content[j], v.Content[j+1]
				if rv.Kind != yaml.ScalarNode || rv.Value == "" {
					return LineError(rv.Line, field+"."+rk.Value, rv.Value, "want one value of the axis")
				}
				s.References[rk.Value], s.RefLines[rk.Value] = rv.Value, rk.Line
			}
			continue
		}
		a := &Axis{Name: name, Line: k.Line}
		var err error
		switch {
		case name == "repeats":
			var r int
			if v.Kind != yaml.ScalarNode || v.Decode(&r) != nil || r < 1 || r > MaxRepeats {
				return LineError(v.Line, field, v.Value, fmt.Sprintf("want a whole number from 1 to %d", MaxRepeats))
			}
			a.Name, a.Kind = "repeat", AxisRepeat
			for j := 1; j <= r; j++ {
				a.Values = append(a.Values, AxisValue{Label: strconv.Itoa(j), Int: j, Line: v.Line})
			}
		case name == "threads":
			a.Kind = AxisThreads
			err = eachScalar(v, field, func(it *yaml.Node) error {
				t, perr := strconv.Atoi(it.Value)
				if perr != nil || t < 1 {
					return LineError(it.Line, field, it.Value, "want whole numbers >= 1")
				}
				a.Values = append(a.Values, AxisValue{Label: strconv.Itoa(t), Int: t, Line: it.Line})
				return nil
			})
		case name == "via":
			a.Kind = AxisVia
			err = decodeViaAxis(a, v, field)
		case name == "topology" || name == "test":
			a.Kind = AxisKind(name)
			err = eachScalar(v, field, func(it *yaml.Node) error {
				a.Values = append(a.Values, AxisValue{Label: it.Value, Line: it.Line})
				return nil
			})
		case name == "links":
			a.Kind = AxisLinks
			err = decodeLinksAxis(a, v, field)
		case strings.HasPrefix(name, "knob.") || strings.HasPrefix(name, "option."):
			a.Kind = AxisKnob
			if strings.HasPrefix(name, "option.") {
				a.Kind = AxisOption
			}
			err = decodeSettingsAxis(a, v, field)
		default:
			return LineError(k.Line, "sweep", name, "unknown axis: want topology, option.NAME, knob.NAME, links, via, test, threads, repeats or reference")
		}
		if err != nil {
			return err
		}
		if len(a.Values) == 0 {
			return LineError(v.Line, field, "", "want at least one value")
		}
		seen := map[string]bool{}
		for _, av := range a.Values {
			if seen[av.Label] {
				return LineError(av.Line, field, av.Label, "value given twice")
			}
			seen[av.Label] = true
		}
		s.Axes = append(s.Axes, a)
	}
	return nil
}

// eachScalar calls f for every item of a sequence of scalars (or for a lone scalar).
func eachScalar(v *yaml.Node, field string, f func(*yaml.Node) error) error {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	for _, it := range items {
		if it.Kind != yaml.ScalarNode || it.Value == "" {
			return LineError(it.Line, field, it.Value, "want a list of plain values, e.g. [1, 4, 16]")
		}
		if err := f(it); err != nil {
			return err
		}
	}
	return nil
}

// LinksBridge is the links value of the plain bridge: no delay and no link process. "none"
// is no delay too, but in a links axis with delays and the userspace link (no kernel
// netem) it runs through that link at zero delay: the same path as the delayed cells, so
// their difference is the delay alone (the same-path control; see Plan).
const LinksBridge = "bridge"

// decodeLinksAxis reads `links: [none, 0.6ms, {groups: ...}]` (and bridge).
func decodeLinksAxis(a *Axis, v *yaml.Node, field string) error {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	for _, it := range items {
		var r netem.Request
		if it.Kind == yaml.ScalarNode && (strings.EqualFold(it.Value, "none") || strings.EqualFold(it.Value, LinksBridge)) {
			a.Values = append(a.Values, AxisValue{Label: strings.ToLower(it.Value), Line: it.Line})
			continue
		}
		if err := r.UnmarshalYAML(it); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		if r.IsZero() {
			return LineError(it.Line, field, it.Value, `want an impairment ("0.6ms"), a mapping as in links:, or none`)
		}
		label := r.String()
		if (netem.Request{All: r.All}).String() == label {
			label = r.All
		}
		if (netem.Request{Intra: r.Intra, Inter: r.Inter}).String() == label {
			// by site: "inter 2ms", "intra 0.1ms inter 5ms"
			label = strings.TrimPrefix(strings.ReplaceAll(label, "--", ""), " ")
		}
		a.Values = append(a.Values, AxisValue{Label: label, Links: r, Line: it.Line})
	}
	return nil
}

// decodeSettingsAxis reads `knob.NAME: [v1, v2]` (NAME is the variable) or
// `knob.LABEL: [{var1: v, var2: w}, ...]` (several variables per value).
func decodeSettingsAxis(a *Axis, v *yaml.Node, field string) error {
	suffix := a.Name[strings.Index(a.Name, ".")+1:]
	// checkName checks a variable name; knobs as package knob reads them (lower case, "_"
	// for "-", dots for Galera provider options, aliases), for every node.
	checkName := func(line int, name string) (string, error) {
		if a.Kind == AxisOption {
			if !labelRE.MatchString(name) {
				return name, LineError(line, field, name, "not a server variable name")
			}
			return name, nil
		}
		k, err := topology.ParseKnobEntry(name, "x")
		if err != nil || len(k.Nodes) > 0 || strings.Contains(name, ":") {
			return name, LineError(line, field, name, "not a variable name (a knob axis sets every node: no NODES: prefix)")
		}
		return k.Name, nil
	}
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	for _, it := range items {
		switch it.Kind {
		case yaml.ScalarNode:
			name, err := checkName(a.Line, suffix)
			if err != nil {
				return err
			}
			if it.Value == "" {
				return LineError(it.Line, field, it.Value, "want a list of plain values, e.g. [0, 1], or of mappings variable: value")
			}
			a.Values = append(a.Values, AxisValue{Label: it.Value, Settings: []Setting{{name, it.Value}}, Line: it.Line})
		case yaml.MappingNode:
			if !labelRE.MatchString(suffix) {
				return LineError(a.Line, field, suffix, "want a label of lower-case letters, digits, _ . -")
			}
			var av AxisValue
			av.Line = it.Line
			for j := 0; j+1 < len(it.Content); j += 2 {
				kn, vn := it.Content[j], it.Content[j+1]
				name, err := checkName(kn.Line, kn.Value)
				if err != nil {
					return err
				}
				if vn.Kind != yaml.ScalarNode || vn.Value == "" {
					return LineError(vn.Line, field+"."+kn.Value, vn.Value, "want a plain value")
				}
				for _, s := range av.Settings {
					if s.Name == name {
						return LineError(kn.Line, field, kn.Value, "variable given twice in one value")
					}
				}
				av.Settings = append(av.Settings, Setting{name, vn.Value})
			}
			if len(av.Settings) == 0 {
				return LineError(it.Line, field, "{}", "want at least one variable")
			}
			a.Values = append(a.Values, av)
		default:
			return LineError(it.Line, field, "", "want a list of values, or of mappings variable: value")
		}
	}
	if len(a.Values) == 0 {
		return nil // the caller says: want at least one value
	}
	// Several-variable values must all set the same variables, so cells differ only in values.
	for _, av := range a.Values[1:] {
		if !slices.EqualFunc(av.Settings, a.Values[0].Settings, func(x, y Setting) bool { return x.Name == y.Name }) {
			return LineError(av.Line, field, settingsText(av.Settings), "every value must set the same variables in the same order as the first ("+settingsText(a.Values[0].Settings)+")")
		}
	}
	// Labels: the value when every value sets its variables to one value ("25000"), else
	// the values joined by "/" ("1/1", "0/2").
	for _, av := range a.Values {
		for _, st := range av.Settings {
			a.Slash = a.Slash || st.Value != av.Settings[0].Value
		}
	}
	for i := range a.Values {
		if a.Values[i].Label != "" {
			continue
		}
		var vals []string
		for _, st := range a.Values[i].Settings {
			vals = append(vals, st.Value)
		}
		a.Values[i].Label = vals[0]
		if a.Slash {
			a.Values[i].Label = strings.Join(vals, "/")
		}
	}
	return nil
}

// settingsText is "var=value,var2=value2".
func settingsText(ss []Setting) string {
	var p []string
	for _, s := range ss {
		p = append(p, s.Name+"="+s.Value)
	}
	return strings.Join(p, ",")
}

// Variables returns the server variables an option or knob axis sets.
func (a *Axis) Variables() []string {
	if len(a.Values) == 0 {
		return nil
	}
	var v []string
	for _, s := range a.Values[0].Settings {
		v = append(v, s.Name)
	}
	return v
}

// PreparePolicy says whether the sbtest data is loaded once per deployment or again
// before every cell.
type PreparePolicy = schema.PreparePolicy

const (
	PrepareReuse     PreparePolicy = "reuse"     // prepare once after each deployment; cells share the data
	PrepareReprepare PreparePolicy = "reprepare" // cleanup and prepare before every cell
)

// CellPolicy is a scenario's `cell:` section: what happens before each cell's run.
type CellPolicy struct {
	// Prepare is reuse (default) or reprepare.
	Prepare PreparePolicy `yaml:"prepare" json:"prepare"`
	// Restart stops and starts every server before each cell (the writer last down, first
	// up; see RestartCluster). Sandboxes only.
	Restart bool `yaml:"restart" json:"restart"`
	// DropCaches writes 3 to /proc/sys/vm/drop_caches before each cell (root only).
	DropCaches bool `yaml:"drop_caches" json:"drop_caches"`
	// Warmup runs the workload this long before each measured run, excluded from every
	// result (sysbench --warmup-time).
	Warmup *schema.Duration `yaml:"warmup" json:"warmup,omitempty"`
	// Order is the run order of a deployment's cells: OrderInterleaved (default: repeat 1
	// of every cell, then repeat 2 of every cell, ...: A B A B, so that a host drifting
	// over the run does not pass for a difference between cells) or OrderBlocked (each
	// cell's repeats one after the other: A A B B, the grid order).
	Order string `yaml:"order" json:"order,omitempty"`
}

// Cell orders (CellPolicy.Order).
const (
	OrderInterleaved = "interleaved"
	OrderBlocked     = "blocked"
)

// Record is the policy as sweep.json's cell_policy records it.
func (p CellPolicy) Record() schema.CellPolicy {
	r := schema.CellPolicy{Prepare: p.Prepare, Restart: p.Restart, DropCaches: p.DropCaches, Order: p.Order}
	if p.Warmup != nil {
		w := *p.Warmup // a copy: the record does not share the plan's value
		r.Warmup = &w
	}
	return r
}

// Scales are a scenario's `scales:` section: per profile, what replaces the file's
// (full-size) values. See ScaleCaps for what applies when a profile or a field is not given.
type Scales struct {
	Small  *ScaleProfile `yaml:"small"`
	Medium *ScaleProfile `yaml:"medium"`
}

// ScaleProfile overrides, for one --scale, workload options (sysbench names), sweep axes
// (each replaces the axis' values; repeats too) and the cell warmup.
type ScaleProfile struct {
	Workload map[string]any `yaml:"workload"`
	Sweep    *Sweep         `yaml:"sweep"`
	Cell     *struct {
		Warmup *schema.Duration `yaml:"warmup"`
	} `yaml:"cell"`
}

// Scale profile names.
const (
	ScaleSmall  = "small"
	ScaleMedium = "medium"
	ScaleFull   = "full"
)

// ScaleCap bounds a profile's sizes before the file's own profile overrides apply.
type ScaleCap struct {
	Tables, TableSize, Threads, Repeats int
	Time, Warmup                        time.Duration
}

// ScaleCaps are the documented default reductions: each value of the file above the cap
// becomes the cap (threads lists are capped value by value and deduplicated). full has
// none: the file as written.
var ScaleCaps = map[string]ScaleCap{
	ScaleSmall:  {Tables: 4, TableSize: 10000, Threads: 16, Repeats: 1, Time: 10 * time.Second, Warmup: 2 * time.Second},
	ScaleMedium: {Tables: 10, TableSize: 100000, Threads: 64, Repeats: 2, Time: 60 * time.Second, Warmup: 10 * time.Second},
}

// Scales returns the profile names in order.
func ScaleNames() []string { return []string{ScaleSmall, ScaleMedium, ScaleFull} }
