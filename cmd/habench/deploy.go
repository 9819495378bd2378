package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type deployOpts struct {
	file        string
	name        string
	kind        string
	nodes       int
	flavor      string
	install     string
	network     string
	basePort    int
	options     []string
	ssWaitPoint string
	ssTimeout   time.Duration
	ssReplicas  int
	groupMode   string
	galeraSST   string
	// --hosts: deploy on the user's hosts over SSH (provider hosts).
	hosts       []string
	hostDir     string
	sshUser     string
	sshPort     int
	sshIdentity string
	sshConfig   string
	sshOptions  []string
}

// hostsFlags are the flags of a deploy on the user's hosts.
var hostsFlags = []string{"hosts", "host-dir", "ssh-user", "ssh-port", "ssh-identity", "ssh-config", "ssh-option"}

// addHostsFlags adds --hosts and its companions (deploy, run).
func addHostsFlags(f *pflag.FlagSet, o *deployOpts) {
	f.StringSliceVar(&o.hosts, "hosts", nil, "deploy on these hosts over SSH (comma-separated ssh destinations; node i on host i, wrapping round); nothing is installed there")
	f.StringVar(&o.hostDir, "host-dir", topology.DefaultHostDir, "--hosts: habench's directory on every host")
	f.StringVar(&o.sshUser, "ssh-user", "", "--hosts: ssh user for every host (default: your ssh configuration's)")
	f.IntVar(&o.sshPort, "ssh-port", 0, "--hosts: ssh port for every host (default: your ssh configuration's)")
	f.StringVar(&o.sshIdentity, "ssh-identity", "", "--hosts: private key file (default: agent and your ssh configuration's keys)")
	f.StringVar(&o.sshConfig, "ssh-config", "", "--hosts: ssh_config file to use instead of ~/.ssh/config (ssh -F)")
	f.StringArrayVar(&o.sshOptions, "ssh-option", nil, "--hosts: extra ssh option KEY=VALUE (ssh -o; repeatable)")
}

// applyHosts makes s a hosts spec from --hosts and its companions (before s.Defaults).
// Companions without --hosts are usage errors.
func (o *deployOpts) applyHosts(cmd *cobra.Command, s *topology.Spec) error {
	if !cmd.Flags().Changed("hosts") {
		for _, f := range hostsFlags {
			if cmd.Flags().Changed(f) {
				return usagef("--%s: only with --hosts", f)
			}
		}
		return nil
	}
	s.Provider = topology.ProviderHosts
	s.Hosts = o.hosts
	s.HostDir = o.hostDir
	if cmd.Flags().Changed("base-port") {
		s.BasePort = o.basePort
	}
	for _, f := range hostsFlags[2:] {
		if cmd.Flags().Changed(f) {
			s.SSH = &topology.SSHSpec{User: o.sshUser, Port: o.sshPort, Identity: o.sshIdentity, Config: o.sshConfig, Options: o.sshOptions}
		}
	}
	return nil
}

