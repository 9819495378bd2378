package main

import (
	"errors"
	"fmt"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

// scenarioRunOpts are the flags of habench run.
type scenarioRunOpts struct {
	results, scale, resume, metricsAddr, snapshot string
	snapshots                                     bool
	keep, dry, quiet, liveNodes, yesLong          bool
	hosts                                         *deployOpts
	cl                                            clientsOpts
}

func newRunCmd(g *globalOpts) *cobra.Command {
	o := &scenarioRunOpts{hosts: &deployOpts{}}
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml",
		Short: "Run a whole experiment from a scenario file: deploy, prepare, run, sample, report, destroy",
		Long: `Run a scenario: its topologies, or the cells of its sweep grid, each deployed, prepared, run with
sampling and destroyed; results go to one directory with a run directory per cell, sweep.json,
sweep.md and comparison.md. --scale picks the file's small or medium profile (default: the
file as written, full size). --resume DIR completes an interrupted run in DIR: only the cells
not done run again. A progress line (cell i of n, ETA) goes to stderr: rewritten in place on
a terminal, one line per cell otherwise; --quiet turns it off. A plan estimated over 24 h is
refused unless --yes-long confirms it (the dry run's first line warns).`,
		Example: `  habench run scenarios/quick.yaml
  habench run scenarios/s1-topologies.yaml --scale small --dry-run
  habench run scenarios/s1-topologies.yaml --scale small --results /tmp/results
  habench run scenarios/s1-topologies.yaml --resume /tmp/results/20261130-101500-s1-topologies`,
		Args: exactArgs(1, "SCENARIO.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.readScenario(cmd, args[0])
			if err != nil {
				return err
			}
			if err := checkResultsDir(o.results); err != nil {
				return err
			}
			if o.dry {
				return o.dryRun(cmd, g, s, args[0])
			}
			return o.run(cmd, g, s, args[0])
		},
	}
	cmd.Flags().StringVar(&o.results, "results", "results", "directory that receives the run directory")
	addHostsFlags(cmd.Flags(), o.hosts)
	o.cl.bind(cmd.Flags())
	cmd.Flags().BoolVar(&o.keep, "keep", false, "leave the clusters running afterwards (habench destroy NAME removes them)")
	cmd.Flags().BoolVar(&o.yesLong, "yes-long", false, "run a scenario estimated over 24 h (refused without it; the dry run shows the estimate)")
	cmd.Flags().BoolVar(&o.dry, "dry-run", false, "print the plan (every cell, counts, estimated time) and exit")
	cmd.Flags().StringVar(&o.scale, "scale", "", "small, medium or full: the scenario's size profile (default full: the file as written)")
	cmd.Flags().StringVar(&o.resume, "resume", "", "complete the interrupted run in this directory: run only its cells that are not done")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress line on stderr")
	cmd.Flags().BoolVar(&o.liveNodes, "live-nodes", false, "after each report interval, a line with every node's lag, backlog, queues and flow control (clusters; needs report-interval)")
	cmd.Flags().BoolVar(&o.snapshots, "snapshots", false, "start every deployment (local sandboxes, sandboxes on --hosts) from a data snapshot of its installation and data shape (made once) instead of a prepare")
	cmd.Flags().StringVar(&o.snapshot, "snapshot", "", "start every sandbox deployment from this snapshot (habench snapshot list); refused for another installation or shape")
	addMetricsFlag(cmd, &o.metricsAddr)
	return cmd
}

