package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

const impairmentHelp = `An IMPAIRMENT is ONE-WAY, on one directed link: "0.6ms" (delay), or key/value pairs
"delay 5ms jitter 1ms distribution normal loss 0.1% rate 100mbit", or "partition".
A round trip A->B->A costs delay(A->B) + delay(B->A): --all 0.6ms gives a 1.2 ms round trip.
--away N=IMPAIRMENT puts node N that far from every other node, both directions (the links
among the others untouched): the "one node 0.6 ms away" rehearsal. --node N=IMPAIRMENT
impairs only what leaves N. A zero impairment (0ms) is allowed where the others are not
zero, e.g. --groups "a: [n1,n2], b: [n3]; intra 0ms, inter 0.6ms".
The fields apply from the general to the specific, each overriding the previous link by link:
--all, --groups, --intra/--inter/--pair, --node, --away, --link, --partition.`

func newNetemCmd(g *globalOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "netem",
		Short: "Impair the links between a cluster's nodes: delay, jitter, loss, rate, partitions",
		Long: "Latency, loss and partitions between the nodes of a sandbox deployed with network netns, or of an\n" +
			"existing cluster registered with --ssh.\n" +
			"Sandboxes: kernel netem qdiscs (through netlink) where the kernel has sch_netem, else habench's userspace link\n" +
			"(a TUN device per node namespace, forwarded by a detached `habench netem serve` process).\n" +
			"Existing clusters: tc on each node's host over SSH (backend tc-ssh): an htb root 4862: on the interface\n" +
			"that routes to each peer, a class per impaired peer (rate), netem leaves (delay, jitter, loss; needs\n" +
			"sch_netem), u32 filters on the peers' addresses (drop for partitions). Every host is checked first (ssh,\n" +
			"tc, CAP_NET_ADMIN, sch_netem, no root qdisc of its own on those interfaces); habench never deletes or\n" +
			"alters a qdisc, class or filter it did not create.\n" +
			"Impairments stay until `habench netem clear` or `habench destroy`; every run on the cluster\n" +
			"records them in its manifest.json.\n\n" + impairmentHelp,
	}
	cmd.AddCommand(newNetemApplyCmd(g), newNetemShowCmd(g), newNetemClearCmd(g), newNetemServeCmd(g))
	return cmd
}

type netemApplyOpts struct {
	cluster   string
	all       string
	groups    string
	nodes     []string
	away      []string
	links     []string
	partition []string
	intra     string
	inter     string
	pairs     []string
}

// request turns the flags into a netem.Request; errors name the flag and the value.
func (o *netemApplyOpts) request() (netem.Request, error) {
	r := netem.Request{All: o.all, Groups: o.groups, Partition: o.partition, Intra: o.intra, Inter: o.inter}
	for _, kv := range o.pairs {
		p, imp, ok := strings.Cut(kv, "=")
		if !ok || !strings.Contains(p, "-") {
			return r, usagef("--pair %q: want SITE-SITE=IMPAIRMENT, e.g. dc1-dc3=20ms", kv)
		}
		if r.Pair == nil {
			r.Pair = map[string]string{}
		}
		p = strings.TrimSpace(p)
		if _, dup := r.Pair[p]; dup {
			return r, usagef("--pair %q: pair %s given twice", kv, p)
		}
		r.Pair[p] = imp
	}
	for _, kv := range o.nodes {
		n, imp, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(n) == "" {
			return r, usagef("--node %q: want NODE=IMPAIRMENT, e.g. n3=5ms", kv)
		}
		if r.Node == nil {
			r.Node = map[string]string{}
		}
		n = strings.TrimSpace(n)
		if _, dup := r.Node[n]; dup {
			return r, usagef("--node %q: node %s given twice", kv, n)
		}
		r.Node[n] = imp
	}
	for _, kv := range o.away {
		n, imp, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(n) == "" {
			return r, usagef("--away %q: want NODE=IMPAIRMENT, e.g. n3=0.6ms", kv)
		}
		if r.Away == nil {
			r.Away = map[string]string{}
		}
		n = strings.TrimSpace(n)
		if _, dup := r.Away[n]; dup {
			return r, usagef("--away %q: node %s given twice", kv, n)
		}
		r.Away[n] = imp
	}
	for _, kv := range o.links {
		l, imp, ok := strings.Cut(kv, "=")
		if !ok || !strings.Contains(l, "->") {
			return r, usagef("--link %q: want FROM->TO=IMPAIRMENT, e.g. n1->n2=5ms", kv)
		}
		l = strings.ReplaceAll(l, " ", "")
		if r.Link == nil {
			r.Link = map[string]string{}
		}
		if _, dup := r.Link[l]; dup {
			return r, usagef("--link %q: link %s given twice", kv, l)
		}
		r.Link[l] = imp
	}
	if r.IsZero() {
		return r, usagef("netem apply: nothing to apply: give --all, --groups, --node, --away, --link, --partition, --intra, --inter or --pair (to remove impairments: habench netem clear NAME)")
	}
	return r, nil
}

