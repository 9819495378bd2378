package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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

// TestSaveRolesKeepsOtherWriters: a Cluster loaded before a restart recorded the node's
// new process records the roles it read (the probe writer refreshing the group's roles)
// without putting the old PID back, and keeps its own processes: a node it started itself
// keeps the PID it recorded until its own save (the restart's rejoin refreshes the roles
// between its start and its save).
func TestSaveRolesKeepsOtherWriters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	restart := &Cluster{Name: "r26-c", path: p, Nodes: []*Node{{Name: "n1", Role: "primary", PID: 100}, {Name: "n2", Role: "secondary", PID: 200}}}
	if err := restart.save(); err != nil {
		t.Fatal(err)
	}
	stale, err := loadState(p)
	if err != nil {
		t.Fatal(err)
	}
	restart.Nodes[0].PID, restart.Nodes[0].StartTicks = 101, 7
	if err := restart.save(); err != nil {
		t.Fatal(err)
	}
	stale.Nodes[0].Role, stale.Nodes[1].Role = "secondary", "primary"
	if err := stale.saveRoles(); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Nodes[0].PID != 101 || got.Nodes[0].StartTicks != 7 || got.Nodes[0].Role != "secondary" || got.Nodes[1].Role != "primary" {
		t.Errorf("state after saveRoles: n1 %+v n2 %+v, want n1 pid 101 ticks 7 secondary, n2 primary", *got.Nodes[0], *got.Nodes[1])
	}
	if stale.Nodes[0].PID != 100 {
		t.Errorf("cluster's own n1 PID %d after saveRoles, want its own 100 kept", stale.Nodes[0].PID)
	}
}
