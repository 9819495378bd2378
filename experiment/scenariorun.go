package experiment

import (
	"context"
	"io"
	"log/slog"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// ScenarioRun runs a scenario: the cells of its plan (every topology once without a
// sweep), deployment by deployment: deploy, prepare, the cells (restart, drop caches,
// knobs, run with sampling), destroy; then sweep.json, sweep.md, comparison.md/json and
// the sweep's curve points. Every deployed cluster is destroyed also on error or
// interrupt.
type ScenarioRun struct {
	Scenario    *scenario.Scenario
	Store       *cluster.Store
	ResultsDir  string // parent directory; the run gets <time>-<scenario name> inside
	Stdout      io.Writer
	Log         *slog.Logger
	CommandLine []string
	// Keep leaves the clusters running after the run (for inspection).
	Keep bool
	// YesLong confirms a run estimated over LongRun (24 h): without it such a run is
	// refused before anything is deployed; with it the WARNING is printed first.
	YesLong bool
	// Scale is small, medium or full ("": full, or the resumed directory's scale).
	Scale string
	// ResumeDir, when set, is a sweep directory to complete: only its cells that are not
	// done run, and results are added to it. The scenario file must be the one it ran.
	ResumeDir string
	// Injector, when set, injects the scenario's faults (its Links start the link process
	// of partitions); without it faults other than partitions still work.
	Injector *Injector
	// Progress, when set, shows the progress line (cell i of n, ETA).
	Progress *Progress
	// OnCell, when set, sees each cell's record after it ran (tests, live views).
	OnCell func(schema.CellRecord)
	// LiveNodes prints a line per report interval with every node's lag, backlog, queues
	// and flow control (LiveNodes), for clusters; off by default (the sysbench layout).
	LiveNodes bool
	// BenchHook, when set, is called with each topology's Bench just before it runs (to
	// attach live metrics to OnInterval/OnSamples); the function it returns, if not nil,
	// is called when that run has ended.
	BenchHook func(b *Bench) (done func())
	// ClientsField is what the user gave the scenario's clients as, for errors ("clients"
	// by default; "--clients" from habench run's flag).
	ClientsField string
}

// Run executes the scenario (see ScenarioRun) and returns the results directory and the
// comparison rows. Errors: bad input (*topology.FieldError: resume of another file,
// drop_caches without root, a cluster name in use), a missing installation, an
// interrupt (ctx's error), or how many cells failed.
func (r *ScenarioRun) Run(ctx context.Context) (string, []schema.ComparisonRow, error) {
	return r.runSweep(ctx)
}
