package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/habench/habench/schema"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
)

// clockHost is a remote host whose clock runs offset from this machine's (its `date
// +%s%N` answers now+offset), or that cannot be reached (fail).
type clockHost struct {
	name   string
	offset time.Duration
	fail   bool
	calls  int
}

func (h *clockHost) Name() string { return h.name }
func (h *clockHost) Run(_ context.Context, argv ...string) ([]byte, error) {
	h.calls++
	if h.fail {
		return nil, errors.New(h.name + ": connection refused")
	}
	if len(argv) != 2 || argv[0] != "date" {
		return nil, fmt.Errorf("unexpected %q", argv)
	}
	return fmt.Appendf(nil, "%d\n", time.Now().Add(h.offset).UnixNano()), nil
}
func (h *clockHost) ReadFile(context.Context, string) ([]byte, error) { return nil, errors.New("no") }
func (h *clockHost) Close() error                                     { return nil }

// measureClocks measures each remote host once (two nodes on db1: one measurement), sets
// every node's offset from its host's, leaves this machine's nodes at zero without
// measuring, records offset ± uncertainty in the hosts, and turns a host it cannot read
// into a ClockError and one warning, the run going on.
func TestMeasureClocks(t *testing.T) {
	db1 := &clockHost{name: "ssh db1", offset: 250 * time.Millisecond}
	db2 := &clockHost{name: "ssh db2", offset: -40 * time.Millisecond}
	db3 := &clockHost{name: "ssh db3", fail: true}
	nodes := []sampler.Node{
		{Name: "n1", Host: db1, HostName: db1.name},
		{Name: "n2", Host: db2, HostName: db2.name},
		{Name: "n3", Host: db1, HostName: db1.name},
		{Name: "n4", Host: db3, HostName: db3.name},
	}
	hosts := hostInfos(nodes)
	warns := measureClocks(context.Background(), nodes, hosts)
	if db1.calls != host.DefaultClockRounds || db2.calls != host.DefaultClockRounds {
		t.Errorf("reads of db1, db2: %d, %d, want %d each (one measurement per host)", db1.calls, db2.calls, host.DefaultClockRounds)
	}
	near := func(got, want time.Duration) bool { return (got - want).Abs() < 20*time.Millisecond }
	for _, c := range []struct {
		i    int
		want time.Duration
	}{{0, 250 * time.Millisecond}, {1, -40 * time.Millisecond}, {2, 250 * time.Millisecond}} {
		if n := nodes[c.i]; !near(n.ClockOffset, c.want) || n.ClockUncertainty < 0 || n.ClockUncertainty > 20*time.Millisecond {
			t.Errorf("%s: offset %v ± %v, want about %v", n.Name, n.ClockOffset, n.ClockUncertainty, c.want)
		}
	}
	if n := nodes[3]; n.ClockOffset != 0 || n.ClockUncertainty != 0 {
		t.Errorf("n4 (host unreachable): offset %v ± %v, want zero", n.ClockOffset, n.ClockUncertainty)
	}
	if len(hosts) != 3 || hosts[0].OffsetMs == nil || math.Abs(*hosts[0].OffsetMs-250) > 20 || hosts[0].UncertaintyMs == nil ||
		hosts[1].OffsetMs == nil || math.Abs(*hosts[1].OffsetMs+40) > 20 || hosts[2].OffsetMs != nil || !strings.Contains(hosts[2].ClockError, "connection refused") {
		b, _ := json.Marshal(hosts)
		t.Errorf("hosts %s", b)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "ssh db3") || !strings.Contains(warns[0], "n4") || strings.Contains(warns[0], "\n") {
		t.Errorf("warnings %q, want one line on db3", warns)
	}

	// A local sandbox: nothing measured, the manifest's hosts exactly as before.
	local := []sampler.Node{{Name: "n1", Host: host.Local{Netns: "hb-x-n1"}, HostName: "local"}, {Name: "n2", Host: host.Local{Netns: "hb-x-n2"}, HostName: "local"}}
	lh := hostInfos(local)
	if w := measureClocks(context.Background(), local, lh); len(w) != 0 {
		t.Errorf("local: warnings %q", w)
	}
	hostServers(nil, lh, local, []schema.NodeInfo{{Name: "n1", Version: "10.11.6-MariaDB"}})
	if b, _ := json.Marshal(lh); string(b) != `[{"name":"local","nodes":["n1","n2"]}]` {
		t.Errorf("local hosts %s", b)
	}
}

