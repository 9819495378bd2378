package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
)

// TestAgentHostRefusal: the check before a deploy on hosts applies the link agent's rule:
// one host without sch_netem puts the agent on every host, so a host with sch_netem but
// no TUN device is refused then (naming it and the host without netem); a host with
// neither is refused; hosts that all have sch_netem, or all a TUN device, pass.
func TestAgentHostRefusal(t *testing.T) {
	hosts := []string{"db1", "db2"}
	ok := netem.HostCheck{}
	noNetem := netem.HostCheck{NoNetem: "no sch_netem module"}
	noTUN := netem.HostCheck{NoTUN: "no /dev/net/tun"}
	neither := netem.HostCheck{NoNetem: "no sch_netem module", NoTUN: "no /dev/net/tun"}
	for _, tc := range []struct {
		checks []netem.HostCheck
		host   int
		want   string
	}{
		{[]netem.HostCheck{ok, ok}, -1, ""},
		{[]netem.HostCheck{noTUN, noTUN}, -1, ""}, // netem everywhere: no agent
		{[]netem.HostCheck{noNetem, noNetem}, -1, ""},
		{[]netem.HostCheck{noNetem, noTUN}, 1, "no /dev/net/tun, and host db1 lacks sch_netem (no sch_netem module), so every host needs the link agent"},
		{[]netem.HostCheck{noTUN, noNetem}, 0, "host db2 lacks sch_netem"},
		{[]netem.HostCheck{ok, neither}, 1, "no sch_netem module, and no /dev/net/tun"},
	} {
		i, why := agentHostRefusal(hosts, tc.checks)
		if i != tc.host || (tc.want == "") != (why == "") || !strings.Contains(why, tc.want) {
			t.Errorf("%+v: host %d %q, want host %d %q", tc.checks, i, why, tc.host, tc.want)
		}
	}
}

// TestAgentLinksRefusal: the link agent (one per host, one impairment per pair of hosts)
// refuses a link impaired between two nodes on one host and nodes on one host that need
// different impairments toward, or from, a node elsewhere; nodes on one host with the
// same rows, or each node on its own host, pass.
func TestAgentLinksRefusal(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	shared := []string{"db1", "db1", "db2"}
	d := func(ms int) netem.Impairment { return netem.Impairment{Delay: time.Duration(ms) * time.Millisecond} }
	spec := func(set func(s *netem.Spec)) *netem.Spec {
		s, err := netem.NewSpec(nodes)
		if err != nil {
			t.Fatal(err)
		}
		set(s)
		return s
	}
	for _, tc := range []struct {
		name      string
		hosts     []string
		spec      *netem.Spec
		link, why string
	}{
		{"same rows", shared, spec(func(s *netem.Spec) {
			for _, l := range [][2]string{{"n1", "n3"}, {"n2", "n3"}, {"n3", "n1"}, {"n3", "n2"}} {
				s.SetLink(l[0], l[1], d(10))
			}
		}), "", ""},
		{"own hosts", []string{"db1", "db2", "db3"}, spec(func(s *netem.Spec) { s.SetNode("n1", d(10)) }), "", ""},
		{"within a host", shared, spec(func(s *netem.Spec) { s.SetLink("n2", "n1", d(5)) }), "n2->n1", "run on the same host db1"},
		{"outgoing rows differ", shared, spec(func(s *netem.Spec) { s.SetLink("n2", "n3", d(10)) }), "n2->n3", "both go from host db1 to host db2"},
		{"incoming differ", shared, spec(func(s *netem.Spec) { s.SetLink("n3", "n1", d(10)) }), "n3->n2", "both go from host db2 to host db1"},
	} {
		link, why := links.AgentRefusal(nodes, tc.hosts, tc.spec)
		if link != tc.link || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %q %q, want %q with %q", tc.name, link, why, tc.link, tc.why)
		}
	}
}
