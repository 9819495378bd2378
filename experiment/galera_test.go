package experiment_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestGalera runs on one 3-node MariaDB Galera cluster, deployed with a tiny flow-control
// limit and one applier thread (through options.wsrep_provider_options and
// wsrep_slave_threads, so the merge into habench's own provider options is exercised):
//
//   - flow_control: a write load on n1 pauses replication for a visible share of each
//     second with those settings, and hardly at all after raising the limit and the appliers;
//   - statement_mix: oltp_read_write over all three nodes keeps 14/4/2 per transaction,
//     counted by the servers, and every DELETE/INSERT pair hits an existing row although
//     Galera steps auto-increment by 3;
//   - conflicts: one writer on each of n1 and n2 on a 10-row table: certification failures
//     and brute-force aborts are counted per node and come back as error 1213 per endpoint.
func TestGalera(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "gae"), topology.Galera, 3, topology.MariaDB)
	spec.Options = map[string]string{"wsrep_provider_options": "gcs.fc_limit=1; gcs.fc_factor=1.0", "wsrep_slave_threads": "1"}
	start := time.Now()
	c, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("galera x3 Synced in %v", time.Since(start).Round(time.Millisecond))
	admin := map[string]*sql.DB{}
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		admin[n.Name] = db
	}
	setAll := func(stmts ...string) {
		for _, n := range c.Nodes {
			testserver.Exec(t, admin[n.Name], stmts...)
		}
	}

	t.Run("flow_control", func(t *testing.T) {
		wl, _ := workload.Lookup("oltp_write_only")
		o := smallOptions(8, 7*time.Second)
		o.Tables, o.TableSize = 4, 2000
		tg := target(c) // n1 only: the others apply
		if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
			t.Fatal(err)
		}
		defer wl.Cleanup(ctx, tg, o, nil)
		run := func(label string) (*experiment.Outcome, schema.Manifest) {
			b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir(), Label: label}
			out, err := b.Run(ctx)
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			var m schema.Manifest
			mb, _ := os.ReadFile(filepath.Join(out.Dir, "manifest.json"))
			if err := json.Unmarshal(mb, &m); err != nil {
				t.Fatal(err)
			}
			return out, m
		}
		tight, tm := run("tight")
		setAll("SET GLOBAL wsrep_provider_options='gcs.fc_limit=10000'", "SET GLOBAL wsrep_slave_threads=4")
		generous, gm := run("generous")

		// The settings in effect were read back from the servers.
		for _, c := range []struct {
			m             schema.Manifest
			limit, thread string
		}{{tm, "1", "1"}, {gm, "10000", "4"}} {
			for _, n := range c.m.Nodes {
				if n.Variables["wsrep_provider_options.gcs.fc_limit"] != c.limit || n.Variables["wsrep_slave_threads"] != c.thread ||
					n.Variables["wsrep_provider_options.gcs.fc_factor"] != "1.0" {
					t.Errorf("manifest %s: fc_limit %q fc_factor %q slave threads %q, want %s / 1.0 / %s", n.Name, n.Variables["wsrep_provider_options.gcs.fc_limit"],
						n.Variables["wsrep_provider_options.gcs.fc_factor"], n.Variables["wsrep_slave_threads"], c.limit, c.thread)
				}
			}
		}
		paused := func(out *experiment.Outcome) (avg, fcSent float64) {
			for _, g := range out.Summary.Galera {
				avg = max(avg, g.PausedAvg)
				fcSent += g.FCSent
			}
			return avg, fcSent
		}
		tp, tsent := paused(tight)
		gp, gsent := paused(generous)
		t.Logf("fc_limit=1, 1 applier:      %.0f TPS, galera %+v", tight.Summary.TPS, tight.Summary.Galera)
		t.Logf("fc_limit=10000, 4 appliers: %.0f TPS, galera %+v", generous.Summary.TPS, generous.Summary.Galera)
		if len(tight.Summary.Galera) != 3 || tp <= 0.02 || tsent == 0 {
			t.Errorf("tight flow control: largest average paused fraction %.4f, %v pause requests sent; want > 0.02 and > 0", tp, tsent)
		}
		if len(generous.Summary.Galera) != 3 || gp > 0.01 || gp >= tp/5 {
			t.Errorf("generous flow control: average paused fraction %.4f (tight %.4f), want <= 0.01 and under a fifth of the tight one", gp, tp)
		}
		t.Logf("pause requests sent: tight %.0f, generous %.0f", tsent, gsent)
		for _, out := range []*experiment.Outcome{tight, generous} {
			if out.Summary.ReplicasCaught == nil || !*out.Summary.ReplicasCaught {
				t.Errorf("nodes did not converge to one GTID position: %+v", out.Summary.Nodes)
			}
			for _, n := range out.Summary.Nodes {
				if n.LagMaxS == nil {
					t.Errorf("node %s: no heartbeat lag samples", n.Node)
				}
			}
		}
	})

	t.Run("statement_mix", func(t *testing.T) {
		wl, _ := workload.Lookup("oltp_read_write")
		o := smallOptions(3, 5*time.Second)
		o.Tables, o.TableSize, o.PSMode = 4, 5000, workload.PSDisable
		tg, err := experiment.ClusterTarget(c, "sbtest", nil) // every node: one worker each
		if err != nil {
			t.Fatal(err)
		}
		if len(tg.Endpoints) != 3 {
			t.Fatalf("galera target %v, want all 3 nodes", tg.Endpoints)
		}
		var out strings.Builder
		if err := wl.Prepare(ctx, tg, o, &out); err != nil {
			t.Fatal(err)
		}
		defer wl.Cleanup(ctx, tg, o, nil)
		// The trap is armed: Galera steps auto-increment by the cluster size...
		for _, n := range c.Nodes {
			var inc int
			admin[n.Name].QueryRowContext(ctx, "SELECT @@auto_increment_increment").Scan(&inc)
			if inc != 3 {
				t.Fatalf("node %s auto_increment_increment %d, want 3 (wsrep_auto_increment_control)", n.Name, inc)
			}
		}
		// ... and prepare says it does not apply.
		if !strings.Contains(out.String(), "NOTE: auto_increment_increment is 3") {
			t.Errorf("prepare output lacks the id-space note:\n%s", out.String())
		}
		dense(t, ctx, admin["n3"], o)
		converged(t, ctx, admin)
		before := map[string]map[string]int64{}
		for _, n := range c.Nodes {
			before[n.Name] = counters(t, admin[n.Name])
		}
		r, err := wl.Run(ctx, tg, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		converged(t, ctx, admin)
		d := map[string]int64{}              // summed over the nodes
		per := map[string]map[string]int64{} // per node
		for _, n := range c.Nodes {
			after := counters(t, admin[n.Name])
			per[n.Name] = map[string]int64{}
			for k, v := range after {
				d[k] += v - before[n.Name][k]
				per[n.Name][k] = v - before[n.Name][k]
			}
		}
		pick := func(m map[string]int64) map[string]int64 {
			out := map[string]int64{}
			for _, k := range []string{"Com_select", "Com_update", "Com_delete", "Com_insert", "Com_begin", "Com_commit", "Com_rollback", "Handler_delete"} {
				out[k] = m[k]
			}
			return out
		}
		t.Logf("%d trx, %d ignored errors %v; workload r/w/o %d/%d/%d = %.2f/%.2f/%.2f per trx", r.Transactions, r.IgnoredErrors, r.ErrorsByCode,
			r.Reads, r.Writes, r.Others, float64(r.Reads)/float64(r.Transactions), float64(r.Writes)/float64(r.Transactions), float64(r.Others)/float64(r.Transactions))
		for _, n := range c.Nodes {
			t.Logf("server deltas %s (endpoint: %d trx): %v", n.Name, r.PerEndpoint[n.Name].Transactions, pick(per[n.Name]))
		}
		if r.Transactions < 100 {
			t.Fatalf("only %d transactions", r.Transactions)
		}
		// A retried attempt adds its statements so far, the failing one and a ROLLBACK:
		// with e of them the counts may exceed the exact ones by up to e per statement.
		e := r.IgnoredErrors
		within := func(what string, got, want, slack int64) {
			if got < want || got > want+slack {
				t.Errorf("%s = %d, want %d (+ up to %d for retried attempts)", what, got, want, slack)
			}
		}
		within("workload reads", r.Reads, 14*r.Transactions, 14*e)
		within("workload writes", r.Writes, 4*r.Transactions, 4*e)
		within("workload other", r.Others, 2*r.Transactions, 2*e)
		// The servers saw the same statements: the clients' SELECTs, BEGINs and COMMITs once
		// on the node that ran them ...
		within("Com_select over the nodes", d["Com_select"], r.Reads, e)
		within("Com_begin over the nodes", d["Com_begin"], r.Transactions, e)
		within("Com_commit over the nodes", d["Com_commit"], r.Transactions, e)
		// ... and every DML statement once on every node: run there by a client or applied
		// from another node's write set (Galera's applier counts row events in Com_*).
		for _, n := range c.Nodes {
			p := per[n.Name]
			within(n.Name+" Com_delete", p["Com_delete"], r.Transactions, e)
			within(n.Name+" Com_insert", p["Com_insert"], r.Transactions, e)
			within(n.Name+" Com_update", p["Com_update"], 2*r.Transactions, 2*e)
			// Every DELETE found its row, on every node: with a sparse id space (ids stepped
			// by 3) two deletes in three would delete nothing.
			within(n.Name+" Handler_delete (rows deleted)", p["Handler_delete"], r.Transactions, e)
		}
		for _, n := range c.Nodes {
			dense(t, ctx, admin[n.Name], o)
		}
	})

	// What habench avoids, done the sysbench way (--auto_inc=on: the server picks the ids):
	// on Galera the ids step by 3, and a run on such a table says so.
	t.Run("sparse_ids_warned", func(t *testing.T) {
		o := smallOptions(1, time.Second)
		o.Tables, o.TableSize = 1, 300
		testserver.Exec(t, admin["n1"], "CREATE DATABASE sparse", "USE sparse", workload.CreateTableSQL(1, o))
		var vals []string
		for i := 0; i < o.TableSize; i++ {
			vals = append(vals, "(1, 'c', 'pad')")
		}
		testserver.Exec(t, admin["n1"], "INSERT INTO sparse.sbtest1 (k, c, pad) VALUES "+strings.Join(vals, ","))
		defer testserver.Exec(t, admin["n1"], "DROP DATABASE sparse")
		var n, hi int
		admin["n1"].QueryRowContext(ctx, "SELECT COUNT(*), MAX(id) FROM sparse.sbtest1").Scan(&n, &hi)
		if n != 300 || hi < 3*300-3 {
			t.Fatalf("auto-increment ids on galera: %d rows up to id %d, want 300 rows stepped by 3", n, hi)
		}
		wl, _ := workload.Lookup("oltp_point_select")
		tg := target(c)
		tg.DB = "sparse"
		out, err := (&experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c}).Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.Summary.DataCheck, "sparse") {
			t.Errorf("no warning about the sparse id space (300 rows up to id %d): %q", hi, out.Summary.DataCheck)
		}
		t.Logf("auto-increment load: 300 rows, ids up to %d; run warns: %s", hi, out.Summary.DataCheck)
	})

	t.Run("conflicts", func(t *testing.T) {
		setAll("SET GLOBAL wsrep_provider_options='gcs.fc_limit=10000'")
		wl, _ := workload.Lookup("oltp_write_only")
		o := smallOptions(2, 5*time.Second)
		o.Tables, o.TableSize = 1, 10 // a hot spot
		tg, err := experiment.ClusterTarget(c, "sbtest", []string{"n1", "n2"})
		if err != nil {
			t.Fatal(err)
		}
		if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
			t.Fatal(err)
		}
		defer wl.Cleanup(ctx, tg, o, nil)
		var mu sync.Mutex
		raw := map[string]float64{} // node/metric -> sum of the deltas
		b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir(),
			OnSamples: func(ss []sampler.Sample) {
				mu.Lock()
				defer mu.Unlock()
				for _, x := range ss {
					raw[x.Node+"/"+x.Metric] += x.Value
				}
			}}
		out, err := b.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sum := out.Summary
		t.Logf("%d trx, %.0f TPS, errors by code %v, per endpoint %+v, galera %+v", sum.Transactions, sum.TPS, sum.ErrorsByCode, sum.PerEndpoint, sum.Galera)
		if sum.Transactions == 0 || sum.Error != "" {
			t.Fatalf("run did not complete: %+v", sum)
		}
		byNode := map[string]schema.GaleraNodeSummary{}
		for _, g := range sum.Galera {
			byNode[g.Node] = g
		}
		for _, n := range []string{"n1", "n2"} {
			ep := sum.PerEndpoint[n]
			g := byNode[n]
			// One worker per node: no local lock conflicts, so every 1213 is Galera's.
			if ep.ErrorsByCode[1213] == 0 || ep.Errors != ep.ErrorsByCode[1213] {
				t.Errorf("endpoint %s: errors %d by code %v, want only and some 1213", n, ep.Errors, ep.ErrorsByCode)
			}
			// Every certification failure fails a client's COMMIT with 1213; a 1213 comes
			// from a certification failure or a brute-force abort (a BF-aborted transaction
			// that had passed certification is replayed instead, without an error).
			if e := float64(ep.ErrorsByCode[1213]); g.CertFailures == 0 || e < g.CertFailures || e > g.CertFailures+g.BFAborts {
				t.Errorf("node %s: %.0f certification failures, %.0f BF aborts, %.0f client 1213s: want cert <= 1213s <= cert + BF, cert > 0", n, g.CertFailures, g.BFAborts, e)
			}
			if raw[n+"/galera_cert_failures"] != g.CertFailures || raw[n+"/galera_bf_aborts"] != g.BFAborts {
				t.Errorf("node %s: summary %+v disagrees with the samples %v/%v", n, g, raw[n+"/galera_cert_failures"], raw[n+"/galera_bf_aborts"])
			}
		}
		if g := byNode["n3"]; g.CertFailures+g.BFAborts != 0 {
			t.Errorf("n3 ran no transactions but counts conflicts: %+v", g)
		}
		if sum.ErrorsByCode["1213"] != sum.PerEndpoint["n1"].ErrorsByCode[1213]+sum.PerEndpoint["n2"].ErrorsByCode[1213] {
			t.Errorf("errors by code %v are not the sum of the endpoints'", sum.ErrorsByCode)
		}
		// summary.json carries the per-endpoint codes.
		var js struct {
			PerEndpoint map[string]struct {
				ErrorsByCode map[string]int64 `json:"errors_by_code"`
			} `json:"per_endpoint"`
			Galera []map[string]any `json:"galera"`
		}
		b2, _ := os.ReadFile(filepath.Join(out.Dir, "summary.json"))
		if err := json.Unmarshal(b2, &js); err != nil || js.PerEndpoint["n1"].ErrorsByCode["1213"] == 0 || len(js.Galera) != 3 {
			t.Errorf("summary.json per-endpoint errors or galera section missing (%v): %s", err, b2)
		}
		// report.md (report.RunMarkdown with the galera sampler's section) shows n1's counts.
		rep, _ := os.ReadFile(filepath.Join(out.Dir, "report.md"))
		if g := byNode["n1"]; !strings.Contains(string(rep), "## Galera flow control and conflicts") ||
			!strings.Contains(string(rep), fmt.Sprintf("| %.0f | %.0f |", g.CertFailures, g.BFAborts)) {
			t.Errorf("report.md lacks the Galera section with n1's %.0f cert failures, %.0f BF aborts:\n%s", g.CertFailures, g.BFAborts, rep)
		}
		if out.Summary.ReplicasCaught == nil || !*out.Summary.ReplicasCaught {
			t.Errorf("nodes did not converge: %+v", out.Summary.Nodes)
		}
	})
}

// dense checks every sbtest table holds exactly ids 1..table-size.
func dense(t *testing.T, ctx context.Context, db *sql.DB, o workload.Options) {
	t.Helper()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Read after every write set committed before has been applied here.
	if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait=1"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= o.Tables; i++ {
		var n, lo, hi int
		q := fmt.Sprintf("SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest.sbtest%d", i)
		if err := conn.QueryRowContext(ctx, q).Scan(&n, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if n != o.TableSize || lo != 1 || hi != o.TableSize {
			t.Errorf("sbtest%d: %d rows, ids %d..%d, want %d rows 1..%d", i, n, lo, hi, o.TableSize, o.TableSize)
		}
	}
}

// counters reads the Com_* and Handler_delete/_write/_update status counters.
func counters(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	m := testserver.ComCounters(t, db)
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Handler_delete', 'Handler_write', 'Handler_update')")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	return m
}

// converged waits until every node has committed the same last write set (SHOW STATUS
// only: no statement counted in Com_select).
func converged(t *testing.T, ctx context.Context, admin map[string]*sql.DB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := map[string]bool{}
		for _, db := range admin {
			var k, v string
			if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_last_committed'").Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			seen[v] = true
		}
		if len(seen) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes at different last committed seqnos: %v", seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
