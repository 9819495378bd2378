package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

// doctorOpts are doctor's flags; with --hosts it checks those hosts instead of this machine.
type doctorOpts struct {
	hosts       []string
	hostDir     string
	basePort    int
	sshUser     string
	sshPort     int
	sshIdentity string
	sshConfig   string
	sshOptions  []string
}

func newDoctorCmd(g *globalOpts) *cobra.Command {
	o := &doctorOpts{}
	cmd := &cobra.Command{
		Use:   "doctor [--hosts H1,H2,...]",
		Short: "Say which server installations, network modes and netem backends are usable here (and on registered hosts over SSH), and why not; with --hosts, whether those hosts can take a deployment",
		Long: `Without --hosts: which server installations, network modes and netem backends are usable on
this machine (and on the hosts of clusters registered with ssh access), and why not.

With --hosts H1,H2,... (ssh destinations: addresses, host names or Host aliases of your ssh
configuration): one line per host, problems first, saying whether habench can deploy there:
ssh, root or passwordless sudo, the server binaries (mariadbd, mysqld in PATH or /usr/sbin) and
their versions, the Galera library, listeners on the ports a deployment uses (--base-port and
the 3 after it, 4567, 4568, 4444 and 33061; in use: named with the process), free disk under
the hosts' state directory (--host-dir, or its nearest existing parent), the host's clock
offset to this machine (± its uncertainty: half the shortest of 8 round trips), and whether the
host reaches every other on those ports (a TCP connection from the host, all ports at once
from one bash without start-up files: refused or accepted is reachable; no answer in 3 s is
filtered, a firewall dropping the connection or the host down; a port that could not be
reached gets a line with the ssh command that repeats the probe by hand; --log-level debug
logs every probe with its result and time). The --ssh-* flags are register's. Exit status 1
when a host cannot be used (no connection, neither root nor sudo, another host unreachable on
a port). Hosts are taken as deploy --hosts takes them: under HABENCH_TEST_NETWORK_GUARD=1
an ssh_config alias must resolve to an address the guard allows.`,
		Example: `  habench doctor
  habench doctor --hosts db1,db2,db3 --ssh-user root`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.hosts) > 0 {
				return doctorHosts(cmd, o, g.log)
			}
			for _, f := range []string{"host-dir", "base-port", "ssh-user", "ssh-port", "ssh-identity", "ssh-config", "ssh-option"} {
				if cmd.Flags().Changed(f) {
					return usagef("--%s: only with --hosts", f)
				}
			}
			return doctorLocal(cmd, g)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.hosts, "hosts", nil, "check these hosts for a deployment (comma-separated ssh destinations)")
	f.StringVar(&o.hostDir, "host-dir", topology.DefaultHostDir, "habench's state directory on the hosts (free disk is read there)")
	f.IntVar(&o.basePort, "base-port", topology.DefaultHostsBasePort, "first node port on the hosts")
	f.StringVar(&o.sshUser, "ssh-user", "", "ssh user for every host (default: your ssh configuration's)")
	f.IntVar(&o.sshPort, "ssh-port", 0, "ssh port for every host (default: your ssh configuration's)")
	f.StringVar(&o.sshIdentity, "ssh-identity", "", "private key file (default: agent and your ssh configuration's keys)")
	f.StringVar(&o.sshConfig, "ssh-config", "", "ssh_config file to use instead of ~/.ssh/config (ssh -F)")
	f.StringArrayVar(&o.sshOptions, "ssh-option", nil, "extra ssh option KEY=VALUE (ssh -o; repeatable)")
	return cmd
}

// doctorHosts prints one line per host of o.hosts (cluster.CheckHosts), hosts with
// problems first, then for each host that could not reach a port of another the command
// that repeats that probe by hand, then a summary; an error when a host cannot be used.
// log gets each probe at debug level.
func doctorHosts(cmd *cobra.Command, o *doctorOpts, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	sp := &topology.SSHSpec{User: o.sshUser, Port: o.sshPort, Identity: o.sshIdentity, Config: o.sshConfig, Options: o.sshOptions}
	if err := sp.Check(); err != nil {
		return err
	}
	reps, err := cluster.CheckHosts(ctx, cluster.HostsCheck{Hosts: o.hosts, SSH: sp, HostDir: o.hostDir, BasePort: o.basePort, Log: log})
	if err != nil {
		return err
	}
	rank := func(r *cluster.HostReport) int {
		switch {
		case !r.Usable():
			return 0
		case len(r.Warnings) > 0:
			return 1
		}
		return 2
	}
	sorted := slices.Clone(reps)
	slices.SortStableFunc(sorted, func(a, b *cluster.HostReport) int { return rank(a) - rank(b) })
	w := cmd.OutOrStdout()
	var bad []string
	for _, r := range sorted {
		fmt.Fprintln(w, r.Line())
		if !r.Usable() {
			bad = append(bad, r.Dest)
		}
	}
	for _, r := range sorted {
		if r.ByHand != "" {
			fmt.Fprintf(w, "%s: to check a port by hand (refused or open: reachable; no answer in %d s: filtered): %s\n", r.Dest, int(cluster.ProbeWait/time.Second), r.ByHand)
		}
	}
	fmt.Fprintf(w, "checked %d host(s) in %.1fs (state directory %s, node ports %d-%d and the %d cluster ports derived from them)\n", len(reps), time.Since(start).Seconds(),
		o.hostDir, o.basePort, o.basePort+cluster.DoctorPorts-1, len(cluster.HostsCheck{BasePort: o.basePort}.Ports())-cluster.DoctorPorts)
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d host(s) cannot be used: %s (see its line above)", len(bad), len(reps), strings.Join(bad, ", "))
	}
	return nil
}

// doctorLocal is doctor without --hosts: this machine's installations, network modes and
// netem backends, and the hosts of registered clusters.
func doctorLocal(cmd *cobra.Command, g *globalOpts) error {
	{
		{
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
			// The hosts of clusters whose links are impaired with tc over SSH: what tc impairments need on each.
			if cs, err := g.store().List(); err == nil {
				seen := map[string]bool{}
				for _, c := range cs {
					for _, n := range c.Nodes {
						h := c.Host(n)
						if c.Links() != cluster.LinksSSH || h == nil || seen[h.Name()] {
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
						case netem.HostsBackend([]netem.HostCheck{hc}) == netem.BackendHostAgent && c.HostNodeDir(n) != "":
							row(check, nil, hc.NoNetem+": a run's delay, jitter and loss go to the userspace link agent (netem apply refuses them)")
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
		}
	}
}