// specFromFlags builds a Spec from deploy flags or the -f file. Errors are usage errors.
func (o *deployOpts) spec(cmd *cobra.Command) (topology.Spec, error) {
	if o.file != "" {
		for _, f := range append([]string{"name", "kind", "nodes", "flavor", "installation", "option", "group-mode", "galera-sst",
			"semisync-wait-point", "semisync-timeout", "semisync-wait-for-replicas"}, hostsFlags...) {
			if cmd.Flags().Changed(f) {
				return topology.Spec{}, usagef("--%s: not allowed with -f (put it in %s)", f, o.file)
			}
		}
		b, err := readInputFile(o.file, "topology")
		if err != nil {
			return topology.Spec{}, usageError{fmt.Errorf("-f %q: %w", o.file, err)}
		}
		s, err := topology.ParseSpecYAML(b)
		if err != nil {
			return s, usageError{fmt.Errorf("-f %q: %w", o.file, err)}
		}
		return s, nil
	}
	if o.name == "" {
		return topology.Spec{}, usagef("--name: required (1-10 lower-case letters and digits), or give -f FILE")
	}
	f, err := topology.ParseFlavor(o.flavor)
	if err != nil {
		return topology.Spec{}, &topology.FieldError{Field: "--flavor", Value: o.flavor, Reason: "want mysql or mariadb"}
	}
	s := topology.Spec{Name: o.name, Kind: topology.Kind(o.kind), Nodes: o.nodes, Flavor: f}
	if o.install != "" {
		inst, err := parseInstallation(o.install)
		if err != nil {
			return s, err
		}
		s.Installation = inst
	}
	if cmd.Flags().Changed("nodes") && o.nodes < 1 {
		return s, &topology.FieldError{Field: "--nodes", Value: o.nodes, Reason: fmt.Sprintf("want 1 to %d", topology.MaxNodes)}
	}
	given := map[string]string{} // option name -> the --option that set it
	for _, kv := range o.options {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return s, &topology.FieldError{Field: "--option", Value: kv, Reason: "want name=value"}
		}
		k = strings.ReplaceAll(k, "-", "_")
		if prev, dup := given[k]; dup {
			return s, &topology.FieldError{Field: "--option", Value: kv, Reason: "already set by " + prev}
		}
		given[k] = kv
		if s.Options == nil {
			s.Options = map[string]string{}
		}
		s.Options[k] = v
	}
	if !s.Is(topology.SemiSync) {
		for _, fl := range []string{"semisync-wait-point", "semisync-timeout", "semisync-wait-for-replicas"} {
			if f := cmd.Flags().Lookup(fl); f.Changed {
				return s, &topology.FieldError{Field: "--" + fl, Value: f.Value.String(), Reason: "only for --kind semisync"}
			}
		}
	}
	if o.ssTimeout <= 0 {
		return s, &topology.FieldError{Field: "--semisync-timeout", Value: o.ssTimeout, Reason: "want a positive duration, e.g. 10s"}
	}
	if o.ssReplicas < 1 {
		return s, &topology.FieldError{Field: "--semisync-wait-for-replicas", Value: o.ssReplicas, Reason: "want 1 or more"}
	}
	s.SemiSync = topology.SemiSyncOptions{WaitPoint: strings.ToUpper(o.ssWaitPoint), Timeout: o.ssTimeout, WaitForReplicas: o.ssReplicas}
	if cmd.Flags().Changed("group-mode") {
		if !s.Is(topology.Group) {
			return s, &topology.FieldError{Field: "--group-mode", Value: o.groupMode, Reason: "only for --kind group"}
		}
		s.Group.Mode = strings.ToLower(o.groupMode)
		if s.Group.Mode != topology.GroupSinglePrimary && s.Group.Mode != topology.GroupMultiPrimary {
			return s, &topology.FieldError{Field: "--group-mode", Value: o.groupMode, Reason: "want single-primary or multi-primary"}
		}
	}
	if cmd.Flags().Changed("galera-sst") {
		s.Galera.SST = o.galeraSST
	}
	if err := o.applyHosts(cmd, &s); err != nil {
		return s, err
	}
	s.Defaults()
	return s, nil
}

// parseInstallation reads "system", "rootfs[:PATH]" or "basedir:PATH".
func parseInstallation(v string) (topology.Installation, error) {
	kind, path, _ := strings.Cut(v, ":")
	switch topology.InstallKind(kind) {
	case topology.InstallSystem:
		if path != "" {
			return topology.Installation{}, &topology.FieldError{Field: "--installation", Value: v, Reason: "system takes no path (the server on the PATH); for a directory use rootfs:PATH or basedir:PATH"}
		}
		return topology.Installation{Kind: topology.InstallSystem}, nil
	case topology.InstallRootfs:
		// Without a path Spec.Defaults picks the flavor's root filesystem.
		return topology.Installation{Kind: topology.InstallRootfs, Path: path}, nil
	case topology.InstallBasedir:
		if path == "" {
			return topology.Installation{}, &topology.FieldError{Field: "--installation", Value: v, Reason: "basedir needs a path: basedir:/opt/mysql-8.0.36"}
		}
		return topology.Installation{Kind: topology.InstallBasedir, Path: path}, nil
	}
	return topology.Installation{}, &topology.FieldError{Field: "--installation", Value: v, Reason: "want system, rootfs[:PATH] or basedir:PATH"}
}

