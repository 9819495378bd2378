package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

func newDoctorCmd(g *globalOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Say which server installations, network modes and netem backends are usable here (and on registered hosts over SSH), and why not",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
			row := func(check string, err error, ok string) {
				if err != nil {
					fmt.Fprintf(tw, "%s\tno\t%s\n", check, err)
				} else {
					fmt.Fprintf(tw, "%s\tyes\t%s\n", check, ok)
				}
			}
			for _, t := range []struct {
				name   string
				inst   topology.Installation
				flavor topology.Flavor
			}{
				{"mariadb (system)", topology.Installation{Kind: topology.InstallSystem}, topology.MariaDB},
				{"mysql (rootfs " + cluster.DefaultRootfs + ")", topology.Installation{Kind: topology.InstallRootfs, Path: cluster.DefaultRootfs}, topology.MySQL},
			} {
				b, err := cluster.ResolveInstallation(ctx, t.inst, t.flavor)
				if err == nil {
					row(t.name, nil, b.VersionText)
				} else {
					row(t.name, err, "")
				}
			}
			_, err := os.Stat("/usr/lib/galera/libgalera_smm.so")
			row("galera-4 provider", err, "/usr/lib/galera/libgalera_smm.so")
			if p, err := exec.LookPath("sysbench"); err == nil {
				out, _ := exec.CommandContext(ctx, p, "--version").Output()
				row("sysbench (reference)", nil, strings.TrimSpace(string(out)))
			} else {
				row("sysbench (reference)", errors.New("not installed (apt-get install sysbench): only the compatibility tests need it"), "")
			}
			if why := cluster.NetNamespacesUsable(); why != "" {
				row("network: netns per node", errors.New(why), "")
			} else {
				row("network: netns per node", nil, "one namespace per node on a private bridge")
			}
			row("network: loopback", nil, "every node on 127.0.0.1, own port")
			row("netem: kernel (sch_netem via netlink)", netem.KernelAvailable(), "netem qdiscs can be attached")
			row("netem: userspace link", netem.UserspaceAvailable(), "TUN per node namespace; used by netem apply, sysbench run --links and scenario links when the kernel has no sch_netem")
			// The hosts of existing clusters registered with ssh: what tc impairments need.
			if cs, err := g.sandbox().List(); err == nil {
				seen := map[string]bool{}
				for _, c := range cs {
					for _, n := range c.Nodes {
						h := c.Host(n)
						if !c.Existing() || h == nil || seen[h.Name()] {
							continue
						}
						seen[h.Name()] = true
						check := fmt.Sprintf("host of %s/%s (%s)", c.Name, n.Name, h.Name())
						hctx, hcancel := context.WithTimeout(ctx, 15*time.Second)
						hc, err := netem.CheckHost(hctx, h)
						hcancel()
						switch {
						case err != nil:
							row(check, err, "")
						case len(hc.Problems) > 0:
							row(check, errors.New(strings.Join(hc.Problems, "; ")), "")
						case hc.NoNetem != "":
							row(check, fmt.Errorf("%s: delay, jitter and loss unavailable (rate limits and partitions work)", hc.NoNetem), "")
						default:
							row(check, nil, "tc, CAP_NET_ADMIN, htb/u32 and sch_netem: every impairment works")
						}
					}
				}
			}
			if st, err := os.Stat(g.stateDir); err == nil && st.IsDir() {
				row("state directory", nil, g.stateDir)
			} else {
				row("state directory", nil, g.stateDir+" (created on first deploy)")
			}
			return tw.Flush()
		},
	}
}
