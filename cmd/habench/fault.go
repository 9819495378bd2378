package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/links"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

func newFaultCmd(g *globalOpts) *cobra.Command {
	var name string
	var catchUp, stopGrace time.Duration
	cmd := &cobra.Command{
		Use:   "fault ACTION NODE [KEY=VALUE...] --cluster NAME",
		Short: "Inject a fault into a running sandbox: " + strings.Join(experiment.FaultActionNames(), ", "),
		Long: "Injects one fault into a sandbox now, while a run may be going on (the run records it).\n" +
			"NODE is a node name or \"writer\" (whoever takes the writes at this moment: a group's PRIMARY\n" +
			"as the members say, the source of async/semi-sync). KEY=VALUE are the action's parameters.\n\n" +
			scenario.FaultHelp(),
		Example: `  habench fault kill writer --cluster t1
  habench fault promote n2 --cluster t1
  habench fault start n1 --cluster t1        # n1 comes back as a replica of n2
  habench fault partition n3 --cluster g1 && sleep 10 && habench fault heal n3 --cluster g1`,
		Args: minArgs(2, "ACTION", "NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			action, node := args[0], args[1]
			if experiment.FaultActionOf(action) == nil {
				return usagef("ACTION %q: want one of %s", action, strings.Join(experiment.FaultActionNames(), ", "))
			}
			params, err := scenario.ParseFaultArgs(action, args[2:])
			if err != nil {
				return usageError{err}
			}
			if name == "" {
				return usagef("fault %s: --cluster NAME is required", action)
			}
			if catchUp <= 0 {
				return usagef("--catch-up-timeout %q: want a duration > 0, e.g. 30s", catchUp)
			}
			if stopGrace <= 0 {
				return usagef("--stop-grace %q: want a duration > 0, e.g. 90s", stopGrace)
			}
			c, err := loadCluster(g, name)
			if err != nil {
				return err
			}
			in, err := injector(g)
			if err != nil {
				return err
			}
			in.CatchUp = catchUp
			in.Store.StopGrace = stopGrace
			rec, detail, err := in.InjectArgs(cmd.Context(), c, action, node, params)
			if err != nil {
				var fe *topology.FieldError
				if errors.As(err, &fe) {
					return usageError{err}
				}
				return fmt.Errorf("fault %s %s: %w", action, rec.Node, err)
			}
			if detail != "" {
				detail = " (" + detail + ")"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s at %s, took %.2fs%s\n", c.Name, scenario.FaultPast(action), rec.Node,
				rec.At.Format("15:04:05.000"), rec.Took, detail)
			if rec.Escalated != "" {
				// The node is where the action leaves it (down, or up again after restart), but
				// the clean shutdown asked for was a crash: exit 1, so that a script does not
				// take it for a clean stop (the faults log and any run on the cluster say so too).
				state := "it is down"
				if scenario.Leaves(action) == scenario.NodeUp {
					state = "it was started again"
				}
				return fmt.Errorf("fault %s %s: ⚠ %s; %s", action, rec.Node, rec.Escalated, state)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "cluster", "", "the sandbox")
	cmd.Flags().DurationVar(&catchUp, "catch-up-timeout", 30*time.Second, "promote: how long the new source may take to apply what a running old source had")
	cmd.Flags().DurationVar(&stopGrace, "stop-grace", cluster.DefaultStopGrace, "stop, restart: how long the server may take to shut down after SIGTERM before SIGKILL (then a crash, reported as one)")
	return cmd
}

// injector is the fault injector of habench's sandboxes, with the link process that
// netem apply starts for partitions.
func injector(g *globalOpts) (*experiment.Injector, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return &experiment.Injector{Store: g.store(), Links: links.Process{Exe: exe,
		Args: []string{"netem", "serve", "--state-dir", g.stateDir, "--log-level", g.logLevel}}}, nil
}

// minArgs is cobra.MinimumNArgs with a usage error naming the arguments.
func minArgs(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s: want at least %d argument(s) (%s), got %d: %q", cmd.CommandPath(), n, strings.Join(names, ", "), len(args), args)
		}
		return nil
	}
}
