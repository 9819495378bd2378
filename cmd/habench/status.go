package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/links"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

func newStatusCmd(g *globalOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "status [NAME]",
		Short: "List sandboxes, or show one: nodes, roles, addresses, replication health",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("status: want at most one cluster NAME, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sb := g.store()
			w := cmd.OutOrStdout()
			if len(args) == 0 {
				cs, err := sb.List()
				if err != nil {
					return err
				}
				if len(cs) == 0 {
					fmt.Fprintln(w, "no clusters in", g.stateDir)
					return nil
				}
				tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tKIND\tNODES\tFLAVOR\tVERSION\tNETWORK\tSTATE")
				for _, c := range cs {
					ver := ""
					if c.Binaries != nil {
						ver = c.Binaries.Version.String()
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c.Name, c.Spec.Kind, len(c.Nodes), c.Spec.Flavor, ver, c.Network, c.State)
				}
				return tw.Flush()
			}
			c, err := sb.Load(args[0])
			if err != nil {
				if errors.Is(err, cluster.ErrNotFound) {
					return &topology.FieldError{Field: "name", Value: args[0], Reason: "no such cluster (habench status lists them)"}
				}
				return err
			}
			printHeader(w, c)
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			health := map[string]string{}
			for _, n := range c.Members() {
				health[n.Name] = c.Health(ctx, n)
			}
			printNodes(w, c, health)
			if c.Spec.Is(topology.Group) {
				fmt.Fprintln(w, c.GroupStatus(ctx))
			}
			if note := cluster.GaleraMembersNote(ctx, c); note != "" {
				fmt.Fprintf(w, "members: %s\n", note)
			}
			if p := knob.Pending(c); p != "" {
				fmt.Fprintf(w, "knobs: %s\n", p)
			}
			printLinkState(w, c.Name, links.StateOf(c))
			return nil
		},
	}
}

// printLinkState prints status's links line for cluster name in link state ls (nothing for
// a cluster whose links cannot be impaired and are not).
func printLinkState(w io.Writer, name string, ls links.State) {
	switch st := ls.Standing; {
	case ls.Err != nil:
		fmt.Fprintf(w, "links: unreadable record (%v): habench netem clear %s\n", ls.Err, name)
	case st != nil:
		state := "in effect"
		if ls.Applying {
			state = "netem apply in progress"
		} else if !ls.Alive {
			state = "NOT in effect, link process gone: habench netem clear " + name
		}
		fmt.Fprintf(w, "links: %s (%s backend, %s; habench netem show %s)\n", st.Request.String(), st.Backend, state, name)
	case ls.RunActive:
		fmt.Fprintln(w, "links: impaired by a run with --links in progress")
	case ls.Impairable:
		fmt.Fprintln(w, "links: no impairments")
	}
}

// printHeader prints status's first two lines on cluster c: what it is and how to connect.
// A cluster habench deployed (Provider.Deployed) has its network and a root socket on each
// node; one it did not is registered: habench only connects to it.
func printHeader(w io.Writer, c *cluster.Cluster) {
	if !c.Deployed() {
		fmt.Fprintf(w, "%s: %s cluster (registered; habench does not deploy, restart or stop its servers), %s, %d node(s), %s, state %s\n", c.Name, c.Provider().Name(), c.Spec.Kind, len(c.Nodes), c.Binaries.VersionText, c.State)
		fmt.Fprintf(w, "connect: user %s over TCP (habench destroy %s only forgets the registration)\n", c.User, c.Name)
		return
	}
	fmt.Fprintf(w, "%s: %s, %d node(s), %s, network %s, state %s\n", c.Name, c.Spec.Kind, len(c.Nodes), c.Binaries.VersionText, c.Network, c.State)
	fmt.Fprintf(w, "connect: user %s password %s over TCP, or root (no password) over a node's socket on its HOST: mariadb -S DIR/mysqld.sock -uroot\n", c.User, c.Password)
}

// printNodes prints a table of c's members, grouped by site: name, role, address, HOST
// (Provider.HostName: nodes with the same host share one machine), and for servers habench
// runs (Provider.NodeRunning knows) their pid and directory; health[node] when health is
// not nil.
func printNodes(w io.Writer, c *cluster.Cluster, health map[string]string) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	hdr := "NODE\tROLE\tADDRESS\tHOST\tPID\tDIR (my.cnf, error.log, mysqld.sock)"
	sites := len(c.Spec.Sites) > 0
	if sites {
		hdr = "SITE\t" + hdr
	}
	if health != nil {
		hdr += "\tHEALTH"
	}
	fmt.Fprintln(tw, hdr)
	var members []*cluster.Node
	for _, site := range c.Spec.Sites { // grouped by site
		for _, name := range site.Nodes {
			if n := c.Member(name); n != nil {
				members = append(members, n)
			}
		}
	}
	for _, n := range c.Members() {
		if !slices.Contains(members, n) {
			members = append(members, n)
		}
	}
	for _, n := range members {
		pid, dir := fmt.Sprint(n.PID), n.Dir
		if _, known := c.NodeRunning(n); !known {
			pid = "-"
		}
		if !c.Deployed() {
			dir = "- (" + c.Provider().Name() + ")"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", n.Name, n.Role, n.Addr(), c.Provider().HostName(c, n), pid, dir)
		if health != nil {
			line += "\t" + health[n.Name]
		}
		if sites {
			line = c.Spec.Sites.SiteOf(n.Name) + "\t" + line
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}