func newDeployCmd(g *globalOpts) *cobra.Command {
	o := &deployOpts{}
	cmd := &cobra.Command{
		Use:   "deploy",
		Short: "Deploy a local sandbox topology (real servers) and wait until it is healthy",
		Long: "Deploys a local sandbox topology (real servers) and waits until it is healthy.\n" +
			"A file with provider: existing registers an existing cluster instead (as habench register -f).\n" +
			"knobs: in the file are checked against the servers now and set for every run on the cluster.",
		Example: `  habench deploy --name t1 --kind async --nodes 3 --flavor mariadb
  habench deploy --name s1 --kind semisync --nodes 3 --flavor mysql --installation rootfs
  habench deploy --name g1 --kind group --nodes 3 --flavor mysql --group-mode multi-primary
  habench deploy --name g1 --kind galera --nodes 3 --flavor mariadb --option wsrep_provider_options="gcs.fc_limit=64" 
  habench deploy --name h1 --kind semisync --hosts db1,db2,db3 --ssh-user root
  habench deploy -f topology.yaml`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := o.spec(cmd)
			if err != nil {
				return err
			}
			p, err := cluster.ProviderOf(spec)
			if err != nil {
				return err
			}
			if spec.IsHosts() && cmd.Flags().Changed("network") {
				return &topology.FieldError{Field: "--network", Value: o.network, Reason: "not with --hosts (the nodes run on the hosts' own network)"}
			}
			sb := g.store()
			if p.Deployed() { // servers habench makes from spec.Installation
				if o.network == cluster.NetNamespaces && cmd.Flags().Changed("base-port") && !spec.IsHosts() {
					return &topology.FieldError{Field: "--base-port", Value: o.basePort, Reason: "only for --network loopback (netns nodes all listen on 3306 at their own address)"}
				}
				if err := checkListedKnobs(cmd.Context(), sb, spec); err != nil {
					return err
				}
			}
			sb.Network = o.network
			sb.BasePort = o.basePort
			return provide(cmd, sb, spec)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "topology YAML file (instead of the flags below)")
	f.StringVar(&o.name, "name", "", "cluster name: 1-10 lower-case letters and digits")
	f.StringVar(&o.kind, "kind", "async", "topology kind: "+kindsHelp())
	f.IntVar(&o.nodes, "nodes", 0, "number of SQL nodes (default: the kind's, 1 for single, 3 for most)")
	f.StringVar(&o.flavor, "flavor", "mariadb", topology.FlavorList())
	f.StringVar(&o.install, "installation", "", "system, rootfs[:PATH] or basedir:PATH (default: system for mariadb, rootfs:"+cluster.DefaultRootfs+" for mysql; rootfs without a path for mariadb: "+cluster.DefaultMariaDBRootfs+")")
	f.StringVar(&o.network, "network", "auto", "auto (netns when root), netns or loopback")
	f.IntVar(&o.basePort, "base-port", 23306, "loopback network: first node's port")
	f.StringArrayVar(&o.options, "option", nil, "server option name=value for every node (repeatable)")
	f.StringVar(&o.ssWaitPoint, "semisync-wait-point", "AFTER_SYNC", "semisync: AFTER_SYNC or AFTER_COMMIT")
	f.DurationVar(&o.ssTimeout, "semisync-timeout", 10*time.Second, "semisync: how long the source waits for an ack before falling back to async")
	f.IntVar(&o.ssReplicas, "semisync-wait-for-replicas", 1, "semisync: acknowledgements each commit waits for (MySQL only)")
	f.StringVar(&o.groupMode, "group-mode", topology.GroupSinglePrimary, "group: single-primary or multi-primary")
	addHostsFlags(f, o)
	f.StringVar(&o.galeraSST, "galera-sst", "rsync", "galera: state snapshot transfer method for joiners (default the flavor's): mariadb rsync or mariabackup, pxc xtrabackup-v2, clone (8.0.41+) or rsync (5.7)")
	return cmd
}

// provide makes the cluster spec describes with the provider it names (sb.Provide: deploys
// a sandbox, registers an existing cluster), checks the spec's knobs against its servers
// (destroying or forgetting it again when they are wrong), and prints what it made and
// its nodes.
func provide(cmd *cobra.Command, sb *cluster.Store, spec topology.Spec) error {
	start := time.Now()
	c, err := sb.Provide(cmd.Context(), spec)
	if err != nil {
		return err
	}
	if err := checkSpecKnobs(cmd.Context(), c); err != nil {
		return errors.Join(err, sb.Destroy(context.WithoutCancel(cmd.Context()), c.Name))
	}
	w := cmd.OutOrStdout()
	took := time.Since(start).Seconds()
	if c.Deployed() {
		fmt.Fprintf(w, "deployed %s: %s, %d node(s), %s in %.1fs\n", c.Name, c.Spec.Kind, len(c.Nodes), c.Binaries.VersionText, took)
		printNodes(w, c, nil)
		return nil
	}
	fmt.Fprintf(w, "registered %s cluster %s: %s, %d node(s), %s, discovered in %.1fs (habench will not deploy, restart or stop these servers)\n",
		c.Provider().Name(), c.Name, c.Spec.Kind, len(c.Nodes), c.Binaries.VersionText, took)
	printNodes(w, c, nil)
	if note := cluster.GaleraMembersNote(cmd.Context(), c); note != "" {
		fmt.Fprintf(w, "members: %s\n", note)
	}
	return nil
}

