//go:build bench

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testhost"
)

// TestClientsWsrepStudyOnHosts (issue 34, acceptance 2, at its real size; not in make
// test: about 12 minutes of both cores): the topology study's wsrep_slave_threads sweep,
// scenarios/s1-wsrep-threads.yaml --scale small (6 values x 3 repeats of 20 s, 16
// threads), with its Galera cluster on three lab hosts (--hosts) and its workload from
// two more (--clients). Every cell done, each with a row per client of 8 threads whose
// transactions add up to the cell's. Run it with
//
//	go test -tags bench -count=1 -timeout 30m -run TestClientsWsrepStudyOnHosts -v ./cmd/habench
//
// (as root, after make build; HABENCH_TEST_BIN=bin/habench).
func TestClientsWsrepStudyOnHosts(t *testing.T) {
	lab := testhost.New(t, 5, testhost.Options{SSH: true})
	state, hostDir, names, before := labDirs(t, lab)
	t.Cleanup(func() { host.CloseMatching(func(string) bool { return true }) })
	res := t.TempDir()
	r := runLong(t, 25*time.Minute, state, "run", "../../scenarios/s1-wsrep-threads.yaml", "--scale", "small", "--results", res, "--quiet",
		"--hosts", strings.Join(names[:3], ","), "--ssh-config", lab.SSHConfig, "--host-dir", hostDir, "--clients", strings.Join(names[3:], ","))
	t.Logf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Errorf("exit %d", r.code)
	}
	sums, _ := filepath.Glob(filepath.Join(res, "*", "*", "summary.json"))
	if len(sums) != 18 {
		t.Errorf("%d cells' summary.json, want 18", len(sums))
	}
	for _, p := range sums {
		var s clientsSweepSummary
		if err := json.Unmarshal(mustReadFile(t, p), &s); err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, c := range s.Clients {
			sum += c.Transactions
			if c.Threads != 8 || c.Lost != "" {
				t.Errorf("%s: client %s: %d threads, lost %q", p, c.Client, c.Threads, c.Lost)
			}
		}
		if len(s.Clients) != 2 || sum != s.Transactions || sum == 0 {
			t.Errorf("%s: %d clients, %d transactions against %d merged", p, len(s.Clients), sum, s.Transactions)
		}
	}
	for i, h := range lab.Hosts {
		if after := hostState(t, h, hostDir); after != before[i] {
			t.Errorf("%s after the run:\n%s\nbefore:\n%s", h.Name, after, before[i])
		}
	}
}
