package experiment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/history"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/links"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// TestCheckerPartitionHeal: a 3-node Galera cluster (MariaDB 10.11) and a 3-member
// single-primary group (MySQL 9.7), each with n3 partitioned 0.5 s into a 6 s
// oltp_read_write run (at a low rate: it only runs beside) and healed at 2.5 s, or as soon
// as the partition is in place (applying it measures the links for 3 s), a list-append
// checker beside it: each run produces a checked history (history.jsonl with one line per
// operation, the checks ran: no error, a verdict), its operations counted by outcome (ok,
// failed, unknown: every operation is one of them), and sweep.json's cell carries the
// checker's figures. The partition and the heal were applied (no fault error) and the
// checker saw the partition: on Galera, where every node takes the checker's writes, its
// sessions were held up for seconds (the cluster cannot commit while n3 is cut off and not
// yet evicted) and committed again after the heal; in the group, whose primary n1 takes
// the writes and keeps its majority, the checker's reads on n3 (read_nodes) missed
// appends n1 had acknowledged seconds before.
func TestCheckerPartitionHeal(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	testenv.Installation(t, topology.MySQL)
	sb := testenv.Store(t)
	galera, group := testenv.Name(t, "cpga"), testenv.Name(t, "cpgr")
	y := fmt.Sprintf(`name: checkpart
network: netns
topologies:
  - {name: %s, kind: galera, nodes: 3, flavor: mariadb}
  - {name: %s, kind: group, nodes: 3, flavor: mysql}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, threads: 2, rate: 20, time: 6, report-interval: 1}
checker: {workload: list-append, threads: 3, keys: 3, rate: 60, read_nodes: {%s: [n3]}}
faults:
  - {at: 0.5s, action: partition, node: n3}
  - {at: 2.5s, action: heal, node: n3}
probe: false
`, galera, group, group)
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The link process a partition starts is habench's (netem serve), as in habench run.
	in := &experiment.Injector{Store: sb, Links: links.Process{Exe: testenv.Habench(t), Args: []string{"netem", "serve", "--state-dir", sb.StateDir}}}
	r := &experiment.ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir(), Injector: in}
	dir, _, err := r.Run(ctx)
	if err != nil {
		why := ""
		if f, ferr := schema.ReadSweep(dir); ferr == nil {
			for _, c := range f.Cells {
				why += fmt.Sprintf("\n\t%s: %s %s", c.Topology, c.Status, c.Error)
			}
		}
		t.Fatalf("run: %v%s", err, why)
	}
	f, err := schema.ReadSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(f.Cells))
	}
	for _, c := range f.Cells {
		if c.Status != schema.StatusDone {
			t.Errorf("%s: %s %s", c.Topology, c.Status, c.Error)
			continue
		}
		var sum schema.Summary
		b, err := os.ReadFile(filepath.Join(dir, c.Dir, schema.SummaryFile))
		if err != nil || json.Unmarshal(b, &sum) != nil || sum.Checks == nil {
			t.Errorf("%s: summary.json without checks (%v)", c.Topology, err)
			continue
		}
		cs := sum.Checks
		t.Logf("%s: %d ops: %d ok, %d failed, %d unknown; %d anomalies %v; faults %d", c.Topology, cs.Ops, cs.OK, cs.Failed, cs.Unknown, cs.AnomalyCount, cs.AnomalyTypes, len(sum.Faults))
		if cs.Error != "" || cs.OK == 0 || cs.Ops != cs.OK+cs.Failed+cs.Unknown {
			t.Errorf("%s: checks %+v: want checked, committed operations, every one counted by outcome", c.Topology, cs)
		}
		if lines := readLines(t, filepath.Join(dir, c.Dir, schema.HistoryFile)); len(lines) != cs.Ops {
			t.Errorf("%s: history.jsonl has %d lines, summary counts %d operations", c.Topology, len(lines), cs.Ops)
		}
		if len(sum.Faults) != 2 || sum.Faults[0].Action != "partition" || sum.Faults[1].Action != "heal" ||
			sum.Faults[0].Error != "" || sum.Faults[1].Error != "" {
			t.Errorf("%s: faults %+v, want the partition and the heal, applied", c.Topology, sum.Faults)
		}
		ops := readHistory(t, filepath.Join(dir, c.Dir, schema.HistoryFile))
		long := longestOp(ops)
		stale, staleOp := staleRead(ops, "n3")
		t.Logf("%s: longest operation %s; reads on n3 behind by up to %s (%s)", c.Topology, opLine(long), stale.Round(time.Millisecond), opLine(staleOp))
		if c.Kind == string(topology.Galera) {
			if long == nil || long.End-long.Start < partitionSeen.Nanoseconds() {
				t.Errorf("%s: the checker's longest operation %s: want one held up by the partition for %s or more", c.Topology, opLine(long), partitionSeen)
			} else if !slices.ContainsFunc(ops, func(o history.Op) bool { return o.Outcome == history.OK && o.Start > long.End }) {
				t.Errorf("%s: no operation of the checker committed after the one the partition held up (%s): want commits after the heal", c.Topology, opLine(long))
			}
		} else if stale < partitionSeen {
			t.Errorf("%s: the checker's reads on n3 missed appends acknowledged at most %s before (%s): want %s or more while n3 was cut off", c.Topology, stale.Round(time.Millisecond), opLine(staleOp), partitionSeen)
		}
		if c.Anomalies == nil || *c.Anomalies != cs.AnomalyCount || c.CheckerOK == nil || *c.CheckerOK != cs.OK {
			t.Errorf("%s: sweep.json's cell %v/%v differs from summary.json's checks", c.Topology, c.Anomalies, c.CheckerOK)
		}
	}
}

