package scenario_test

import (
	"strings"
	"testing"

	"github.com/habench/habench/scenario"
)

// TestScenarioClients: clients: as a list and as a mapping; refused in one line naming
// the field: a client twice, ssh hosts under clients, bad ssh fields, and what the
// clients cannot run (writer auto by default on a single-primary group, via proxy,
// client failover with faults on Galera); accepted once the file says writer fixed or
// failover off. A local sandbox's servers are refused to clients unless allow_shared
// (CheckClientsReach).
func TestScenarioClients(t *testing.T) {
	const head = "name: c\nworkload:\n  test: oltp_read_write\n  options: {time: 10, threads: 4}\n"
	galera := "topologies:\n  - {name: g, kind: galera, nodes: 3, flavor: mariadb}\n"
	group := "topologies:\n  - {name: gr, kind: group, nodes: 3, flavor: mysql}\n"
	faults := "faults:\n  - {at: 3s, action: kill, node: n2}\n"
	for _, c := range []struct {
		name, yaml, want string
	}{
		{"list", head + galera + "clients: [lg1, lg2]\n", ""},
		{"mapping", head + galera + "clients:\n  hosts: [lg1, lg2]\n  ssh: {user: bench, port: 2222}\n  bin: /usr/local/bin/habench\n  allow_shared: true\n", ""},
		{"twice", head + galera + "clients: [lg1, lg1]\n", `clients "lg1,lg1": lg1 given twice`},
		{"empty host", head + galera + "clients: [lg1, '']\n", `clients "lg1,": client 2 "": want an ssh destination`},
		{"ssh hosts", head + galera + "clients:\n  hosts: [lg1]\n  ssh: {hosts: [x]}\n", `clients.ssh.hosts "x": the clients are the hosts`},
		{"ssh port", head + galera + "clients:\n  hosts: [lg1]\n  ssh: {port: 70000}\n", `clients.ssh.port "70000"`},
		{"unknown key", head + galera + "clients:\n  hosts: [lg1]\n  sshh: {}\n", "sshh"},
		{"group writer auto", head + group + "clients: [lg1]\n", `clients "lg1": topologies[0] gr: its workers would follow the writer`},
		{"group writer fixed", strings.Replace(head, "workload:\n", "workload:\n  writer: fixed\n", 1) + group + "clients: [lg1]\n", ""},
		{"via proxy", strings.Replace(head, "workload:\n", "workload:\n  via: proxy\n", 1) + "topologies:\n  - {name: g, kind: galera, nodes: 3, flavor: mariadb, proxy: haproxy}\nclients: [lg1]\n", "through the proxy"},
		{"galera faults failover auto", head + galera + faults + "clients: [lg1]\n", `topologies[0] g: with faults its workers would fail over between nodes, which the clients cannot: give workload.failover: off`},
		{"galera faults failover off", strings.Replace(head, "workload:\n", "workload:\n  failover: off\n", 1) + galera + faults + "clients: [lg1]\n", ""},
	} {
		s, err := scenario.ParseScenario([]byte(c.yaml))
		if err == nil {
			err = s.CheckClientsReach("clients")
			if strings.Contains(c.yaml, "allow_shared") != (err == nil) {
				t.Errorf("%s: a local sandbox with clients: %v; want refused unless allow_shared", c.name, err)
			}
			err = nil
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && len(s.Clients.Hosts) == 0:
			t.Errorf("%s: no clients read", c.name)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
	}
}
