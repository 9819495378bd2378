package main

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/habench/habench/clients"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// clientsOpts are sysbench's --clients flags: the run's workload driven from client hosts
// over SSH (package clients) instead of from this process.
type clientsOpts struct {
	clients     []string
	bin         string
	allowShared bool
	sshUser     string
	sshPort     int
	sshIdentity string
	sshConfig   string
	sshOptions  []string
}

// bind binds the flags to f.
func (o *clientsOpts) bind(f *pflag.FlagSet) {
	f.StringSliceVar(&o.clients, "clients", nil, "run (habench's own): drive the workload from these client hosts (ssh destinations, comma-separated): each runs its share of --threads and --rate with habench client-run and streams its counters and histograms back; the output is one run's, plus a line per client")
	f.StringVar(&o.bin, "client-bin", "", "with --clients: a habench already on the client hosts (a path, or habench for the one on their PATH), of this habench's version (default: a copy of this habench, made in a fresh directory /tmp/"+clients.CopyDirPrefix+"* on each client host for the run and removed after it)")
	f.BoolVar(&o.allowShared, "allow-shared-client", false, "with --clients: allow a client host that is also a database server of the run")
	f.StringVar(&o.sshUser, "client-ssh-user", "", "with --clients: ssh user for every client (default: your ssh configuration's)")
	f.IntVar(&o.sshPort, "client-ssh-port", 0, "with --clients: ssh port for every client (default: your ssh configuration's)")
	f.StringVar(&o.sshIdentity, "client-ssh-identity", "", "with --clients: private key file (default: agent and your ssh configuration's keys)")
	f.StringVar(&o.sshConfig, "client-ssh-config", "", "with --clients: ssh_config file to use instead of ~/.ssh/config (ssh -F)")
	f.StringArrayVar(&o.sshOptions, "client-ssh-option", nil, "with --clients: extra ssh option KEY=VALUE (ssh -o; repeatable)")
}

// check refuses the client flags given without --clients, and --clients with a
// command other than run or with what the clients cannot do.
func (o *clientsOpts) check(cmd *cobra.Command, command string, s *sysbenchOpts) error {
	if len(o.clients) == 0 {
		for _, fl := range []string{"client-bin", "allow-shared-client", "client-ssh-user", "client-ssh-port", "client-ssh-identity", "client-ssh-config", "client-ssh-option"} {
			if cmd.Flags().Changed(fl) {
				return usagef("--%s: needs --clients", fl)
			}
		}
		return nil
	}
	list := strings.Join(o.clients, ",")
	switch {
	case command != "run":
		return usagef("--clients %q: only for run", list)
	case s.failover:
		return usagef("--clients %q: not with --failover (the coordinator's view of the cluster does not reach the clients)", list)
	case s.writer == "auto":
		return usagef("--clients %q: not with --writer auto (the coordinator's view of the writer does not reach the clients)", list)
	case s.links != "":
		return usagef("--clients %q: not with --links", list)
	}
	for i, c := range o.clients {
		for _, d := range o.clients[:i] {
			if c == d {
				return usagef("--clients %q: %s given twice", list, c)
			}
		}
	}
	if _, err := clients.Split(s.wl, len(o.clients)); err != nil {
		return usagef("--clients %q: %v", list, err)
	}
	return nil
}

// spec is the clients as topology.Clients.
func (o *clientsOpts) spec() topology.Clients {
	return topology.Clients{Hosts: o.clients, Bin: o.bin, AllowShared: o.allowShared,
		SSH: &topology.SSHSpec{User: o.sshUser, Port: o.sshPort, Identity: o.sshIdentity, Config: o.sshConfig, Options: o.sshOptions}}
}

// workload returns the clients' workload in place of wl (experiment.OpenClients, then
// ClientHosts.CheckTarget against target): refused in one line, before anything starts,
// for a client that cannot be reached, cannot run this habench or whose habench
// (--client-bin) is not this one's version, or for a target the clients cannot run (the
// workers following the writer, a unix socket, a client that is a server's host without
// --allow-shared-client; a --cluster that is a sandbox of this machine, whose servers
// other hosts cannot reach, is refused likewise).
func (o *clientsOpts) workload(ctx context.Context, wl workload.Workload, target *workload.Target, c *cluster.Cluster, out io.Writer, log *slog.Logger) (workload.Workload, error) {
	list := strings.Join(o.clients, ",")
	if target.Follow != nil || target.Failover != nil {
		return nil, usagef("--clients %q: the workers follow the writer (--writer auto, the default on a single-primary group): give --writer fixed", list)
	}
	if c != nil && c.Provider().Name() == topology.ProviderSandbox && !o.allowShared {
		return nil, usagef("--clients %q: cluster %s is a sandbox on this machine, whose servers other hosts cannot reach: deploy it with --hosts, or give --allow-shared-client for clients on this machine", list, c.Name)
	}
	ch, err := experiment.OpenClients(ctx, o.spec(), "--clients", out, log)
	if err != nil {
		return nil, err
	}
	if err := ch.CheckTarget(*target); err != nil {
		return nil, err
	}
	return ch.Workload(wl, out), nil
}