// hostServers names the hosts provider's recorded server of a remote host, else the
// versions its nodes report.
func TestHostServers(t *testing.T) {
	db1, db2 := &clockHost{name: "ssh db1"}, &clockHost{name: "ssh db2"}
	nodes := []sampler.Node{{Name: "n1", Host: db1, HostName: db1.name}, {Name: "n2", Host: db2, HostName: db2.name}, {Name: "n3", Host: db1, HostName: db1.name}}
	infos := []schema.NodeInfo{{Name: "n1", Version: "10.11.6-MariaDB"}, {Name: "n2", Version: "10.11.6-MariaDB"}, {Name: "n3", Version: "10.11.7-MariaDB"}}
	hosts := hostInfos(nodes)
	hostServers(nil, hosts, nodes, infos)
	if hosts[0].Server != "10.11.6-MariaDB, 10.11.7-MariaDB" || hosts[1].Server != "10.11.6-MariaDB" {
		t.Errorf("from the nodes: %q, %q", hosts[0].Server, hosts[1].Server)
	}
	c := &cluster.Cluster{Nodes: []*cluster.Node{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}},
		Hosts: &cluster.HostsState{Dests: []string{"db1", "db2", "db1"}, Servers: map[string]string{"db1": "/usr/sbin/mariadbd: mariadbd Ver 10.11.6"}}}
	hosts = hostInfos(nodes)
	hostServers(c, hosts, nodes, infos)
	if hosts[0].Server != "/usr/sbin/mariadbd: mariadbd Ver 10.11.6" || hosts[1].Server != "10.11.6-MariaDB" {
		t.Errorf("hosts provider: %q, %q", hosts[0].Server, hosts[1].Server)
	}
}

// The run's report.md names the hosts with their offsets, warns when an offset is less
// certain than the largest applier lag, and says where the page cache was dropped; a
// local run's report has none of it.
func TestRunReportHosts(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	m := &schema.Manifest{Habench: map[string]string{"version": "x"}, Workload: schema.ManifestWorkload{Name: "oltp_read_write"}, Links: map[string]any{},
		Hosts:      []schema.HostInfo{{Name: "ssh db1", Nodes: []string{"n1"}, OffsetMs: f(0.5), UncertaintyMs: f(0.25)}, {Name: "ssh db2", Nodes: []string{"n2"}, OffsetMs: f(-0.125), UncertaintyMs: f(0.03)}},
		CacheDrops: []schema.CacheDrop{{Host: "ssh db1", Nodes: []string{"n1"}, TookS: 1.25}}}
	s := &schema.Summary{Nodes: []schema.NodeLag{{Node: "n1"}, {Node: "n2", ApplierLagMaxS: f(0.0001)}}}
	md := Report(m, s)
	for _, w := range []string{"- hosts: ssh db1 (n1): clock +0.500 ± 0.250 ms; ssh db2 (n2): clock -0.125 ± 0.030 ms (clock = ",
		"- **warning:** the clock offsets of ssh db1 ± 0.250 ms are less certain than the largest applier lag reported (0.100 ms)",
		"- page cache: dropped before the run (sync; echo 3 > /proc/sys/vm/drop_caches) on ssh db1 (n1) in 1.2 s"} {
		if !strings.Contains(md, w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	s.Nodes[1].ApplierLagMaxS = f(0.001)
	if md := Report(m, s); strings.Contains(md, "less certain") {
		t.Error("warning with an applier lag above every uncertainty")
	}
	m.Hosts, m.CacheDrops = []schema.HostInfo{{Name: "local", Nodes: []string{"n1", "n2"}}}, nil
	if md := Report(m, s); strings.Contains(md, "- hosts:") || strings.Contains(md, "page cache") {
		t.Errorf("a local run's report names hosts or a cache drop:\n%s", md)
	}
}

// cell.drop_caches is refused in one line for an existing cluster habench cannot reach
// the hosts of: at scenario read time for dsns without ssh:, and by DropClusterCaches
// for a registered cluster without ssh:.
func TestDropCachesNeedsHostAccess(t *testing.T) {
	base := "name: x\nworkload: {test: oltp_read_write}\ncell: {drop_caches: true}\ntopologies:\n"
	_, err := scenario.ParseScenario([]byte(base + "  - {name: sb, kind: single, flavor: mariadb}\n  - {name: ex, provider: existing, dsns: [\"u:p@tcp(127.0.0.1:1)/\"]}\n"))
	if err == nil || !strings.Contains(err.Error(), `cell.drop_caches "true": topologies[1] ex is an existing cluster without ssh`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("dsns without ssh: %v", err)
	}
	for _, ok := range []string{
		"  - {name: ex, provider: existing, dsns: [\"u:p@tcp(127.0.0.1:1)/\"], ssh: {user: root}}\n",
		"  - {provider: existing, cluster: reg1}\n", // checked when the run loads it
		"  - {name: sb, kind: single, flavor: mariadb}\n",
	} {
		if _, err := scenario.ParseScenario([]byte(base + ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	c := &cluster.Cluster{Name: "reg1", ProviderName: topology.ProviderExisting, Nodes: []*cluster.Node{{Name: "n1", Host: "127.0.0.1", Port: 3306}}}
	drops, err := DropClusterCaches(context.Background(), c)
	var fe *topology.FieldError
	if err == nil || drops != nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), "drop the page cache of its hosts") || !strings.Contains(err.Error(), "no ssh: access") {
		t.Errorf("existing cluster without ssh: %v", err)
	}
}
