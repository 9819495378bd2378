package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// probeRun is a capacity probe's run: its bench, outcome and whether it succeeded.
type probeRun struct {
	b   *Bench
	res *Outcome
	ok  bool
}

// searchCapacity runs cell as a capacity search (scenario.Objective): a closed-loop
// calibration run unless start: is given, then open-loop probes chosen by
// capacitySearch.next, each a run with its own directory (label -calibration, -r850).
// newBench makes a run's Bench, equipped on the record it is given. rec gets the search
// (rec.Capacity) and the headline numbers of the run at the rate found, or, when none
// met the objective, of the last run. Errors: a run that failed for another reason than
// a statement error (judgeProbe), or ctx's.
func (sw *sweepRun) searchCapacity(ctx context.Context, cs *cellState, ob *scenario.Objective, cell *scenario.Cell, rec *schema.CellRecord,
	knobs []topology.KnobSetting, newBench func(*schema.CellRecord) (*Bench, error)) error {
	s := &capacitySearch{ob: ob}
	met := map[int]probeRun{}
	var last probeRun
	fmt.Fprintln(sw.out, ob.PlanLine())
	rate, more := 0, true
	if ob.Start > 0 {
		rate, more = s.next()
	}
	for more {
		pr, p, err := sw.probe(ctx, ob, rec, rate, len(s.probes), newBench)
		if pr.res != nil {
			last = pr
		}
		if err != nil {
			sw.recordCell(rec, cell, pr.b, pr.res, knobs, false)
			rec.Capacity = s.result()
			return err
		}
		if rate == 0 {
			s.calib = p.TPS
		}
		s.add(p)
		if p.Met {
			met[rate] = pr
		}
		fmt.Fprintln(sw.out, probeLine(len(s.probes), p))
		rate, more = s.next()
	}
	head := last
	if r, ok := met[s.lo]; ok {
		head = r
	}
	sw.recordCell(rec, cell, head.b, head.res, knobs, head.ok)
	rec.Capacity = s.result()
	if ob.Failover > 0 && s.lo > 0 {
		fo, err := sw.failoverRun(ctx, cs, rec, s.lo, ob.Failover, newBench)
		rec.Capacity.Failover = fo
		if err != nil {
			return fmt.Errorf("the failover run at %d/s: %w", s.lo, err)
		}
	}
	line := fmt.Sprintf("capacity: %d/s (%s)", rec.Capacity.Rate, ob)
	c := rec.Capacity
	if fo := c.Failover; fo != nil {
		line += fmt.Sprintf("; the writer %s killed at that rate: failover %s s", fo.Node, secondsText(fo.FailoverS))
	}
	if c.Converged {
		line += fmt.Sprintf("; %d/s missed: %v", c.Missed, c.BoundBy)
	} else {
		w := "⚠ capacity search: " + c.Note
		rec.Warnings = append(rec.Warnings, w)
		line += "\nWARNING: " + w
	}
	fmt.Fprintln(sw.out, line)
	return nil
}

// probe runs one probe at rate (0: the calibration run, closed loop) and judges it. The
// first run of the cell is equipped on rec (its links and notes), the others on a copy
// (their runs record the same); the cache drops before the cell belong to the first.
func (sw *sweepRun) probe(ctx context.Context, ob *scenario.Objective, rec *schema.CellRecord, rate, done int,
	newBench func(*schema.CellRecord) (*Bench, error)) (probeRun, schema.CapacityProbe, error) {
	on := rec
	if done > 0 {
		cp := *rec
		cp.Warnings = slices.Clone(rec.Warnings)
		on = &cp
	}
	b, err := newBench(on)
	if err != nil {
		return probeRun{}, schema.CapacityProbe{}, err
	}
	if done > 0 {
		b.CacheDrops = nil
	}
	b.Options.Rate = rate
	for _, p := range ob.Percentiles() {
		if p != b.Options.Percentile && p != 50 && p != 95 && p != 99 && !slices.Contains(b.Options.ExtraPercentiles, p) {
			b.Options.ExtraPercentiles = append(slices.Clone(b.Options.ExtraPercentiles), p)
		}
	}
	suffix, what := "-calibration", "calibration run, closed loop"
	if rate > 0 {
		suffix, what = fmt.Sprintf("-r%d", rate), fmt.Sprintf("--rate %d", rate)
	}
	b.Label += suffix
	b.Extra["capacity_probe"] = map[string]any{"index": done + 1, "rate": rate, "objective": ob.String()}
	fmt.Fprintf(sw.out, "\ncapacity probe %d (at most %d): %s\n", done+1, ob.MaxProbes, what)
	res, runErr := sw.runBench(ctx, b)
	pr := probeRun{b: b, res: res, ok: runErr == nil}
	var sum *schema.Summary
	if res != nil {
		sum = res.Summary
	}
	p, err := judgeProbe(ob, rate, sum, runErr)
	if err != nil {
		return pr, p, err
	}
	if res != nil && res.Dir != "" {
		p.Dir, _ = filepath.Rel(sw.dir, res.Dir)
	}
	if rate == 0 { // the calibration run is not judged
		p.Missed, p.Why = nil, nil
	}
	return pr, p, nil
}