// readScenario reads and parses the scenario file at path and, with --hosts, puts every
// topology habench deploys on the hosts. Errors name the file (usage errors, exit 2).
func (o *scenarioRunOpts) readScenario(cmd *cobra.Command, path string) (*scenario.Scenario, error) {
	b, err := readInputFile(path, "scenario")
	if err != nil {
		return nil, usageError{fmt.Errorf("scenario %q: %w", path, err)}
	}
	s, err := scenario.ParseScenario(b)
	if err != nil {
		return nil, usageError{fmt.Errorf("scenario %q: %w", path, err)}
	}
	s.Snapshots = s.Snapshots || o.snapshots
	if o.snapshot != "" {
		s.Snapshot = o.snapshot
	}
	if !cmd.Flags().Changed("hosts") {
		if err := o.hosts.applyHosts(cmd, &topology.Spec{}); err != nil {
			return nil, err
		}
		return s, o.cl.applyToScenario(cmd, s, o.hosts)
	}
	// Every topology habench deploys goes on the hosts, one after the other.
	for i := range s.Topologies {
		t := &s.Topologies[i]
		if p, err := cluster.ProviderOf(*t); err == nil && !p.Deployed() {
			continue // servers habench does not deploy stay where they are
		}
		if !s.InstallationGiven(i) {
			// Not this machine's default: the server the hosts have.
			t.Installation = topology.Installation{}
		}
		if err := o.hosts.applyHosts(cmd, t); err != nil {
			return nil, err
		}
		t.Defaults()
		if err := t.Validate(); err != nil {
			return nil, usageError{fmt.Errorf("scenario %q: topologies[%d]: %w", path, i, err)}
		}
	}
	return s, o.cl.applyToScenario(cmd, s, o.hosts)
}

// dryRun prints the plan of scenario s (file path) with the status of each cell of the
// run being resumed, after the same checks as the run itself: another scenario file,
// another scale or another grid, an unknown knob, a snapshot named that does not exist or
// fit, or a damaged one (experiment.DryRunSnapshots) is exit 2 here too.
func (o *scenarioRunOpts) dryRun(cmd *cobra.Command, g *globalOpts, s *scenario.Scenario, path string) error {
	out := cmd.OutOrStdout()
	p, f, err := experiment.ResumePlan(s, o.resume, o.scale)
	if err != nil {
		return usageError{err}
	}
	if err := experiment.CheckKnobNames(cmd.Context(), p, g.store(), nil); err != nil {
		return usageError{fmt.Errorf("scenario %q: %w", path, err)}
	}
	var status map[int]string
	if f != nil {
		status = map[int]string{}
		for _, c := range f.Cells {
			status[c.Index] = c.Status
		}
	}
	notes, err := experiment.DryRunSnapshots(cmd.Context(), g.store(), p, f)
	if err != nil {
		return usageError{fmt.Errorf("scenario %q: %w", path, err)}
	}
	if warn := p.LongWarning(func(c *scenario.Cell) bool { return status[c.Index] != schema.StatusDone }); warn != "" {
		fmt.Fprintln(out, warn)
	}
	p.Print(out, status)
	for _, n := range notes {
		fmt.Fprintln(out, "NOTE: "+n)
	}
	return nil
}

// run runs scenario s (file path) and prints the comparison and where the results are.
func (o *scenarioRunOpts) run(cmd *cobra.Command, g *globalOpts, s *scenario.Scenario, path string) error {
	out := cmd.OutOrStdout()
	r := &experiment.ScenarioRun{Scenario: s, Store: g.store(), ResultsDir: o.results, Stdout: out, Log: g.log,
		CommandLine: os.Args, Keep: o.keep, Scale: o.scale, ResumeDir: o.resume, Progress: experiment.NewProgress(os.Stderr, o.quiet), LiveNodes: o.liveNodes, YesLong: o.yesLong,
		ClientsField: o.cl.field(cmd)}
	if in, err := injector(g); err == nil {
		r.Injector = in
	}
	m, stopMetrics, err := liveMetrics(o.metricsAddr, out)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if m != nil {
		r.BenchHook = func(b *experiment.Bench) func() { return attachMetrics(m, b) }
	}
	dir, rows, err := r.Run(cmd.Context())
	if fe := (*topology.FieldError)(nil); errors.As(err, &fe) && dir == "" {
		// Refused before anything ran: named like the dry run's refusals.
		err = fmt.Errorf("scenario %q: %w", path, err)
	}
	if len(rows) > 0 {
		fmt.Fprintln(out)
		report.PrintComparison(out, rows)
	}
	if _, serr := os.Stat(dir); dir != "" && serr == nil {
		fmt.Fprintf(out, "\nresults: %s\n", dir)
		if _, serr := os.Stat(filepath.Join(dir, "report.html")); serr == nil {
			fmt.Fprintf(out, "report: %s\n", filepath.Join(dir, "report.html"))
		}
	}
	return err
}
