package experiment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/results"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
)

// TestCheckerPartitionHeal: a 3-node Galera cluster (MariaDB 10.11) and a 3-member
// single-primary group (MySQL 9.7), each with n3 partitioned 1 s into a 4 s
// oltp_read_write run and healed at 2.5 s, a list-append checker beside it: each run
// produces a checked history (history.jsonl with one line per operation, the checks ran:
// no error, a verdict), its operations counted by outcome (ok, failed, unknown: every
// operation is one of them), and sweep.json's cell carries the checker's figures.
func TestCheckerPartitionHeal(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	testenv.Installation(t, topology.MySQL)
	sb := testenv.Sandbox(t)
	galera, group := testenv.Name(t, "cpga"), testenv.Name(t, "cpgr")
	y := fmt.Sprintf(`name: checkpart
network: netns
topologies:
  - {name: %s, kind: galera, nodes: 3, flavor: mariadb}
  - {name: %s, kind: group, nodes: 3, flavor: mysql}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, threads: 2, time: 4, report-interval: 1}
checker: {workload: list-append, threads: 3, keys: 3}
faults:
  - {at: 1s, action: partition, node: n3}
  - {at: 2.5s, action: heal, node: n3}
probe: false
`, galera, group)
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := &experiment.ScenarioRun{Scenario: s, Sandbox: sb, ResultsDir: t.TempDir()}
	dir, _, err := r.Run(ctx)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	f, err := experiment.ReadSweepFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(f.Cells))
	}
	for _, c := range f.Cells {
		if c.Status != experiment.StatusDone {
			t.Errorf("%s: %s %s", c.Topology, c.Status, c.Error)
			continue
		}
		var sum results.Summary
		b, err := os.ReadFile(filepath.Join(dir, c.Dir, results.SummaryFile))
		if err != nil || json.Unmarshal(b, &sum) != nil || sum.Checks == nil {
			t.Errorf("%s: summary.json without checks (%v)", c.Topology, err)
			continue
		}
		cs := sum.Checks
		t.Logf("%s: %d ops: %d ok, %d failed, %d unknown; %d anomalies %v; faults %d", c.Topology, cs.Ops, cs.OK, cs.Failed, cs.Unknown, cs.AnomalyCount, cs.AnomalyTypes, len(sum.Faults))
		if cs.Error != "" || cs.OK == 0 || cs.Ops != cs.OK+cs.Failed+cs.Unknown {
			t.Errorf("%s: checks %+v: want checked, committed operations, every one counted by outcome", c.Topology, cs)
		}
		if lines := readLines(t, filepath.Join(dir, c.Dir, results.HistoryFile)); len(lines) != cs.Ops {
			t.Errorf("%s: history.jsonl has %d lines, summary counts %d operations", c.Topology, len(lines), cs.Ops)
		}
		if len(sum.Faults) != 2 || sum.Faults[0].Action != "partition" || sum.Faults[1].Action != "heal" {
			t.Errorf("%s: faults %+v, want the partition and the heal", c.Topology, sum.Faults)
		}
		if c.Anomalies == nil || *c.Anomalies != cs.AnomalyCount || c.CheckerOK == nil || *c.CheckerOK != cs.OK {
			t.Errorf("%s: sweep.json's cell %v/%v differs from summary.json's checks", c.Topology, c.Anomalies, c.CheckerOK)
		}
	}
}