// failoverRun runs the cell once more at rate with the writer (the live one: a group's
// PRIMARY now) killed after the warm-up and one window, the run going on tail past the
// kill with the probe writer on, and the killed node started again three quarters into
// the tail, so that the run ends with it back (its knobs restored, the catch-up checked on
// every node); it returns the kill's measures. A failover slower than the restart is
// reported as not seen (a group expels a crashed member's old incarnation when it
// rejoins: the restart could end it). Then the cluster is waited for (every node caught
// up, every member ONLINE). An error of the run (lost commits, nodes that did not
// converge) is returned with what was measured.
func (sw *sweepRun) failoverRun(ctx context.Context, cs *cellState, rec *schema.CellRecord, rate int, tail time.Duration,
	newBench func(*schema.CellRecord) (*Bench, error)) (*schema.CapacityFailover, error) {
	cp := *rec
	cp.Warnings = slices.Clone(rec.Warnings)
	b, err := newBench(&cp)
	if err != nil {
		return nil, err
	}
	node := b.Cluster.Writer().Name
	if c, err := cs.sb.Load(cs.c.Name); err == nil {
		if w := c.LiveWriter(ctx); w != nil {
			node = w.Name
		}
	}
	b.CacheDrops = nil
	b.Options.Rate = rate
	kill, restart := b.Options.Warmup+b.Options.Time, tail*3/4
	b.Options.Time += tail
	b.Faults = []scenario.FaultEvent{
		{At: schema.Duration(kill), Action: "kill", Node: node},
		{At: schema.Duration(kill + restart), Action: "start", Node: node},
	}
	if b.Injector == nil {
		b.Injector = &Injector{Store: cs.sb}
	}
	b.Probe, b.ProbeInterval = true, sw.r.Scenario.ProbeEvery()
	b.Label += fmt.Sprintf("-r%d-failover", rate)
	b.Extra["capacity_failover"] = map[string]any{"rate": rate, "node": node, "restart_after_s": restart.Seconds()}
	fmt.Fprintf(sw.out, "\ncapacity failover run: --rate %d, %s killed at %v, started again %v later, the run going on %v after the kill\n", rate, node, kill, restart, tail)
	res, runErr := sw.runBench(ctx, b)
	fo := failoverMeasures(rate, node, res)
	fo.RestartS = restart.Seconds()
	if fo.FailoverS != nil && *fo.FailoverS > fo.RestartS {
		fo.Note = fmt.Sprintf("no failover within %v, when %s was started again (then after %.2f s)", restart, node, *fo.FailoverS)
		fo.FailoverS = nil
	}
	if res != nil && res.Dir != "" {
		fo.Dir, _ = filepath.Rel(sw.dir, res.Dir)
	}
	if err := waitReplicas(ctx, cs.c, 5*time.Minute); err != nil {
		return fo, errors.Join(runErr, fmt.Errorf("after the failover run: %w", err))
	}
	return fo, runErr
}

// failoverMeasures reads the kill's measures from the failover run's summary (res may
// be nil) and chooses FailoverS: the workers' first commit on the new writer, else every
// worker's commit on another node (Galera), else the recovery.
func failoverMeasures(rate int, node string, res *Outcome) *schema.CapacityFailover {
	fo := &schema.CapacityFailover{Rate: rate, Node: node}
	if res != nil && res.Summary != nil {
		for _, f := range res.Summary.Faults {
			if f.Action == "kill" {
				fo.NewWriter, fo.NewWriterS, fo.ClientWriterS, fo.ClientFailoverS = f.NewWriter, f.NewWriterS, f.ClientWriterS, f.ClientFailoverS
				fo.RecoveryS, fo.PeakLagS = f.RecoveryS, f.PeakLagS
				break
			}
		}
	}
	switch {
	case fo.ClientWriterS != nil:
		fo.FailoverS = fo.ClientWriterS
	case fo.ClientFailoverS != nil:
		fo.FailoverS = fo.ClientFailoverS
	default:
		fo.FailoverS = fo.RecoveryS
	}
	return fo
}

// secondsText is "2.35", or "not seen" for nil.
func secondsText(s *float64) string {
	if s == nil {
		return "not seen"
	}
	return strconv.FormatFloat(math.Round(*s*100)/100, 'f', -1, 64)
}
