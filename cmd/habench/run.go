package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

func newRunCmd(g *globalOpts) *cobra.Command {
	var results, metricsAddr string
	var keep, dry bool
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml",
		Short: "Run a whole experiment from a scenario file: deploy, prepare, run, sample, report, destroy",
		Example: `  habench run scenarios/quick.yaml
  habench run scenarios/quick.yaml --results /tmp/results`,
		Args: exactArgs(1, "SCENARIO.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return usageError{fmt.Errorf("scenario %q: %w", args[0], err)}
			}
			s, err := experiment.ParseScenario(b)
			if err != nil {
				return usageError{fmt.Errorf("scenario %q: %w", args[0], err)}
			}
			out := cmd.OutOrStdout()
			if dry {
				o := s.Options()
				fmt.Fprintf(out, "scenario %s: %s, workload %s: %d threads, %d tables x %d rows, %v per topology\n",
					s.Name, experiment.Plural(len(s.Topologies), "topology"), s.Workload.Test, o.Threads, o.Tables, o.TableSize, o.Time)
				for i, t := range s.Topologies {
					switch {
					case t.IsExisting() && t.Cluster != "":
						fmt.Fprintf(out, "  %d. %s: cluster %s of the state directory (never deployed nor destroyed by the run)\n", i+1, t.Name, t.Cluster)
					case t.IsExisting():
						fmt.Fprintf(out, "  %d. %s: existing cluster, %s (registered for the run; kind and flavor discovered)\n", i+1, t.Name, experiment.Plural(len(t.DSNs), "node"))
					default:
						fmt.Fprintf(out, "  %d. %s: %s, %s, %s (%s installation)\n", i+1, t.Name, t.Kind, experiment.Plural(t.Nodes, "node"), t.Flavor, t.Installation.Kind)
					}
					if len(t.Knobs) > 0 {
						ks, _ := topology.KnobsFromMap(t.Knobs)
						var kv []string
						for _, k := range ks {
							kv = append(kv, k.String())
						}
						fmt.Fprintf(out, "     knobs for the run: %s\n", strings.Join(kv, " "))
					}
				}
				if !s.Links.IsZero() {
					fmt.Fprintf(out, "links between the nodes of each multi-node topology (one-way): %s\n", s.Links.String())
				}
				return nil
			}
			r := &experiment.ScenarioRun{Scenario: s, Sandbox: g.sandbox(), ResultsDir: results, Stdout: out, Log: g.log, CommandLine: os.Args, Keep: keep}
			m, stopMetrics, err := liveMetrics(metricsAddr, out)
			if err != nil {
				return err
			}
			defer stopMetrics()
			if m != nil {
				r.BenchHook = func(b *experiment.Bench) func() { return attachMetrics(m, b) }
			}
			dir, rows, err := r.Run(cmd.Context())
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
			if errors.Is(err, cmd.Context().Err()) && err != nil {
				return fmt.Errorf("interrupted: %w", err)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&results, "results", "results", "directory that receives the run directory")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the clusters running afterwards (habench destroy NAME removes them)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print the plan and exit")
	addMetricsFlag(cmd, &metricsAddr)
	return cmd
}
