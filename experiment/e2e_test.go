package experiment_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/habench/habench/internal/testmachine"
	"github.com/habench/habench/schema"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

var flavors = []topology.Flavor{topology.MariaDB, topology.MySQL}

func target(c *cluster.Cluster) workload.Target {
	t := workload.Target{User: c.User, Password: c.Password, DB: "sbtest",
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return cluster.GuardedDial(ctx, addr)
		}}
	w := c.Writer()
	t.Endpoints = []workload.Endpoint{{Name: w.Name, Host: w.Host, Port: w.Port}}
	return t
}

// behaviourRate is the open-loop rate (transactions per second) of a test that checks
// behaviour beside a workload (a fault, a checker, lag, an outage, samples), not
// throughput: enough intervals with commits, without taking the cores the tests beside it
// need (closed-loop, each such workload took what the machine had left).
const behaviourRate = 100

func smallOptions(threads int, d time.Duration) workload.Options {
	o := workload.DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Time, o.ReportInterval = 2, 2000, threads, d, time.Second
	return o
}

// TestStatementMixMatchesServerCounters: oltp_read_write's summary counts are exactly
// 14/4/2 per transaction, and the source's own Com_* deltas agree statement for statement
// (text protocol, so every statement is one Com_ increment), on both flavors.
func TestStatementMixMatchesServerCounters(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			s := testenv.Store(t)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "em"+string(f[:2])), topology.Async, 2, f))
			if err != nil {
				t.Fatal(err)
			}
			wl, _ := workload.Lookup("oltp_read_write")
			o := smallOptions(4, 3*time.Second)
			o.PSMode = workload.PSDisable
			tg := target(c)
			if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
				t.Fatal(err)
			}
			admin, err := c.OpenAdmin(c.Writer())
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			before := testserver.ComCounters(t, admin)
			r, err := wl.Run(ctx, tg, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			after := testserver.ComCounters(t, admin)
			d := func(k string) int64 { return after[k] - before[k] }
			if r.Transactions == 0 {
				t.Fatal("no transactions")
			}
			if r.Reads != 14*r.Transactions || r.Writes != 4*r.Transactions || r.Others != 2*r.Transactions {
				t.Errorf("mix: %d trx, r/w/o %d/%d/%d, want 14/4/2 per trx", r.Transactions, r.Reads, r.Writes, r.Others)
			}
			// Our SHOW GLOBAL STATUS is not a Com_select; nothing else runs on the source.
			if got := d("Com_select"); got != r.Reads {
				t.Errorf("Com_select delta %d, workload reads %d", got, r.Reads)
			}
			if got := d("Com_update") + d("Com_insert") + d("Com_delete"); got != r.Writes {
				t.Errorf("Com_update+insert+delete delta %d, workload writes %d", got, r.Writes)
			}
			if d("Com_update") != 2*r.Transactions || d("Com_insert") != r.Transactions || d("Com_delete") != r.Transactions {
				t.Errorf("per-statement deltas update %d insert %d delete %d for %d trx", d("Com_update"), d("Com_insert"), d("Com_delete"), r.Transactions)
			}
			if got := d("Com_begin") + d("Com_commit"); got != r.Others {
				t.Errorf("Com_begin+Com_commit delta %d, workload other %d", got, r.Others)
			}
			t.Logf("%s: %d trx, Com deltas %v", f, r.Transactions, map[string]int64{"select": d("Com_select"), "update": d("Com_update"), "insert": d("Com_insert"), "delete": d("Com_delete"), "begin": d("Com_begin"), "commit": d("Com_commit")})
		})
	}
}

