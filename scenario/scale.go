package scenario

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"github.com/spf13/pflag"
)

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
	w := schema.Duration(o.Warmup)
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

func profSweep(p *ScaleProfile) *Sweep {
	if p == nil {
		return nil
	}
	return p.Sweep
}