// partitionSeen is how long the partition must have held up the checker's operations on
// Galera, or kept n3's reads behind in the group: the partition lasts 3 s or more (its
// measurement after applying; seen: held up 3.5-4.7 s, reads behind 2.5-5.4 s), while
// without it (the partition not applied) the longest operation took 155 ms and n3's
// reads were 16 ms behind, on a CPU-saturated host.
const partitionSeen = time.Second

// readHistory reads a history.jsonl file.
func readHistory(t *testing.T, path string) []history.Op {
	t.Helper()
	var ops []history.Op
	for _, l := range readLines(t, path) {
		var op history.Op
		if err := json.Unmarshal([]byte(l), &op); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ops = append(ops, op)
	}
	return ops
}

// longestOp returns the operation of ops that took the longest from its start to its
// outcome (nil for none).
func longestOp(ops []history.Op) *history.Op {
	var l *history.Op
	for i := range ops {
		if l == nil || ops[i].End-ops[i].Start > l.End-l.Start {
			l = &ops[i]
		}
	}
	return l
}

// staleRead returns how far behind node's committed reads in ops were: the largest time
// from the acknowledgement (ok) of an append on another node to the start of a read of
// its list on node that did not see it, with that read (0 and nil when every read saw
// every append acknowledged before it began).
func staleRead(ops []history.Op, node string) (time.Duration, *history.Op) {
	type ack struct{ key, value, end int64 }
	var acks []ack
	for _, o := range ops {
		if o.Outcome != history.OK || o.Node == node {
			continue
		}
		for _, m := range o.Value {
			if m.F == "append" && m.Value != nil {
				acks = append(acks, ack{m.Key, *m.Value, o.End})
			}
		}
	}
	var worst time.Duration
	var by *history.Op
	for i, o := range ops {
		if o.Outcome != history.OK || o.Node != node {
			continue
		}
		for _, m := range o.Value {
			if m.F != "r" || m.List == nil {
				continue
			}
			for _, a := range acks {
				if a.key == m.Key && a.end < o.Start && !slices.Contains(m.List, a.value) {
					if d := time.Duration(o.Start - a.end); d > worst {
						worst, by = d, &ops[i]
					}
				}
			}
		}
	}
	return worst, by
}

// opLine describes op for a message.
func opLine(op *history.Op) string {
	if op == nil {
		return "none"
	}
	return fmt.Sprintf("op %d on %s, %s from %.2f s (%s)", op.Index, op.Node, op.Outcome,
		time.Duration(op.Start).Seconds(), time.Duration(op.End-op.Start).Round(time.Millisecond))
}
