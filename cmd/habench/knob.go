package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/habench/habench/knob"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

const knobHelp = `A knob is a server variable set at runtime: NAME=VALUE on every node, or NODES:NAME=VALUE
on some (n2:wsrep_slave_threads=4, n1,n3:sync_binlog=0; a setting for named nodes overrides one
for every node). habench sets it with SET GLOBAL (Galera provider options such as gcs.fc_limit
through wsrep_provider_options, which changes only that key), reads back what each node took,
and prints before and effective values. Variables the server refuses at runtime as read only
(ER 1238) are written into a sandbox node's option file and the node restarted; existing
clusters refuse them. An unknown variable (ER 1193) or a refused value changes nothing.
habench knob list shows the named knobs and aliases (flavor-dependent names are mapped).`

func newKnobCmd(g *globalOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "knob",
		Short: "Set, show and restore server variables (knobs) on a cluster's nodes at runtime",
		Long:  knobHelp,
	}
	cmd.AddCommand(newKnobSetCmd(g), newKnobShowCmd(g), newKnobListCmd(), newKnobRestoreCmd(g))
	return cmd
}

// parseKnobArgs parses NAME=VALUE arguments (usage errors on bad input).
func parseKnobArgs(args []string) ([]topology.KnobSetting, error) {
	var out []topology.KnobSetting
	for _, a := range args {
		k, err := topology.ParseKnob(a)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if err := topology.CheckKnobs(out); err != nil {
		return nil, err
	}
	return out, nil
}

func newKnobSetCmd(g *globalOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "set CLUSTER [NODES:]NAME=VALUE...",
		Short: "Set knobs and keep them (on a sandbox also in the option files, so restarts keep them)",
		Long:  knobHelp + "\n\nknob set keeps the values (runs with --set restore theirs after the run).",
		Example: `  habench knob set t1 sync_binlog=0 innodb_flush_log_at_trx_commit=2
  habench knob set g1 wsrep_slave_threads=16 gcs.fc_limit=64
  habench knob set t1 n2:replica_parallel_workers=4`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("knob set: want CLUSTER and at least one NAME=VALUE, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ks, err := parseKnobArgs(args[1:])
			if err != nil {
				return err
			}
			c, err := loadCluster(g, args[0])
			if err != nil {
				return err
			}
			a, err := knob.Apply(cmd.Context(), c, ks, knob.Options{Keep: true, Restarter: g.store(), Log: g.log})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			knob.PrintValues(w, a.Values(), false)
			for _, n := range a.Notes() {
				fmt.Fprintf(w, "note: %s\n", n)
			}
			return nil
		},
	}
}

func newKnobShowCmd(g *globalOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "show CLUSTER [[NODES:]NAME...]",
		Short: "Show knobs on every node (default: every named knob the servers have)",
		Example: `  habench knob show t1
  habench knob show t1 sync_binlog gcs.fc_limit n2:max_connections`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usagef("knob show: want CLUSTER [NAME...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadCluster(g, args[0])
			if err != nil {
				return err
			}
			vals, err := knob.Show(cmd.Context(), c, args[1:])
			if len(vals) > 0 {
				knob.PrintShow(cmd.OutOrStdout(), vals)
			}
			if p := knob.Pending(c); p != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "note: %s\n", p)
			}
			return err
		},
	}
}

func newKnobListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the named knobs, their aliases and how each is applied",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			printCatalog(cmd.OutOrStdout())
			return nil
		},
	}
}

func printCatalog(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "KNOB\tALIASES\tHOW\tWHAT")
	for _, e := range knob.Catalog {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, strings.Join(e.Aliases, ","), e.Method, e.Doc)
	}
	tw.Flush()
	fmt.Fprintln(w, "Any other server variable works too (SET GLOBAL; read-only ones by option file and restart on sandboxes), and any other dotted name is a wsrep_provider_options key.")
}

func newKnobRestoreCmd(g *globalOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "restore CLUSTER",
		Short: "Put back the values an interrupted run left changed (from the cluster's knobs-pending.json)",
		Args:  exactArgs(1, "CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadCluster(g, args[0])
			if err != nil {
				return err
			}
			vals, err := knob.RestorePending(cmd.Context(), c, knob.Options{Restarter: g.store(), Log: g.log})
			if vals == nil && err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: nothing to restore\n", c.Name)
				return nil
			}
			knob.PrintValues(cmd.OutOrStdout(), vals, true)
			return err
		},
	}
}
