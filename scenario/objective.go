package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/habench/habench/topology"
)

// Objective is a scenario's `objective:` section. With it every cell is a capacity search
// instead of one closed-loop run: the highest open-loop rate (workload --rate, events per
// second) at which every bound below holds over the measured window (warm-up excluded).
//
//	objective:
//	  p99: 50ms          # latency percentiles (pN, any N in (0, 100)), queueing included
//	  lag: 1s            # every replica's largest lag (clusters only)
//	  fc_paused: 5%      # time paused or throttled by flow control (group and Galera only)
//	  errors: 0.5%       # ignored errors per transaction (default 0: none at all)
//	  precision: 5%      # stop when the next step up is within this (default 5%)
//	  max_probes: 8      # runs per cell, the calibration run included (default 8)
//	  start: 400         # the first rate probed (default: 80% of a closed-loop calibration run)
//	  failover: true     # then kill the writer at the rate found, 40 s on (or a duration: 20s; group and Galera only)
//
// The achieved rate is always an objective too ("rate": the run kept up with its target,
// workload.RateResult.Met). A run that fails (a workload error that is not ignored) fails
// its probe's "errors" objective.
type Objective struct {
	// Latency are the latency bounds by percentile, in increasing percentile order.
	Latency []LatencyBound
	// Lag is the bound on every replica's largest lag (0: not bounded).
	Lag time.Duration
	// FCPaused bounds the fraction of the window (0..1) a node was paused (Galera
	// wsrep_flow_control_paused) or throttled (group flow control); negative: not bounded.
	FCPaused float64
	// Errors bounds ignored errors per transaction (0..1; 0: none allowed).
	Errors float64
	// Precision is the relative gap (0.05: 5%) at which the search stops between the
	// highest rate met and the lowest one missed.
	Precision float64
	// MaxProbes bounds the runs per cell, the calibration run included.
	MaxProbes int
	// Start is the first rate probed (0: from the calibration run), events per second.
	Start int
	// Failover (0: none) adds, after the search, one run at the rate found with the writer
	// killed after a full window, going on this long past the kill (the node started again
	// three quarters into it): the failover cost of the setting (group and Galera only).
	// "failover: true" is DefaultFailoverTail.
	Failover time.Duration
	// Line is the section's line in the scenario file.
	Line int
}

// LatencyBound is one latency objective: the Percentile (99: p99) at most Max.
type LatencyBound struct {
	Percentile float64
	Max        time.Duration
}

// Key is the bound's name as written and as in summary.json latency_ms ("p99", "p99.9").
func (l LatencyBound) Key() string { return "p" + strconv.FormatFloat(l.Percentile, 'f', -1, 64) }

// Objective names, as the search records which one bound a cell.
const (
	ObjectiveRate     = "rate"
	ObjectiveLag      = "lag"
	ObjectiveFCPaused = "fc_paused"
	ObjectiveErrors   = "errors"
)

// Defaults of the search.
const (
	DefaultPrecision = 0.05
	DefaultMaxProbes = 8
)

// DefaultFailoverTail is how long the failover run after a search (Objective.Failover:
// true) goes on after its kill, which comes after the warm-up and one window (time) at the
// rate found: its window is time + the tail. The killed node is started again three
// quarters into the tail.
const DefaultFailoverTail = 40 * time.Second

// UnmarshalYAML reads the objective mapping; unknown keys and malformed values are
// errors naming their line and field.
func (o *Objective) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return LineError(n.Line, "objective", n.Value, "want a mapping such as {p99: 50ms, lag: 1s, fc_paused: 5%}")
	}
	*o = Objective{FCPaused: -1, Precision: DefaultPrecision, MaxProbes: DefaultMaxProbes, Line: n.Line}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := "objective." + k.Value
		if seen[k.Value] {
			return LineError(k.Line, field, "", "given twice")
		}
		seen[k.Value] = true
		if v.Kind != yaml.ScalarNode {
			return LineError(v.Line, field, v.Value, "want one value")
		}
		if err := o.set(k.Value, v.Value); err != nil {
			return LineError(v.Line, field, v.Value, err.Error())
		}
	}
	if len(o.Latency) == 0 && o.Lag == 0 && o.FCPaused < 0 && !seen[ObjectiveErrors] {
		return LineError(n.Line, "objective", "", "no bound: give at least one of pN (p99: 50ms), lag, fc_paused, errors")
	}
	slices.SortFunc(o.Latency, func(a, b LatencyBound) int {
		return int(math.Copysign(1, a.Percentile-b.Percentile))
	})
	return nil
}

