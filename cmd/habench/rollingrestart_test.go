package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// rollingGroupScenario: a 3-member single-primary MySQL group under a rate-limited
// oltp_write_only (workers following the writer), rolling-restarted from 3 s on. A
// member's restart (a planned leave, then the stop and start) takes 10.8 s quiet, and
// took 20 s quiet and 40-45 s with the suite beside it when the stop waited for commits in
// flight; so the switchover comes at 25 s quiet and by about 90 s at worst: the workload
// runs 100 s, at rate 10, for the workers to commit on the new writer before it ends. The
// probe writer commits every 50 ms, not 5: at 5 ms the servers and habench took 106 s of
// CPU in a CI-like run, the most of any test.
const rollingGroupScenario = `name: rr-group
description: Rolling restart of a 3-member single-primary group under load.
topologies:
  - {name: rrgroup, kind: group, nodes: 3, flavor: mysql}
workload:
  test: oltp_write_only
  options: {tables: 1, table-size: 2000, threads: 2, rate: 10, time: 100, report-interval: 1}
faults:
  - {at: 3s, action: rolling-restart, node: writer}
probe_interval: 50ms
`

// TestRollingRestartGroup runs a rolling restart of a 3-member group under load: the
// secondaries are restarted first, each waited for until ONLINE, then the primary is
// switched over to the first one restarted and restarted last. The run lists each step
// as a scheduled fault (restart n2, restart n3, promote n2, restart n1, in that order,
// none failed), each restarted member caught up, the cluster named n2 the writer after
// the switchover and the workers committed there, and no acknowledged commit was lost.
func TestRollingRestartGroup(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MySQL)
	state := stateDir(t)
	dir := t.TempDir()
	scen := filepath.Join(dir, "rr-group.yaml")
	if err := os.WriteFile(scen, []byte(rollingGroupScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "res")
	r := habench(t, state, "run", scen, "--results", res, "--quiet")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	runDirs, _ := filepath.Glob(filepath.Join(res, "*", "*-rrgroup"))
	if len(runDirs) != 1 {
		t.Fatalf("run directories %v, want one", runDirs)
	}
	var man struct {
		Faults []schema.RunFault `json:"faults"`
	}
	var sum struct {
		Faults []schema.FaultSummary `json:"faults"`
		Probe  *struct {
			Acknowledged     int64 `json:"acknowledged"`
			LostAcknowledged int64 `json:"lost_acknowledged_commits"`
		} `json:"probe"`
	}
	for file, v := range map[string]any{"manifest.json": &man, "summary.json": &sum} {
		b, err := os.ReadFile(filepath.Join(runDirs[0], file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	want := []string{"restart n2", "restart n3", "promote n2", "restart n1"}
	var got []string
	for _, f := range man.Faults {
		got = append(got, f.Action+" "+f.Node)
		if f.Of != "rolling-restart" || !f.Scheduled || f.Error != "" {
			t.Errorf("manifest fault %+v: want a scheduled step of rolling-restart without error", f)
		}
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("manifest faults %q, want %q", got, want)
	}
	if len(sum.Faults) != 4 {
		t.Fatalf("summary faults %+v, want 4", sum.Faults)
	}
	for i, f := range sum.Faults {
		t.Logf("%-7s %s at %6.2f s took %5.2f s: recovery %v s, outage %q %v, caught up %v s, new writer %q after %v s, workers there after %v s",
			f.Action, f.Node, f.AtS, man.Faults[i].Took, fmtCaught(f.RecoveryS), f.Outage, f.ErrorsByCode, fmtCaught(f.CaughtUpS), f.NewWriter, fmtCaught(f.NewWriterS), fmtCaught(f.ClientWriterS))
		if f.Action == "restart" && f.CaughtUpS == nil {
			t.Errorf("restart %s: not seen caught up", f.Node)
		}
	}
	sw := sum.Faults[2]
	if sw.NewWriter != "n2" || sw.NewWriterS == nil || sw.ClientWriterS == nil {
		t.Errorf("switchover %+v: want n2 named the writer and the workers committing there", sw)
	}
	if sum.Probe == nil || sum.Probe.Acknowledged == 0 || sum.Probe.LostAcknowledged != 0 {
		t.Errorf("probe %+v: want acknowledged commits, none lost", sum.Probe)
	} else {
		t.Logf("probe: %d acknowledged, %d lost", sum.Probe.Acknowledged, sum.Probe.LostAcknowledged)
	}
	md, _ := os.ReadFile(filepath.Join(runDirs[0], "report.md"))
	for _, row := range []string{"| restart | n2 |", "| promote | n2 |", "| restart | n1 |"} {
		if !strings.Contains(string(md), row) {
			t.Errorf("report.md's Faults table lacks %q", row)
		}
	}
	noClusters(t, state, "rrgroup")
}
