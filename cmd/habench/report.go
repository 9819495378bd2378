package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/report"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	var baseline string
	cmd := &cobra.Command{
		Use:   "report RESULTS_DIR",
		Short: "Render report.html (inline SVG charts), report.md and report.csv for a run, scenario or sweep directory",
		Long: "Reads a results directory (a run: manifest.json; a scenario: comparison.json; a sweep: sweep_points.json)\n" +
			"and writes into it report.html (self-contained, inline SVG charts, no JavaScript), report.csv (one row per run)\n" +
			"and report.md (a run's from its manifest.json and summary.json, as the run wrote it; a scenario's or sweep's over\n" +
			"all its runs). Every run writes these at its end; this command renders them again, e.g. against another baseline.",
		Example: `  habench report results/20261129-220323-quick
  habench report results/20261129-220323-quick --baseline qasync`,
		Args: exactArgs(1, "RESULTS_DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := report.Write(args[0], report.Options{Baseline: baseline})
			if err != nil {
				return reportInputError(err)
			}
			// A run directory's report.md is the run's own (experiment.Report, from its
			// manifest and summary): rendered again too.
			if res, lerr := report.Load(args[0]); lerr == nil && res.Kind == report.KindRun {
				if err := experiment.WriteRunReport(args[0]); err != nil {
					return err
				}
				paths = append(paths, filepath.Join(args[0], "report.md"))
			}
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&baseline, "baseline", "", "the run percentages refer to, by topology name (default: the scenario's baseline, else the single primary, else the first run)")
	return cmd
}

func newCompareCmd() *cobra.Command {
	var htmlOut string
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Before/after table of two results directories: TPS, QPS, latency avg/p95/p99/max, max lag, % change",
		Long: "Compares two run directories (or two scenario directories, run by run with the same topology name):\n" +
			"before (RUN_A) and after (RUN_B), with the change in percent and whether it is better or worse.",
		Example: `  habench compare results/A/20261129-220347-qasync results/B/20261130-101500-qasync
  habench compare results/A results/B --html compare.html`,
		Args: exactArgs(2, "RUN_A", "RUN_B"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := report.Load(args[0])
			if err != nil {
				return reportInputError(err)
			}
			b, err := report.Load(args[1])
			if err != nil {
				return reportInputError(err)
			}
			c := report.Compare(a, b)
			if len(c.Pairs) == 0 {
				return usagef("compare %s %s: no run of one has a run of the same topology in the other", args[0], args[1])
			}
			if err := c.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			if htmlOut != "" {
				h, err := c.HTML(time.Now())
				if err != nil {
					return err
				}
				if err := os.WriteFile(htmlOut, h, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s\n", htmlOut)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlOut, "html", "", "also write the comparison as a self-contained HTML file with charts")
	return cmd
}

// reportInputError makes a directory that is not a results directory, or an unknown
// baseline, bad input (exit 2).
func reportInputError(err error) error {
	var le *report.LoadError
	var be *report.BaselineError
	switch {
	case errors.As(err, &be):
		return &topology.FieldError{Field: "--baseline", Value: be.Value, Reason: "not one of the runs: " + strings.Join(be.Names, ", ")}
	case errors.As(err, &le):
		return usageError{err}
	}
	return err
}
