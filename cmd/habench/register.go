package main

import (
	"context"
	"fmt"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

type registerOpts struct {
	file     string
	name     string
	dsns     []string
	user     string
	password string
	kind     string
	flavor   string

	ssh         bool
	sshHosts    []string
	sshUser     string
	sshPort     int
	sshIdentity string
	sshConfig   string
	sshOptions  []string
}

var sshFlags = []string{"ssh", "ssh-host", "ssh-user", "ssh-port", "ssh-identity", "ssh-config", "ssh-option"}

// sshSpec returns the --ssh* flags as a topology.SSHSpec; nil when none is given.
func (o *registerOpts) sshSpec(cmd *cobra.Command) *topology.SSHSpec {
	given := false
	for _, f := range sshFlags {
		given = given || cmd.Flags().Changed(f)
	}
	if !given {
		return nil
	}
	return &topology.SSHSpec{Hosts: o.sshHosts, User: o.sshUser, Port: o.sshPort, Identity: o.sshIdentity, Config: o.sshConfig, Options: o.sshOptions}
}

func (o *registerOpts) spec(cmd *cobra.Command) (topology.Spec, error) {
	var s topology.Spec
	if o.file != "" {
		for _, f := range append([]string{"dsn", "user", "password", "kind", "flavor"}, sshFlags...) {
			if cmd.Flags().Changed(f) {
				return s, usagef("--%s: not allowed with -f (put it in %s)", f, o.file)
			}
		}
		b, err := readInputFile(o.file, "topology")
		if err != nil {
			return s, usageError{fmt.Errorf("-f %q: %w", o.file, err)}
		}
		if s, err = topology.ParseSpecYAML(b); err != nil {
			return s, usageError{fmt.Errorf("-f %q: %w", o.file, err)}
		}
		if s.Provider != "" && !s.IsExisting() {
			return s, &topology.FieldError{Field: "provider", Value: s.Provider, Reason: "register takes provider: existing (habench deploy deploys sandboxes)"}
		}
		if o.name != "" {
			s.Name = o.name
		}
	} else {
		s = topology.Spec{Name: o.name, Kind: topology.Kind(o.kind), Flavor: topology.Flavor(o.flavor),
			ExistingSpec: topology.ExistingSpec{DSNs: o.dsns, User: o.user, Password: o.password, SSH: o.sshSpec(cmd)}}
	}
	if s.Name == "" {
		return s, usagef("--name: required (1-10 lower-case letters and digits), or name: in the file")
	}
	s.Provider = topology.ProviderExisting
	s.Defaults()
	return s, nil
}

func newRegisterCmd(g *globalOpts) *cobra.Command {
	o := &registerOpts{}
	cmd := &cobra.Command{
		Use:   "register --name NAME (-f existing.yaml | --dsn DSN...)",
		Short: "Register an existing cluster (servers habench did not deploy): connect, discover roles, never change them",
		Long: `Registers servers someone else runs as a cluster habench can benchmark: habench connects to
each node (a go-sql-driver DSN, user:password@tcp(host:port)/, or tcp(host:port)/ with --user and
--password for all), discovers flavor, version and role (async/semi-sync source or
replica, Group Replication primary/secondary and a group's DR replicas, Galera node; a
Galera arbitrator is reported), infers the kind, and stores the registration like a
sandbox's state. habench sysbench --cluster NAME and scenarios then work as on a sandbox. habench
never deploys, restarts, stops or destroys these servers: destroy NAME only forgets the
registration; node start/stop, link impairment and read-only knobs are refused; runtime knobs
are restored after each run.

Hosts are IPv4/IPv6 addresses or host names, on any machine habench can reach. (Under
HABENCH_TEST_NETWORK_GUARD=1, which make test sets, only loopback and network namespaces on
this machine, and no names.)

SSH access to the hosts (for link impairments with tc; --ssh or any --ssh-* flag, or ssh: in the
file): habench runs the OpenSSH client, one connection per host kept for the whole command.
By default node i's host is its DSN's host and user, port, keys, agent and ProxyJump come from
your own ssh configuration; --ssh-host (one per node, in node order), --ssh-user, --ssh-port,
--ssh-identity, --ssh-config FILE (instead of ~/.ssh/config) and --ssh-option KEY=VALUE override
it. Every host is connected to (BatchMode: no prompts) before the cluster is registered.

File (habench deploy -f accepts it too):
  name: prod1
  provider: existing
  dsns: ["tcp(127.0.0.1:3306)/", "tcp(127.0.0.1:3307)/"]
  user: habench
  password: secret
  kind: async        # optional hint, checked against what is discovered
  flavor: mariadb    # optional hint
  knobs: {sync_binlog: 1}   # optional: set for every run on it, restored after
  ssh:                      # optional: access to the nodes' hosts
    hosts: [db1, db2]       # default: the DSNs' hosts
    user: root
    identity: ~/.ssh/id_ed25519`,
		Example: `  habench register --name ex1 --dsn 'habench:habench@tcp(127.0.0.1:23306)/' --dsn 'habench:habench@tcp(127.0.0.1:23307)/'
  habench register -f existing.yaml`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := o.spec(cmd)
			if err != nil {
				return err
			}
			return provide(cmd, g.store(), spec)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "existing-cluster YAML file (see above)")
	f.StringVar(&o.name, "name", "", "cluster name: 1-10 lower-case letters and digits")
	f.StringArrayVar(&o.dsns, "dsn", nil, "a node: user:password@tcp(host:port)/ or tcp(host:port)/ (repeatable, in node order n1, n2, ...)")
	f.StringVar(&o.user, "user", "", "user for DSNs without one")
	f.StringVar(&o.password, "password", "", "password for DSNs without a user")
	f.StringVar(&o.kind, "kind", "", "hint: single, async, semisync, group, group-dr or galera (checked against what is discovered)")
	f.StringVar(&o.flavor, "flavor", "", "hint: mysql, mariadb, percona or pxc")
	f.BoolVar(&o.ssh, "ssh", false, "reach the nodes' hosts over SSH (your ssh configuration, each node's DSN host)")
	f.StringArrayVar(&o.sshHosts, "ssh-host", nil, "ssh destination of a node (repeatable, one per node in node order; default the DSN's host)")
	f.StringVar(&o.sshUser, "ssh-user", "", "ssh user for every host (default: your ssh configuration's)")
	f.IntVar(&o.sshPort, "ssh-port", 0, "ssh port for every host (default: your ssh configuration's)")
	f.StringVar(&o.sshIdentity, "ssh-identity", "", "private key file (default: agent and your ssh configuration's keys)")
	f.StringVar(&o.sshConfig, "ssh-config", "", "ssh_config file to use instead of ~/.ssh/config (ssh -F)")
	f.StringArrayVar(&o.sshOptions, "ssh-option", nil, "extra ssh option KEY=VALUE (ssh -o; repeatable)")
	return cmd
}

// checkSpecKnobs reads the cluster's own knobs on its servers without changing anything,
// so an unknown variable fails at deploy/register time rather than at the first run.
func checkSpecKnobs(ctx context.Context, c *cluster.Cluster) error {
	if len(c.Spec.Knobs) == 0 {
		return nil
	}
	ks, err := topology.KnobsFromMap(c.Spec.Knobs)
	if err != nil {
		return err
	}
	_, err = knob.Check(ctx, c, ks)
	return err
}