func newDestroyCmd(g *globalOpts) *cobra.Command {
	var all bool
	hostsOpts := &deployOpts{}
	cmd := &cobra.Command{
		Use:   "destroy [NAME]",
		Short: "Stop a sandbox's servers and remove its processes, namespaces and directories (an existing cluster: forget it)",
		Long: `Stop a cluster's servers and remove what habench made for it (an existing cluster: forget it).
On hosts, a host that cannot be reached is said, one line per node, and its nodes forgotten.
With --hosts (and the ssh flags and --host-dir of the deploy), NAME's nodes are removed from
those hosts by the records habench keeps there (HOST_DIR/NAME/NODE.habench.json), without
the state file: when it was lost, or the cluster was deployed from another machine.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if all && len(args) > 0 {
				return usagef("destroy: give a NAME or --all, not both")
			}
			if !all && len(args) != 1 {
				return usagef("destroy: want a cluster NAME or --all")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sb := g.store()
			ctx := cmd.Context()
			sb.Notice = func(line string) { fmt.Fprintln(cmd.OutOrStdout(), line) }
			fromHosts := &topology.Spec{}
			if err := hostsOpts.applyHosts(cmd, fromHosts); err != nil {
				return err
			}
			if fromHosts.IsHosts() {
				return destroyFromHosts(cmd, sb, all, args, fromHosts)
			}
			if all {
				// The store asks the destroy hooks (knob: pending restores; links: impairments
				// on hosts) before it changes anything.
				cs, _ := sb.List()
				if err := sb.DestroyAll(ctx); err != nil {
					return err
				}
				forgot := 0
				for _, c := range cs {
					if !c.Deployed() {
						forgot++
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "destroyed %d cluster(s)", len(cs)-forgot)
				if forgot > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), ", forgot %d existing cluster(s) (their servers were not touched)", forgot)
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return nil
			}
			c, lerr := sb.Load(args[0])
			if err := sb.Destroy(ctx, args[0]); err != nil {
				if errors.Is(err, cluster.ErrNotFound) {
					return &topology.FieldError{Field: "name", Value: args[0], Reason: "no such cluster (habench status lists them)"}
				}
				return err
			}
			if lerr == nil && !c.Deployed() {
				fmt.Fprintf(cmd.OutOrStdout(), "forgot %s cluster %s: only its registration was removed; its servers were not touched and keep running\n", c.Provider().Name(), args[0])
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "destroyed %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "destroy every cluster in the state directory")
	addHostsFlags(cmd.Flags(), hostsOpts)
	cmd.Flags().Lookup("hosts").Usage = "remove NAME from these hosts by habench's records there, without the state file (comma-separated ssh destinations)"
	return cmd
}

// destroyFromHosts is `destroy NAME --hosts ...`: NAME's nodes removed from the hosts by
// their records (cluster.DestroyFromHosts), one line per host. A cluster the state file
// still has is destroyed without --hosts (the state knows its hosts and processes); a
// state file that cannot be read is reported and nothing is removed.
func destroyFromHosts(cmd *cobra.Command, sb *cluster.Store, all bool, args []string, s *topology.Spec) error {
	if all {
		return usagef("destroy --hosts: give a cluster NAME, not --all")
	}
	_, err := sb.Load(args[0])
	if err == nil {
		return usagef("destroy --hosts: cluster %s is in the state directory: habench destroy %s (without --hosts)", args[0], args[0])
	}
	if !errors.Is(err, cluster.ErrNotFound) { // a state file that cannot be read: not proof there is none
		return fmt.Errorf("destroy --hosts: cluster %s: %w; nothing removed", args[0], err)
	}
	lines, err := sb.DestroyFromHosts(cmd.Context(), args[0], s.Hosts, s.HostDir, s.SSH)
	for _, l := range lines {
		fmt.Fprintln(cmd.OutOrStdout(), l)
	}
	return err
}

// kindsHelp lists the registered kinds with their one-line summaries, for --kind.
func kindsHelp() string {
	var out []string
	for _, k := range topology.Kinds() {
		d := topology.KindOf(k)
		if d.Summary != "" {
			out = append(out, fmt.Sprintf("%s: %s", k, d.Summary))
		} else {
			out = append(out, string(k))
		}
	}
	return strings.Join(out, "; ")
}

// checkListedKnobs checks the spec's knob names against the committed variable list of its
// installation's flavor and version (on hosts: the hosts' server) before anything is
// deployed (knob.ListedNames; without a list, or an installation, the deploy's own check
// on the servers decides). The installation is resolved through sb, which the deploy
// then reuses.
func checkListedKnobs(ctx context.Context, sb *cluster.Store, spec topology.Spec) error {
	ks, err := topology.KnobsFromMap(spec.Knobs)
	if err != nil || len(ks) == 0 {
		return err
	}
	bins, err := sb.SpecBinaries(ctx, spec)
	if err != nil {
		return nil
	}
	caps := bins.Caps()
	if n, ok := knob.ListedNames(caps.Flavor, caps.Version, spec.Is(topology.Galera)); ok {
		return n.Check(ks)
	}
	return nil
}
