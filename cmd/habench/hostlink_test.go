package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/internal/testmachine"
	"github.com/habench/habench/netem"
)

// hostNetState is hostState plus the host's interfaces and routes (the link agent's TUN
// device and its /32 routes) and any link agent process of this test's host directory.
func hostNetState(t *testing.T, h *testhost.Host, hostDir string) string {
	t.Helper()
	return hostState(t, h, hostDir) + "links: " + h.Run(t, "sh", "-c", `ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' '`) +
		"\nroutes: " + h.Run(t, "ip", "-4", "route", "show", "table", "all")
}

// agentRunning reports whether a link agent under hostDir runs (the lab's hosts share
// this machine's process table).
func agentRunning(hostDir string) bool {
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), hostDir+"/") && strings.Contains(string(b), "link-agent") {
			return true
		}
	}
	return false
}

// labBackend is the backend habench takes for a run's delay on the lab's hosts: the rule
// habench applies (netem.HostsBackend) to each host's probe (netem.CheckHost over the
// lab's ssh, as habench reaches them). The hosts share this machine's kernel: the link
// agents on a kernel without sch_netem (this one), tc over SSH on one with it.
func labBackend(t *testing.T, lab *testhost.Lab) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var checks []netem.HostCheck
	for _, h := range lab.Hosts {
		c, err := netem.CheckHost(ctx, &host.SSH{Dest: h.Name, Config: lab.SSHConfig})
		if err != nil {
			t.Fatalf("probe %s: %v", h.Name, err)
		}
		if len(c.Problems) > 0 {
			t.Fatalf("probe %s: %s", h.Name, strings.Join(c.Problems, "; "))
		}
		checks = append(checks, c)
	}
	return netem.HostsBackend(checks)
}

// linkResidue lists what a run's links through backend leave on lab host h: a link agent
// under hostDir (the lab's hosts share this machine's process table) and the agent's TUN
// device on h for the link agents; habench's root qdiscs on h's interfaces
// (netem.RemoteResidue) for tc over SSH. Empty: nothing.
func linkResidue(t *testing.T, h *testhost.Host, backend, hostDir, cluster string) []string {
	t.Helper()
	var left []string
	switch backend {
	case netem.BackendHostAgent:
		if agentRunning(hostDir) {
			left = append(left, "a link agent under "+hostDir)
		}
		if tun := netem.AgentTun(cluster); strings.Contains(h.Run(t, "ip", "-o", "link", "show"), tun) {
			left = append(left, "TUN "+tun)
		}
	case netem.BackendRemote:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		qs, err := netem.RemoteResidue(ctx, host.Local{Netns: h.Name})
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		left = append(left, qs...)
	default:
		t.Fatalf("backend %q: the test knows %q and %q", backend, netem.BackendHostAgent, netem.BackendRemote)
	}
	return left
}

