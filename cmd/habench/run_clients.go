package main

import (
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/spf13/cobra"
)

// clientFlags are the flags that say how to reach the client hosts.
var clientFlags = []string{"client-bin", "allow-shared-client", "client-ssh-user", "client-ssh-port", "client-ssh-identity", "client-ssh-config", "client-ssh-option"}

// applyToScenario puts habench run's client flags into scenario s: --clients replaces
// the file's clients: (hosts, ssh, bin, allow_shared), then each other client flag given
// sets its own field of the clients (the file's or --clients'), one by one: a
// --client-ssh-* flag replaces that ssh field only. Clients given by --clients are
// reached as --hosts' --ssh-* flags say when those are given, before the --client-ssh-*
// flags apply. Refused in one line: a client flag without clients anywhere, and what
// Scenario.CheckClients refuses.
func (o *clientsOpts) applyToScenario(cmd *cobra.Command, s *scenario.Scenario, hosts *deployOpts) error {
	fl := cmd.Flags()
	if fl.Changed("clients") {
		s.Clients = topology.Clients{Hosts: o.clients}
		for _, f := range hostsFlags[2:] {
			if fl.Changed(f) {
				s.Clients.SSH = &topology.SSHSpec{User: hosts.sshUser, Port: hosts.sshPort, Identity: hosts.sshIdentity, Config: hosts.sshConfig, Options: hosts.sshOptions}
			}
		}
	}
	changed := false
	for _, f := range clientFlags {
		changed = changed || fl.Changed(f)
	}
	if !changed {
		return o.checkScenario(cmd, s)
	}
	if s.Clients.IsZero() {
		for _, f := range clientFlags {
			if fl.Changed(f) {
				return usagef("--%s: needs --clients, or clients: in the scenario", f)
			}
		}
	}
	c := &s.Clients
	if fl.Changed("client-bin") {
		c.Bin = o.bin
	}
	if fl.Changed("allow-shared-client") {
		c.AllowShared = o.allowShared
	}
	if c.SSH == nil {
		c.SSH = &topology.SSHSpec{}
	}
	sp := *c.SSH
	set := map[string]func(){
		"client-ssh-user": func() { sp.User = o.sshUser }, "client-ssh-port": func() { sp.Port = o.sshPort },
		"client-ssh-identity": func() { sp.Identity = o.sshIdentity }, "client-ssh-config": func() { sp.Config = o.sshConfig },
		"client-ssh-option": func() { sp.Options = o.sshOptions },
	}
	for f, apply := range set {
		if fl.Changed(f) {
			apply()
		}
	}
	c.SSH = &sp
	return o.checkScenario(cmd, s)
}

// checkScenario is Scenario.CheckClients, then CheckClientsReach (the topologies' providers are
// final here: --hosts applied).
func (o *clientsOpts) checkScenario(cmd *cobra.Command, s *scenario.Scenario) error {
	if err := s.CheckClients(o.field(cmd)); err != nil {
		return err
	}
	return s.CheckClientsReach(o.field(cmd))
}

// field is what the user gave the clients as: --clients, or the scenario's clients.
func (o *clientsOpts) field(cmd *cobra.Command) string {
	if cmd.Flags().Changed("clients") {
		return "--clients"
	}
	return "clients"
}
