package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// TestFaultPromote drives `habench fault` on a 3-node MariaDB async sandbox: promote n2
// while n1 runs (n1 and n3 then replicate from n2, and n2's option file keeps it
// writable), kill the writer, promote n3 with the old source down, start n2 (it comes
// back as n3's replica and gets a row written on n3 meanwhile); bad input is one line,
// exit 2, and every fault is in the cluster's faults log.
func TestFaultPromote(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	name := testenv.Name(t, "fp1")
	must := func(args ...string) result {
		t.Helper()
		r := habench(t, state, args...)
		if r.code != 0 {
			t.Fatalf("habench %v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
		return r
	}
	must("deploy", "--name", name, "--kind", "async", "--nodes", "3", "--flavor", "mariadb")
	sb := &cluster.Store{StateDir: state}
	open := func(node string) *sql.DB {
		t.Helper()
		c, err := sb.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		db, err := c.OpenAdmin(c.Node(node))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	exec := func(node, q string) {
		t.Helper()
		if _, err := open(node).Exec(q); err != nil {
			t.Fatalf("%s: %s: %v", node, q, err)
		}
	}
	// waitRow waits until node has row id in ft.t.
	waitRow := func(node string, id int) {
		t.Helper()
		db := open(node)
		deadline := time.Now().Add(20 * time.Second)
		for {
			var n int
			if db.QueryRow("SELECT COUNT(*) FROM ft.t WHERE id=?", id).Scan(&n); n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never got row %d", node, id)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	roles := func() string {
		t.Helper()
		c, err := sb.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, n := range c.Nodes {
			s = append(s, n.Name+"="+string(n.Role))
		}
		return strings.Join(s, " ")
	}
	exec("n1", "CREATE DATABASE ft")
	exec("n1", "CREATE TABLE ft.t (id INT PRIMARY KEY)")
	exec("n1", "INSERT INTO ft.t VALUES (1)")
	waitRow("n2", 1)

	r := must("fault", "promote", "n2", "--cluster", name)
	if !strings.Contains(r.stdout, "promoted n2") || !strings.Contains(r.stdout, "old source n1 up") {
		t.Errorf("promote output: %q", r.stdout)
	}
	if got := roles(); got != "n1=replica n2=source n3=replica" {
		t.Errorf("roles after promote n2: %s", got)
	}
	exec("n2", "INSERT INTO ft.t VALUES (2)")
	waitRow("n1", 2)
	waitRow("n3", 2)
	cnf, _ := os.ReadFile(filepath.Join(state, "clusters", name, "n2", "my.cnf"))
	if v, ok := cluster.OptionLineValue(string(cnf), "read_only"); !ok || v != "OFF" {
		t.Errorf("n2's option file: read_only = %q (%v), want OFF so a restart keeps it the source", v, ok)
	}

	must("fault", "kill", "writer", "--cluster", name) // n2
	r = must("fault", "promote", "n3", "--cluster", name)
	if !strings.Contains(r.stdout, "old source n2 down") || !strings.Contains(r.stdout, "repointed when started: n2") {
		t.Errorf("promote with the old source down: %q", r.stdout)
	}
	exec("n3", "INSERT INTO ft.t VALUES (3)")
	waitRow("n1", 3)
	must("fault", "start", "n2", "--cluster", name)
	waitRow("n2", 3)
	if got := roles(); got != "n1=replica n2=replica n3=source" {
		t.Errorf("roles at the end: %s", got)
	}

	// partition through the link layer, and netem clear --all removes it.
	r = must("fault", "partition", "n1", "--cluster", name)
	if !strings.Contains(r.stdout, "partitioned n1") {
		t.Errorf("fault partition: %q", r.stdout)
	}
	if r := habench(t, state, "fault", "partition", "n2", "--cluster", name); r.code != 2 || !strings.Contains(r.stderr, "has impairments already") {
		t.Errorf("a second partition: exit %d %q", r.code, r.stderr)
	}
	r = must("netem", "clear", "--all")
	if !strings.Contains(r.stdout, name+": cleared --partition n1") {
		t.Errorf("netem clear --all: %q", r.stdout)
	}
	for _, bad := range [][]string{
		{"fault", "explode", "n1", "--cluster", name},
		{"fault", "kill", "n9", "--cluster", name},
		{"fault", "promote", "n3", "--cluster", name}, // the source already
		{"fault", "kill", "n1"},
	} {
		r := habench(t, state, bad...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("habench %v: exit %d, stderr %q; want exit 2 and one line", bad, r.code, r.stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(state, "clusters", name, "faults.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var f struct{ Action, Node string }
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("faults log line %q: %v", line, err)
		}
		actions = append(actions, f.Action+" "+f.Node)
	}
	if got := strings.Join(actions, ", "); !strings.HasPrefix(got, "promote n2, kill n2, promote n3, start n2, partition n1") {
		t.Errorf("faults log: %s", got)
	}
	must("destroy", name)
	noClusters(t, state, name)
}
