package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/habench/habench/internal/testmachine"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// netemCluster deploys a 3-node MariaDB async sandbox in network namespaces through the
// CLI and returns it loaded from the state directory.
func netemCluster(t *testing.T, state, name string) *cluster.Cluster {
	t.Helper()
	testenv.Installation(t, topology.MariaDB)
	prereq.Need(t, cluster.NetNamespacesUsable())
	prereq.NeedErr(t, "userspace link unusable here", netem.UserspaceAvailable())
	r := habench(t, state, "deploy", "--name", name, "--kind", "async", "--nodes", "3", "--flavor", "mariadb", "--network", "netns")
	if r.code != 0 {
		t.Fatalf("deploy: %d %s", r.code, r.stderr)
	}
	c, err := (&cluster.Store{StateDir: state}).Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rtt measures n1->n2 and n1->n3 from the test itself (not through habench's record).
func rtt(t *testing.T, c *cluster.Cluster) map[string]netem.LinkRTT {
	t.Helper()
	eps, err := links.Endpoints(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs, err := netem.MeasureRTT(ctx, eps, nil, 15, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]netem.LinkRTT{}
	for _, r := range rs {
		out[r.Link.String()] = r
	}
	return out
}

func noLinkLeftovers(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	if left := links.Leftovers(c); len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), links.StandingFile)); err == nil {
		t.Errorf("%s still exists", links.StandingFile)
	}
}

