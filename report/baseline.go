package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/stats"
)

// BaselineError is a --baseline that names no run of the results.
type BaselineError struct {
	Value string
	Names []string
}

func (e *BaselineError) Error() string {
	return fmt.Sprintf("--baseline %q: not one of the runs (%s)", e.Value, strings.Join(e.Names, ", "))
}

// Baseline picks the run the percentages refer to and says why:
//   - requested, when not empty (a run's Name or its Topology; error if none matches);
//   - else the baseline the scenario configured (manifest extra "baseline");
//   - else the first single primary (topology kind "single");
//   - else the first run.
//
// nil without runs.
func (res *Results) Baseline(requested string) (*Run, string, error) {
	if len(res.Runs) == 0 {
		return nil, "", nil
	}
	if requested != "" {
		for _, r := range res.Runs {
			if r.Name == requested {
				return r, "chosen with --baseline", nil
			}
		}
		for _, r := range res.Runs {
			if r.Topology == requested {
				return r, "chosen with --baseline", nil
			}
		}
		var names []string
		for _, r := range res.Runs {
			names = append(names, r.Name)
		}
		return nil, "", &BaselineError{Value: requested, Names: names}
	}
	for _, r := range res.Runs {
		if b, _ := r.Manifest.Extra["baseline"].(string); b != "" {
			why, _ := r.Manifest.Extra["baseline_why"].(string)
			if why == "" {
				why = "the scenario's baseline"
			}
			for _, c := range res.Runs {
				if c.Topology == b || c.Name == b {
					return c, why, nil
				}
			}
			break
		}
	}
	for _, r := range res.Runs {
		if r.Kind() == "single" {
			return r, "the single primary, by default", nil
		}
	}
	return res.Runs[0], "the first run, as no single primary ran", nil
}

// Pct is 100*v/base, and false when base is 0 (no percentage).
func Pct(v, base float64) (float64, bool) {
	if base == 0 {
		return 0, false
	}
	return 100 * v / base, true
}

// Row is one run's line in the comparison table (report.csv, report.md, report.html).
// Latencies in ms; percentages relative to the baseline (100 = same), of the run's cell
// (Cell: the mean of its repeats), nil when the baseline's value is 0 or missing.
type Row struct {
	Run                         *Run
	TPS, QPS                    float64
	AvgMs, P95Ms, P99Ms, MaxMs  float64
	TPSPct, AvgPct, P95Pct      *float64
	MaxLagS                     *float64
	LagUnknown                  string // Run.MaxLag's unknown nodes, "" when none
	TPSMean, TPSMin, TPSMax     float64
	TPSCV                       float64 // per-interval TPS stddev/mean
	IgnoredErrors, Transactions int64
	IsBaseline                  bool
	// HostBusyMean and HostBusyMax are the busiest host's CPU busy fraction (0..1) over
	// the measured part (nil without host samples); CPUBound says it was CPU-saturated.
	HostBusyMean, HostBusyMax *float64
	CPUBound                  bool
	// Cell is the run's cell (its repeats summarised); the percentages are the cell's.
	Cell *stats.Cell
	// Caveat marks the vs base percentages (⚠): they compare CPU-bound cells or have no
	// confidence interval (see Caveat).
	Caveat bool
	// Probe is the run's probe writer (nil without one): the lost acked commits column.
	Probe *schema.ProbeSummary
}

// Group is a sweep cell's axis values other than topology and repeat (manifest extra
// "axes"), as "name=value ..." sorted by name; "" outside sweeps. Runs of one group
// differ only in their topology (and repeat).
func (r *Run) Group() string {
	axes, ok := r.Manifest.Extra["axes"].(map[string]any)
	if !ok {
		return ""
	}
	var kv []string
	for k, v := range axes {
		if k != "topology" && k != "repeat" {
			kv = append(kv, k+"="+humanValue(v))
		}
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}

// Rows computes the comparison rows against base (which may be nil), one per run. The
// percentages are those of the run's cell (see Cells): the mean of the cell's repeats
// against the mean of the baseline topology's cell with the same axis values, so every
// repeat's row has the same ones, and they are the sweep's own comparison's.
func (res *Results) Rows(base *Run) []Row {
	rows, _ := res.rowsCaveat(base)
	return rows
}

// rowsCaveat is Rows and the note on the marked percentages ("" when none is).
func (res *Results) rowsCaveat(base *Run) ([]Row, string) {
	cells := res.Cells(base)
	var cv Caveat
	var out []Row
	for _, r := range res.Runs {
		c := res.cellOf(cells, r)
		row := Row{Run: r, Cell: c}
		if s := r.Summary; s != nil {
			row.TPS, row.QPS = s.TPS, s.QPS
			row.AvgMs, row.P95Ms, row.P99Ms, row.MaxMs = s.LatencyMs["avg"], s.LatencyMs["p95"], s.LatencyMs["p99"], s.LatencyMs["max"]
			row.IgnoredErrors, row.Transactions = s.IgnoredErrors, s.Transactions
		}
		row.MaxLagS, row.LagUnknown = r.MaxLag()
		row.TPSMean, row.TPSMin, row.TPSMax, row.TPSCV, _ = r.TPSStats()
		if h := r.BusiestHost(); h != nil {
			row.HostBusyMean, row.HostBusyMax, row.CPUBound = h.CPUBusyMean, h.CPUBusyMax, h.CPUSaturated
		}
		if c != nil {
			row.IsBaseline = c.IsBase
			pct := func(ch *stats.Change) *float64 {
				if ch != nil && ch.OK {
					p := ch.Pct
					return &p
				}
				return nil
			}
			row.TPSPct, row.AvgPct, row.P95Pct = pct(c.VsBase), pct(c.LatVsBase), pct(c.P95VsBase)
			row.Caveat = cv.Applies(c.VsBase, res.cellBound(c) || res.cellBound(baseCell(cells, c)))
		}
		row.Probe = r.Probe()
		out = append(out, row)
	}
	return out, cv.Note()
}

// pctMark is fmtPct(p) with " ⚠" when marked.
func pctMark(p *float64, mark bool) string {
	if mark && p != nil {
		return fmtPct(p) + " " + Warn
	}
	return fmtPct(p)
}

func fmtPct(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", *p)
}

func fmtOpt(p *float64, format string) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *p)
}
