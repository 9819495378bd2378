package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

func newRunCmd(g *globalOpts) *cobra.Command {
	var results, scale, resume, metricsAddr string
	var keep, dry, quiet, liveNodes, yesLong bool
	hostsOpts := &deployOpts{}
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
			b, err := readInputFile(args[0], "scenario")
			if err != nil {
				return usageError{fmt.Errorf("scenario %q: %w", args[0], err)}
			}
			s, err := experiment.ParseScenario(b)
			if err != nil {
				return usageError{fmt.Errorf("scenario %q: %w", args[0], err)}
			}
			if cmd.Flags().Changed("hosts") {
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
					if err := hostsOpts.applyHosts(cmd, t); err != nil {
						return err
					}
					t.Defaults()
					if err := t.Validate(); err != nil {
						return usageError{fmt.Errorf("scenario %q: topologies[%d]: %w", args[0], i, err)}
					}
				}
			} else if err := hostsOpts.applyHosts(cmd, &topology.Spec{}); err != nil {
				return err
			}
			if err := checkResultsDir(results); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if dry {
				// The same checks as the run itself: another scenario file, another scale
				// or another grid is exit 2 here too.
				p, f, err := s.ResumePlan(resume, scale)
				if err != nil {
					return usageError{err}
				}
				if err := p.CheckKnobNames(cmd.Context(), g.sandbox(), nil); err != nil {
					return usageError{fmt.Errorf("scenario %q: %w", args[0], err)}
				}
				var status map[int]string
				if f != nil {
					status = map[int]string{}
					for _, c := range f.Cells {
						status[c.Index] = c.Status
					}
				}
				if warn := p.LongWarning(func(c *experiment.Cell) bool { return status[c.Index] != experiment.StatusDone }); warn != "" {
					fmt.Fprintln(out, warn)
				}
				p.Print(out, status)
				return nil
			}
			r := &experiment.ScenarioRun{Scenario: s, Sandbox: g.sandbox(), ResultsDir: results, Stdout: out, Log: g.log,
				CommandLine: os.Args, Keep: keep, Scale: scale, ResumeDir: resume, Progress: experiment.NewProgress(os.Stderr, quiet), LiveNodes: liveNodes, YesLong: yesLong}
			if in, err := injector(g); err == nil {
				r.Injector = in
			}
			m, stopMetrics, err := liveMetrics(metricsAddr, out)
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
				err = fmt.Errorf("scenario %q: %w", args[0], err)
			}
			if len(rows) > 0 {
				fmt.Fprintln(out)
				experiment.PrintComparison(out, rows)
			}
			if _, serr := os.Stat(dir); dir != "" && serr == nil {
				fmt.Fprintf(out, "\nresults: %s\n", dir)
				if _, serr := os.Stat(filepath.Join(dir, "report.html")); serr == nil {
					fmt.Fprintf(out, "report: %s\n", filepath.Join(dir, "report.html"))
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&results, "results", "results", "directory that receives the run directory")
	addHostsFlags(cmd.Flags(), hostsOpts)
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the clusters running afterwards (habench destroy NAME removes them)")
	cmd.Flags().BoolVar(&yesLong, "yes-long", false, "run a scenario estimated over 24 h (refused without it; the dry run shows the estimate)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print the plan (every cell, counts, estimated time) and exit")
	cmd.Flags().StringVar(&scale, "scale", "", "small, medium or full: the scenario's size profile (default full: the file as written)")
	cmd.Flags().StringVar(&resume, "resume", "", "complete the interrupted run in this directory: run only its cells that are not done")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress line on stderr")
	cmd.Flags().BoolVar(&liveNodes, "live-nodes", false, "after each report interval, a line with every node's lag, backlog, queues and flow control (clusters; needs report-interval)")
	addMetricsFlag(cmd, &metricsAddr)
	return cmd
}
