package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/scenario"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/report"
	"github.com/habench/habench/topology"
)

// TestSweepResume: a small sweep on MariaDB (single and 2-node async, sync_binlog 0/1 set
// with SET GLOBAL, threads 1 and 4, 5 s cells) is interrupted in its third cell, then
// resumed: the resume runs exactly the cells not done, in the same directory. Every cell
// ends done, with its own run directory whose manifest names the cell's axis values, and
// sweep.json's values read back from every node equal the requested ones.
func TestSweepResume(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	sb := testenv.Store(t)
	single, async := testenv.Name(t, "sws"), testenv.Name(t, "swa")
	y := `name: swresume
topologies:
  - {name: ` + single + `, kind: single, flavor: mariadb}
  - {name: ` + async + `, kind: async, nodes: 2, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 2000, time: 5, report-interval: 1}
sweep:
  knob.sync_binlog: [0, 1]
  threads: [1, 4]
`
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// First run: interrupted 2 s into cell 3.
	rctx, interrupt := context.WithCancel(ctx)
	var once sync.Once
	r := &experiment.ScenarioRun{Scenario: s, Store: sb, ResultsDir: results, Log: nil,
		OnCell: func(c schema.CellRecord) {
			if c.Index == 2 {
				once.Do(func() { time.AfterFunc(2*time.Second, interrupt) })
			}
		}}
	dir, _, err := r.Run(rctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	f, err := schema.ReadSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	var st []string
	for _, c := range f.Cells {
		st = append(st, c.Status)
	}
	if !slices.Equal(st, []string{"done", "done", "failed", "pending", "pending", "pending", "pending", "pending"}) || !strings.HasPrefix(f.Cells[2].Error, "interrupted") {
		t.Fatalf("after the interrupt: %v (cell 3: %s)", st, f.Cells[2].Error)
	}
	before := f.Cells[:2]
	if cs, _ := sb.List(); len(cs) != 0 {
		t.Fatalf("the interrupted run left %d clusters", len(cs))
	}

	// Resume: only cells 3..8 run, in the same directory.
	r = &experiment.ScenarioRun{Scenario: s, Store: sb, ResumeDir: dir}
	dir2, rows, err := r.Run(ctx)
	if err != nil || dir2 != dir {
		t.Fatalf("resume: %v (dir %s, want %s)", err, dir2, dir)
	}
	if f, err = schema.ReadSweep(dir); err != nil {
		t.Fatal(err)
	}
	if len(f.Invocations) != 2 || !f.Invocations[1].Resume || !slices.Equal(f.Invocations[1].CellsRun, []int{3, 4, 5, 6, 7, 8}) {
		t.Errorf("invocations: %+v", f.Invocations)
	}
	for i, c := range f.Cells {
		if c.Status != schema.StatusDone {
			t.Errorf("cell %d: %s %s", c.Index, c.Status, c.Error)
			continue
		}
		if i < 2 && (c.Dir != before[i].Dir || !c.Started.Equal(*before[i].Started)) {
			t.Errorf("cell %d ran again: %s at %v, before %s at %v", c.Index, c.Dir, c.Started, before[i].Dir, before[i].Started)
		}
		// The swept value as read back from every node is the requested one.
		want := c.Axes["knob.sync_binlog"]
		nodes := c.ReadBack["sync_binlog"]
		if c.Requested["sync_binlog"] != want || c.Values["knob.sync_binlog"] != want || len(nodes) != map[string]int{single: 1, async: 2}[c.Topology] {
			t.Errorf("cell %d: requested %v, read back %v, value %v", c.Index, c.Requested, c.ReadBack, c.Values)
		}
		for n, v := range nodes {
			if v != want {
				t.Errorf("cell %d node %s: sync_binlog %q, requested %q", c.Index, n, v, want)
			}
		}
		if c.TPS <= 0 || c.LatencyMs == nil || c.LatencyMs.P95 <= 0 || c.Threads != map[string]int{"1": 1, "4": 4}[c.Axes["threads"]] {
			t.Errorf("cell %d: TPS %v latency %+v threads %d", c.Index, c.TPS, c.LatencyMs, c.Threads)
		}
		var m struct {
			Extra map[string]any `json:"extra"`
			Nodes []struct {
				Variables map[string]string `json:"variables"`
			} `json:"nodes"`
			Workload struct {
				Options map[string]string `json:"options"`
			} `json:"workload"`
		}
		b, err := os.ReadFile(filepath.Join(dir, c.Dir, "manifest.json"))
		if err != nil {
			t.Errorf("cell %d: %v", c.Index, err)
			continue
		}
		json.Unmarshal(b, &m)
		axes, _ := m.Extra["axes"].(map[string]any)
		if axes["knob.sync_binlog"] != want || axes["threads"] != c.Axes["threads"] || axes["topology"] != c.Topology || m.Extra["cell_index"] != float64(c.Index) {
			t.Errorf("cell %d manifest extra %v", c.Index, m.Extra)
		}
		if m.Workload.Options["threads"] != c.Axes["threads"] || m.Nodes[0].Variables["sync_binlog"] != want {
			t.Errorf("cell %d manifest: threads %s, sync_binlog %s", c.Index, m.Workload.Options["threads"], m.Nodes[0].Variables["sync_binlog"])
		}
	}
	// The interrupted attempt's directory is kept and listed.
	if len(f.Cells[2].PreviousDirs) != 1 {
		t.Errorf("cell 3 previous dirs %v", f.Cells[2].PreviousDirs)
	}
	dirs, _ := filepath.Glob(filepath.Join(dir, "*-c0*"))
	if len(dirs) != 9 {
		t.Errorf("%d run directories, want 8 cells + 1 interrupted attempt: %v", len(dirs), dirs)
	}
	if len(rows) != 8 || rows[4].Topology != async || rows[4].TPSvsBase <= 0 {
		t.Errorf("comparison rows %d: %+v", len(rows), rows)
	}
	for _, name := range []string{"comparison.md", "comparison.json", "sweep.md", "sweep_points.json", "scenario.yaml", "report.html", "sweep.csv"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	var pts []report.SweepPoint
	b, _ := os.ReadFile(filepath.Join(dir, "sweep_points.json"))
	json.Unmarshal(b, &pts)
	if len(pts) != 16 || pts[0].Axis != "sync_binlog" || pts[0].Value != "0" || pts[1].Axis != "threads" {
		t.Errorf("points %+v", pts)
	}
}

// twoCellSweep is scenario scen: topology name (kind, nodes, flavor), oltp_write_only for
// 2 s on one table of 1000 rows, threads [1, 2], and the cell policy cell (a YAML mapping).
func twoCellSweep(scen, name string, kind topology.Kind, nodes int, flavor topology.Flavor, cell string) string {
	return `name: ` + scen + `
topologies:
  - {name: ` + name + `, kind: ` + string(kind) + `, nodes: ` + strconv.Itoa(nodes) + `, flavor: ` + string(flavor) + `}
workload:
  test: oltp_write_only
  options: {tables: 1, table-size: 1000, time: 2}
sweep:
  threads: [1, 2]
cell: ` + cell + `
`
}

// sweepRestartFails: after cell 1 the replication user's password changes on n1, so the
// restart before cell 2 leaves n2's receiver unable to log in (Connecting, error 1045) and
// the restart's wait (the sandbox's ReadyTimeout, 15 s here) ends: cell 2 fails naming n2,
// how long it waited and the threads' last state, and n2's error log tail (the receiver's
// "Access denied" lines) is kept in the sweep directory, named in the cell's record.
func sweepRestartFails(t *testing.T, prefix string, kind topology.Kind, nodes int, flavor topology.Flavor) {
	testenv.Installation(t, flavor)
	sb := testenv.Store(t)
	sb.ReadyTimeout = 15 * time.Second
	name := testenv.Name(t, prefix)
	y := twoCellSweep("swfail", name, kind, nodes, flavor, "{restart: true, warmup: 1s}")
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &experiment.ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir(), OnCell: func(c schema.CellRecord) {
		if c.Index != 1 {
			return
		}
		cl, err := sb.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		db, err := cl.OpenAdmin(cl.Member("n1"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range []string{"SET SESSION sql_log_bin=0", "ALTER USER '" + topology.ReplUser + "'@'%' IDENTIFIED BY 'not-the-password'"} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}}
	var out bytes.Buffer
	r.Stdout = &out
	dir, _, err := r.Run(ctx)
	if dir == "" {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	f, _ := schema.ReadSweep(dir)
	if len(f.Cells) != 2 || f.Cells[0].Status != schema.StatusDone {
		t.Fatalf("cells %+v", f.Cells)
	}
	c := f.Cells[1]
	for _, w := range []string{"restart: node n2: replica threads not running after 1", `io="Connecting"`, "Access denied", "n2's error log, its last 300 lines: c002-" + name + "-n2-error.log"} {
		if !strings.Contains(c.Error, w) {
			t.Errorf("cell 2: error %q lacks %q", c.Error, w)
		}
	}
	if c.Status != schema.StatusFailed || c.ErrorLog != "c002-"+name+"-n2-error.log" {
		t.Errorf("cell 2: status %s, error log %q", c.Status, c.ErrorLog)
	}
	log, err := os.ReadFile(filepath.Join(dir, c.ErrorLog))
	if err != nil || !strings.Contains(string(log), "Access denied") {
		t.Errorf("n2's error log tail kept in the results: %v, want the receiver's Access denied lines:\n%s", err, log)
	}
	t.Logf("cell 2's error: %s", c.Error)
}

func sweepCellPolicy(t *testing.T, prefix string, kind topology.Kind, nodes int, flavor topology.Flavor) {
	testenv.Installation(t, flavor)
	sb := testenv.Store(t)
	name := testenv.Name(t, prefix)
	drop := os.Geteuid() == 0 && experiment.CheckDropCaches() == nil
	y := twoCellSweep("swpolicy", name, kind, nodes, flavor, "{prepare: reprepare, restart: true, warmup: 1s, drop_caches: "+strconv.FormatBool(drop)+"}")
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	// With the suite beside it a Galera run (a deploy, two cells each restarting every
	// node and preparing again) took 140 s, a group's more than 3 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	pids := map[int][]int{}
	r := &experiment.ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir(), OnCell: func(c schema.CellRecord) {
		cl, err := sb.Load(name)
		if err != nil {
			t.Errorf("cell %d: %v", c.Index, err)
			return
		}
		for _, n := range cl.Nodes {
			pids[c.Index] = append(pids[c.Index], n.PID)
		}
		if w := cl.Writer().Name; w != "n1" {
			t.Errorf("cell %d: the writer is %s after the restart, want n1", c.Index, w)
		}
	}}
	dir, _, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := schema.ReadSweep(dir)
	for _, c := range f.Cells {
		if c.Status != schema.StatusDone || c.Transactions == 0 {
			t.Errorf("cell %d: %s %s, %d transactions", c.Index, c.Status, c.Error, c.Transactions)
		}
		var sum schema.Summary
		b, _ := os.ReadFile(filepath.Join(dir, c.Dir, "summary.json"))
		json.Unmarshal(b, &sum)
		if sum.ReplicasCaught == nil || !*sum.ReplicasCaught || sum.DataCheck != "" {
			t.Errorf("cell %d: replicas consistent %v, data check %q", c.Index, sum.ReplicasCaught, sum.DataCheck)
		}
	}
	if len(pids[1]) != nodes || len(pids[2]) != nodes {
		t.Fatalf("server PIDs per cell %v", pids)
	}
	for i := range nodes {
		if pids[1][i] == pids[2][i] {
			t.Errorf("server PIDs per cell %v: want new servers in every cell", pids)
			break
		}
	}
	if !f.Policy.Restart || f.Policy.Prepare != scenario.PrepareReprepare || f.Policy.DropCaches != drop {
		t.Errorf("policy recorded %+v", f.Policy)
	}
	t.Logf("drop_caches %v, cells %.1fs and %.1fs", drop, f.Cells[0].WallS, f.Cells[1].WallS)
}

// TestSweepOnExistingCluster: a sweep over a cluster of the state directory (provider
// existing) sets its knob axis with package knob on every node, reads it back, leaves the
// cluster running with its settings restored and its sbtest tables removed.
func TestSweepOnExistingCluster(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	sb := testenv.Store(t)
	name := testenv.Name(t, "swe")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := sb.Deploy(ctx, testenv.Spec(t, name, topology.Async, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	before, err := experiment.ReadGlobals(ctx, c, []string{"max_connections", "sync_binlog"})
	if err != nil {
		t.Fatal(err)
	}
	y := `name: swexisting
topologies:
  - {provider: existing, cluster: ` + name + `, knobs: {max_connections: 333}}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, time: 2, threads: 2}
sweep:
  knob.sync_binlog: [1, 0]
`
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	dir, _, err := (&experiment.ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir()}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := schema.ReadSweep(dir)
	for _, cell := range f.Cells {
		want := cell.Axes["knob.sync_binlog"]
		if cell.Status != schema.StatusDone || cell.Values["knob.sync_binlog"] != want || len(cell.ReadBack["sync_binlog"]) != 2 || cell.Kind != "async" {
			t.Errorf("cell %d: %s %s, values %v, read back %v, kind %s", cell.Index, cell.Status, cell.Error, cell.Values, cell.ReadBack, cell.Kind)
		}
		var m struct {
			Nodes []struct {
				Variables map[string]string `json:"variables"`
			} `json:"nodes"`
		}
		b, _ := os.ReadFile(filepath.Join(dir, cell.Dir, "manifest.json"))
		json.Unmarshal(b, &m)
		for i, n := range m.Nodes {
			if n.Variables["max_connections"] != "333" || n.Variables["sync_binlog"] != want {
				t.Errorf("cell %d node %d ran with max_connections %s sync_binlog %s", cell.Index, i+1, n.Variables["max_connections"], n.Variables["sync_binlog"])
			}
		}
	}
	// Still there, as it was, without habench's tables.
	cl, err := sb.Load(name)
	if err != nil || cl.State != "ready" {
		t.Fatalf("existing cluster after the sweep: %v", err)
	}
	after, err := experiment.ReadGlobals(ctx, cl, []string{"max_connections", "sync_binlog"})
	if err != nil {
		t.Fatal(err)
	}
	for v, nodes := range before {
		for n, val := range nodes {
			if after[v][n] != val {
				t.Errorf("%s on %s: %s before the sweep, %s after", v, n, val, after[v][n])
			}
		}
	}
	db, err := cl.OpenAdmin(cl.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables int
	db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='sbtest'").Scan(&tables)
	if tables != 0 {
		t.Errorf("%d sbtest tables left on the existing cluster", tables)
	}
}

// TestSweepDropCachesLocal: cell: {drop_caches: true} on a local sandbox drops this
// machine's page cache once before the cell (the sandbox's one host, "local") and the
// cell's manifest.json records it; the local run's manifest hosts carry no clock.
func TestSweepDropCachesLocal(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	prereq.NeedErr(t, "page cache cannot be dropped here", experiment.CheckDropCaches())
	sb := testenv.Store(t)
	name := testenv.Name(t, "ckdrop")
	y := `name: ckdrop
topologies:
  - {name: ` + name + `, kind: single, flavor: mariadb}
workload:
  test: oltp_point_select
  options: {tables: 1, table-size: 100, time: 1}
cell: {drop_caches: true, warmup: 0s}
`
	s, err := scenario.ParseScenario([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := &experiment.ScenarioRun{Scenario: s, Store: sb, ResultsDir: t.TempDir()}
	dir, _, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.ReadSweep(dir)
	if err != nil || len(f.Cells) != 1 || f.Cells[0].Status != schema.StatusDone {
		t.Fatalf("sweep file %v: %+v", err, f)
	}
	b, err := os.ReadFile(filepath.Join(dir, f.Cells[0].Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Started    time.Time          `json:"started"`
		CacheDrops []schema.CacheDrop `json:"drop_caches"`
		Hosts      []map[string]any   `json:"hosts"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.CacheDrops) != 1 {
		t.Fatalf("drop_caches %s", b)
	}
	d := m.CacheDrops[0]
	if d.Host != "local" || len(d.Nodes) != 1 || d.Nodes[0] != "n1" || d.At.IsZero() || d.At.After(m.Started) || d.TookS <= 0 || d.TookS > 60 {
		t.Errorf("drop_caches %+v (run started %v)", d, m.Started)
	}
	if len(m.Hosts) != 1 || m.Hosts[0]["name"] != "local" || m.Hosts[0]["offset_ms"] != nil || m.Hosts[0]["clock_error"] != nil {
		t.Errorf("hosts %v: want local alone, without a clock", m.Hosts)
	}
	t.Logf("page cache dropped in %.2f s", d.TookS)
}
