package main

import (
	"context"
	"github.com/habench/habench/internal/testmachine"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/internal/testhost"
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

// TestLinkAgentOnHosts: a 2-node async MariaDB cluster on 2 lab hosts; a run with
// --links 5ms gets the link agents where the hosts (this kernel) lack sch_netem: the
// manifest names the backend and each direction's round trip is about +10 ms over the
// plain one; after the run the agents, their TUN devices and routes are gone. A second
// run is killed with SIGKILL while its agents run: they exit by themselves (their ssh
// sessions end) and take their TUN and routes with them. After destroy each host is as
// before: processes, ports, qdiscs, interfaces, routes, the host directory.
func TestLinkAgentOnHosts(t *testing.T) {
	testmachine.Alone(t) // it measures round trips or timing: nothing else may load the machine
	lab := testhost.New(t, 2, testhost.Options{SSH: true})
	state := stateDir(t)
	hostDir := filepath.Join(t.TempDir(), "hb")
	names := []string{lab.Hosts[0].Name, lab.Hosts[1].Name}
	before := []string{hostNetState(t, lab.Hosts[0], hostDir), hostNetState(t, lab.Hosts[1], hostDir)}
	hostsArgs := []string{"--hosts", strings.Join(names, ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir}
	if r := habench(t, state, append([]string{"deploy", "--name", "hl1", "--kind", "async", "--nodes", "2", "--flavor", "mariadb"}, hostsArgs...)...); r.code != 0 {
		t.Fatalf("deploy --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() { habench(t, state, "destroy", "hl1") })
	opts := []string{"--tables", "1", "--table-size", "200"}
	if r := habench(t, state, append([]string{"sysbench", "oltp_read_only", "prepare", "--cluster", "hl1"}, opts...)...); r.code != 0 {
		t.Fatalf("sysbench prepare: exit %d\n%s", r.code, r.stderr)
	}
	wantBackend := netem.BackendRemote
	if netem.KernelAvailable() != nil {
		wantBackend = netem.BackendHostAgent
	}
	res := filepath.Join(t.TempDir(), "res")
	start := time.Now()
	r := habench(t, state, append([]string{"sysbench", "oltp_read_only", "run", "--cluster", "hl1", "--time", "2", "--links", "5ms", "--results", res}, opts...)...)
	t.Logf("run --links 5ms: exit %d in %.1f s", r.code, time.Since(start).Seconds())
	if r.code != 0 {
		t.Fatalf("run --links 5ms: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	man := readJSON(t, filepath.Join(runDir(t, res), "manifest.json"))
	imp, _ := man["links"].(map[string]any)["impairment"].(map[string]any)
	if imp == nil || imp["backend"] != wantBackend {
		t.Fatalf("manifest links: %v; want backend %q", man["links"], wantBackend)
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
		if agentRunning(hostDir) || hostNetState(t, h, hostDir) == before[i] {
			t.Errorf("%s after the run: agent running %v, or the cluster's processes gone", h.Name, agentRunning(hostDir))
		}
		if out := h.Run(t, "ip", "-o", "link", "show"); strings.Contains(out, netem.AgentTun("hl1")) {
			t.Errorf("%s: TUN %s left after the run", h.Name, netem.AgentTun("hl1"))
		}
	}
	killRunWithAgents(t, lab, state, hostDir, opts)
	if r := habench(t, state, "destroy", "hl1"); r.code != 0 {
		t.Errorf("destroy: exit %d\n%s", r.code, r.stderr)
	}
	for i, h := range lab.Hosts {
		if after := hostNetState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after destroy:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}

// killRunWithAgents starts a run with --links 5ms, kills habench with SIGKILL once the
// first host's agent TUN is up, and checks that the agents exit and their TUN devices go
// within 15 s.
func killRunWithAgents(t *testing.T, lab *testhost.Lab, state, hostDir string, opts []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, _, errOut := startHabench(t, ctx, state, append([]string{"sysbench", "oltp_read_only", "run", "--cluster", "hl1", "--time", "60", "--links", "5ms", "--results", t.TempDir()}, opts...)...)
	tun := netem.AgentTun("hl1")
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(lab.Hosts[0].Run(t, "ip", "-o", "link", "show"), tun) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no agent TUN %s within 60 s: %s", tun, errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	for {
		left := agentRunning(hostDir)
		for _, h := range lab.Hosts {
			left = left || strings.Contains(h.Run(t, "ip", "-o", "link", "show"), tun)
		}
		if !left {
			t.Logf("after kill -9 of habench: agents and TUN devices gone in %.2f s", time.Since(killed).Seconds())
			return
		}
		if time.Since(killed) > 15*time.Second {
			t.Errorf("15 s after kill -9 of habench: an agent or its TUN %s is still there", tun)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
