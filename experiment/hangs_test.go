package experiment

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/report"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestSetFailover gives a partition's election to the partition, not to the heal that
// came before the new writer was seen, and takes the workers' first commit from their move.
func TestSetFailover(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []schema.RunFault{{AtS: 10, FaultRecord: schema.FaultRecord{At: at(10), Action: "partition", Node: "n1"}},
		{AtS: 30, FaultRecord: schema.FaultRecord{At: at(30), Action: "heal", Node: "n1"}}}
	fs := []schema.FaultSummary{{AtS: 10}, {AtS: 30}}
	seen := []writerSeen{{At: at(0.5), Node: "n1"}, {At: at(32), Node: "n3"}}
	moves := []workload.WriterMove{{From: "n1", To: "n3", At: at(33), FirstCommit: at(33.5), Workers: 4, Abandoned: 4}}
	setFailover(fs, faults, seen, moves)
	if fs[0].NewWriter != "n3" || fs[0].NewWriterS == nil || *fs[0].NewWriterS != 22 || fs[0].ClientWriterS == nil || *fs[0].ClientWriterS != 23.5 {
		t.Errorf("partition: %+v, want n3 named after 22 s, the workers there after 23.5 s", fs[0])
	}
	if fs[1].NewWriterS != nil || fs[1].ClientWriterS != nil {
		t.Errorf("heal: %+v, want no new writer of its own", fs[1])
	}
	// A poll that answered after the workers' first commit there: the commit bounds it.
	late := []schema.FaultSummary{{AtS: 10}, {AtS: 30}}
	setFailover(late, faults, []writerSeen{{At: at(0.5), Node: "n1"}, {At: at(34), Node: "n3"}}, moves)
	if late[0].NewWriterS == nil || *late[0].NewWriterS != 23.5 || *late[0].ClientWriterS != 23.5 {
		t.Errorf("late poll: %+v, want the new writer named by 23.5 s, when the workers committed there", late[0])
	}
	table := report.FaultTable(fs)
	if !strings.Contains(table, "| 22.0 (n3) | 23.5 |") {
		t.Errorf("fault table lacks the failover columns:\n%s", table)
	}

	// Writer fixed: the same election is a WARNING naming the new writer and the old nodes.
	ws := failoverWarnings(seen, nil, false, []string{"n1"}, t0)
	if len(ws) != 1 || !strings.Contains(ws[0], "new writer, n3, from 32.0 s") || !strings.Contains(ws[0], "stayed on n1") {
		t.Errorf("fixed: warnings %q", ws)
	}
	// Following workers that committed there: no warning; that never did: one.
	if ws := failoverWarnings(seen, moves, true, nil, t0); len(ws) != 0 {
		t.Errorf("followed: warnings %q, want none", ws)
	}
	if ws := failoverWarnings(seen, nil, true, nil, t0); len(ws) != 1 || !strings.Contains(ws[0], "never committed there") {
		t.Errorf("never followed: warnings %q", ws)
	}
}

// TestLowerBoundsNote marks report.md's latency line when transactions never completed.
func TestLowerBoundsNote(t *testing.T) {
	r := &workload.Result{Unknown: 3, WaitCount: 4, StartedAt: time.Unix(100, 0),
		Waits:       []workload.Wait{{Endpoint: "n1", At: 9680 * time.Millisecond, Waited: 32 * time.Second, Abandoned: true}},
		WriterMoves: []workload.WriterMove{{From: "n1", To: "n3", At: time.Unix(140, 0), FirstCommit: time.Unix(141, 0), Workers: 4, Abandoned: 3}}}
	s := &schema.Summary{}
	hangSummary(s, r)
	if s.UnknownOutcome != 3 || s.Waits != 4 || s.LongestWait == nil || s.LongestWait.WaitedS != 32 ||
		len(s.WriterMoves) != 1 || s.WriterMoves[0].AtS != 40 || *s.WriterMoves[0].FirstCommitS != 41 {
		t.Fatalf("summary %+v %+v", s, s.WriterMoves)
	}
	note := Report(&schema.Manifest{}, s)
	if !strings.Contains(note, "include lower bounds:** 4 transactions never completed (3 abandoned") || !strings.Contains(note, "32.00 s on n1 from 9.68 s") {
		t.Errorf("note %q", note)
	}
	if strings.Contains(Report(&schema.Manifest{}, &schema.Summary{}), "lower bounds") {
		t.Error("a note without waits")
	}
}

// TestStaleCommitsWriterPollAsked: a poll of the writer watch is asked before it reads the
// state file (an async kind's writer is the one the file names when read): a change named
// later happened after that time, not after the file was read. The state file is a named
// pipe that gives the state 100 ms after the poll began to read it: the poll's asked time
// is before then.
func TestStaleCommitsWriterPollAsked(t *testing.T) {
	sb := &cluster.Store{StateDir: t.TempDir()}
	dir := filepath.Join(sb.StateDir, "clusters", "a1")
	state, err := json.Marshal(&cluster.Cluster{Name: "a1", ProviderName: "sandbox", Spec: topology.Spec{Kind: topology.Async},
		Nodes: []*cluster.Node{{Name: "n1", Role: topology.RoleSource, ServerID: 1}, {Name: "n2", Role: topology.RoleReplica, ServerID: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, state, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := sb.Load("a1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	w := &writerWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.poll(t.Context(), c)
	}()
	time.Sleep(100 * time.Millisecond)
	given := time.Now()
	var pipe *os.File
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pipe, err = os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil || !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the poll did not read the state file: %v", err)
	}
	if _, err := pipe.Write(state); err != nil {
		t.Fatal(err)
	}
	pipe.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the poll did not end")
	}
	seen, asked := w.changes(), w.lastAsked()
	if len(seen) != 1 || seen[0].Node != "n1" || !asked.Before(given) {
		t.Errorf("writers %+v, asked %v after the state was given; want n1, asked before", seen, asked.Sub(given))
	}
}
