package experiment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// sampleLog keeps every sample of a run: node -> metric -> values in tick order, and
// each value's tick on samples.csv's clock (at, in the same order).
type sampleLog struct {
	mu sync.Mutex
	m  map[string]map[string][]float64
	at map[string]map[string][]time.Duration
}

func newSampleLog() *sampleLog {
	return &sampleLog{m: map[string]map[string][]float64{}, at: map[string]map[string][]time.Duration{}}
}

func (l *sampleLog) add(ss []sampler.Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range ss {
		if l.m[s.Node] == nil {
			l.m[s.Node] = map[string][]float64{}
			l.at[s.Node] = map[string][]time.Duration{}
		}
		l.m[s.Node][s.Metric] = append(l.m[s.Node][s.Metric], s.Value)
		l.at[s.Node][s.Metric] = append(l.at[s.Node][s.Metric], s.Elapsed)
	}
}

// sumMeasured is the sum of node's metric over the ticks the run's summary covers: those at
// or after the start of measurement, manifest.json's intervals_offset_s in the results
// directory dir (the summary leaves out the ticks before it, whose counts can hold the
// run's first commits when a tick's reads end after the tick began). Fails t when the
// manifest cannot be read.
func (l *sampleLog) sumMeasured(t *testing.T, dir, node, metric string) float64 {
	t.Helper()
	var man struct {
		IntervalsOffsetS float64 `json:"intervals_offset_s"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &man)
	}
	if err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	from := time.Duration(man.IntervalsOffsetS * float64(time.Second))
	l.mu.Lock()
	defer l.mu.Unlock()
	s := 0.0
	for i, v := range l.m[node][metric] {
		if from <= 0 || l.at[node][metric][i] >= from {
			s += v
		}
	}
	return s
}

func (l *sampleLog) get(node, metric string) []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]float64(nil), l.m[node][metric]...)
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func maxv(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// groupNodes opens admin pools to every member for a sampler run of the test's own.
func groupNodes(t *testing.T, c *cluster.Cluster) []sampler.Node {
	var nodes []sampler.Node
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		nodes = append(nodes, sampler.Node{Name: n.Name, Role: n.Role, Caps: c.Capabilities(), DB: db})
	}
	return nodes
}

// benchWithInference runs a Bench (its default samplers: heartbeat, gtid, group) and, over
// the same time, a second Group sampler with Infer set, so the inferred flow-control metric
// is sampled beside the component's measured one.
func benchWithInference(t *testing.T, ctx context.Context, b *experiment.Bench, nodes []sampler.Node) (*experiment.Outcome, *sampleLog, *sampleLog) {
	t.Helper()
	bench, inferred := newSampleLog(), newSampleLog()
	b.OnSamples = bench.add
	g := sampler.NewGroup()
	g.Infer = true
	r := sampler.NewRunner(sampler.Config{Interval: 500 * time.Millisecond}, nodes, []sampler.Sampler{g})
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx, inferred.add) }()
	out, err := b.Run(ctx)
	stop()
	if rerr := <-done; rerr != nil {
		t.Errorf("inference sampler: %v", rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, bench, inferred
}

// TestGroupFlowControlThrottles: on a 3-member single-primary group under an
// oltp_write_only load on the primary, flow control never throttles with the default
// thresholds (25000), and throttles (Gr_flow_control_throttle_* deltas on the primary, and
// the inferred metric on some member) once both thresholds are 1. Also checks the
// heartbeat and GTID samplers work on a group (writer = the primary).
func TestGroupFlowControlThrottles(t *testing.T) {
	t.Parallel()
	_, c := experiment.SharedGroup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if !c.Capabilities().GRFlowControlStats {
		t.Fatalf("MySQL %s: the test expects the flow-control stats component (9.7+)", c.Capabilities().Version)
	}
	wl, _ := workload.Lookup("oltp_write_only")
	tg := target(c)
	if err := wl.Prepare(ctx, tg, smallOptions(8, 0), os.Stderr); err != nil {
		t.Fatal(err)
	}
	nodes := groupNodes(t, c)

	run := func(label string, d time.Duration) (*experiment.Outcome, *sampleLog, *sampleLog) {
		b := &experiment.Bench{Workload: wl, Options: smallOptions(8, d), Target: tg, Cluster: c, ResultsDir: t.TempDir(), Label: label}
		return benchWithInference(t, ctx, b, nodes)
	}

	// Defaults: no throttling anywhere, inferred none either.
	outD, benchD, infD := run("defaults", 8*time.Second)
	for _, n := range c.Nodes {
		if v := sum(benchD.get(n.Name, "gr_fc_throttle_count")); v != 0 {
			t.Errorf("defaults: %s throttled %v transactions", n.Name, v)
		}
		if v := sum(benchD.get(n.Name, "gr_fc_throttle_time_s")); v != 0 {
			t.Errorf("defaults: %s throttle time %v s", n.Name, v)
		}
		if v := maxv(infD.get(n.Name, "gr_fc_throttle_inferred")); v != 0 {
			t.Errorf("defaults: %s inferred throttling", n.Name)
		}
		if len(infD.get(n.Name, "gr_fc_throttle_inferred")) == 0 {
			t.Errorf("defaults: %s has no inferred samples", n.Name)
		}
	}
	// The signals flow control acts on are there: the secondaries' applier queues.
	queue := max(maxv(benchD.get("n2", "gr_applier_queue_trx")), maxv(benchD.get("n3", "gr_applier_queue_trx")))
	t.Logf("defaults: %.1f TPS, max secondary applier queue %.0f trx, n2 applied %v", outD.Summary.TPS, queue, benchD.get("n2", "gr_remote_applied_trx"))
	if sum(benchD.get("n2", "gr_remote_applied_trx")) < float64(outD.Summary.Transactions) {
		t.Errorf("n2 applied %v remote transactions, the primary committed %d", sum(benchD.get("n2", "gr_remote_applied_trx")), outD.Summary.Transactions)
	}
	// Heartbeat and GTID backlog on a group: the writer is the primary.
	if len(benchD.get("n1", "heartbeat_write_age_s")) == 0 || sum(benchD.get("n1", "heartbeat_write_errors")) != 0 {
		t.Errorf("heartbeat writer on n1: age %v errors %v", benchD.get("n1", "heartbeat_write_age_s"), benchD.get("n1", "heartbeat_write_errors"))
	}
	for _, n := range []string{"n2", "n3"} {
		if len(benchD.get(n, "lag_s")) == 0 || len(benchD.get(n, "backlog_trx")) == 0 {
			t.Errorf("%s: no lag_s or backlog_trx samples", n)
		}
		if role := benchD.get(n, "gr_member_role"); len(role) == 0 || maxv(role) != 2 {
			t.Errorf("%s: gr_member_role %v, want 2 (SECONDARY)", n, role)
		}
		// A healthy group: the majority's word is every member's own.
		if role, st := benchD.get(n, "gr_majority_role"), benchD.get(n, "gr_majority_state"); len(role) == 0 || maxv(role) != 2 || slices.Min(role) != 2 || len(st) != len(role) || slices.Min(st) != 1 || maxv(st) != 1 {
			t.Errorf("%s: gr_majority_role %v, gr_majority_state %v, want 2 (SECONDARY) and 1 (ONLINE) in every tick", n, role, st)
		}
	}
	if outD.Summary.ReplicasCaught == nil || !*outD.Summary.ReplicasCaught {
		t.Error("members did not converge after the defaults run")
	}

	// Both thresholds at 1: a queue of 2 anywhere throttles the primary.
	for _, n := range nodes {
		if _, err := n.DB.ExecContext(ctx, "SET GLOBAL group_replication_flow_control_certifier_threshold=1, GLOBAL group_replication_flow_control_applier_threshold=1"); err != nil {
			t.Fatal(err)
		}
	}
	// 16 s: the inferred metric samples the queues once a second, and with the primary held
	// to about 14 TPS they rarely stand over 1 at a tick (CI: none in 8 ticks, under load).
	outL, benchL, infL := run("low", 16*time.Second)
	count, secs := benchL.get("n1", "gr_fc_throttle_count"), benchL.get("n1", "gr_fc_throttle_time_s")
	t.Logf("thresholds 1: %.1f TPS; n1 throttled per tick %v, seconds %v, sessions avg %v", outL.Summary.TPS, count, secs, benchL.get("n1", "gr_fc_throttled_sessions_avg"))
	if sum(count) == 0 || sum(secs) == 0 || maxv(benchL.get("n1", "gr_fc_throttled_sessions_avg")) == 0 {
		t.Errorf("thresholds 1: the primary was never throttled (count %v, time %v)", count, secs)
	}
	if g, want := outL.Summary.Group, benchL.sumMeasured(t, outL.Dir, "n1", "gr_fc_throttle_count"); len(g) == 0 || g[0].ThrottledTrx == nil || *g[0].ThrottledTrx != want {
		t.Errorf("summary group %+v, want n1 throttled %v (the measured window's ticks)", g, want)
	}
	inferred := 0.0
	for _, n := range c.Nodes {
		inferred += sum(infL.get(n.Name, "gr_fc_throttle_inferred"))
	}
	if inferred == 0 {
		t.Error("thresholds 1: no member's queues were inferred over the thresholds")
	}
	t.Logf("thresholds 1: inferred-throttling ticks n1 %v n2 %v n3 %v", sum(infL.get("n1", "gr_fc_throttle_inferred")), sum(infL.get("n2", "gr_fc_throttle_inferred")), sum(infL.get("n3", "gr_fc_throttle_inferred")))
}

// TestGroupMultiPrimaryConflicts: a hot-spot update load (oltp_update_non_index on 10 rows)
// from n1 and n2 of a multi-primary group makes certification fail; the workload retries the
// failures (their codes in the ignore list), counts them per node and per code, and the run
// completes with every member converged. The group sampler sees the conflicts on every
// member and the local rollbacks only where the writers are (n1, n2), matching what the
// clients were told.
func TestGroupMultiPrimaryConflicts(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "egm"), topology.Group, 3, topology.MySQL)
	spec.Group.Mode = topology.GroupMultiPrimary
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := workload.Lookup("oltp_update_non_index")
	o := smallOptions(8, 8*time.Second)
	o.Tables, o.TableSize = 1, 10
	// At a modest rate: a saturating run on 2 shared cores can leave one writer's applier
	// so far behind that every one of its transactions fails certification for seconds
	// (CI: n1 committed nothing for 6.6 s, 116 x 3101), which the run reports as an
	// endpoint lost. 200 transactions/s on 10 rows still conflicts every second.
	o.Rate = 200
	// Certification failures reach the client as 3101 (ER_TRANSACTION_ROLLBACK_DURING_COMMIT),
	// 1180 (ER_ERROR_DURING_COMMIT) or 1213 (deadlock: a remote transaction aborted it).
	o.IgnoreErrors = append(o.IgnoreErrors, 3101, 1180)
	tg, err := experiment.ClusterTarget(c, "sbtest", []string{"n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
		t.Fatal(err)
	}
	log := newSampleLog()
	b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir(), OnSamples: log.add}
	out, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err) // includes: members did not converge
	}
	sm := out.Summary
	t.Logf("%.1f TPS, errors by code %v, n1 %+v, n2 %+v", sm.TPS, sm.ErrorsByCode, sm.PerEndpoint["n1"], sm.PerEndpoint["n2"])
	if sm.ErrorsByCode["3101"] == 0 {
		t.Errorf("no certification failure (3101) on a 10-row hot spot: %v", sm.ErrorsByCode)
	}
	for _, n := range []string{"n1", "n2"} {
		ep := sm.PerEndpoint[n]
		var byCode int64
		for _, v := range ep.ErrorsByCode {
			byCode += v
		}
		if ep.Transactions == 0 || ep.Errors == 0 || byCode != ep.Errors {
			t.Errorf("%s: %+v: want transactions, errors, and errors by code adding up", n, ep)
		}
		// Every certification failure the client saw is a local rollback the member counted
		// (a failure while the run was stopping is not counted by the client: at most one
		// per thread).
		rb := sum(log.get(n, "gr_local_rollback_trx"))
		if cf := float64(ep.ErrorsByCode[3101]); cf > rb || rb-cf > float64(o.Threads) {
			t.Errorf("%s: clients got %v certification failures (3101), the member rolled back %v", n, cf, rb)
		}
	}
	t.Logf("local rollbacks n1 %v n2 %v n3 %v; conflicts detected n1 %v n2 %v n3 %v",
		sum(log.get("n1", "gr_local_rollback_trx")), sum(log.get("n2", "gr_local_rollback_trx")), sum(log.get("n3", "gr_local_rollback_trx")),
		sum(log.get("n1", "gr_conflicts_trx")), sum(log.get("n2", "gr_conflicts_trx")), sum(log.get("n3", "gr_conflicts_trx")))
	if rb := sum(log.get("n3", "gr_local_rollback_trx")); rb != 0 {
		t.Errorf("n3 (no writers) rolled back %v local transactions", rb)
	}
	// Certification is deterministic: every member detects the same conflicts, as many as
	// the writers rolled back.
	rolledBack := sum(log.get("n1", "gr_local_rollback_trx")) + sum(log.get("n2", "gr_local_rollback_trx"))
	for _, n := range c.Nodes {
		if v := sum(log.get(n.Name, "gr_conflicts_trx")); v != rolledBack {
			t.Errorf("%s: %v conflicts detected, writers rolled back %v", n.Name, v, rolledBack)
		}
		if st := log.get(n.Name, "gr_member_state"); len(st) == 0 || maxv(st) != 1 || maxv(log.get(n.Name, "gr_member_changes")) != 0 {
			t.Errorf("%s: member state %v changes %v, want ONLINE throughout", n.Name, st, log.get(n.Name, "gr_member_changes"))
		}
	}
	if sm.ReplicasCaught == nil || !*sm.ReplicasCaught {
		t.Error("members did not converge")
	}
	// summary.json and report.md carry the same per-member totals; the manifest the mode
	// read back from the servers.
	if len(sm.Group) != 3 || sm.Group[2].Node != "n3" || sm.Group[2].LocalRollbacks != 0 || sm.Group[0].ThrottledTrx == nil {
		t.Errorf("summary group %+v", sm.Group)
	} else {
		// The summary sums the measured window's ticks (CI: 207 of 218 conflicts, the
		// first commits' in a tick before it); every member's own.
		for i, n := range c.Nodes {
			if want := log.sumMeasured(t, out.Dir, n.Name, "gr_conflicts_trx"); sm.Group[i].Conflicts != want || want < rolledBack/2 {
				t.Errorf("summary group %s: %v conflicts, want %v (the measured window's ticks, of %v in all)", n.Name, sm.Group[i].Conflicts, want, rolledBack)
			}
		}
	}
	// Heartbeat on a multi-primary group: written on the first primary, read everywhere.
	if len(log.get("n1", "heartbeat_write_age_s")) == 0 || len(log.get("n3", "lag_s")) == 0 || len(log.get("n3", "backlog_trx")) == 0 {
		t.Errorf("heartbeat/gtid samples missing: n1 write age %v, n3 lag %v backlog %v", log.get("n1", "heartbeat_write_age_s"), log.get("n3", "lag_s"), log.get("n3", "backlog_trx"))
	}
	checkResultsDir(t, out.Dir, sm)
	rep, _ := os.ReadFile(filepath.Join(out.Dir, "report.md"))
	man, _ := os.ReadFile(filepath.Join(out.Dir, "manifest.json"))
	if !strings.Contains(string(rep), "## Group Replication") || !strings.Contains(string(man), `"group_replication_single_primary_mode": "OFF"`) {
		t.Errorf("report.md lacks the group section or manifest.json the mode read back:\n%s", rep)
	}
}

// TestGroupInferredThrottleUsesWritersThresholds: Group Replication decides on each writer,
// with the writer's own group_replication_flow_control_*_threshold, whether another
// member's queues (from its stats messages) call for throttling. With the thresholds at 1
// on the secondaries only, the primary is never throttled (measured by the flow-control
// stats component), so the inferred metric must not claim throttling on the secondaries
// either; with the thresholds at 1 on the primary only, the primary is throttled and the
// inferred metric sees the secondaries' queues over the primary's thresholds.
func TestGroupInferredThrottleUsesWritersThresholds(t *testing.T) {
	t.Parallel()
	// A group of its own: on the shared group, after another test's throttling, the
	// primary was throttled with its thresholds at the default (unexplained; not shared).
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "rvinf"), topology.Group, 3, topology.MySQL))
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := workload.Lookup("oltp_write_only")
	tg := target(c)
	if err := wl.Prepare(ctx, tg, smallOptions(8, 0), os.Stderr); err != nil {
		t.Fatal(err)
	}
	nodes := groupNodes(t, c)
	setThresholds := func(v map[string]int) {
		for _, n := range nodes {
			q := fmt.Sprintf("SET GLOBAL group_replication_flow_control_certifier_threshold=%d, GLOBAL group_replication_flow_control_applier_threshold=%d", v[n.Name], v[n.Name])
			if _, err := n.DB.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(label string, d time.Duration) (*sampleLog, *sampleLog) {
		b := &experiment.Bench{Workload: wl, Options: smallOptions(8, d), Target: tg, Cluster: c, ResultsDir: t.TempDir(), Label: label}
		_, bench, inferred := benchWithInference(t, ctx, b, nodes)
		return bench, inferred
	}

	setThresholds(map[string]int{"n1": 25000, "n2": 1, "n3": 1})
	bench, inf := run("secondaries-1", 8*time.Second)
	queue := max(maxv(bench.get("n2", "gr_applier_queue_trx")), maxv(bench.get("n3", "gr_applier_queue_trx")))
	t.Logf("thresholds 1 on the secondaries: n1 throttled %v; secondaries' applier queue max %v; inferred n1 %v n2 %v n3 %v", sum(bench.get("n1", "gr_fc_throttle_count")), queue,
		sum(inf.get("n1", "gr_fc_throttle_inferred")), sum(inf.get("n2", "gr_fc_throttle_inferred")), sum(inf.get("n3", "gr_fc_throttle_inferred")))
	if v := sum(bench.get("n1", "gr_fc_throttle_count")); v != 0 {
		t.Errorf("thresholds 1 on the secondaries only: the primary was throttled %v times (the writer's thresholds decide)", v)
	}
	for _, n := range c.Nodes {
		if v := sum(inf.get(n.Name, "gr_fc_throttle_inferred")); v != 0 {
			t.Errorf("thresholds 1 on the secondaries only: %s inferred throttling in %v samples; measured none", n.Name, v)
		}
	}

	setThresholds(map[string]int{"n1": 1, "n2": 25000, "n3": 25000})
	bench, inf = run("primary-1", 8*time.Second)
	throttled := sum(bench.get("n1", "gr_fc_throttle_count"))
	secondaries := sum(inf.get("n2", "gr_fc_throttle_inferred")) + sum(inf.get("n3", "gr_fc_throttle_inferred"))
	if throttled == 0 || secondaries == 0 {
		// CI-like runs with the suite beside it: in AJ the secondaries' queues passed 1 in
		// 5 samples and the primary's flow control counted no throttling in 8 s; in BASE
		// the primary was throttled 44 times and no sample of the secondaries' queues
		// caught them over 1. Once more, twice as long: either missing then is a failure.
		t.Logf("thresholds 1 on the primary: throttled %v, inferred n2 %v n3 %v in 8 s: again for 16 s", throttled, sum(inf.get("n2", "gr_fc_throttle_inferred")), sum(inf.get("n3", "gr_fc_throttle_inferred")))
		bench, inf = run("primary-1-again", 16*time.Second)
		throttled = sum(bench.get("n1", "gr_fc_throttle_count"))
		secondaries = sum(inf.get("n2", "gr_fc_throttle_inferred")) + sum(inf.get("n3", "gr_fc_throttle_inferred"))
	}
	t.Logf("thresholds 1 on the primary: n1 throttled %v; inferred n1 %v n2 %v n3 %v", throttled,
		sum(inf.get("n1", "gr_fc_throttle_inferred")), sum(inf.get("n2", "gr_fc_throttle_inferred")), sum(inf.get("n3", "gr_fc_throttle_inferred")))
	if throttled == 0 {
		t.Errorf("thresholds 1 on the primary: never throttled")
	}
	if secondaries == 0 {
		t.Errorf("thresholds 1 on the primary, which was throttled: no inferred throttling from the secondaries' queues")
	}
}