func newNetemApplyCmd(g *globalOpts) *cobra.Command {
	o := &netemApplyOpts{}
	cmd := &cobra.Command{
		Use:   "apply --cluster NAME [--all IMPAIRMENT] [--groups SPEC] [--node N=IMPAIRMENT]... [--away N=IMPAIRMENT]... [--link A->B=IMPAIRMENT]... [--partition N]... [--intra IMPAIRMENT] [--inter IMPAIRMENT] [--pair SITE-SITE=IMPAIRMENT]...",
		Short: "Replace a sandbox's link impairments, measure the achieved round trips, keep them until clear",
		Long: "Replaces the cluster's impairments (none left from before), measures every directed pair's round trip\n" +
			"before and after (TCP handshakes from inside the node namespaces), prints requested against achieved\n" +
			"and warns when they differ by more than 10%.\n\n" + impairmentHelp,
		Example: `  habench netem apply --cluster t1 --all 0.6ms                     # 1.2 ms round trip between every pair
  habench netem apply --cluster t1 --groups "dc1: [n1,n2], dc2: [n3]; intra 0.1ms, inter 5ms"
  habench netem apply --cluster t1 --all 1ms --link "n1->n3=delay 20ms loss 1%"
  habench netem apply --cluster t1 --away n3=0.6ms                 # n3 0.6 ms from n1 and n2, both ways; n1<->n2 untouched
  habench netem apply --cluster t1 --partition n3                  # cut n3 off, both directions`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && o.cluster == "" {
				// netem show and clear take the cluster as an argument; apply takes --cluster.
				return usagef("%s: takes no arguments, got %q (give the cluster as --cluster %s)", cmd.CommandPath(), args, args[0])
			}
			return exactArgs(0)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.cluster == "" {
				return usagef("netem apply: --cluster NAME is required")
			}
			req, err := o.request()
			if err != nil {
				return err
			}
			c, err := loadCluster(g, o.cluster)
			if err != nil {
				return err
			}
			if len(c.Nodes) < 2 {
				return &topology.FieldError{Field: "cluster", Value: c.Name, Reason: fmt.Sprintf("has %d node: there is no link between nodes to impair", len(c.Nodes))}
			}
			if err := c.Refuse(cluster.OpLinks, ""); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			lp := links.Process{Exe: exe, Args: []string{"netem", "serve", "--state-dir", g.stateDir, "--log-level", g.logLevel, c.Name}}
			st, err := links.ApplyStanding(cmd.Context(), c, req, lp)
			if err != nil {
				var re *netem.RequestError
				if errors.As(err, &re) {
					return usageError{err}
				}
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: applied %s (%s backend", c.Name, req.String(), st.Backend)
			if st.Backend == netem.BackendUserspace {
				fmt.Fprintf(w, ", link process %d, thread %s, log %s/links.log", st.PID, st.Report.LinkThread, c.Dir())
			}
			fmt.Fprintln(w, ")")
			printLinkReport(w, st.Report) // its WARNING lines say what differs, once
			fmt.Fprintf(w, "kept until: habench netem clear %s (or habench destroy %s)\n", c.Name, c.Name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cluster, "cluster", "", "the sandbox (deployed with --network netns)")
	f.StringVar(&o.all, "all", "", "IMPAIRMENT on every directed link")
	f.StringVar(&o.groups, "groups", "", "groups and their one-way impairments: \"dc1: [n1,n2], dc2: [n3]; intra 0.1ms, inter 5ms\"")
	f.StringArrayVar(&o.nodes, "node", nil, "NODE=IMPAIRMENT on every link leaving NODE (repeatable)")
	f.StringArrayVar(&o.away, "away", nil, "NODE=IMPAIRMENT on every link between NODE and each other node, both directions (repeatable)")
	f.StringArrayVar(&o.links, "link", nil, "FROM->TO=IMPAIRMENT on one directed link (repeatable)")
	f.StringArrayVar(&o.partition, "partition", nil, "cut NODE off from every other node, both directions (repeatable)")
	f.StringVar(&o.intra, "intra", "", "IMPAIRMENT on every link within a site (the topology's sites:)")
	f.StringVar(&o.inter, "inter", "", "IMPAIRMENT on every link between two sites")
	f.StringArrayVar(&o.pairs, "pair", nil, "SITE-SITE=IMPAIRMENT on the links between two sites, both ways (repeatable)")
	return cmd
}

func newNetemShowCmd(g *globalOpts) *cobra.Command {
	var measure bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a sandbox's link impairments: request, backend, link process, requested and achieved round trips",
		Args:  exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := loadCluster(g, args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			ls := links.StateOf(c)
			if ls.Applying {
				fmt.Fprintf(w, "%s: a `habench netem apply` (or clear) is in progress; show again when it has finished\n", c.Name)
				return nil
			}
			st := ls.Standing
			if ls.Err != nil {
				return fmt.Errorf("%w: run habench netem clear %s", ls.Err, c.Name)
			}
			var spec *netem.Spec
			if st == nil {
				if ls.RunActive {
					fmt.Fprintf(w, "%s: impaired by a run with --links (or scenario links) in progress; the impairments end with it (see its manifest.json)\n", c.Name)
					return nil
				}
				fmt.Fprintf(w, "%s: no impairments (network %s)\n", c.Name, c.Network)
				if left := links.Leftovers(c); len(left) > 0 {
					return fmt.Errorf("%s: no impairments recorded, but found %s: run habench netem clear %s", c.Name, strings.Join(left, ", "), c.Name)
				}
			} else {
				fmt.Fprintf(w, "%s: %s, %s backend, applied %s\n", c.Name, st.Request.String(), st.Backend, st.Applied.Format(time.RFC3339))
				if st.Backend == netem.BackendUserspace {
					if pid := st.LinkPID(c); pid > 0 {
						fmt.Fprintf(w, "link process %d: running (log %s/links.log)\n", pid, c.Dir())
					} else {
						fmt.Fprintf(w, "link process: NOT RUNNING, the impairments are not in effect (log %s/links.log); run habench netem clear %s\n", c.Dir(), c.Name)
					}
				}
				if st.Report == nil {
					return fmt.Errorf("%s: `netem apply` did not finish (no measurement recorded): run habench netem clear %s", c.Name, c.Name)
				}
				printLinkReport(w, st.Report)
				if spec, err = links.Build(st.Request, c); err != nil {
					return err
				}
			}
			if measure && ls.Impairable && len(c.Nodes) > 1 {
				ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
				defer cancel()
				rtts, err := measureLinks(ctx, c, spec)
				if err != nil {
					return err
				}
				// The base round trip over the plain bridge was measured by apply; the added
				// round trip now is the median now minus that base (the request is an added one).
				base := map[string]float64{}
				if st != nil && st.Report != nil {
					for _, r := range st.Report.RTT {
						base[r.Link] = r.BaseMs
					}
				}
				fmt.Fprintln(w, "measured now:")
				tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
				fmt.Fprintln(tw, "LINK\tREQUESTED added RTT ms\tBASE ms (at apply)\tmedian ms\tADDED ms\tp99 ms\tFAILED PROBES")
				for _, r := range rtts {
					med := r.Median.Seconds() * 1000
					b, added := "n/a", "n/a"
					if v, ok := base[r.Link.String()]; ok && r.Samples > 0 {
						b, added = fmt.Sprintf("%.3f", v), fmt.Sprintf("%+.3f", med-v)
					}
					fmt.Fprintf(tw, "%s\t%.3f\t%s\t%.3f\t%s\t%.3f\t%d/%d\n", r.Link, r.Requested.Seconds()*1000, b, med, added, r.P99.Seconds()*1000, r.Failed, r.Failed+r.Samples)
				}
				tw.Flush()
			}
			if st != nil && !ls.Alive {
				return fmt.Errorf("%s: the link process is not running: run habench netem clear %s", c.Name, c.Name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&measure, "measure", false, "also measure every directed pair's round trip now")
	return cmd
}

// measureLinks measures c's links the way c's provider impairs them (links.Measure:
// 20 handshakes per pair, 3 s each at most).
func measureLinks(ctx context.Context, c *cluster.Cluster, spec *netem.Spec) ([]netem.LinkRTT, error) {
	return links.Measure(ctx, c, spec, 20, 3*time.Second)
}

func newNetemClearCmd(g *globalOpts) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "clear NAME | --all",
		Short: "Remove a sandbox's link impairments (idempotent; also after a crash); --all: every sandbox's",
		Args: func(cmd *cobra.Command, args []string) error {
			if all {
				return exactArgs(0)(cmd, args)
			}
			return exactArgs(1, "NAME")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			names := args
			if all {
				cs, err := g.store().List()
				if err != nil {
					return err
				}
				for _, c := range cs {
					if c.Deployed() { // every sandbox: not the clusters habench only registered
						names = append(names, c.Name)
					}
				}
				if len(names) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "no sandboxes")
				}
			}
			var errs []error
			for _, name := range names {
				if err := clearOne(cmd, g, name); err != nil {
					if !all {
						return err
					}
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every sandbox in the state directory")
	return cmd
}

// clearOne removes cluster name's impairments and prints what it removed.
func clearOne(cmd *cobra.Command, g *globalOpts, name string) error {
	c, err := loadCluster(g, name)
	if err != nil {
		return err
	}
	st, rerr := links.ReadStanding(c)
	crashed := links.CrashedRunLinks(c)
	if err := links.ClearStanding(c); err != nil {
		return err
	}
	if left := links.Leftovers(c); len(left) > 0 {
		return fmt.Errorf("%s: still present after clear: %s", c.Name, strings.Join(left, ", "))
	}
	switch {
	case rerr != nil:
		fmt.Fprintf(cmd.OutOrStdout(), "%s: cleared (the record was unreadable: %v)\n", c.Name, rerr)
	case st == nil && crashed:
		fmt.Fprintf(cmd.OutOrStdout(), "%s: cleared the impairments a killed run left on the hosts\n", c.Name)
	case st == nil:
		fmt.Fprintf(cmd.OutOrStdout(), "%s: no impairments\n", c.Name)
	default:
		fmt.Fprintf(cmd.OutOrStdout(), "%s: cleared %s (%s backend)\n", c.Name, st.Request.String(), st.Backend)
	}
	return nil
}

// newNetemServeCmd is the detached link process `netem apply` starts for the userspace
// backend; not for direct use.
func newNetemServeCmd(g *globalOpts) *cobra.Command {
	var linkState string
	cmd := &cobra.Command{
		Use:    "serve NAME --link-state=PATH",
		Short:  "The userspace link process (started by netem apply)",
		Hidden: true,
		Args:   exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ready *os.File = os.Stdout
			if _, err := unix.FcntlInt(3, unix.F_GETFD, 0); err == nil {
				ready = os.NewFile(3, "ready") // the pipe netem apply passes
			}
			c, err := loadCluster(g, args[0])
			if err != nil {
				fmt.Fprintln(ready, err)
				return err
			}
			if want := c.Dir() + "/" + links.StandingFile; linkState != want {
				err := usagef("--link-state %q: want %q", linkState, want)
				fmt.Fprintln(ready, err)
				return err
			}
			return links.ServeStanding(cmd.Context(), c, ready)
		},
	}
	cmd.Flags().StringVar(&linkState, strings.TrimSuffix(strings.TrimPrefix(cluster.LinkStateArg, "--"), "="), "", "the cluster's links.json (marks the process as this cluster's)")
	return cmd
}

func loadCluster(g *globalOpts, name string) (*cluster.Cluster, error) {
	c, err := g.store().Load(name)
	if err != nil {
		if errors.Is(err, cluster.ErrNotFound) {
			return nil, &topology.FieldError{Field: "cluster", Value: name, Reason: "no such cluster (habench status lists them)"}
		}
		return nil, err
	}
	return c, nil
}

// printLinkReport prints requested against achieved round trips per directed pair and
// the warnings.
func printLinkReport(w io.Writer, r *schema.LinkImpairment) {
	if r == nil {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "LINK\tIMPAIRMENT (one-way)\tBASE RTT ms\tREQUESTED +ms\tACHIEVED median ms\tp99 ms\tADDED ms")
	for _, x := range r.RTT {
		imp := r.Links[x.Link]
		if imp == "" {
			imp = "none"
		}
		if x.Partitioned {
			fmt.Fprintf(tw, "%s\t%s\t%.3f\tpartition\t%d of %d probes failed\t\t\n", x.Link, imp, x.BaseMs, x.FailedProbes, x.FailedProbes+x.Samples)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", x.Link, imp, x.BaseMs, x.RequestedMs, x.AchievedMs, x.AchievedP99, x.AddedMs)
	}
	tw.Flush()
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "WARNING: achieved differs from requested: %s\n", wn)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "NOTE: %s\n", r.Note)
	}
}