// set sets the key's value; the error is the reason.
func (o *Objective) set(key, val string) error {
	switch key {
	case ObjectiveLag:
		d, err := time.ParseDuration(val)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a duration above 0 (1s, 500ms)")
		}
		o.Lag = d
	case ObjectiveFCPaused:
		f, err := parsePercent(val, 0, 1)
		if err != nil {
			return err
		}
		o.FCPaused = f
	case ObjectiveErrors:
		f, err := parsePercent(val, 0, 1)
		if err != nil {
			return err
		}
		o.Errors = f
	case "precision":
		f, err := parsePercent(val, 0.005, 0.5)
		if err != nil {
			return err
		}
		o.Precision = f
	case "max_probes":
		m, err := strconv.Atoi(val)
		if err != nil || m < 3 || m > 30 {
			return fmt.Errorf("want a whole number from 3 to 30")
		}
		o.MaxProbes = m
	case "failover":
		switch d, err := time.ParseDuration(val); {
		case val == "true":
			o.Failover = DefaultFailoverTail
		case val == "false":
			o.Failover = 0
		case err == nil && d >= 5*time.Second && d <= 10*time.Minute:
			o.Failover = d
		default:
			return fmt.Errorf("want true (the run goes on %v after the kill), false, or how long it goes on, 5s to 10m", DefaultFailoverTail)
		}
	case "start":
		r, err := strconv.Atoi(val)
		if err != nil || r < 1 {
			return fmt.Errorf("want a rate in events per second, a whole number >= 1")
		}
		o.Start = r
	default:
		p, ok := strings.CutPrefix(key, "p")
		pct, err := strconv.ParseFloat(p, 64)
		if !ok || err != nil || pct <= 0 || pct >= 100 {
			return fmt.Errorf("unknown objective: want pN (p99, p99.9), lag, fc_paused, errors, precision, max_probes, start or failover")
		}
		d, err := time.ParseDuration(val)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a latency above 0 (50ms, 1.5s)")
		}
		o.Latency = append(o.Latency, LatencyBound{Percentile: pct, Max: d})
	}
	return nil
}

// parsePercent reads "5%" or a fraction "0.05" within [lo, hi].
func parsePercent(s string, lo, hi float64) (float64, error) {
	v, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if pct {
		f /= 100
	}
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		return 0, fmt.Errorf("want a percentage from %g%% to %g%% (5%%) or a fraction (0.05)", lo*100, hi*100)
	}
	return f, nil
}

// Percentiles are the latency bounds' percentiles (for the runs' extra percentiles).
func (o *Objective) Percentiles() []float64 {
	var ps []float64
	for _, l := range o.Latency {
		ps = append(ps, l.Percentile)
	}
	return ps
}

// String is the objective as one line: "p99 ≤ 50ms, lag ≤ 1s, fc_paused ≤ 5%, errors ≤ 0%".
func (o *Objective) String() string {
	var ps []string
	for _, l := range o.Latency {
		ps = append(ps, l.Key()+" ≤ "+l.Max.String())
	}
	if o.Lag > 0 {
		ps = append(ps, "lag ≤ "+o.Lag.String())
	}
	if o.FCPaused >= 0 {
		ps = append(ps, "fc_paused ≤ "+FormatPercent(o.FCPaused))
	}
	ps = append(ps, "errors ≤ "+FormatPercent(o.Errors), "rate kept up")
	return strings.Join(ps, ", ")
}

// PlanLine is the dry run's line for the search.
func (o *Objective) PlanLine() string {
	start := "80% of a closed-loop calibration run's TPS"
	if o.Start > 0 {
		start = fmt.Sprintf("%d/s", o.Start)
	}
	line := fmt.Sprintf("capacity search per cell: the highest --rate with %s; first probe %s, then step up and bisect to %s, at most %d runs (warmup + time each)",
		o, start, FormatPercent(o.Precision), o.MaxProbes)
	if o.Failover > 0 {
		line += fmt.Sprintf("; then one run at the rate found with the writer killed after warmup + time, going on %v (started again after %v)", o.Failover, o.Failover*3/4)
	}
	return line
}

// FormatPercent renders a fraction as a percentage to 4 decimals ("5%", "0.5%", "0.14%").
func FormatPercent(f float64) string {
	return strconv.FormatFloat(math.Round(f*1e6)/1e4, 'f', -1, 64) + "%"
}

// checkObjective refuses an objective the scenario cannot measure or search: lag on a
// single node, fc_paused on a topology without flow control, faults, a workload with its
// own rate or without a time. *topology.FieldError.
func (s *Scenario) checkObjective() error {
	o := s.Objective
	if o == nil {
		return nil
	}
	for i, t := range s.Topologies {
		if o.Lag > 0 && t.Nodes < 2 {
			return &topology.FieldError{Field: "objective.lag", Value: o.Lag.String(),
				Reason: fmt.Sprintf("topologies[%d] %s has one node: no replica lag to bound", i, t.Name)}
		}
		if o.Failover > 0 && !t.Is(topology.Group) && !t.Is(topology.Galera) {
			return &topology.FieldError{Field: "objective.failover", Value: o.Failover.String(),
				Reason: fmt.Sprintf("topologies[%d] %s is %s: the failover run is for a group or Galera, which elect or keep a writer by themselves", i, t.Name, t.Kind)}
		}
		if o.FCPaused >= 0 && !t.Is(topology.Group) && !t.Is(topology.Galera) {
			return &topology.FieldError{Field: "objective.fc_paused", Value: FormatPercent(o.FCPaused),
				Reason: fmt.Sprintf("topologies[%d] %s is %s: flow control is Group Replication's and Galera's", i, t.Name, t.Kind)}
		}
	}
	if len(s.Faults) > 0 {
		return &topology.FieldError{Field: "objective", Value: o.String(),
			Reason: "every probe of the search would inject the faults: search without faults, then run them at the rate found"}
	}
	if s.options.Rate > 0 {
		return &topology.FieldError{Field: "workload.options.rate", Value: s.options.Rate,
			Reason: "the objective's capacity search sets the rate of each probe: leave it out"}
	}
	if s.options.Time <= 0 {
		return &topology.FieldError{Field: "workload.options.time", Value: s.options.Time.String(),
			Reason: "the capacity search measures each probe over a time window: give time (seconds)"}
	}
	return nil
}
