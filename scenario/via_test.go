package scenario_test

import (
	"strings"
	"testing"

	"github.com/habench/habench/scenario"
)

const viaTopologies = `name: via
topologies:
  - {name: gal, kind: galera, flavor: mariadb, nodes: 3, proxy: {type: haproxy, check_interval: 200ms}}
  - {name: asy, kind: async, flavor: mariadb, nodes: 2}
workload: {test: oltp_read_write, options: {time: 10}%s}
`

// A via axis puts direct and proxy cells of one deployment side by side, innermost
// after links; workload.via gives every cell one; the dry run names the proxy.
func TestViaAxis(t *testing.T) {
	s := mustParse(t, strings.Replace(viaTopologies, "%s", "", 1)+"sweep: {topology: [gal], via: [direct, proxy], threads: [1, 2]}\n")
	p, err := s.Plan("full")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Cells {
		got = append(got, c.Via+"/"+c.Values["threads"])
	}
	if strings.Join(got, " ") != "direct/1 direct/2 proxy/1 proxy/2" || len(p.Deployments) != 1 {
		t.Errorf("cells %v in %d deployments, want direct/1 direct/2 proxy/1 proxy/2 in one", got, len(p.Deployments))
	}
	if s := mustParse(t, strings.Replace(viaTopologies, "%s", ", read_nodes: {gal: [proxy]}", 1)); s.Workload.ReadNodes.For("gal")[0] != "proxy" {
		t.Errorf("read_nodes of gal: %v, want the proxy's read endpoint", s.Workload.ReadNodes.For("gal"))
	}
	var b strings.Builder
	p.Print(&b, nil)
	if !strings.Contains(b.String(), "proxy haproxy: checks every 200ms, a backend down after 3 failed, up after 2 passed; write and read endpoints") {
		t.Errorf("dry run without the proxy's line:\n%s", b.String())
	}
	s = mustParse(t, strings.Replace(viaTopologies, "%s", ", via: proxy", 1)+"sweep: {topology: [gal]}\n")
	if p, err = s.Plan("full"); err != nil || p.Cells[0].Via != scenario.ViaProxy {
		t.Errorf("workload.via proxy: %v, cell via %q", err, p.Cells[0].Via)
	}
	s, err = scenario.ParseScenario([]byte("name: g\ntopologies: [{name: grp, kind: group, flavor: mysql, proxy: haproxy}]\nworkload: {test: oltp_read_write, options: {time: 10}, via: proxy, writer: auto}\n"))
	if err == nil {
		_, err = s.Plan("full")
	}
	if err == nil || !strings.Contains(err.Error(), `workload.via "proxy": workload.writer auto`) {
		t.Errorf("via proxy with writer auto: %v, want refused", err)
	}
	s = mustParse(t, "name: g\ntopologies: [{name: grp, kind: group, flavor: mysql, proxy: haproxy}]\nworkload: {test: oltp_read_write, options: {time: 10}, writer: auto}\nsweep: {via: [direct, proxy]}\n")
	if _, err := s.Plan("full"); err != nil {
		t.Errorf("a via axis with writer auto (the direct cells'): %v", err)
	}
}

// What via cannot do is refused, naming the field and the value.
func TestViaRefused(t *testing.T) {
	for _, c := range []struct{ workload, sweep, field, value, why string }{
		{", via: carrier", "", "workload.via", "carrier", "want direct or proxy"},
		{", via: proxy", "", "workload.via", "proxy", "topology asy has no proxy"},
		{", nodes: [n1], via: proxy", "sweep: {topology: [gal]}\n", "workload.via", "proxy", "workload.nodes"},
		{"", "sweep: {via: [direct, proxy]}\n", "sweep.via", "proxy", "topology asy has no proxy"},
		{", read_nodes: {asy: [proxy]}", "", "workload.read_nodes.asy", "proxy", "topology asy has no proxy with a read endpoint"},
	} {
		s, err := scenario.ParseScenario([]byte(strings.Replace(viaTopologies, "%s", c.workload, 1) + c.sweep))
		if err == nil {
			_, err = s.Plan("full")
		}
		if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), `"`+c.value+`"`) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("workload%s %s: %v, want an error on %s %q saying %q", c.workload, c.sweep, err, c.field, c.value, c.why)
		}
	}
}
