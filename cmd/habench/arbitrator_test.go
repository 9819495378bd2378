package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/topology"
)

// TestArbitratorSpec: `kind: galera` with `galera: {arbitrator: true}` is the kind
// galera-arbitrator with an aux member arb; garbd's addresses follow the nodes' ports; its
// last logged view is read back.
func TestArbitratorSpec(t *testing.T) {
	s, err := topology.ParseSpecYAML([]byte("name: ab\nkind: galera\nflavor: mariadb\nnodes: 4\ngalera: {arbitrator: true}\nsites: {dc1: [n1, n2], dc2: [n3, n4], dc3: [arb]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != topology.GaleraArbitrator || !s.Is(topology.Galera) || strings.Join(s.MemberNames(), ",") != "n1,n2,n3,n4,arb" {
		t.Errorf("kind %s, members %v", s.Kind, s.MemberNames())
	}
	if err := s.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	// The kind's behaviour is galera's, copied when its file initialises (after galera.go).
	if o := cluster.OpsOf(topology.GaleraArbitrator); o.Ready == nil || o.Command == nil || o.PrepareNode == nil || o.Stuck == nil {
		t.Error("galera-arbitrator's KindOps lack galera's (Ready, Command, PrepareNode, Stuck)")
	}
	if d := topology.KindOf(topology.GaleraArbitrator); d.DefaultNodes != 4 {
		t.Errorf("default nodes %d", d.DefaultNodes)
	}
	one := topology.Spec{Name: "ab", Kind: topology.GaleraArbitrator, Nodes: 1, Flavor: topology.MariaDB}
	one.Defaults()
	if err := one.Validate(); err == nil || !strings.Contains(err.Error(), "2 to 8 nodes") {
		t.Errorf("1 node + arbitrator: %v", err)
	}
	ns := func(n string) (string, int) { return "10.233.9." + n[1:], 3306 }
	peers, listen, err := topology.ArbitratorAddrs(s, ns, "10.233.9.15", 3306)
	if err != nil || strings.Join(peers, ",") != "10.233.9.1:4567,10.233.9.2:4567,10.233.9.3:4567,10.233.9.4:4567" || listen != "10.233.9.15:4567" {
		t.Errorf("netns addresses: %v %s %v", peers, listen, err)
	}
	lo := func(n string) (string, int) { return "127.0.0.1", 23305 + int(n[1]-'0') }
	peers, listen, err = topology.ArbitratorAddrs(s, lo, "127.0.0.1", 23310)
	if err != nil || peers[0] != "127.0.0.1:33306" || peers[3] != "127.0.0.1:33309" || listen != "127.0.0.1:33310" {
		t.Errorf("loopback addresses: %v %s %v", peers, listen, err)
	}
	log := "x INFO: view(view_id(PRIM,0eec8d4c-8104,5) memb {\n\t0eec,0\n\t0f32,0\n\t1226,0\n\t1503,0\n\t1ce8,0\n} joined {\n} left {\n}\n" +
		"y INFO: view(view_id(NON_PRIM,0eec8d4c-8104,6) memb {\n\t1ce8,0\n\t0eec,0\n} joined {\n"
	if prim, m, ok := cluster.GarbdView(log); !ok || prim || m != 2 {
		t.Errorf("last view: primary %v, %d members, %v", prim, m, ok)
	}
}

// TestArbitratorPartition: Galera 2+2 plus an arbitrator in a third site deploys with 5
// members; cutting site dc2 (n3, n4) off from dc1 and the arbitrator leaves n1 and n2
// Primary in a component of 3 and writable, n3 and n4 non-Primary; after the clear every
// node is Synced in a component of 5 again (habench fault partition/heal dc2). Then the
// arbitrator is stopped (it leaves the group), started (it rejoins), killed and started
// (habench fault ... arb); every node stopped and started again brings all five back;
// destroy leaves no garbd, server or namespace.
func TestArbitratorPartition(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	prereq.Need(t, cluster.NetNamespacesUsable())
	if _, err := os.Stat("/usr/bin/garbd"); err != nil {
		prereq.Missing(t, "no /usr/bin/garbd (apt-get install galera-arbitrator-4, or `make deps`)")
	}
	if err := netem.UserspaceAvailable(); err != nil && netem.KernelAvailable() != nil {
		prereq.Missing(t, "no link backend: %v", err)
	}
	state := stateDir(t)
	const stopGrace = "15s" // a clean stop of a node or garbd takes 0.1 to 2 s here
	name := testenv.Name(t, "arb")
	file := filepath.Join(t.TempDir(), "t.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf("name: %s\nkind: galera\nflavor: mariadb\nnodes: 4\ngalera: {arbitrator: true}\nsites: {dc1: [n1, n2], dc2: [n3, n4], dc3: [arb]}\n", name)), 0o644)
	t.Cleanup(func() {
		habench(t, state, "destroy", name)
		if out, _ := exec.Command("pgrep", "-f", state).Output(); len(out) > 0 {
			t.Errorf("processes under %s still running after destroy: %s", state, out)
		}
		if b, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(b), "hb-"+name+"-") {
			t.Errorf("namespaces left: %s", b)
		}
	})
	t0 := time.Now()
	if r := habench(t, state, "deploy", "-f", file); r.code != 0 {
		t.Fatalf("deploy: %d %s", r.code, r.stderr)
	}
	t.Logf("deployed 4 nodes + arbitrator in %.1f s", time.Since(t0).Seconds())
	s := &cluster.Store{StateDir: state, ReadyTimeout: 90 * time.Second}
	c, err := s.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Aux) != 1 || c.Aux[0].Name != "arb" || !c.Aux[0].Running() || c.Aux[0].Netns != "hb-"+name+"-arb" {
		t.Fatalf("aux members: %+v", c.Aux)
	}
	status := func(n string) cluster.GaleraStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		db, err := c.OpenAdmin(c.Node(n))
		if err != nil {
			return cluster.GaleraStatus{State: err.Error()}
		}
		defer db.Close()
		g, err := cluster.ReadGaleraStatus(ctx, db)
		if err != nil {
			g.State = err.Error()
		}
		return g
	}
	all := []string{"n1", "n2", "n3", "n4"}
	waitAmong := func(nodes []string, what string, d time.Duration, ok func(n string, g cluster.GaleraStatus) bool) time.Duration {
		t.Helper()
		start := time.Now()
		var last []string
		for time.Since(start) < d {
			last = nil
			for _, n := range nodes {
				if g := status(n); !ok(n, g) {
					last = append(last, n+": "+g.String())
				}
			}
			if len(last) == 0 {
				return time.Since(start)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: not after %s: %s", what, d, strings.Join(last, "; "))
		return 0
	}
	waitAll := func(what string, d time.Duration, ok func(n string, g cluster.GaleraStatus) bool) time.Duration {
		t.Helper()
		return waitAmong(all, what, d, ok)
	}
	synced := func(size int) func(string, cluster.GaleraStatus) bool {
		return func(_ string, g cluster.GaleraStatus) bool { return g.Synced() && g.ClusterSize == size }
	}
	waitAll("every node Synced in a component of 5", 10*time.Second, synced(5))
	exec1 := func(q string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		db, err := c.OpenAdmin(c.Node("n1"))
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, q)
		return err
	}
	if err := exec1("CREATE TABLE test.arb (id INT AUTO_INCREMENT PRIMARY KEY)"); err != nil {
		if err = exec1("CREATE DATABASE IF NOT EXISTS test"); err == nil {
			err = exec1("CREATE TABLE test.arb (id INT AUTO_INCREMENT PRIMARY KEY)")
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	// Site dc2 cut off from dc1 and dc3 (the arbitrator), both directions.
	t.Cleanup(func() { habench(t, state, "netem", "clear", name) })
	t1 := time.Now()
	applied := make(chan result, 1)
	go func() {
		applied <- habench(t, state, "fault", "partition", "dc2", "--cluster", name)
	}()
	isSplit := func(n string, g cluster.GaleraStatus) bool {
		if n == "n1" || n == "n2" {
			return g.Synced() && g.ClusterSize == 3
		}
		return g.ClusterStatus != "Primary" && !g.Ready
	}
	// First moment n3 is non-Primary and n1 in a Primary component of 3, polled while
	// apply runs (it measures every link before and after).
	var nonPrimaryAt, primary3At time.Time
	var r result
	for done := false; !done || nonPrimaryAt.IsZero() || primary3At.IsZero(); {
		select {
		case r = <-applied:
			done = true
			if r.code != 0 {
				t.Fatalf("fault partition dc2: %d %s %s", r.code, r.stdout, r.stderr)
			}
		default:
		}
		if nonPrimaryAt.IsZero() && isSplit("n3", status("n3")) {
			nonPrimaryAt = time.Now()
		}
		if primary3At.IsZero() && isSplit("n1", status("n1")) {
			primary3At = time.Now()
		}
		if time.Since(t1) > 90*time.Second {
			t.Fatalf("no split after 90 s: n1 %s, n3 %s", status("n1"), status("n3"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitAll("n1, n2 Primary of 3 and n3, n4 non-Primary", 30*time.Second, isSplit)
	var st links.Standing
	if b, err := os.ReadFile(filepath.Join(c.Dir(), links.StandingFile)); err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("links.json: %v", err)
	}
	t.Logf("partition: apply took %.1f s; from the links' apply: n3 non-Primary after %.1f s, n1 Primary in 3 after %.1f s",
		time.Since(t1).Seconds(), nonPrimaryAt.Sub(st.Applied).Seconds(), primary3At.Sub(st.Applied).Seconds())
	for _, n := range []string{"n3", "n4"} {
		t.Logf("%s partitioned: %s", n, status(n))
	}
	t2 := time.Now()
	if err := exec1("INSERT INTO test.arb VALUES (NULL)"); err != nil {
		t.Errorf("n1 not writable while dc2 is cut off: %v", err)
	}
	t.Logf("write on n1 during the partition: %.2f s", time.Since(t2).Seconds())

	t3 := time.Now()
	if r := habench(t, state, "fault", "heal", "dc2", "--cluster", name); r.code != 0 {
		t.Fatalf("fault heal dc2: %d %s", r.code, r.stderr)
	}
	healed := waitAll("every node Synced in a component of 5 after the clear", 90*time.Second, synced(5))
	t.Logf("heal: every node Synced in 5 %.1f s after the clear started", time.Since(t3).Seconds())
	_ = healed

	// The arbitrator as a fault target: a clean stop leaves the group at once, a start
	// rejoins, a kill is noticed after evs.suspect_timeout.
	fault := func(action string) time.Duration {
		t.Helper()
		start := time.Now()
		if r := habench(t, state, "fault", action, "arb", "--cluster", name, "--stop-grace", stopGrace); r.code != 0 {
			t.Fatalf("fault %s arb: %d %s", action, r.code, r.stderr)
		}
		return time.Since(start)
	}
	took := fault("stop")
	t4 := time.Now()
	waitAll("component of 4 after stopping arb", 30*time.Second, synced(4))
	t.Logf("fault stop arb: %.1f s, then a component of 4 after %.1f s", took.Seconds(), time.Since(t4).Seconds())
	took = fault("start")
	t5 := time.Now()
	waitAll("component of 5 after starting arb", 30*time.Second, synced(5))
	t.Logf("fault start arb: %.1f s (until garbd synced), component of 5 after %.1f s more", took.Seconds(), time.Since(t5).Seconds())
	took = fault("kill")
	t6 := time.Now()
	waitAll("component of 4 after killing arb", 30*time.Second, synced(4))
	t.Logf("fault kill arb: %.1f s, then a component of 4 after %.1f s", took.Seconds(), time.Since(t6).Seconds())
	fault("start")
	waitAll("component of 5 after starting arb again", 30*time.Second, synced(5))

	// Every node stopped cleanly (as a cell restart does: the writer last) while garbd
	// runs: Galera marks no node safe to bootstrap, habench bootstraps from the highest
	// seqno, restarts garbd around the bootstrap, and all five are members again. A clean
	// Galera stop takes about a second here: a short grace, and a stop that needs SIGKILL
	// fails the test (habench reports it as a crash). Each stop from a settled component:
	// in CI the last node's stop, begun while the component was still forming after the
	// stops before it ("no install message received"), outlasted the 15 s grace.
	t7 := time.Now()
	var steps []string
	running := slices.Clone(all)
	for _, n := range []string{"n2", "n3", "n4", "n1"} {
		start := time.Now()
		if r := habench(t, state, "fault", "stop", n, "--cluster", name, "--stop-grace", stopGrace); r.code != 0 {
			b, _ := os.ReadFile(filepath.Join(c.Node(n).Dir, "error.log"))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Fatalf("fault stop %s: %d %s\nits error log ends:\n%s", n, r.code, r.stderr, strings.Join(lines[max(0, len(lines)-25):], "\n"))
		}
		steps = append(steps, fmt.Sprintf("stop %s %.1f s", n, time.Since(start).Seconds()))
		running = slices.DeleteFunc(running, func(m string) bool { return m == n })
		if len(running) > 0 {
			waitAmong(running, "component of the running nodes and arb after stopping "+n, 30*time.Second, synced(len(running)+1))
		}
	}
	for _, n := range all {
		start := time.Now()
		if r := habench(t, state, "fault", "start", n, "--cluster", name); r.code != 0 {
			t.Fatalf("fault start %s after every node stopped: %d %s", n, r.code, r.stderr)
		}
		steps = append(steps, fmt.Sprintf("start %s %.1f s", n, time.Since(start).Seconds()))
	}
	waitAll("component of 5 after every node stopped and started", 30*time.Second, synced(5))
	t.Logf("every node stopped and started again, arbitrator back: %.1f s (%s)", time.Since(t7).Seconds(), strings.Join(steps, ", "))
	if r := habench(t, state, "status", name); r.code != 0 || !strings.Contains(r.stdout, "garbd running, Primary, cluster size 5") {
		t.Errorf("status: %d %s %s", r.code, r.stdout, r.stderr)
	} else {
		t.Logf("status:\n%s", r.stdout)
	}
	if r := habench(t, state, "destroy", name); r.code != 0 {
		t.Errorf("destroy: %d %s", r.code, r.stderr)
	}
	if out, _ := exec.Command("pgrep", "-f", "garbd.*--group "+name+" ").Output(); len(out) > 0 {
		t.Errorf("garbd left after destroy: %s", out)
	}
}
