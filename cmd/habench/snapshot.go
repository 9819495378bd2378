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

// snapshotHostsFlags adds --hosts, --host-dir and the ssh flags of deploy to a snapshot
// command: with --hosts it acts on the snapshots habench recorded on those hosts.
func snapshotHostsFlags(cmd *cobra.Command, o *deployOpts) {
	addHostsFlags(cmd.Flags(), o)
	cmd.Flags().Lookup("hosts").Usage = "the snapshots on these hosts (comma-separated ssh destinations), found by habench's records there (HOST_DIR/snapshots/NAME.habench.json)"
	cmd.Flags().Lookup("host-dir").Usage = "--hosts: habench's directory on every host (for a root filesystem installation ROOT/HOST_DIR)"
}

func newSnapshotListCmd() *cobra.Command {
	o := &deployOpts{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List snapshots: name, installation, data shape, size on disk, created, state: its files checked (--hosts: on those hosts)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			hs := &topology.Spec{}
			if err := o.applyHosts(cmd, hs); err != nil {
				return err
			}
			if hs.IsHosts() {
				ss, err := cluster.ListHostSnapshots(cmd.Context(), hs.Hosts, hs.HostDir, hs.SSH)
				if perr := printHostSnapshots(cmd.OutOrStdout(), ss, hs.HostDir); perr != nil {
					return perr
				}
				return err
			}
			ss, err := cluster.ListSnapshots()
			if err != nil {
				return err
			}
			return printSnapshots(cmd.OutOrStdout(), ss)
		},
	}
	snapshotHostsFlags(cmd, o)
	return cmd
}

// printHostSnapshots writes one line per snapshot on each host (its copy's state: ok,
// damaged and the first file that differs, or unchecked), or says there is none.
func printHostSnapshots(w io.Writer, ss []cluster.HostSnapshot, hostDir string) error {
	if len(ss) == 0 {
		fmt.Fprintf(w, "no snapshots in %s/%s on these hosts\n", hostDir, cluster.HostSnapshotsDir)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tNAME\tINSTALLATION\tSHAPE\tSIZE\tCREATED\tSTATE")
	for _, s := range ss {
		size := "?"
		if s.Size >= 0 {
			size = fmt.Sprintf("%.1f MiB", float64(s.Size)/(1<<20))
		}
		if s.Snapshot == nil {
			fmt.Fprintf(tw, "%s\t%s\t(incomplete copy)\t\t%s\t\t\n", s.Dest, s.Name, size)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Dest, s.Name, s.Snapshot.Installation, s.Snapshot.Shape, size, s.Snapshot.Created.Format(time.RFC3339), s.State)
	}
	return tw.Flush()
}

// printSnapshots writes one line per snapshot with its state (Snapshot.LocalState: ok,
// damaged and the first file that differs, or unchecked), or says there is none.
func printSnapshots(w io.Writer, ss []*cluster.Snapshot) error {
	if len(ss) == 0 {
		fmt.Fprintln(w, "no snapshots in", cluster.SnapshotsDir())
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tINSTALLATION\tSHAPE\tSIZE\tCREATED\tSTATE")
	for _, s := range ss {
		size := "?"
		if n, err := s.Size(); err == nil {
			size = fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Installation, s.Shape, size, s.Created.Format(time.RFC3339), s.LocalState())
	}
	return tw.Flush()
}

func newSnapshotRmCmd() *cobra.Command {
	var all bool
	o := &deployOpts{}
	cmd := &cobra.Command{
		Use:   "rm NAME... | --all",
		Short: "Remove snapshots by name, or all of them (--hosts: from those hosts, by habench's records there)",
		Args: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usagef("snapshot rm: want snapshot NAMEs or --all, not both nor neither")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			hs := &topology.Spec{}
			if err := o.applyHosts(cmd, hs); err != nil {
				return err
			}
			if hs.IsHosts() {
				lines, err := cluster.RemoveHostSnapshots(cmd.Context(), args, hs.Hosts, hs.HostDir, hs.SSH)
				for _, l := range lines {
					fmt.Fprintln(cmd.OutOrStdout(), l)
				}
				return err
			}
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
	snapshotHostsFlags(cmd, o)
	return cmd
}
