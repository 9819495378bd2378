package scenario_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

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

// A via value may restart the proxy with other health checks: {proxy: {...}} over the
// topology's proxy: section, labelled by what it changes, proxy cells all; the dry run
// names the checks of each such cell and counts the proxy's restarts in its estimate.
func TestViaAxisChecks(t *testing.T) {
	s := mustParse(t, strings.Replace(viaTopologies, "%s", "", 1)+
		"sweep:\n  topology: [gal]\n  via: [direct, proxy, {proxy: {check_interval: 2s}}, {proxy: {fall: 2, check_interval: 200ms}}, {proxy: {fall: 3}}]\n  reference: {via: proxy check 2s}\n")
	p, err := s.Plan("full")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.AxisNamed("via").Labels(), ","); got != "direct,proxy,proxy check 2s,proxy check 200ms fall 2,proxy fall 3" {
		t.Errorf("labels %s", got)
	}
	var got []string
	for _, c := range p.Cells {
		got = append(got, fmt.Sprintf("%s/%s/%v", c.Values["via"], c.Via, c.ProxyChecks.CheckInterval))
	}
	if want := "direct/direct/0s proxy/proxy/0s proxy check 2s/proxy/2s proxy check 200ms fall 2/proxy/200ms proxy fall 3/proxy/0s"; strings.Join(got, " ") != want {
		t.Errorf("cells %v, want %s", got, want)
	}
	if c := p.Cells[3]; c.ProxyChecks.Fall != 2 || c.ProxyChecks.Rise != 0 || len(p.Deployments) != 1 {
		t.Errorf("cell 4's checks %+v (want fall 2, rise the topology's) in %d deployments (want 1)", c.ProxyChecks, len(p.Deployments))
	}
	// Two restarts: with 2 s checks (1 s + 3 x 2 s), then the topology's 200 ms (1 s + 3 x 200 ms).
	if d := p.Cells[2].Estimate - p.Cells[1].Estimate; d != 8600*time.Millisecond {
		t.Errorf("cell 3's estimate is %v over a plain proxy cell's, want 8.6s", d)
	}
	var b strings.Builder
	p.Print(&b, nil)
	for _, want := range []string{"via [direct, proxy, proxy check 2s, proxy check 200ms fall 2, proxy fall 3] (changes against proxy check 2s)",
		"via=proxy check 200ms fall 2  ~", "(the proxy restarted with checks every 200ms, down after 2 failed, up after 2 passed; with the topology's own after the run)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, b.String())
		}
	}
	// The topology's own checks (fall 3) need no restart.
	if p.Cells[4].Estimate != p.Cells[1].Estimate {
		t.Errorf("a value with the topology's own checks: estimate %v, a plain proxy cell's %v", p.Cells[4].Estimate, p.Cells[1].Estimate)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if (strings.Contains(l, "via=proxy  ~") || strings.Contains(l, "via=proxy fall 3  ~")) && strings.Contains(l, "restarted") {
			t.Errorf("a cell with the topology's own checks restarts the proxy: %s", l)
		}
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
		{"", "sweep: {via: [direct, {proxy: {fall: 2}}]}\n", "sweep.via", "proxy fall 2", "topology asy has no proxy"},
		{"", "sweep: {topology: [gal], via: [{proxy: {check_interval: 5ms}}]}\n", "sweep.via.proxy.check_interval", "5ms", "want at least 10ms"},
		{"", "sweep: {topology: [gal], via: [{proxy: {check_interval: 0}}]}\n", "sweep.via.proxy.check_interval", "0s", "want at least 10ms"},
		{"", "sweep: {topology: [gal], via: [{proxy: {check_interval: 2}}]}\n", "sweep.via.proxy.check_interval", "2", "with its unit"},
		{"", "sweep: {topology: [gal], via: [{proxy: {fall: 101}}]}\n", "sweep.via.proxy.fall", "101", "want 1 to 100"},
		{"", "sweep: {topology: [gal], via: [{proxy: {rise: 0}}]}\n", "sweep.via.proxy.rise", "0", "want 1 to 100"},
		{"", "sweep: {topology: [gal], via: [{proxy: {fall: -2}}]}\n", "sweep.via.proxy.fall", "-2", "want 1 to 100"},
		{"", "sweep: {topology: [gal], via: [{proxy: {check_interval: -1s}}]}\n", "sweep.via.proxy.check_interval", "-1s", "want at least 10ms"},
		{"", "sweep: {topology: [gal], via: [{proxy: {read: false}}]}\n", "sweep.via.proxy.read", "false", "want check_interval, fall or rise"},
		{"", "sweep: {topology: [gal], via: [{proxy: {}}]}\n", "sweep.via.proxy", "", "want the health checks to change"},
		{"", "sweep: {topology: [gal], via: [{direct: {fall: 2}}]}\n", "sweep.via", "direct", "want direct, proxy, or proxy with health checks"},
		{"", "sweep: {topology: [gal], via: [{proxy: {fall: 2}}, {proxy: {fall: 2}}]}\n", "sweep.via", "proxy fall 2", "value given twice"},
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

// Health checks habench cannot set are refused per topology: the user's proxy.config,
// MySQL Router's static routes, ProxySQL's shortest interval.
func TestViaChecksRefused(t *testing.T) {
	for _, c := range []struct{ proxy, value, why string }{
		{"{type: haproxy, config: /etc/my.cfg}", "proxy check 2s", "topology p's proxy runs your configuration (proxy.config /etc/my.cfg): habench does not change its health checks"},
		{"{type: mysqlrouter, binary: /usr/bin/mysqlrouter}", "proxy check 2s", "topology p: MySQL Router's static routes have no health checks"},
		{"{type: proxysql, binary: /usr/bin/proxysql}", "proxy check 50ms", "ProxySQL's monitor takes at least 100ms"},
	} {
		via := "{check_interval: " + strings.TrimPrefix(c.value, "proxy check ") + "}"
		y := "name: v\ntopologies: [{name: p, kind: galera, flavor: mariadb, nodes: 3, proxy: " + c.proxy + "}]\n" +
			"workload: {test: oltp_read_write, options: {time: 10}}\nsweep: {via: [proxy, {proxy: " + via + "}]}\n"
		s, err := scenario.ParseScenario([]byte(y))
		if err == nil {
			_, err = s.Plan("full")
		}
		if err == nil || !strings.Contains(err.Error(), `sweep.via "`+c.value+`"`) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("proxy %s: %v, want sweep.via %q refused: %s", c.proxy, err, c.value, c.why)
		}
	}
}
