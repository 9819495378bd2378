package sampler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/topology"
)

// TestHeartbeatLeavesHungWriter: a heartbeat write that hangs on the writer (here held by
// LOCK TABLES; in a group, an old primary cut off in a minority) is kept while the record
// still calls that node the writer, and given up for the new writer as soon as the record
// moves: the heartbeat does not stay stuck, every node reading lag 0 against it.
func TestHeartbeatLeavesHungWriter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server test (-short)")
	}
	a, b := testserver.StartMariaDB(t), testserver.StartMariaDB(t)
	aDB, bDB := a.Open(t, ""), b.Open(t, "")
	testserver.Exec(t, bDB, "CREATE DATABASE habench", "CREATE TABLE habench.heartbeat (id INT UNSIGNED NOT NULL PRIMARY KEY, "+
		"seq BIGINT UNSIGNED NOT NULL, ts_us BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB")
	nodes := []Node{{Name: "a", Role: topology.RoleSource, DB: aDB}, {Name: "b", Role: topology.RoleReplica, DB: bDB}}
	var mu sync.Mutex
	roles := map[string]topology.Role{"a": topology.RoleSource, "b": topology.RoleReplica}
	cfg := Config{HeartbeatPeriod: 100 * time.Millisecond, Roles: func(context.Context) (map[string]topology.Role, error) {
		mu.Lock()
		defer mu.Unlock()
		return map[string]topology.Role{"a": roles["a"], "b": roles["b"]}, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := NewHeartbeat()
	stop, err := h.Start(ctx, cfg, nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	writer := func() string { h.mu.Lock(); defer h.mu.Unlock(); return h.writer }
	seq := func() uint64 { e, _ := h.log.latest(); return e.seq }
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s (writer %s, seq %d)", what, writer(), seq())
			}
		}
	}
	waitFor("first writes on a", func() bool { return seq() >= 3 })

	lock, err := aDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "LOCK TABLES habench.heartbeat WRITE"); err != nil {
		t.Fatal(err)
	}
	held := seq()
	time.Sleep(2500 * time.Millisecond)
	if w, s := writer(), seq(); w != "a" || s > held+1 || h.writeErrors.Load() != 0 {
		t.Fatalf("a still the writer in the record: writer %s, seq %d (held at %d), %d write errors; want the hung write kept on a", w, s, held, h.writeErrors.Load())
	}
	moved := time.Now()
	mu.Lock()
	roles["a"], roles["b"] = topology.RoleReplica, topology.RoleSource
	mu.Unlock()
	waitFor("heartbeat on b after the record moved", func() bool { return writer() == "b" && seq() > held+1 })
	took := time.Since(moved)
	t.Logf("writer moved from the hung a to b %v after the record did; seq %d", took.Round(10*time.Millisecond), seq())
	if took > 3*time.Second {
		t.Errorf("heartbeat took %v to leave the hung writer, want within about a second", took)
	}
	lock.ExecContext(ctx, "UNLOCK TABLES")
}
