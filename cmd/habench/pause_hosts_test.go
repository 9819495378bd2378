package main

import (
	"encoding/json"
	"github.com/habench/habench/internal/testmachine"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testhost"
)

// TestPauseOnHosts: `habench fault pause` on a node the hosts provider deployed on a lab
// host (a network namespace with sshd: the signal goes over ssh) stops its server
// (process state T in /proc), `fault resume` continues it, and `pause n1 duration=1s`
// continues it by itself about 1 s later; each is in the cluster's faults log.
func TestPauseOnHosts(t *testing.T) {
	testmachine.Alone(t) // it measures round trips or timing: nothing else may load the machine
	lab := testhost.New(t, 1, testhost.Options{SSH: true})
	state := stateDir(t)
	hostDir := filepath.Join(t.TempDir(), "hb")
	name := "f19p"
	r := habench(t, state, "deploy", "--name", name, "--kind", "single", "--nodes", "1", "--flavor", "mariadb",
		"--hosts", lab.Hosts[0].Name, "--ssh-config", lab.SSHConfig, "--host-dir", hostDir)
	if r.code != 0 {
		t.Fatalf("deploy --hosts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() {
		habench(t, state, "fault", "resume", "n1", "--cluster", name)
		if r := habench(t, state, "destroy", name); r.code != 0 {
			t.Errorf("destroy: exit %d %s", r.code, r.stderr)
		}
	})
	var st struct {
		Nodes []struct {
			Name string `json:"name"`
			PID  int    `json:"pid"`
		} `json:"nodes"`
	}
	b, err := os.ReadFile(filepath.Join(state, "clusters", name, "state.json"))
	if err != nil || json.Unmarshal(b, &st) != nil || len(st.Nodes) != 1 || st.Nodes[0].PID <= 0 {
		t.Fatalf("state.json: %v %s", err, b)
	}
	// The lab host shares this machine's process namespace: its server's state is in /proc.
	procState := func() string {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.Nodes[0].PID), "stat"))
		if err != nil {
			return "gone"
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return f[0]
	}
	must := func(args ...string) string {
		r := habench(t, state, append(args, "--cluster", name)...)
		if r.code != 0 {
			t.Fatalf("habench %v: exit %d %s", args, r.code, r.stderr)
		}
		return r.stdout
	}
	if out := must("fault", "pause", "n1"); !strings.Contains(out, "paused n1") || procState() != "T" {
		t.Fatalf("after pause: %q, process state %s, want T (stopped)", out, procState())
	}
	if out := must("fault", "resume", "n1"); !strings.Contains(out, "resumed n1") || procState() == "T" || procState() == "gone" {
		t.Fatalf("after resume: %q, process state %s, want running", out, procState())
	}
	start := time.Now()
	out := must("fault", "pause", "n1", "duration=1s")
	took := time.Since(start)
	if !strings.Contains(out, "paused n1") || !strings.Contains(out, "SIGCONT 1.0") || took < time.Second || procState() == "T" {
		t.Errorf("pause duration=1s: %q after %v, process state %s; want SIGCONT about 1 s after SIGSTOP and the server running", out, took, procState())
	}
	log, _ := os.ReadFile(filepath.Join(state, "clusters", name, "faults.jsonl"))
	if n := strings.Count(string(log), `"action":"pause"`); n != 2 || !strings.Contains(string(log), `"action":"resume"`) {
		t.Errorf("faults log: %s, want two pauses and a resume", log)
	}
}
