package scenario

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// What runs beside a scenario's workload in every cell, on the workload's clock: the
// fault schedule and the probe writer, as the dry run shows them (Plan.printSchedule).

// ProbeInterval is how often the probe writer commits (one numbered row each time) unless
// the scenario's probe_interval says otherwise, within MinProbeInterval..MaxProbeInterval.
const (
	ProbeInterval    = 5 * time.Millisecond
	MinProbeInterval = time.Millisecond
	MaxProbeInterval = 10 * time.Second
)

// ProbeEvery is how often the probe writer commits: probe_interval, or ProbeInterval.
func (s *Scenario) ProbeEvery() time.Duration {
	if s.ProbeInterval > 0 {
		return time.Duration(s.ProbeInterval)
	}
	return ProbeInterval
}

// ProbeOn reports whether the probe writer runs in every cell: probe: true, or the
// scenario has faults and does not say probe: false.
func (s *Scenario) ProbeOn() bool {
	if s.Probe != nil {
		return *s.Probe
	}
	return len(s.Faults) > 0
}

// printSchedule writes the dry run's lines on the faults and the probe writer of every
// cell: each fault at its time after the workload starts (warm-up included), with its
// parameters and, for one that lasts (duration), when it ends; a fault at or after the
// workload's end is marked as not injected; then Failover's lines (client failover); then
// whether the probe writer runs, how often and from when to when. Nothing without faults
// nor probe.
func (p *Plan) printSchedule(w io.Writer) {
	s := p.Scenario
	o := p.Options
	end := p.WorkloadEnd()
	window := fmt.Sprintf("the measured window %v-%v", o.Warmup, end)
	if o.Time == 0 {
		window = fmt.Sprintf("measured from %v until %d events", o.Warmup, o.Events)
	}
	if len(s.Faults) > 0 {
		fmt.Fprintf(w, "faults in every cell, at times after the workload starts (warm-up %v included; %s):\n", o.Warmup, window)
		width := 0
		for _, f := range s.Faults {
			width = max(width, len(time.Duration(f.At).String()))
		}
		for _, f := range s.Faults {
			at := time.Duration(f.At)
			line := fmt.Sprintf("  at %-*s  %s %s", width, at, f.Action, f.Node)
			for _, k := range slices.Sorted(maps.Keys(f.Args)) {
				line += " " + k + "=" + f.Args[k]
			}
			if d := f.Args.Duration("duration"); d > 0 {
				line += fmt.Sprintf(" (until %v)", at+d)
			}
			if end > 0 && at >= end {
				line += fmt.Sprintf(" (at or after the workload's end at %v: not injected)", end)
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
	for _, l := range p.Failover {
		fmt.Fprintln(w, l)
	}
	switch {
	case s.ProbeOn():
		why := "probe: true"
		if s.Probe == nil {
			why = "on because the scenario has faults; probe: false turns it off"
		}
		span := fmt.Sprintf("from the workload's start to its end (0s-%v, warm-up included)", end)
		if end == 0 {
			span = "from the workload's start to its end (warm-up included)"
		}
		where := "on the current writer"
		switch {
		case p.AxisOf(AxisVia).Name != "":
			where = "on the current writer (in the cells through the proxy: through its write endpoint, as the workload, its stale commits counted)"
		case s.Workload.Via == ViaProxy:
			where = "through the proxy's write endpoint, as the workload (its stale commits counted)"
		}
		fmt.Fprintf(w, "probe writer in every cell: one numbered commit every %v %s, %s; its acknowledged commits missing after the run are counted (%s)\n",
			s.ProbeEvery(), where, span, why)
	case len(s.Faults) > 0:
		fmt.Fprintln(w, "probe writer: off (probe: false): lost acknowledged commits are not counted")
	}
}
