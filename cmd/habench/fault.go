package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

// faultActions are the actions of habench fault, in help order.
var faultActions = []string{"kill", "stop", "start", "restart", "partition", "heal", "promote"}

func newFaultCmd(g *globalOpts) *cobra.Command {
	var name string
	var catchUp time.Duration
	cmd := &cobra.Command{
		Use:   "fault ACTION NODE --cluster NAME",
		Short: "Inject a fault into a running sandbox: kill, stop, start, restart, partition, heal, promote",
		Long: "Injects one fault into a sandbox now, while a run may be going on (the run records it).\n" +
			"NODE is a node name or \"writer\" (whoever takes the writes at this moment: a group's PRIMARY\n" +
			"as the members say, the source of async/semi-sync).\n\n" +
			"  kill       SIGKILL of the node's server (a crash)\n" +
			"  stop       clean shutdown\n" +
			"  start      start it again: a group member rejoins its group, a Galera node rejoins (IST or SST),\n" +
			"             a replica replicates from the current source (also after a promote)\n" +
			"  restart    stop, then start\n" +
			"  partition  cut the node off from every other node, both directions (a standing link impairment,\n" +
			"             as netem apply --partition; needs a netns sandbox)\n" +
			"  heal       remove the partition (as netem clear)\n" +
			"  promote    make a replica the new source of an async or semi-sync topology and repoint the others\n" +
			"             with GTID auto-positioning; a running old source is made read-only and the new source\n" +
			"             first applies everything it had (up to --catch-up-timeout)",
		Example: `  habench fault kill writer --cluster t1
  habench fault promote n2 --cluster t1
  habench fault start n1 --cluster t1        # n1 comes back as a replica of n2
  habench fault partition n3 --cluster g1 && sleep 10 && habench fault heal n3 --cluster g1`,
		Args: exactArgs(2, "ACTION", "NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			action, node := args[0], args[1]
			if !contains(faultActions, action) {
				return usagef("ACTION %q: want one of %s", action, strings.Join(faultActions, ", "))
			}
			if name == "" {
				return usagef("fault %s: --cluster NAME is required", action)
			}
			if catchUp <= 0 {
				return usagef("--catch-up-timeout %q: want a duration > 0, e.g. 30s", catchUp)
			}
			c, err := loadCluster(g, name)
			if err != nil {
				return err
			}
			if err := c.RefuseExisting("inject faults (habench does it on its own sandboxes)"); err != nil {
				return err
			}
			ctx := cmd.Context()
			n, err := c.CurrentWriter(ctx, node)
			if err != nil {
				return usageError{err}
			}
			sb := g.sandbox()
			at := time.Now()
			pid := n.PID
			detail := ""
			switch action {
			case "kill":
				err = sb.KillNode(c, n.Name)
			case "stop":
				err = sb.StopNode(c, n.Name)
			case "start":
				if err = sb.StartNode(ctx, c, n.Name); err == nil {
					err = c.RejoinAsReplica(ctx, n.Name)
				}
			case "restart":
				if err = sb.StopNode(c, n.Name); err == nil {
					if err = sb.StartNode(ctx, c, n.Name); err == nil {
						err = c.RejoinAsReplica(ctx, n.Name)
					}
				}
			case "partition", "heal":
				err = partitionFault(cmd, g, c, n.Name, action)
			case "promote":
				var rep *cluster.PromoteReport
				rep, err = sb.Promote(ctx, c, n.Name, catchUp)
				if rep != nil {
					detail = fmt.Sprintf(" (old source %s %s; repointed %s", rep.OldSource, map[bool]string{true: "up, caught up first", false: "down: what it had not sent is lost"}[rep.OldSourceUp],
						strings.Join(rep.Repointed, ","))
					if len(rep.Down) > 0 {
						detail += "; down, repointed when started: " + strings.Join(rep.Down, ",")
					}
					detail += ")"
				}
			}
			rec := experiment.FaultRecord{At: at.UTC(), Action: action, Node: n.Name, PID: pid, Took: time.Since(at).Seconds()}
			if err != nil {
				rec.Error = err.Error()
			}
			if lerr := experiment.AppendFault(c, rec); lerr != nil {
				err = errors.Join(err, lerr)
			}
			if err != nil {
				var fe *topology.FieldError
				if errors.As(err, &fe) {
					return usageError{err}
				}
				return fmt.Errorf("fault %s %s: %w", action, n.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s at %s, took %.2fs%s\n", c.Name, pastTense(action), n.Name,
				at.UTC().Format("15:04:05.000"), time.Since(at).Seconds(), detail)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "cluster", "", "the sandbox")
	cmd.Flags().DurationVar(&catchUp, "catch-up-timeout", 30*time.Second, "promote: how long the new source may take to apply what a running old source had")
	return cmd
}

func pastTense(action string) string {
	switch action {
	case "stop":
		return "stopped"
	case "heal":
		return "healed"
	case "partition":
		return "partitioned"
	}
	if strings.HasSuffix(action, "e") {
		return action + "d"
	}
	return action + "ed"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// partitionFault applies (partition) or removes (heal) a standing partition of node.
// Partition refuses a cluster that has other impairments (heal would remove them too).
func partitionFault(cmd *cobra.Command, g *globalOpts, c *cluster.Cluster, node, action string) error {
	if c.Network != cluster.NetNamespaces {
		return &topology.FieldError{Field: "cluster", Value: c.Name, Reason: fmt.Sprintf("network %s: partitions need a cluster deployed with --network netns (as root)", c.Network)}
	}
	st, err := experiment.ReadStanding(c)
	if err != nil {
		return err
	}
	if action == "heal" {
		if st == nil {
			return nil
		}
		if len(st.Request.Partition) != 1 || st.Request.Partition[0] != node || st.Request.All != "" || st.Request.Groups != "" || len(st.Request.Node) > 0 || len(st.Request.Link) > 0 {
			return &topology.FieldError{Field: "node", Value: node, Reason: fmt.Sprintf("the cluster's impairments are `%s`, not a partition of %s: use habench netem clear %s", st.Request.String(), node, c.Name)}
		}
		return experiment.ClearStanding(c)
	}
	if st != nil {
		return &topology.FieldError{Field: "cluster", Value: c.Name, Reason: fmt.Sprintf("has impairments already (`%s`): habench netem clear %s first", st.Request.String(), c.Name)}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	lp := experiment.LinkProcess{Exe: exe, Args: []string{"netem", "serve", "--state-dir", g.stateDir, "--log-level", g.logLevel, c.Name}}
	_, err = experiment.ApplyStanding(cmd.Context(), c, netem.Request{Partition: []string{node}}, lp)
	return err
}
