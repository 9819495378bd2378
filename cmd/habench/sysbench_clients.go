package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/clients"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
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

// hostOf is an ssh destination's host ("user@host" -> "host").
func hostOf(dest string) string {
	if i := strings.LastIndexByte(dest, '@'); i >= 0 {
		return dest[i+1:]
	}
	return dest
}

// workload returns the clients' workload in place of wl: refused in one line, before
// anything starts, for a client that is an endpoint's host (without --allow-shared-client),
// cannot be reached, or whose habench (--client-bin) is not this one's version; without
// --client-bin, whose host cannot run a copy of this habench, which is made there (the
// caller removes it: clientsWorkload.Remove).
func (o *clientsOpts) workload(ctx context.Context, wl workload.Workload, target *workload.Target, out io.Writer) (workload.Workload, error) {
	if target.Follow != nil || target.Failover != nil {
		return nil, usagef("--clients %q: the workers follow the writer (--writer auto, the default on a single-primary group): give --writer fixed", strings.Join(o.clients, ","))
	}
	for _, e := range append(append([]workload.Endpoint(nil), target.Endpoints...), target.ReadEndpoints...) {
		if e.Socket != "" {
			return nil, usagef("--clients %q: server %s is a unix socket of this machine: the clients connect over TCP (--mysql-host, --mysql-port)", strings.Join(o.clients, ","), e.Label())
		}
	}
	sp := &topology.SSHSpec{User: o.sshUser, Port: o.sshPort, Identity: o.sshIdentity, Config: o.sshConfig, Options: o.sshOptions}
	if err := sp.Check(); err != nil {
		return nil, err
	}
	hosts := map[string]*host.SSH{}
	for _, c := range o.clients {
		h, err := cluster.ClientSSH(sp, c)
		if err != nil {
			return nil, err
		}
		hosts[c] = h
	}
	r := clients.SSHRunner{Bin: o.bin, Host: func(c string) *host.SSH { return hosts[c] }}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !o.allowShared {
		if err := o.shared(cctx, r, target); err != nil {
			return nil, err
		}
	}
	w := &clientsWorkload{Workload: wl, names: o.clients, out: out}
	if o.bin == "" {
		if err := w.copyTo(cctx, hosts); err != nil {
			return nil, err
		}
		r.Bins = w.bins
	} else if err := o.checkVersions(cctx, r); err != nil {
		return nil, fmt.Errorf("--clients: %w", err)
	}
	w.runner = r
	target.Dial = nil // the clients dial the servers themselves
	return w, nil
}

// checkVersions checks every client's habench (--client-bin): it runs and is this
// habench's version. The error is the first client's.
func (o *clientsOpts) checkVersions(ctx context.Context, r clients.SSHRunner) error {
	errs := make([]error, len(o.clients))
	var wg sync.WaitGroup
	for i, c := range o.clients {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = r.Check(ctx, c, version) }()
	}
	wg.Wait()
	return firstErr(errs)
}

// firstErr is errs' first error, or nil.
func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// copyTo copies this habench to a fresh directory on every client's host at once
// (cluster.CopySelfToTemp: refused, naming the client, for a host of another system or
// architecture: a *topology.FieldError on --clients; other errors "--clients: client
// NAME: ..."), recording them in w.dirs and w.bins. On an error the directories made
// are removed, and the first error returned.
func (w *clientsWorkload) copyTo(ctx context.Context, hosts map[string]*host.SSH) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("this habench program: %w", err)
	}
	w.hosts, w.dirs, w.bins = hosts, map[string]string{}, map[string]string{}
	errs := make([]error, len(w.names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range w.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir, bin, err := cluster.CopySelfToTemp(ctx, hosts[c], exe, clients.CopyDirTemplate, "--clients")
			var fe *topology.FieldError
			if err != nil && !errors.As(err, &fe) {
				err = fmt.Errorf("--clients: client %s: %w", c, err)
			}
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			w.dirs[c], w.bins[c] = dir, bin
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := firstErr(errs); err != nil {
		w.Remove()
		return err
	}
	return nil
}

// Remove removes the directories copyTo made on the client hosts (each client removes
// its own when it ends; this one covers a client killed on its host, or a run that never
// started), with its own time limit (30 s) whatever the run's context. Errors are printed
// as warnings naming the client.
func (w *clientsWorkload) Remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for c, dir := range w.dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := clients.CheckCopyDir(dir); err != nil {
				fmt.Fprintf(w.out, "WARNING: client %s: %v\n", c, err)
				return
			}
			if err := cluster.RemoveSelfCopy(ctx, w.hosts[c], dir); err != nil {
				fmt.Fprintf(w.out, "WARNING: client %s: habench's copy: %v\n", c, err)
			}
		}()
	}
	wg.Wait()
	w.dirs = nil
}

