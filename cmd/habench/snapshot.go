package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"text/tabwriter"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "List or remove the data snapshots deployments start from (habench run --snapshots)",
	}
	cmd.AddCommand(newSnapshotListCmd(), newSnapshotRmCmd())
	return cmd
}

func newSnapshotListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List snapshots: name, installation, data shape, size on disk, created",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := cluster.ListSnapshots()
			if err != nil {
				return err
			}
			return printSnapshots(cmd.OutOrStdout(), ss)
		},
	}
}

// printSnapshots writes one line per snapshot, or says there is none.
func printSnapshots(w io.Writer, ss []*cluster.Snapshot) error {
	if len(ss) == 0 {
		fmt.Fprintln(w, "no snapshots in", cluster.SnapshotsDir())
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tINSTALLATION\tSHAPE\tSIZE\tCREATED")
	for _, s := range ss {
		size := "?"
		if n, err := s.Size(); err == nil {
			size = fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Installation, s.Shape, size, s.Created.Format(time.RFC3339))
	}
	return tw.Flush()
}

func newSnapshotRmCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "rm NAME... | --all",
		Short: "Remove snapshots by name, or all of them",
		Args: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usagef("snapshot rm: want snapshot NAMEs or --all, not both nor neither")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if all {
				ss, err := cluster.ListSnapshots()
				if err != nil {
					return err
				}
				for _, s := range ss {
					args = append(args, s.Name)
				}
			}
			for _, name := range args {
				if err := cluster.RemoveSnapshot(name); err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						return &topology.FieldError{Field: "snapshot", Value: name, Reason: "no such snapshot (habench snapshot list)"}
					}
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "removed", name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "remove every snapshot")
	return cmd
}