// TestStoppedApplierShowsLagThenRecovers: during a write load, stopping a replica's SQL
// (applier) thread makes the sampled lag and backlog rise; after restarting it they fall
// back to zero, and after the run every replica's GTID set equals the source's.
func TestStoppedApplierShowsLagThenRecovers(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			s := testenv.Store(t)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "el"+string(f[:2])), topology.Async, 2, f))
			if err != nil {
				t.Fatal(err)
			}
			wl, _ := workload.Lookup("oltp_write_only")
			o := smallOptions(2, 12*time.Second)
			o.Rate = behaviourRate
			tg := target(c)
			if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
				t.Fatal(err)
			}
			replica := c.Nodes[1]
			radmin, err := c.OpenAdmin(replica)
			if err != nil {
				t.Fatal(err)
			}
			defer radmin.Close()
			caps := c.Capabilities()
			var mu sync.Mutex
			series := map[string][]sampler.Sample{}
			// The applier is stopped at 3 s and started at 7 s of the samples' clock, which
			// the assertions use (a timer started before Run would shift by the run's setup).
			// One goroutine runs both statements in order: stop at the first sample at 3 s
			// or later, start at the first at 7 s or later (one batch of samples may pass
			// both marks at once).
			stopAt, startAt := make(chan struct{}), make(chan struct{})
			var stopOnce, startOnce sync.Once
			applierDone := make(chan struct{})
			go func() {
				defer close(applierDone)
				for _, step := range []struct {
					at         chan struct{}
					what, stmt string
				}{{stopAt, "stop", caps.StopReplica("SQL_THREAD")}, {startAt, "start", caps.StartReplicaThread("SQL_THREAD")}} {
					select {
					case <-step.at:
					case <-ctx.Done():
						return
					}
					if _, err := radmin.ExecContext(ctx, step.stmt); err != nil {
						t.Errorf("%s applier: %v", step.what, err)
					}
				}
			}()
			dir := t.TempDir()
			b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: dir,
				OnSamples: func(ss []sampler.Sample) {
					mu.Lock()
					defer mu.Unlock()
					for _, x := range ss {
						if x.Node == replica.Name {
							series[x.Metric] = append(series[x.Metric], x)
						}
						if x.Elapsed >= 3*time.Second {
							stopOnce.Do(func() { close(stopAt) })
						}
						if x.Elapsed >= 7*time.Second {
							startOnce.Do(func() { close(startAt) })
						}
					}
				}}
			out, err := b.Run(ctx)
			// A run that ended before 7 s of samples (it failed) must not leave the
			// goroutine waiting: both marks are passed now if they were not.
			stopOnce.Do(func() { close(stopAt) })
			startOnce.Do(func() { close(startAt) })
			<-applierDone
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			lag, backlog, sqlRun := series["lag_s"], series["backlog_trx"], series["sql_running"]
			if len(lag) < 8 || len(backlog) < 8 {
				t.Fatalf("too few samples: lag %d backlog %d", len(lag), len(backlog))
			}
			maxOf := func(ss []sampler.Sample, from, to time.Duration) float64 {
				m := -1.0
				for _, x := range ss {
					if x.Elapsed >= from && x.Elapsed <= to && x.Value > m {
						m = x.Value
					}
				}
				return m
			}
			// Stopped from ~3s to ~7s: lag must reach at least 2 s and backlog be non-zero there.
			if m := maxOf(lag, 4*time.Second, 8*time.Second); m < 2 {
				t.Errorf("lag while the applier was stopped peaked at %.2fs, want >= 2s; series %v", m, lag)
			}
			if m := maxOf(backlog, 4*time.Second, 8*time.Second); m < 10 {
				t.Errorf("backlog while stopped peaked at %.0f trx, want >= 10; series %v", m, backlog)
			}
			if m := maxOf(sqlRun, 0, 12*time.Second); m != 1 {
				t.Errorf("sql_running never 1: %v", sqlRun)
			}
			sawStopped := false
			for _, x := range sqlRun {
				sawStopped = sawStopped || x.Value == 0
			}
			if !sawStopped {
				t.Errorf("sql_running never sampled as 0: %v", sqlRun)
			}
			// Recovered: the last samples (one tick after catch-up) are back near zero. Not
			// exactly zero: the heartbeat writer goes on committing every 100 ms, so one or
			// two of its transactions can be in flight at the sampling instant (CI saw a
			// final backlog of 1). Exact convergence is checked below on the GTID sets.
			if last := lag[len(lag)-1]; last.Value > 0.5 {
				t.Errorf("final lag %.3fs, want <= 0.5s (caught up but for heartbeats in flight)", last.Value)
			}
			if last := backlog[len(backlog)-1]; last.Value > 2 {
				t.Errorf("final backlog %.0f trx, want <= 2 (heartbeats in flight)", last.Value)
			}
			t.Logf("%s replica lag_s: %v", f, values(lag))
			t.Logf("%s replica backlog_trx: %v", f, values(backlog))
			if out.Summary.ReplicasCaught == nil || !*out.Summary.ReplicasCaught {
				t.Errorf("replicas not consistent after the run: %+v", out.Summary.Nodes)
			}
			pos := map[string]string{}
			for _, n := range out.Summary.Nodes {
				pos[n.Node] = n.GTIDPosition
			}
			if pos["n1"] == "" || pos["n1"] != pos["n2"] {
				t.Errorf("GTID positions differ: %v", pos)
			}
			checkResultsDir(t, out.Dir, out.Summary)
		})
	}
}

