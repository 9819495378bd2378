package experiment_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestRunThroughProxy: oltp_read_write through HAProxy's write endpoint (checks every
// 200 ms) in front of a 3-node Galera cluster (MariaDB), the writer (the proxy's: where
// the application writes) killed 3 s in. The run reads the proxy's state every 100 ms:
// summary.json has the proxy's write servers in turn (the killed node, then another),
// the fault's proxy view (the old server marked down within a few checks, the next one)
// and the client's outage; proxy_events.csv, the proxy's CPU in samples.csv, the
// manifest's proxy and via, and report.md's Proxy and Failover timeline sections. The
// read-only statements go through the proxy's read endpoint (read_nodes: [proxy]). Then
// another run has other health checks (a via value's): the proxy is restarted with them
// for it, HAProxy is killed (not by a fault) 1 s in, the run fails naming it, and the
// proxy runs again with the topology's own checks afterwards (not those it ran before).
func TestRunThroughProxy(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	cluster.HabenchBinary = testenv.Habench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "viap"), topology.Galera, 3, topology.MariaDB)
	spec.Proxy = topology.ProxySpec{Type: topology.HAProxy, CheckInterval: 200 * time.Millisecond}
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	// 14 s: the kill at 3 s stalls Galera for about 6.5 s (until n1 is evicted), and the
	// workload must be back to normal before the end for the fault's recovery to be known
	// (a loaded run with 10 s had not).
	o := smallOptions(2, 14*time.Second)
	o.Tables, o.Rate = 1, behaviourRate
	b, stdout := preparedBench(ctx, t, s, c, "oltp_read_write", o)
	if b.Target, err = experiment.ProxyTarget(c, "sbtest", "via"); err != nil {
		t.Fatal(err)
	}
	// Reads through the proxy's read endpoint (the nodes that are not the writer).
	if err := experiment.WithReadNodes(c, &b.Target, []string{topology.ProxyName}); err != nil {
		t.Fatal(err)
	}
	b.Via = scenario.ViaProxy
	b.Faults = []scenario.FaultEvent{{At: schema.Duration(3 * time.Second), Action: "kill", Node: "writer"}}
	b.Probe, b.ProbeInterval = true, 20*time.Millisecond // the probe writer through the proxy too, at 50/s
	out, err := b.Run(ctx)
	t.Logf("output:\n%s", stdout.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sum := out.Summary
	p := sum.Proxy
	// A read may take longer than its 1 s bound on a saturated host (the run warns of it);
	// more than two such reads, or fewer than 50 good ones, is the watch failing.
	if p == nil || p.Type != topology.HAProxy || p.Polls-p.PollErrors < 50 || p.PollErrors > 2 || p.Error != "" || p.CPUCores == nil {
		t.Fatalf("summary proxy %+v: want haproxy read 50 times or more, at most 2 failed reads, its CPU sampled", p)
	}
	if len(sum.Faults) != 1 || sum.Faults[0].Proxy == nil {
		t.Fatalf("summary faults %+v: want the kill with the proxy's view", sum.Faults)
	}
	f := sum.Faults[0]
	fp := f.Proxy
	t.Logf("kill %s: proxy down after %v s (%d sessions), sessions gone %v, next %s after %v s; client down %v s, back %v s; write servers %v, %.1f s without",
		f.Node, deref(fp.DownS), fp.SessionsAtDown, deref(fp.LeftS), fp.NewServer, deref(fp.NewServerS), deref(f.ClientDownS), deref(f.RecoveryS), p.WriteServers, p.NoWriterS)
	// The write servers end with the killed node, then the next. On a CPU-saturated host
	// the proxy may have moved before the kill too (a node stalled past its checks: CI-like
	// run AH saw n1, n2, then n1 after n2's kill), which the run shows as it happened.
	if fp.Server != f.Node || fp.NewServer == f.Node || !endsWith(p.WriteServers, f.Node, fp.NewServer) {
		t.Errorf("proxy server at the kill %q, write servers %v, next %q: want the killed %s, then another", fp.Server, p.WriteServers, fp.NewServer, f.Node)
	}
	// Down after 3 failed checks 200 ms apart, each up to 2 s (the check server's timeout):
	// well within 10 s; the next server once Galera's view has changed.
	if fp.DownS == nil || *fp.DownS <= 0 || *fp.DownS > 10 || fp.NewServerS == nil || *fp.NewServerS > 20 {
		t.Errorf("proxy down after %v s, next server after %v s: want both seen, down within 10 s", deref(fp.DownS), deref(fp.NewServerS))
	}
	checkProbeViaProxy(t, sum, f)
	if rd := sum.PerEndpoint[experiment.ProxyReadLabel]; rd.ReadChecks == 0 || rd.Queries == 0 {
		t.Errorf("per endpoint %+v: want reads and read-your-writes checks on %s", sum.PerEndpoint, experiment.ProxyReadLabel)
	}
	if strings.Contains(f.PeakLagUnknown, topology.ProxyName) {
		t.Errorf("peak lag unknown %q: a proxy has no lag", f.PeakLagUnknown)
	}
	if f.ClientDownS == nil || f.RecoveryS == nil || *f.RecoveryS < *f.ClientDownS {
		t.Errorf("client down %v s, back %v s: want an outage through the proxy", deref(f.ClientDownS), deref(f.RecoveryS))
	}
	files := map[string]string{}
	for _, name := range []string{"manifest.json", "report.md", schema.ProxyEventsFile, "samples.csv"} {
		raw, err := os.ReadFile(filepath.Join(out.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(raw)
	}
	proxyDiesMidRun(ctx, t, s, b, c)
	for name, want := range map[string][]string{
		"manifest.json":        {`"via": "proxy"`, `"endpoints": [` + "\n" + `      "proxy"`, `"version": "HAProxy version`, `listen write`},
		"report.md":            {"## Proxy", "### Failover timeline", "kill | " + f.Node, "| stale commits |", " | 0 |\n", "Through the proxy's write endpoint, as the workload: commits acknowledged by " + strings.Join(sum.Probe.Writers, " then ") + "; 0 stale commits"},
		schema.ProxyEventsFile: {"at_s,endpoint,server,status,serving,sessions\n", ",write," + f.Node + ",DOWN,false,"},
		"samples.csv":          {",proxy,mysqld_cpu_cores,"},
	} {
		for _, w := range want {
			if !strings.Contains(files[name], w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
}

// checkProbeViaProxy: the probe writer went through the proxy (summary.json probe.via),
// its commits name the nodes that acknowledged them (@@server_id): the killed node f.Node
// before the kill, the proxy's next server after it; its stale commits counted (the view
// around the kill seen), 0 (the killed node cannot acknowledge anything: the windows
// themselves are TestStaleCommits*'s), for the run and for the fault; its lost
// acknowledged commits checked, none (Galera).
func checkProbeViaProxy(t *testing.T, sum *schema.Summary, f schema.FaultSummary) {
	t.Helper()
	p, fp := sum.Probe, f.Proxy
	if p == nil {
		t.Fatal("summary.json has no probe")
	}
	t.Logf("probe: via %q, %d acknowledged, %d failed, %d unknown, lost %d on %s, writers %v, stale %s (fault: %s)",
		p.Via, p.Acknowledged, p.Failed, p.Unknown, p.LostAcknowledged, p.CheckedOn, p.Writers, count(p.StaleCommits), count(fp.StaleCommits))
	if p.Via != scenario.ViaProxy || p.Error != "" || p.Acknowledged < 100 || p.LostAcknowledged != 0 {
		t.Errorf("probe %+v: want through the proxy, checked, 100 or more acknowledged commits (50/s for 14 s), none lost", p)
	}
	if !endsWith(p.Writers, f.Node, fp.NewServer) {
		t.Errorf("probe commits acknowledged by %v, want the killed %s, then the proxy's next server %s", p.Writers, f.Node, fp.NewServer)
	}
	if p.StaleCommits == nil || *p.StaleCommits != 0 || fp.StaleCommits == nil || *fp.StaleCommits != 0 {
		t.Errorf("stale commits %s, the fault's %s: want both counted, 0", count(p.StaleCommits), count(fp.StaleCommits))
	}
}

// endsWith: seq's last two are a then b.
func endsWith(seq []string, a, b string) bool {
	return len(seq) >= 2 && seq[len(seq)-2] == a && seq[len(seq)-1] == b
}

// count is a count that may be absent, for messages.
func count(n *int64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(*n)
}

// proxyDiesMidRun runs b again for 4 s without faults, with other health checks (a via
// value's: every 300 ms, down after 2 failed), and SIGKILLs c's HAProxy after the first
// report interval: the run must fail, naming the proxy. Before the run the proxy runs
// with yet others (250 ms, 4: an earlier run's not put back). The proxy restarted for the
// run had the run's checks (the manifest's configuration in effect, the summary's); after
// the run it runs again with the topology's own (200 ms, 3: Bench.ProxyOwn, not those it
// ran before the run), its state file says so.
func proxyDiesMidRun(ctx context.Context, t *testing.T, s *cluster.Store, b *experiment.Bench, c *cluster.Cluster) {
	t.Helper()
	var once sync.Once
	var pid int
	b2 := *b
	b2.Faults, b2.Options.Time = nil, 4*time.Second
	b2.ProxyChecks, b2.ProxyRestarter = topology.ProxyChecks{CheckInterval: 300 * time.Millisecond, Fall: 2}, s
	// The topology's own as the scenario gives them; the proxy runs others now, as after an
	// earlier run's put-back that failed: the ones to put back are the topology's.
	b2.ProxyOwn = topology.ProxyChecks{CheckInterval: 200 * time.Millisecond, Fall: 3, Rise: 2}
	if err := s.RestartProxy(ctx, c, topology.ProxyChecks{CheckInterval: 250 * time.Millisecond, Fall: 4}); err != nil {
		t.Fatal(err)
	}
	b2.OnInterval = func(workload.Interval) {
		once.Do(func() {
			if now, err := c.Reload(); err == nil {
				pid = now.Proxy().PID // the proxy restarted for the run's checks
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
	t0 := time.Now()
	out, err := b2.Run(ctx)
	t.Logf("run with checks every 300 ms, its proxy killed: %.1f s", time.Since(t0).Seconds())
	if err == nil || pid == 0 || !strings.Contains(err.Error(), fmt.Sprintf("the proxy (haproxy, pid %d) died during the run", pid)) {
		t.Errorf("a run whose proxy died: %v, want an error naming haproxy pid %d", err, pid)
	}
	if out == nil || out.Summary == nil || out.Summary.Proxy == nil {
		t.Fatalf("the run's outcome %+v: want its summary", out)
	}
	if p := out.Summary.Proxy; p.CheckIntervalMs != 300 || p.Fall != 2 || p.Rise != 2 {
		t.Errorf("summary's proxy checks every %g ms, fall %d, rise %d: want the run's 300 ms, 2, 2", p.CheckIntervalMs, p.Fall, p.Rise)
	}
	man, err := os.ReadFile(filepath.Join(out.Dir, "manifest.json"))
	if err != nil || !strings.Contains(string(man), "inter 300ms fall 2 rise 2") {
		t.Errorf("manifest's proxy configuration lacks the run's checks (inter 300ms fall 2 rise 2): %v", err)
	}
	now, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ProxyConfig(now)
	if p := now.Spec.Proxy; p.CheckInterval != 200*time.Millisecond || p.Fall != 3 || now.NodeDown(now.Proxy()) || err != nil || !strings.Contains(cfg, "inter 200ms fall 3 rise 2") {
		t.Errorf("after the run the proxy (pid %d, down %v) has checks %+v, configuration %v:\n%s\nwant its own back, running: inter 200ms fall 3 rise 2",
			now.Proxy().PID, now.NodeDown(now.Proxy()), p.Checks(), err, cfg)
	}
}
