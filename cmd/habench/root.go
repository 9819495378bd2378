package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/spf13/cobra"
)

// globalOpts are the flags every command shares.
type globalOpts struct {
	stateDir string
	logLevel string
	log      *slog.Logger
}

func newRootCmd() *cobra.Command {
	g := &globalOpts{}
	root := &cobra.Command{
		Use:           "habench",
		Short:         "Benchmark MySQL HA topologies side by side",
		Long:          "habench deploys MySQL/MariaDB topologies (single, async, semi-sync, Group Replication, Galera), runs sysbench-compatible OLTP workloads,\nsamples every node's lag and replication health each second, and writes results and reports.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
				return usagef("--log-level %q: want debug, info, warn or error", g.logLevel)
			}
			g.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			// The driver prints lost connections ("packets.go:58 unexpected EOF") on its own
			// stderr lines; the error that follows says the same in habench's one line.
			mysql.SetLogger(driverLog{g.log})
			abs, err := filepath.Abs(g.stateDir)
			if err != nil {
				return usagef("--state-dir %q: %v", g.stateDir, err)
			}
			g.stateDir = abs
			experiment.Version = version
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.stateDir, "state-dir", cluster.DefaultStateDir(), "where sandbox state, datadirs and logs live (env HABENCH_STATE_DIR)")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "debug, info, warn or error")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see `%s --help`)", err, c.CommandPath())}
	})
	root.AddCommand(newVersionCmd(), newDeployCmd(g), newDestroyCmd(g), newStatusCmd(g), newDoctorCmd(g),
		newSysbenchCmd(g), newRunCmd(g), newNetemCmd(g), newReportCmd(), newCompareCmd(), newKnobCmd(g), newRegisterCmd(g), newFaultCmd(g), newLinkAgentCmd(), newSnapshotCmd(), newProxyCheckCmd(), newClientRunCmd())
	return root
}

func (g *globalOpts) store() *cluster.Store {
	return &cluster.Store{StateDir: g.stateDir, Log: g.log}
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if n == 0 && len(args) > 0 {
			return usagef("%s: takes no arguments, got %q", cmd.CommandPath(), args)
		}
		if len(args) != n {
			return usagef("%s: want %d argument(s) (%s), got %d: %q", cmd.CommandPath(), n, strings.Join(names, ", "), len(args), args)
		}
		return nil
	}
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print habench's version",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "habench %s\n", version)
			return nil
		},
	}
}

// driverLog sends go-sql-driver's log lines to habench's logger at debug level.
type driverLog struct{ l *slog.Logger }

func (d driverLog) Print(v ...any) {
	d.l.Debug("mysql driver", "msg", strings.TrimSpace(fmt.Sprint(v...)))
}
