package experiment

// The capacity search of a scenario with an objective: per cell, the highest open-loop
// rate at which every objective holds over the measured window (scenario.Objective).

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
	"github.com/habench/habench/workload"
)

// capacitySearch is the state of one cell's search: the probes so far, the highest rate
// met (lo) and the lowest missed (hi), 0 when none.
type capacitySearch struct {
	ob     *scenario.Objective
	calib  float64 // the calibration run's TPS (0: none, start: given)
	lo, hi int
	probes []schema.CapacityProbe
}

// first is the first rate to probe: start:, else 80% of the calibration's TPS (at least 1).
func (s *capacitySearch) first() int {
	if s.ob.Start > 0 {
		return s.ob.Start
	}
	return max(1, int(math.Round(0.8*s.calib)))
}

// add records a probe (a judged one moves lo or hi).
func (s *capacitySearch) add(p schema.CapacityProbe) {
	s.probes = append(s.probes, p)
	switch {
	case p.Rate == 0:
	case p.Met && p.Rate > s.lo:
		s.lo = p.Rate
	case !p.Met && (s.hi == 0 || p.Rate < s.hi):
		s.hi = p.Rate
	}
}

// converged: the lowest rate missed is within the precision above the highest met, to
// the whole rate (rates are whole events per second), or the next whole rate.
func (s *capacitySearch) converged() bool {
	return s.lo > 0 && s.hi > 0 && (float64(s.hi) <= math.Round(float64(s.lo)*(1+s.ob.Precision)) || s.hi <= s.lo+1)
}

// next is the next rate to probe, false when the search is over: converged, out of
// probes, or missed even at 1/s. Before the first miss it steps up (x1.25 from a
// calibrated start, whose closed-loop TPS is near the top; x2 from start:), before
// the first pass it halves, then it bisects lo..hi geometrically.
func (s *capacitySearch) next() (int, bool) {
	if len(s.probes) >= s.ob.MaxProbes || s.converged() {
		return 0, false
	}
	switch {
	case s.lo == 0 && s.hi == 0:
		return s.first(), true
	case s.hi == 0:
		f := 2.0
		if s.calib > 0 {
			f = 1.25
		}
		return max(s.lo+1, int(math.Round(float64(s.lo)*f))), true
	case s.lo == 0:
		if s.hi <= 1 {
			return 0, false
		}
		return s.hi / 2, true
	}
	r := int(math.Round(math.Sqrt(float64(s.lo) * float64(s.hi))))
	r = min(max(r, s.lo+1), s.hi-1)
	return r, true
}

// result is the search as sweep.json records it.
func (s *capacitySearch) result() *schema.Capacity {
	c := &schema.Capacity{Objective: s.ob.String(), Rate: s.lo, Missed: s.hi, Converged: s.converged(),
		Precision: s.ob.Precision, CalibrationTPS: s.calib, Probes: s.probes}
	if s.lo > 0 && s.hi > 0 {
		g := float64(s.hi)/float64(s.lo) - 1
		c.Gap = &g
	}
	for _, p := range s.probes {
		if p.Rate == s.hi && s.hi > 0 {
			c.BoundBy = p.Missed
		}
	}
	runs := fmt.Sprintf("after %d runs", len(s.probes))
	switch {
	case c.Converged:
	case s.lo == 0 && s.hi > 0:
		c.Note = fmt.Sprintf("the objective was not met at any rate probed, down to %d/s (%s) %s", s.hi, strings.Join(c.BoundBy, ", "), runs)
	case s.hi == 0:
		c.Note = fmt.Sprintf("every rate probed met the objective, up to %d/s: the capacity is higher (raise start: or max_probes)", s.lo)
	case s.lo > 0:
		c.Note = fmt.Sprintf("stopped %s (max_probes %d): between %d/s met and %d/s missed, %.1f%% apart", runs, s.ob.MaxProbes, s.lo, s.hi, *c.Gap*100)
	default:
		c.Note = "no probe ran"
	}
	return c
}