// checkResultsDir: every file exists, CSVs have their headers and rows, the manifest
// carries versions and read-back variables of every node.
func checkResultsDir(t *testing.T, dir string, sum *schema.Summary) {
	t.Helper()
	for _, f := range []string{"manifest.json", "summary.json", "intervals.csv", "samples.csv", "report.md", "variables.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("results: %v", err)
		}
	}
	var m schema.Manifest
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(m.Nodes) == 0 {
		t.Fatal("manifest has no nodes")
	}
	for _, n := range m.Nodes {
		if n.Version == "" || n.Variables["log_bin"] == "" || n.Variables["server_id"] == "" {
			t.Errorf("manifest node %s lacks version or variables: %+v", n.Name, n)
		}
	}
	if m.Binaries == nil || m.Binaries.Version == "" || m.Binaries.Version == (topology.Version{}).String() {
		t.Error("manifest lacks the binaries' version")
	}
	f, _ := os.Open(filepath.Join(dir, "intervals.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 3 || rows[0][0] != "elapsed_s" {
		t.Errorf("intervals.csv: %d rows, err %v", len(rows), err)
	}
	var trx int64
	for _, r := range rows[1:] {
		n, _ := strconv.ParseInt(r[14], 10, 64)
		trx += n
	}
	if trx == 0 || trx > sum.Transactions {
		t.Errorf("intervals.csv transactions %d, summary %d", trx, sum.Transactions)
	}
}

func values(ss []sampler.Sample) []string {
	var out []string
	for _, x := range ss {
		out = append(out, strconv.FormatFloat(x.Elapsed.Seconds(), 'f', 0, 64)+"s="+strconv.FormatFloat(x.Value, 'f', 1, 64))
	}
	return out
}

// TestLinkDelaySlowsSemiSyncAcks: 2 ms one-way between the nodes (userspace link or kernel
// netem) is measured as a ~4 ms round trip, recorded in the manifest, visible in the
// source's semi-sync acknowledgement wait, and removed after the run.
func TestLinkDelaySlowsSemiSyncAcks(t *testing.T) {
	testmachine.Alone(t) // it measures round trips: nothing else may load the machine
	prereq.Need(t, cluster.NetNamespacesUsable())
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "eld"), topology.SemiSync, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := workload.Lookup("oltp_write_only")
	o := smallOptions(2, 4*time.Second)
	tg := target(c)
	if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
		t.Fatal(err)
	}
	imp, err := netem.ParseImpairment("2ms")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := links.Uniform(c, imp)
	if err != nil {
		t.Fatal(err)
	}
	b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir(), Links: spec}
	out, err := b.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Links struct {
			Impairment schema.LinkImpairment `json:"impairment"`
		} `json:"links"`
	}
	mb, _ := os.ReadFile(filepath.Join(out.Dir, "manifest.json"))
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	lr := m.Links.Impairment
	if len(lr.RTT) != 2 || lr.Backend == "" {
		t.Fatalf("manifest links: %+v", lr)
	}
	for _, r := range lr.RTT {
		if r.RequestedMs != 4 || r.AddedMs < 3.2 || r.AddedMs > 6 {
			t.Errorf("%s: requested +%.3f ms, added %.3f ms (achieved %.3f over base %.3f)", r.Link, r.RequestedMs, r.AddedMs, r.AchievedMs, r.BaseMs)
		}
	}
	// Without links the wait is well under 1 ms here (an ack from the same host); group
	// commit lets some commits ride on an earlier ack, so the average sits below the round
	// trip: at least half of it shows the delay took effect.
	ss := out.Summary.SemiSync
	if ss == nil || ss.YesTx == 0 || ss.AvgWaitUs < 2000 {
		t.Errorf("semi-sync acknowledgement wait under a 4 ms round trip: %+v", ss)
	}
	t.Logf("backend %s, rtt %+v, semi-sync %+v, %.1f TPS", lr.Backend, lr.RTT, ss, out.Summary.TPS)
	// report.md (report.RunMarkdown): the measured links and the semisync sampler's section.
	rep, _ := os.ReadFile(filepath.Join(out.Dir, "report.md"))
	if ss != nil && (!strings.Contains(string(rep), "| "+lr.RTT[0].Link+" | ") || !strings.Contains(string(rep), fmt.Sprintf("## Semi-sync on %s\n", ss.Node)) ||
		!strings.Contains(string(rep), fmt.Sprintf("| %.0f | %.0f | %d | %.0f |", ss.YesTx, ss.NoTx, ss.SecondsOff, ss.AvgWaitUs))) {
		t.Errorf("report.md lacks the link %s or the semi-sync section %+v:\n%s", lr.RTT[0].Link, ss, rep)
	}
	for _, n := range c.Nodes {
		if err := exec.Command("ip", "-n", n.Netns, "link", "show", "hbnetem0").Run(); err == nil {
			t.Errorf("node %s: the userspace link's TUN device outlived the run", n.Name)
		}
	}
}