// TestNetemApplyShowClear: impairments from `netem apply` outlive the command (measured
// from the test), are recorded in a run's manifest, are reported dead after the link
// process is killed, and `netem clear` (twice: idempotent) leaves no device, route, qdisc
// or process; a partition cuts the node off; destroy removes a running link process.
func TestNetemApplyShowClear(t *testing.T) {
	testmachine.Alone(t) // it measures round trips or timing: nothing else may load the machine
	state := stateDir(t)
	name := testenv.Name(t, "nt")
	c := netemCluster(t, state, name)
	single := testenv.Name(t, "ns")
	if r := habench(t, state, "deploy", "--name", single, "--kind", "single", "--flavor", "mariadb", "--network", "netns"); r.code != 0 {
		t.Fatalf("deploy single: %s", r.stderr)
	}

	for _, bad := range []struct {
		args []string
		want []string
	}{
		{[]string{"netem", "apply", "--all", "1ms"}, []string{"--cluster"}},
		{[]string{"netem", "apply", "--cluster", name}, []string{"nothing to apply"}},
		{[]string{"netem", "apply", "--cluster", name, "--all", "5"}, []string{"all", `"5"`}},
		{[]string{"netem", "apply", "--cluster", name, "--node", "n9=1ms"}, []string{"node.n9", `"n9"`}},
		{[]string{"netem", "apply", "--cluster", name, "--link", "n1-n2=1ms"}, []string{"--link", `"n1-n2=1ms"`}},
		{[]string{"netem", "apply", "--cluster", name, "--link", "n1->n2=loss 200%"}, []string{"link.n1->n2", "loss"}},
		{[]string{"netem", "apply", "--cluster", name, "--groups", "dc1: [n1], dc2: [n2]; inter 5ms"}, []string{"groups", "in no group"}},
		{[]string{"netem", "apply", "--cluster", name, "--all", "loss 1"}, []string{"all", "ambiguous"}},
		{[]string{"netem", "apply", "--cluster", name, "--all", "0ms"}, []string{"impairs no link"}},
		{[]string{"netem", "apply", "--cluster", name, "--partition", "n1", "--partition", "n1"}, []string{"partition", "listed twice"}},
		{[]string{"netem", "apply", "--cluster", single, "--all", "1ms"}, []string{"cluster", single, "no link between nodes"}},
		{[]string{"netem", "apply", "--cluster", "nosuch", "--all", "1ms"}, []string{"cluster", `"nosuch"`}},
		{[]string{"netem", "show", "nosuch"}, []string{"cluster", `"nosuch"`}},
	} {
		r := habench(t, state, bad.args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", bad.args, r.code, r.stderr)
		}
		for _, w := range bad.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: error %q does not name %s", bad.args, r.stderr, w)
			}
		}
	}
	noLinkLeftovers(t, c)

	base := rtt(t, c)
	r := habench(t, state, "netem", "apply", "--cluster", name, "--all", "1ms", "--link", "n1->n3=4ms")
	if r.code != 0 {
		t.Fatalf("apply: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "n1->n3") || !strings.Contains(r.stdout, "delay 4ms") {
		t.Errorf("apply output lacks the per-link table:\n%s", r.stdout)
	}
	// In effect after the command has exited: n1<->n2 gets 2 ms more round trip, n1<->n3 5 ms.
	now := rtt(t, c)
	for link, want := range map[string]time.Duration{"n1->n2": 2 * time.Millisecond, "n1->n3": 5 * time.Millisecond} {
		added := now[link].Median - base[link].Median
		if added < want*8/10 || added > want*2 {
			t.Errorf("%s: added round trip %v (median %v over %v), want about %v", link, added, now[link].Median, base[link].Median, want)
		}
	}
	var st links.Standing
	b, err := os.ReadFile(filepath.Join(c.Dir(), links.StandingFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.Backend != netem.BackendUserspace || st.PID == 0 || st.Report == nil || len(st.Report.RTT) != 6 {
		t.Fatalf("record: %s", b)
	}
	if lt := st.Report.LinkThread; lt != "SCHED_FIFO" && lt != "SCHED_OTHER" {
		t.Errorf("record: link thread scheduling class %q not recorded", lt)
	}
	if r := habench(t, state, "netem", "show", name); r.code != 0 || !strings.Contains(r.stdout, "running") {
		t.Errorf("show: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// show --measure: the added round trip now (median now - base at apply) is what was asked.
	if r := habench(t, state, "netem", "show", name, "--measure"); r.code != 0 || !strings.Contains(r.stdout, "ADDED ms") {
		t.Errorf("show --measure: %d %s %s", r.code, r.stdout, r.stderr)
	} else {
		for link, want := range map[string][2]float64{"n1->n3": {4.5, 7}, "n1->n2": {1.5, 3.5}} {
			found := false
			for _, line := range strings.Split(r.stdout[strings.Index(r.stdout, "measured now:"):], "\n") {
				f := strings.Fields(line)
				if len(f) == 7 && f[0] == link {
					found = true
					added, err := strconv.ParseFloat(strings.TrimPrefix(f[4], "+"), 64)
					if err != nil || added < want[0] || added > want[1] {
						t.Errorf("show --measure %s: added %q ms, want %.1f-%.1f: %s", link, f[4], want[0], want[1], line)
					}
				}
			}
			if !found {
				t.Errorf("show --measure: no row for %s:\n%s", link, r.stdout)
			}
		}
	}
	if r := habench(t, state, "status", name); !strings.Contains(r.stdout, "links: --all 1ms --link n1->n3=4ms (userspace backend, in effect") {
		t.Errorf("status does not show the links: %s", r.stdout)
	}

	// A run on the cluster records the standing impairments; --links on top is refused.
	results := t.TempDir()
	habench(t, state, "sysbench", "oltp_point_select", "prepare", "--cluster", name, "--tables", "1", "--table-size", "500")
	r = habench(t, state, "sysbench", "oltp_point_select", "run", "--cluster", name, "--tables", "1", "--table-size", "500", "--time", "2", "--results", results)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(results, "*", "manifest.json"))
	if len(runs) != 1 {
		t.Fatalf("manifests: %v", runs)
	}
	var man struct {
		Links struct {
			Impairment schema.LinkImpairment `json:"impairment"`
		} `json:"links"`
	}
	mb, _ := os.ReadFile(runs[0])
	if err := json.Unmarshal(mb, &man); err != nil {
		t.Fatal(err)
	}
	if imp := man.Links.Impairment; imp.AppliedBy != "netem apply" || imp.Links["n1->n3"] != "delay 4ms" || len(imp.RTT) != 6 {
		t.Errorf("manifest links: %+v", imp)
	}
	r = habench(t, state, "sysbench", "oltp_point_select", "run", "--cluster", name, "--tables", "1", "--table-size", "500", "--time", "2", "--links", "1ms")
	if r.code != 2 || !strings.Contains(r.stderr, "netem clear") {
		t.Errorf("--links on top of netem apply: %d %s", r.code, r.stderr)
	}

	// The link process dies: show says so and fails, clear cleans up, twice.
	syscall.Kill(st.PID, syscall.SIGKILL)
	time.Sleep(300 * time.Millisecond)
	if r := habench(t, state, "netem", "show", name); r.code != 1 || !strings.Contains(r.stdout, "NOT RUNNING") {
		t.Errorf("show after kill -9 of the link process: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for i := 0; i < 2; i++ {
		if r := habench(t, state, "netem", "clear", name); r.code != 0 {
			t.Fatalf("clear %d: %d %s", i, r.code, r.stderr)
		}
	}
	noLinkLeftovers(t, c)
	if now := rtt(t, c); now["n1->n3"].Median > base["n1->n3"].Median+time.Millisecond {
		t.Errorf("after clear n1->n3 median %v, base %v", now["n1->n3"].Median, base["n1->n3"].Median)
	}

	// A record naming a process that is not a link process: clear must not signal it.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	bogus := fmt.Sprintf(`{"cluster":%q,"request":{"all":"1ms"},"backend":"userspace","pid":%d,"applied":"2026-01-01T00:00:00Z"}`, name, sleeper.Process.Pid)
	if err := os.WriteFile(filepath.Join(c.Dir(), links.StandingFile), []byte(bogus), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := habench(t, state, "netem", "show", name); r.code != 1 || !strings.Contains(r.stdout, "NOT RUNNING") {
		t.Errorf("show with a record naming a foreign process: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := habench(t, state, "netem", "clear", name); r.code != 0 {
		t.Errorf("clear: %d %s", r.code, r.stderr)
	}
	if sleeper.ProcessState != nil || syscall.Kill(sleeper.Process.Pid, 0) != nil {
		t.Errorf("netem clear signalled pid %d, which is not a link process", sleeper.Process.Pid)
	}

	// A crashed kernel-backend run leaves an htb root qdisc and no record: clear removes it.
	if out, err := exec.Command("ip", "netns", "exec", c.Nodes[0].Netns, "tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb").CombinedOutput(); err != nil {
		t.Fatalf("simulate a crashed run's qdisc: %v %s", err, out)
	}
	if r := habench(t, state, "netem", "show", name); r.code != 1 || !strings.Contains(r.stderr, "qdisc htb") {
		t.Errorf("show with a leftover qdisc: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := habench(t, state, "netem", "clear", name); r.code != 0 {
		t.Errorf("clear of a leftover qdisc: %d %s", r.code, r.stderr)
	}
	noLinkLeftovers(t, c)

	// The link process ends during a run: the run fails and says so.
	if r := habench(t, state, "netem", "apply", "--cluster", name, "--all", "500us"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	run := exec.Command(habenchBin, "sysbench", "oltp_point_select", "run", "--cluster", name, "--tables", "1", "--table-size", "500", "--time", "6", "--report-interval", "1")
	run.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
	var runOut, runErr syncBuffer
	run.Stdout, run.Stderr = &runOut, &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the workload is under way (past the run's links phase, which would fail with
	// "not in effect" instead).
	for deadline := time.Now().Add(time.Minute); !strings.Contains(runOut.String(), "[ 1s ]"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			run.Process.Kill()
			run.Wait()
			t.Fatalf("the run's workload did not start within a minute: %s %s", runOut.String(), runErr.String())
		}
	}
	for _, pid := range cluster.LinkProcesses(c) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := run.Wait(); err == nil || !strings.Contains(runErr.String(), "ended during the run") {
		t.Errorf("run whose link process died: %v %s", err, runErr.String())
	}
	habench(t, state, "netem", "clear", name)

	// Partition: n3 unreachable both ways, n1<->n2 fine.
	r = habench(t, state, "netem", "apply", "--cluster", name, "--partition", "n3")
	if r.code != 0 || !strings.Contains(r.stdout, "3 of 3 probes failed") {
		t.Fatalf("partition: %d %s %s", r.code, r.stdout, r.stderr)
	}
	now = rtt(t, c)
	if now["n1->n3"].Samples != 0 || now["n1->n2"].Samples == 0 {
		t.Errorf("partition n3: n1->n3 %+v, n1->n2 %+v", now["n1->n3"], now["n1->n2"])
	}
	// A run on the partitioned cluster ends promptly (n3 cannot catch up: not waited for).
	t0 := time.Now()
	r = habench(t, state, "sysbench", "oltp_point_select", "run", "--cluster", name, "--tables", "1", "--table-size", "500", "--time", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "n3 is cut off") || time.Since(t0) > 45*time.Second {
		t.Errorf("run with n3 partitioned: exit %d after %v: %s %s", r.code, time.Since(t0), r.stdout, r.stderr)
	}
	// destroy with the link process running removes it too.
	if r := habench(t, state, "destroy", name); r.code != 0 {
		t.Fatalf("destroy: %d %s", r.code, r.stderr)
	}
	habench(t, state, "destroy", single)
	noClusters(t, state, name, single)
}

// TestNetemApplyInterrupted: SIGINT while `netem apply` is measuring (its link process
// already running) exits 130 and leaves nothing; kill -9 at the same point leaves the
// link process, which `netem clear` then removes.
func TestNetemApplyInterrupted(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	name := testenv.Name(t, "ni")
	c := netemCluster(t, state, name)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			// 20 ms one-way: measuring 6 pairs x 20 handshakes takes about 5 s.
			cmd := exec.Command(habenchBin, "netem", "apply", "--cluster", name, "--all", "20ms")
			cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(time.Minute)
			for len(cluster.LinkProcesses(c)) == 0 {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("link process never started: %s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // inside the measurement
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if sig == syscall.SIGINT {
				if code != 130 {
					t.Errorf("exit %d after SIGINT, want 130; stderr %s", code, stderr.String())
				}
				noLinkLeftovers(t, c)
				return
			}
			if len(cluster.LinkProcesses(c)) == 0 {
				t.Fatalf("after kill -9 of apply the link process is gone already: the test proves nothing")
			}
			if r := habench(t, state, "netem", "clear", name); r.code != 0 {
				t.Fatalf("clear: %d %s", r.code, r.stderr)
			}
			noLinkLeftovers(t, c)
		})
	}
}

// TestRunLinksInterrupted: SIGINT during `sysbench run --links` (the workload running
// through the userspace link) exits 130 and leaves no device, route or process.
func TestRunLinksInterrupted(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	name := testenv.Name(t, "nr")
	c := netemCluster(t, state, name)
	if r := habench(t, state, "sysbench", "oltp_read_write", "prepare", "--cluster", name, "--tables", "1", "--table-size", "500"); r.code != 0 {
		t.Fatalf("prepare: %s", r.stderr)
	}
	cmd := exec.Command(habenchBin, "sysbench", "oltp_read_write", "run", "--cluster", name, "--tables", "1", "--table-size", "500",
		"--time", "60", "--report-interval", "1", "--links", "1ms")
	cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
	var out syncBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "[ 2s ]") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run did not start: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	eps, _ := links.Endpoints(c)
	if found, _ := netem.Residue(eps[0]); len(found) == 0 {
		t.Fatalf("no link device during the run: the test proves nothing")
	}
	// netem apply and clear must not take over (or tear down) the run's link; show and
	// status say whose it is.
	if r := habench(t, state, "netem", "apply", "--cluster", name, "--all", "3ms"); r.code != 1 || !strings.Contains(r.stderr, "run with --links") {
		t.Errorf("netem apply during a run with --links: %d %s", r.code, r.stderr)
	}
	if r := habench(t, state, "netem", "clear", name); r.code != 1 || !strings.Contains(r.stderr, "run with --links") {
		t.Errorf("netem clear during a run with --links: %d %s", r.code, r.stderr)
	}
	if r := habench(t, state, "netem", "show", name); r.code != 0 || !strings.Contains(r.stdout, "run with --links") {
		t.Errorf("netem show during a run with --links: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if found, _ := netem.Residue(eps[0]); len(found) == 0 {
		t.Errorf("the run's link is gone after the refused netem apply")
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit %v after SIGINT, want 130", err)
	}
	noLinkLeftovers(t, c)
}

// syncBuffer is a bytes.Buffer safe to read while a child process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