// judgeProbe measures a probe's run against the objective: sum is its summary.json
// (nil when it has none), runErr the run's error. A statement error that is not ignored
// misses "errors"; any other run error is returned: it is the cell's failure (a lost
// node, replicas that diverged), not a rate the cluster could not take.
func judgeProbe(ob *scenario.Objective, rate int, sum *schema.Summary, runErr error) (schema.CapacityProbe, error) {
	p := schema.CapacityProbe{Rate: rate}
	var se *workload.StatementError
	if runErr != nil && (!errors.As(runErr, &se) || se.Code == 0 || se.Code == 2006 || se.Code == 2013) {
		return p, runErr
	}
	if sum == nil {
		return p, fmt.Errorf("the run at %d/s wrote no summary", rate)
	}
	p.TPS = sum.TPS
	repl := sum.Replication()
	p.BacklogMaxTrx = repl.BacklogMax
	miss := func(name, why string) {
		if !slices.Contains(p.Missed, name) {
			p.Missed = append(p.Missed, name)
		}
		p.Why = append(p.Why, why)
	}
	if runErr != nil {
		miss(scenario.ObjectiveErrors, "the run failed: "+runErr.Error())
	}
	if rate > 0 && (sum.Rate == nil || !sum.Rate.Met) {
		why := "not kept up"
		if sum.Rate != nil && sum.Rate.Warning != "" {
			why = sum.Rate.Warning
		}
		miss(scenario.ObjectiveRate, fmt.Sprintf("rate %d/s: %s", rate, why))
	}
	judgeLatency(ob, sum, &p, miss)
	if ob.Lag > 0 {
		judgeLag(ob, sum, repl, &p, miss)
	}
	if ob.FCPaused >= 0 {
		judgeFlowControl(ob, repl, &p, miss)
	}
	if sum.Transactions > 0 {
		p.ErrorsPerTrx = float64(sum.IgnoredErrors) / float64(sum.Transactions)
	}
	if sum.Transactions == 0 {
		miss(scenario.ObjectiveErrors, "no transaction completed")
	} else if p.ErrorsPerTrx > ob.Errors {
		miss(scenario.ObjectiveErrors, fmt.Sprintf("ignored errors %d in %d transactions (%s) > %s",
			sum.IgnoredErrors, sum.Transactions, scenario.FormatPercent(round4(p.ErrorsPerTrx)), scenario.FormatPercent(ob.Errors)))
	}
	p.Met = rate > 0 && len(p.Missed) == 0
	return p, nil
}

// judgeLatency checks the latency percentiles (summary.json latency_ms, queueing included).
func judgeLatency(ob *scenario.Objective, sum *schema.Summary, p *schema.CapacityProbe, miss func(string, string)) {
	for _, l := range ob.Latency {
		v, ok := sum.LatencyMs[l.Key()]
		if !ok {
			miss(l.Key(), l.Key()+" not measured")
			continue
		}
		if p.LatencyMs == nil {
			p.LatencyMs = map[string]float64{}
		}
		p.LatencyMs[l.Key()] = v
		if bound := float64(l.Max) / float64(time.Millisecond); v > bound {
			miss(l.Key(), fmt.Sprintf("%s %sms > %s", l.Key(), strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64), l.Max))
		}
	}
}

// judgeLag checks the largest lag of any node; a node whose lag was unknown for a while,
// or no node with a measured lag, misses it (a lag that cannot be seen is not bounded).
func judgeLag(ob *scenario.Objective, sum *schema.Summary, repl stats.Repl, p *schema.CapacityProbe, miss func(string, string)) {
	for _, n := range sum.Nodes {
		if n.LagUnknownS > 0 {
			miss(scenario.ObjectiveLag, fmt.Sprintf("%s's lag unknown for %.1f s", n.Node, n.LagUnknownS))
		}
	}
	if repl.LagMaxS == nil {
		miss(scenario.ObjectiveLag, "lag not measured on any node")
		return
	}
	p.LagMaxS = repl.LagMaxS
	if worst := *repl.LagMaxS; worst > ob.Lag.Seconds() {
		miss(scenario.ObjectiveLag, fmt.Sprintf("lag %s s > %s", strconv.FormatFloat(math.Round(worst*100)/100, 'f', -1, 64), ob.Lag))
	}
}

// judgeFlowControl checks the largest share of the window a node spent paused (Galera:
// wsrep_flow_control_paused, fc_paused_avg) or throttled (group: throttle_time_s over
// the window, schema.Summary.Replication); not measured misses it.
func judgeFlowControl(ob *scenario.Objective, repl stats.Repl, p *schema.CapacityProbe, miss func(string, string)) {
	if repl.FCPaused == nil {
		miss(scenario.ObjectiveFCPaused, "flow control not measured (group: the flow-control stats component)")
		return
	}
	p.FCPaused = repl.FCPaused
	if worst := *repl.FCPaused; worst > ob.FCPaused {
		miss(scenario.ObjectiveFCPaused, fmt.Sprintf("fc_paused %s > %s", scenario.FormatPercent(round4(worst)), scenario.FormatPercent(ob.FCPaused)))
	}
}

// round4 rounds a fraction to 4 decimals (0.01%) for messages.
func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// probeLine is the line printed after a probe: "capacity probe 3: 850/s: 849.6 tps, p99
// 12.3 ms: met".
func probeLine(i int, p schema.CapacityProbe) string {
	what := "calibration, closed loop"
	if p.Rate > 0 {
		what = strconv.Itoa(p.Rate) + "/s"
	}
	verdict := "met"
	switch {
	case p.Rate == 0:
		verdict = "not judged"
	case !p.Met:
		verdict = "missed: " + strings.Join(p.Why, "; ")
	}
	return fmt.Sprintf("capacity probe %d: %s: %.1f tps, %s: %s", i, what, p.TPS, report.CapacityMeasures(p), verdict)
}