// TestLinkAgentOnHosts: a 2-node async MariaDB cluster on 2 lab hosts; a run with
// --links 5ms takes the backend habench's rule gives for the hosts' probes (labBackend:
// the link agents where the hosts, this kernel, lack sch_netem; tc over SSH where they
// have it): the manifest names that backend and each direction's round trip is about
// +10 ms over the plain one; after the run nothing of the backend is left (the agents,
// their TUN devices and routes; or habench's qdiscs). A second run is killed with SIGKILL
// while its links are applied: the agents exit by themselves (their ssh sessions end)
// and take their TUN and routes with them; tc's qdiscs stay (nothing runs on the hosts
// to remove them) until `netem clear` removes them. After destroy each host is as
// before: processes, ports, qdiscs, interfaces, routes, the host directory.
func TestLinkAgentOnHosts(t *testing.T) {
	testmachine.Alone(t) // it measures round trips or timing: nothing else may load the machine
	start := time.Now()
	phase := func(what string) {
		t.Helper()
		t.Logf("%s: %.1f s into the test", what, time.Since(start).Seconds())
	}
	lab := testhost.New(t, 2, testhost.Options{SSH: true})
	state := stateDir(t)
	hostDir := filepath.Join(t.TempDir(), "hb")
	names := []string{lab.Hosts[0].Name, lab.Hosts[1].Name}
	before := []string{hostNetState(t, lab.Hosts[0], hostDir), hostNetState(t, lab.Hosts[1], hostDir)}
	backend := labBackend(t, lab)
	phase("lab of 2 hosts built, backend for delay there: " + backend)
	hostsArgs := []string{"--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir}
	if r := habench(t, state, append([]string{"deploy", "--name", "hl1", "--kind", "async", "--nodes", "2", "--flavor", "mariadb"}, hostsArgs...)...); r.code != 0 {
		t.Fatalf("deploy --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() { habench(t, state, "destroy", "hl1") })
	phase("deployed")
	opts := []string{"--tables", "1", "--table-size", "200"}
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_only", "prepare", "--cluster", "hl1"}, opts...)...); r.code != 0 {
		t.Fatalf("sysbench prepare: exit %d\n%s", r.code, r.stderr)
	}
	phase("prepared")
	res := filepath.Join(t.TempDir(), "res")
	runStart := time.Now()
	r := habench(t, state, append([]string{"sysbench", "oltp_read_only", "run", "--cluster", "hl1", "--time", "2", "--rate", "20", "--links", "5ms", "--results", res}, opts...)...)
	t.Logf("run --links 5ms: exit %d in %.1f s", r.code, time.Since(runStart).Seconds())
	if r.code != 0 {
		t.Fatalf("run --links 5ms: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	man := readJSON(t, filepath.Join(runDir(t, res), "manifest.json"))
	imp, _ := man["links"].(map[string]any)["impairment"].(map[string]any)
	if imp == nil || imp["backend"] != backend {
		t.Fatalf("manifest links: %v; want backend %q", man["links"], backend)
	}
	rtts, _ := imp["rtt"].([]any)
	if len(rtts) != 2 {
		t.Errorf("manifest rtt: %v, want 2 pairs", rtts)
	}
	for _, x := range rtts {
		p := x.(map[string]any)
		added, _ := p["added_ms"].(float64)
		t.Logf("%s: base %.3f ms, achieved %.3f ms (p99 %.3f), added %+.3f ms", p["link"], p["base_ms"], p["achieved_median_ms"], p["achieved_p99_ms"], added)
		if added < 9 || added > 12.5 {
			t.Errorf("%s: round trip added %.3f ms, want about +10 (two one-way delays of 5 ms)", p["link"], added)
		}
	}
	for i, h := range lab.Hosts {
		if left := linkResidue(t, h, backend, hostDir, "hl1"); len(left) > 0 {
			t.Errorf("%s after the run (%s): %s left", h.Name, backend, strings.Join(left, ", "))
		}
		if hostNetState(t, h, hostDir) == before[i] {
			t.Errorf("%s after the run: as before the deploy, the cluster's processes gone", h.Name)
		}
	}
	killRunWithLinks(t, lab, state, backend, hostDir, opts)
	phase("killed run checked")
	if r := habench(t, state, "destroy", "hl1"); r.code != 0 {
		t.Errorf("destroy: exit %d\n%s", r.code, r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostNetState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
	phase("destroyed")
}

// killRunWithLinks starts a run with --links 5ms, kills habench with SIGKILL once the
// first host carries the run's links (linkResidue through backend), and checks what is
// left: the link agents exit and their TUN devices go within 15 s by themselves; tc's
// qdiscs stay until `netem clear` removes them from every host.
func killRunWithLinks(t *testing.T, lab *testhost.Lab, state, backend, hostDir string, opts []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, _, errOut := startHabench(t, ctx, state, append([]string{"sysbench", "oltp_read_only", "run", "--cluster", "hl1", "--time", "60", "--rate", "20", "--links", "5ms", "--results", t.TempDir()}, opts...)...)
	deadline := time.Now().Add(60 * time.Second)
	for len(linkResidue(t, lab.Hosts[0], backend, hostDir, "hl1")) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no links (%s) on %s within 60 s: %s", backend, lab.Hosts[0].Name, errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	if backend == netem.BackendRemote {
		// The first host had them when habench was killed (the others may not have yet).
		if h := lab.Hosts[0]; len(linkResidue(t, h, backend, hostDir, "hl1")) == 0 {
			t.Errorf("%s after kill -9 of a run with tc over SSH: no qdisc of habench's (nothing on the host removes them: netem clear must)", h.Name)
		}
		r := habench(t, state, "netem", "clear", "hl1")
		if r.code != 0 || !strings.Contains(r.stdout, "cleared the impairments a killed run left on the hosts") {
			t.Errorf("netem clear after kill -9: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, h := range lab.Hosts {
			if left := linkResidue(t, h, backend, hostDir, "hl1"); len(left) > 0 {
				t.Errorf("%s after netem clear: %s", h.Name, strings.Join(left, ", "))
			}
		}
		return
	}
	for {
		var left []string
		for _, h := range lab.Hosts {
			left = append(left, linkResidue(t, h, backend, hostDir, "hl1")...)
		}
		if len(left) == 0 {
			t.Logf("after kill -9 of habench: agents and TUN devices gone in %.2f s", time.Since(killed).Seconds())
			return
		}
		if time.Since(killed) > 15*time.Second {
			t.Errorf("15 s after kill -9 of habench: %s still there", strings.Join(left, ", "))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
