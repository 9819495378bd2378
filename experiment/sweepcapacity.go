package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

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
func (sw *sweepRun) searchCapacity(ctx context.Context, ob *scenario.Objective, cell *scenario.Cell, rec *schema.CellRecord,
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
	line := fmt.Sprintf("capacity: %d/s (%s)", rec.Capacity.Rate, ob)
	if c := rec.Capacity; c.Converged {
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