// shared refuses a client whose host (its destination, or the host name the ssh
// configuration gives it: ssh -G) is the host of an endpoint of target.
func (o *clientsOpts) shared(ctx context.Context, r clients.SSHRunner, target *workload.Target) error {
	for _, c := range o.clients {
		names := []string{hostOf(c)}
		if res, err := r.Host(c).Resolve(ctx); err == nil && res.HostName != "" {
			names = append(names, res.HostName)
		}
		for _, e := range append(append([]workload.Endpoint(nil), target.Endpoints...), target.ReadEndpoints...) {
			for _, n := range names {
				if n == e.Host {
					return usagef("--clients: client %s is also database server %s of the run: give another host, or --allow-shared-client", c, e.Label())
				}
			}
		}
	}
	return nil
}

// clientsWorkload is a workload run from client hosts (clients.Run) in place of this
// process's engine: the run's reporter gets the merged intervals, and after the run a line
// per client (and the client-bound warning naming the client) is printed before the summary.
type clientsWorkload struct {
	workload.Workload
	names  []string
	runner clients.Runner
	out    io.Writer
	// hosts, dirs and bins: without --client-bin, each client's host, the directory made
	// there for the run and the copy of habench in it (copyTo).
	hosts map[string]*host.SSH
	dirs  map[string]string
	bins  map[string]string
}

// Run implements workload.Workload.
func (w *clientsWorkload) Run(ctx context.Context, t workload.Target, o workload.Options, rep workload.Reporter) (*workload.Result, error) {
	cfg := clients.Config{Clients: w.names, Runner: w.runner, Version: version, Workload: w.Name(), Options: o, Target: t, Reporter: rep, Dirs: w.dirs,
		Note: func(line string) { fmt.Fprintf(w.out, "NOTE: %s\n", line) }}
	if sr, ok := rep.(workload.StartReporter); ok {
		sr.Started()
	}
	out, err := clients.Run(ctx, cfg)
	if out == nil {
		return nil, err
	}
	printClients(w.out, out)
	return out.Result, err
}

// printClients prints a line per client, then the lost clients and the client-bound
// warning naming the clients.
func printClients(w io.Writer, out *clients.Outcome) {
	fmt.Fprintln(w, "\nClients:")
	for _, c := range out.Clients {
		mark := ""
		if c.Partial {
			mark = "  (lost mid-run: its data until then)"
		}
		fmt.Fprintf(w, "    %-20s threads: %d  transactions: %d (%.2f per sec.)  95th pct: %.2f ms  99th pct: %.2f ms  CPU: %.2f of %d%s\n",
			c.Client, c.Threads, c.Transactions, c.TPS, c.LatencyP95, c.LatencyP99, c.CPUCores, c.CPUs, mark)
	}
	for _, l := range out.Lost {
		fmt.Fprintf(w, "ERROR: %s\n", l.Error())
	}
	if warn := out.ClientBoundWarning(); warn != "" {
		fmt.Fprintf(w, "WARNING: %s\n", warn)
	}
	fmt.Fprintln(w)
}
