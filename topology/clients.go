package topology

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Clients are the client hosts a run's workload is driven from instead of this machine
// (a scenario's `clients:`, `habench run --clients`, `habench sysbench run --clients`):
// each runs its share of the workload's threads and rate with its own habench
// (`habench client-run`, over SSH) and streams its numbers back to be merged.
//
// In a scenario it is a list of ssh destinations (`clients: [lg1, lg2]`) or a mapping:
//
//	clients:
//	  hosts: [lg1, lg2]
//	  ssh: {user: bench, identity: ~/.ssh/bench}   # as a topology's ssh:, without hosts
//	  bin: /usr/local/bin/habench                  # default: a copy of this habench
//	  allow_shared: true                           # a client host may be a server's host
type Clients struct {
	// Hosts are the clients, one ssh destination each (an address, a host name or a Host
	// alias of the ssh configuration), each once.
	Hosts []string `json:"hosts" yaml:"hosts"`
	// SSH is how to reach them (user, port, identity, config, options; not hosts). nil:
	// the user's own ssh configuration (on habench run, clients given with --clients and
	// no --client-ssh-* flag take --hosts' --ssh-* flags).
	SSH *SSHSpec `json:"ssh,omitempty" yaml:"ssh,omitempty"`
	// Bin is a habench of this version already on the client hosts (a path, or "habench"
	// for the one on their PATH); "": a copy of this habench, made on each client host in
	// a directory of its own for the run and removed after it.
	Bin string `json:"bin,omitempty" yaml:"bin,omitempty"`
	// AllowShared lets a client host also be a database server's host of the run.
	AllowShared bool `json:"allow_shared,omitempty" yaml:"allow_shared,omitempty"`
}

// IsZero reports whether no client is given (the workload runs in this process).
func (c Clients) IsZero() bool { return len(c.Hosts) == 0 }

// UnmarshalYAML reads `clients: [lg1, lg2]` as well as the mapping.
func (c *Clients) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var hosts []string
		if err := n.Decode(&hosts); err != nil {
			return err
		}
		*c = Clients{Hosts: hosts}
		return nil
	}
	if err := knownKeys(n, "clients", "hosts", "ssh", "bin", "allow_shared"); err != nil {
		return err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "ssh" {
			if err := knownKeys(n.Content[i+1], "clients.ssh", "hosts", "user", "port", "identity", "config", "options"); err != nil {
				return err
			}
		}
	}
	type plain Clients
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*c = Clients(v)
	return nil
}

// sshField is how the user gave the clients' ssh field f ("ssh.port"): the flag
// (--client-ssh-port) when the clients came from the command line (field "--clients"),
// else field.f (clients.ssh.port).
func sshField(field, f string) string {
	if !strings.HasPrefix(field, "--") {
		return field + "." + f
	}
	key := strings.TrimPrefix(f, "ssh.")
	if i := strings.IndexByte(key, '['); i >= 0 {
		key = key[:i] // options[0]: the flag's value
	}
	return "--client-ssh-" + strings.TrimSuffix(key, "s") // options -> option
}

// knownKeys refuses a key of mapping n (field names it) that is not one of keys, naming
// the line, the key and the keys there are; a node that is not a mapping is left to Decode.
func knownKeys(n *yaml.Node, field string, keys ...string) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(keys, k.Value) {
			return fmt.Errorf("line %d: %s: unknown key %q (want %s)", k.Line, field, k.Value, strings.Join(keys, ", "))
		}
	}
	return nil
}

// Validate checks the clients on their own; field is what the user wrote them as
// ("clients" in a scenario, "--clients" on the command line). Errors are *FieldError
// naming field (or field.ssh.KEY): no client, a client that is not an ssh destination, a
// client given twice, ssh hosts (the clients are the hosts), bad ssh fields.
func (c Clients) Validate(field string) error {
	list := strings.Join(c.Hosts, ",")
	if len(c.Hosts) == 0 {
		return &FieldError{Field: field, Value: list, Reason: "want at least one client host"}
	}
	for i, h := range c.Hosts {
		if h == "" || strings.ContainsAny(h, " \t\n,") {
			return &FieldError{Field: field, Value: list, Reason: fmt.Sprintf("client %d %q: want an ssh destination", i+1, h)}
		}
		for _, d := range c.Hosts[:i] {
			if d == h {
				return &FieldError{Field: field, Value: list, Reason: h + " given twice"}
			}
		}
	}
	if c.SSH == nil {
		return nil
	}
	if len(c.SSH.Hosts) > 0 {
		return &FieldError{Field: field + ".ssh.hosts", Value: strings.Join(c.SSH.Hosts, ","), Reason: "the clients are the hosts: give them as " + field + ".hosts"}
	}
	if err := c.SSH.Check(); err != nil {
		if fe, ok := err.(*FieldError); ok {
			return &FieldError{Field: sshField(field, fe.Field), Value: fe.Value, Reason: fe.Reason}
		}
		return err
	}
	return nil
}
