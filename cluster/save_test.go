package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/topology"
)

// TestSaveFailsNamingTheStateFile: a cluster state file that cannot be written (a
// directory where it should be) fails save with an error naming the file, and leaves no
// temporary file; the state is written whole when it can be.
func TestSaveFailsNamingTheStateFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r19-c.json")
	c := &Cluster{Name: "r19-c", path: p}
	if err := c.save(); err != nil {
		t.Fatal(err)
	}
	if got, err := loadState(p); err != nil || got.Name != "r19-c" {
		t.Fatalf("state written: %+v, %v", got, err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := c.save()
	if err == nil || !strings.Contains(err.Error(), "cluster state") || !strings.Contains(err.Error(), p) {
		t.Fatalf("save over a directory: %v, want an error naming %s", err, p)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmps) != 0 {
		t.Errorf("save left its temporary files behind: %v", tmps)
	}
}

// TestConcurrentSaves: several Cluster values of one state file (a run's fault injection,
// its probe writer, a `habench fault` beside the run) save at the same time; every save
// succeeds, the file is one of theirs whole, and no temporary file is left (CI saw a
// restart fail with "rename state.json.tmp: no such file or directory" when another
// writer had renamed the shared temporary file first).
func TestConcurrentSaves(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	const writers, rounds = 8, 50
	errs := make(chan error, writers*rounds)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := &Cluster{Name: "r26-c", path: p, Nodes: []*Node{{Name: "n1", PID: w + 1}}}
			for i := 0; i < rounds; i++ {
				errs <- c.save()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	failed := 0
	var first error
	for err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			failed++
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d concurrent saves failed, first: %v", failed, writers*rounds, first)
	}
	got, err := loadState(p)
	if err != nil || len(got.Nodes) != 1 || got.Nodes[0].PID < 1 || got.Nodes[0].PID > writers {
		t.Fatalf("state after concurrent saves: %+v, %v", got, err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// TestSaveKeepsOtherWriters: a Cluster loaded before a restart recorded n1's new process
// records the roles it read later (the probe writer refreshing the group's roles) without
// putting the old PID back, and learns the new PID from the file; the restart's own later
// save keeps its PID and takes the new roles. The proxy's checks the restart changed
// (RestartProxy) survive the stale save too.
func TestSaveKeepsOtherWriters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	first := &Cluster{Name: "r26-c", path: p, Nodes: []*Node{{Name: "n1", Role: "primary", PID: 100}, {Name: "n2", Role: "secondary", PID: 200}}}
	if err := first.save(); err != nil {
		t.Fatal(err)
	}
	restart, err := loadState(p)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := loadState(p)
	if err != nil {
		t.Fatal(err)
	}
	restart.Nodes[0].PID, restart.Nodes[0].StartTicks = 101, 7
	restart.Spec.Proxy = topology.ProxySpec{Type: topology.HAProxy, CheckInterval: 2 * time.Second}
	if err := restart.save(); err != nil {
		t.Fatal(err)
	}
	stale.Nodes[0].Role, stale.Nodes[1].Role = "secondary", "primary"
	if err := stale.save(); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Nodes[0].PID != 101 || got.Nodes[0].StartTicks != 7 || got.Nodes[0].Role != "secondary" || got.Nodes[1].Role != "primary" {
		t.Errorf("state after the stale save: n1 %+v n2 %+v, want n1 pid 101 ticks 7 secondary, n2 primary", *got.Nodes[0], *got.Nodes[1])
	}
	if got.Spec.Proxy.CheckInterval != 2*time.Second {
		t.Errorf("state after the stale save: proxy %+v, want the restart's checks every 2s", got.Spec.Proxy)
	}
	if stale.Nodes[0].PID != 101 {
		t.Errorf("stale cluster's n1 PID %d after its save, want 101 (taken from the file)", stale.Nodes[0].PID)
	}
	restart.Nodes[1].PID = 201
	if err := restart.save(); err != nil {
		t.Fatal(err)
	}
	if got, _ := loadState(p); got.Nodes[0].PID != 101 || got.Nodes[1].PID != 201 || got.Nodes[0].Role != "secondary" || got.Nodes[1].Role != "primary" {
		t.Errorf("state after the restart's second save: n1 %+v n2 %+v", *got.Nodes[0], *got.Nodes[1])
	}
}

// TestConcurrentLoadSave: 16 Cluster values loaded from one state file each record a
// different node's new PID and save at once; every PID survives (the save re-reads the
// file under the state lock: without it, last writers put the others' old PIDs back).
func TestConcurrentLoadSave(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	const n = 16
	c := &Cluster{Name: "r26-c", path: p}
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{Name: fmt.Sprintf("n%d", i+1), PID: 1})
	}
	if err := c.save(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			mine, err := loadState(p)
			if err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Millisecond) // all loaded before most save
			mine.Nodes[i].PID = 1000 + i
			errs <- mine.save()
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := loadState(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, nd := range got.Nodes {
		if nd.PID != 1000+i {
			t.Errorf("%s: PID %d, want %d (another writer's save lost it)", nd.Name, nd.PID, 1000+i)
		}
	}
}

// TestSaveWithoutPath: a Cluster never given a state file is refused, with no lock file
// made in the working directory.
func TestSaveWithoutPath(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := (&Cluster{Name: "r26-x"}).save(); err == nil || !strings.Contains(err.Error(), "r26-x") {
		t.Errorf("save without a path: %v, want an error naming the cluster", err)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("save without a path left %d files in the working directory", len(entries))
	}
}
