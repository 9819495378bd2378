package experiment

import (
	"github.com/habench/habench/schema"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
)

// TestScenarioExistingAndKnobs: scenario topologies may name a registered cluster or give
// dsns (provider existing) and carry knobs; bad knobs and links on existing clusters are
// errors naming the field.
func TestScenarioExistingAndKnobs(t *testing.T) {
	ok := `name: x
topologies:
  - {provider: existing, cluster: reg1, knobs: {sync_binlog: 1}}
  - name: ex2
    provider: existing
    dsns: ["tcp(127.0.0.1:3306)/"]
    user: habench
    password: pw
    kind: async
  - {name: sb, kind: async, flavor: mariadb, knobs: {"n2:wsrep_slave_threads": 4, "gcs.fc_limit": 64}}
workload: {test: oltp_read_write}
`
	s, err := scenario.ParseScenario([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if t0 := s.Topologies[0]; !t0.IsExisting() || t0.Name != "reg1" || t0.Knobs["sync_binlog"] != "1" {
		t.Errorf("cluster reference: %+v", t0)
	}
	if t1 := s.Topologies[1]; t1.DSNs[0] != "tcp(127.0.0.1:3306)/" || t1.Password != "pw" || t1.Nodes != 0 || t1.Installation.Kind != "" {
		t.Errorf("dsns: %+v", t1)
	}
	base := "name: x\nworkload: {test: oltp_read_write}\ntopologies:\n"
	if _, err := scenario.ParseScenario([]byte(base + "  - {name: e, provider: existing, dsns: [\"u:p@tcp(127.0.0.1:1)/\", \"u:p@tcp(127.0.0.2:1)/\"], ssh: {user: root}}\nlinks: 1ms\n")); err != nil {
		t.Errorf("links on an existing topology with ssh: %v", err)
	}
	// Parse only; under the test harness's network guard addresses outside this machine
	// and names are refused (no route is used, no name looked up).
	t.Setenv(cluster.NetworkGuardEnv, "1")
	for in, want := range map[string]string{
		base + "  - {name: a, kind: single, flavor: mariadb, knobs: {\"n1;x\": 1}}\n":            `topologies[0]: knobs.n1;x`,
		base + "  - {name: a, kind: single, flavor: mariadb, knobs: {sync_binlog: ''}}\n":        "empty value",
		base + "  - {name: e, provider: existing}\n":                                             "dsns",
		base + "  - {provider: existing, cluster: r, dsns: [x]}\n":                               "give cluster or dsns",
		base + "  - {provider: existing, cluster: r, options: {a: 1}}\n":                         "options",
		base + "  - {provider: existing, cluster: r}\nlinks: 1ms\n":                              "topologies[0].provider",
		base + "  - {name: a, kind: single, flavor: mariadb, dsns: [x]}\n":                       "only with provider: existing",
		base + "  - {name: a, kind: single, flavor: mariadb, provider: cloud}\n":                 `provider "cloud"`,
		base + "  - {name: e, provider: existing, dsns: [garbage]}\n":                            `topologies[0]: dsns[0] "garbage"`,
		base + "  - {name: e, provider: existing, dsns: [\"u:pw@tcp(192.0.2.10:3306)/\"]}\n":     `topologies[0]: dsns[0] "u:***@tcp(192.0.2.10:3306)/": host 192.0.2.10: destination 192.0.2.10: routed via`,
		base + "  - {name: e, provider: existing, dsns: [\"u:pw@tcp(db.example.com:3306)/\"]}\n": `topologies[0]: dsns[0] "u:***@tcp(db.example.com:3306)/": host "db.example.com": want an IP address: under HABENCH_TEST_NETWORK_GUARD=1`,
	} {
		_, err := scenario.ParseScenario([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want it to mention %s", in, err, want)
		}
	}
}

// TestReportKnobs: report.md lists the knobs per node with before, effective (bold when
// the server took another value) and restored values.
func TestReportKnobs(t *testing.T) {
	r0, r1 := "0", "134217728"
	yes := true
	m := &schema.Manifest{Habench: map[string]string{"version": "t"}, Workload: schema.ManifestWorkload{Name: "oltp_read_write"},
		Topology: &topology.Spec{Name: "e", Kind: topology.Async, Nodes: 2, Flavor: topology.MariaDB, Provider: topology.ProviderExisting},
		Knobs: &schema.Knobs{Requested: []string{"sync_binlog=5", "innodb_buffer_pool_size=200000000"}, Restored: &yes, Nodes: []schema.KnobValue{
			{Node: "n1", Knob: "sync_binlog", Variable: "sync_binlog", Method: string(knob.MethodSetGlobal), Requested: "5", Before: "0", Effective: "5", Matches: true, Restored: &r0},
			{Node: "n1", Knob: "innodb_buffer_pool_size", Variable: "innodb_buffer_pool_size", Method: string(knob.MethodSetGlobal), Requested: "200000000", Before: "134217728", Effective: "199229440", Restored: &r1},
		}}}
	r := Report(m, &schema.Summary{})
	for _, w := range []string{"## Knobs", "`sync_binlog=5 innodb_buffer_pool_size=200000000`", "Restored after the run",
		"| n1 | sync_binlog=5 | sync_binlog | set_global | 0 | 5 | 0 |", "| **199229440** | 134217728 |"} {
		if !strings.Contains(r, w) {
			t.Errorf("report lacks %q:\n%s", w, r)
		}
	}
}
