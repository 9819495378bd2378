//go:build bench

package cluster_test

// Deploy time, from nothing to ready (the goal: a 3-member single-primary
// group and a 3-node Galera cluster ONLINE / Synced in under 15 s on this machine). Each
// iteration deploys a 3-node sandbox (network namespaces where usable, as root) from
// empty datadirs, checks it is ready, and destroys it; ns/op is the deploy alone. Run as
// root, when the machine is quiet (the load average is reported with the numbers):
//
//	go test -tags bench -count=1 -run '^$' -bench Deploy -benchtime 3x -v ./cluster/
//
// (make bench-deploy). Custom metrics, means over the iterations, in seconds:
//
//	s-ready        Deploy called to returned (what `habench deploy` waits for)
//	s-ready-max    the slowest iteration
//	s-servers-up   network, datadirs from the template, and each wait of a step for a
//	               server started before the plan (none for Galera, whose nodes start
//	               one by one in the steps; a group's members start one per CPU at a
//	               time, a later one while the earlier ones join)
//	s-bootstrap    the first node's bootstrap step (group: bootstrap the group, ONLINE;
//	               Galera: start n1 as a new cluster, Synced)
//	s-joins        every join step together (group: START GROUP_REPLICATION until ONLINE;
//	               Galera: start the joiner until Synced, state transfer included)
//	s-other-steps  the remaining steps (users, the recovery channel, components, settings)
//	s-finish       after the last step until Deploy returns (group: the joins' statements
//	               returning, roles read back)
//	s-destroy      Destroy (not in ns/op)
//	load1          the 1-minute load average when the iteration started
//
// The phases come from the sandbox's own log records ("launched server up", "step done",
// "server up", "deployed"); each iteration's timeline is logged (-v).

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// logRecord is one record of the sandbox's log.
type logRecord struct {
	at    time.Time
	msg   string
	attrs map[string]string
}

// recorder is a slog.Handler that keeps every record, at every level.
type recorder struct {
	mu   *sync.Mutex
	recs *[]logRecord
}

func newRecorder() recorder { return recorder{mu: &sync.Mutex{}, recs: &[]logRecord{}} }

func (recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{at: rec.Time, msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	*r.recs = append(*r.recs, lr)
	r.mu.Unlock()
	return nil
}

func (r recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r recorder) WithGroup(string) slog.Handler      { return r }

// take returns the records so far and forgets them.
func (r recorder) take() []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := *r.recs
	*r.recs = nil
	return out
}

func load1() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

// phases splits one deploy's log records (started at start) into the phases of the
// package comment, and a readable timeline.
func phases(start time.Time, recs []logRecord) (map[string]float64, string) {
	p := map[string]float64{}
	var tl []string
	prev := start
	for _, r := range recs {
		d := r.at.Sub(prev).Seconds()
		switch {
		case r.msg == "launched server up":
			p["s-servers-up"] += d
		case strings.HasPrefix(r.msg, "step done"):
			step := r.attrs["step"]
			switch {
			case strings.Contains(step, "bootstrap"):
				p["s-bootstrap"] += d
			case strings.HasPrefix(step, "join"):
				p["s-joins"] += d
			default:
				p["s-other-steps"] += d
			}
		case r.msg == "deployed":
			p["s-finish"] += d
		case r.msg == "server launched":
			tl = append(tl, fmt.Sprintf("%.2f %s launched", r.at.Sub(start).Seconds(), r.attrs["node"]))
			continue // inside s-servers-up
		default:
			continue // "server up" is inside its step
		}
		label := r.msg
		if s := r.attrs["step"]; s != "" {
			label = r.attrs["node"] + " " + s
		}
		tl = append(tl, fmt.Sprintf("%.2f %s", r.at.Sub(start).Seconds(), label))
		prev = r.at
	}
	return p, strings.Join(tl, "; ")
}

// benchDeploy deploys and destroys a 3-node kind/flavor sandbox once per b.Loop iteration
// (-benchtime Nx: N deploys; the function itself runs once).
func benchDeploy(b *testing.B, prefix string, kind topology.Kind, flavor topology.Flavor) {
	rec := newRecorder()
	s := testenv.Store(b)
	s.Log = slog.New(rec)
	spec := testenv.Spec(b, testenv.Name(b, prefix), kind, 3, flavor)
	ctx := context.Background()
	sums := map[string]float64{}
	var ready []float64
	i := 0
	for b.Loop() {
		b.StopTimer()
		l := load1()
		sums["load1"] += l
		rec.take()
		b.StartTimer()
		t0 := time.Now()
		c, err := s.Deploy(ctx, spec)
		took := time.Since(t0)
		b.StopTimer()
		if err != nil {
			b.Fatalf("deploy %d: %v", i, err)
		}
		p, tl := phases(t0, rec.take())
		if err := checkReady(ctx, c); err != nil {
			b.Fatalf("deploy %d returned, but %v", i, err)
		}
		d0 := time.Now()
		if err := s.Destroy(ctx, c.Name); err != nil {
			b.Fatalf("destroy %d: %v", i, err)
		}
		p["s-destroy"] = time.Since(d0).Seconds()
		ready = append(ready, took.Seconds())
		for k, v := range p {
			sums[k] += v
		}
		b.Logf("%s %s (%s) #%d: ready in %.2f s at load %.1f, network %s: %s", kind, flavor, c.Binaries.Version, i+1, took.Seconds(), l, c.Network, tl)
		i++
		b.StartTimer()
	}
	var total, worst float64
	for _, r := range ready {
		total += r
		worst = max(worst, r)
	}
	b.ReportMetric(total/float64(b.N), "s-ready")
	b.ReportMetric(worst, "s-ready-max")
	for _, k := range []string{"s-servers-up", "s-bootstrap", "s-joins", "s-other-steps", "s-finish", "s-destroy", "load1"} {
		if v, ok := sums[k]; ok {
			b.ReportMetric(v/float64(b.N), k)
		}
	}
}

// checkReady verifies what "ready" means for the kind, on the servers: every member
// ONLINE (group), every node Synced in a Primary component of 3 (Galera), every replica's
// threads running (async).
func checkReady(ctx context.Context, c *cluster.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch c.Spec.Kind {
	case topology.Group:
		ms, err := c.GroupMembers(ctx)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.State != "ONLINE" {
				return fmt.Errorf("member %s is %s", m.Node, m.State)
			}
		}
	case topology.Galera:
		for _, n := range c.Nodes {
			db, err := c.OpenAdmin(n)
			if err != nil {
				return err
			}
			g, err := cluster.ReadGaleraStatus(ctx, db)
			db.Close()
			if err != nil {
				return err
			}
			if !g.Synced() || g.ClusterSize != len(c.Nodes) {
				return fmt.Errorf("node %s: %s", n.Name, g)
			}
		}
	default:
		for _, n := range c.Nodes {
			if h := c.Health(ctx, n); !strings.HasPrefix(h, "ok") && !strings.HasPrefix(h, "io=Yes sql=Yes") {
				return fmt.Errorf("node %s: %s", n.Name, h)
			}
		}
	}
	return nil
}

// BenchmarkDeployGroup: a 3-member single-primary group on MySQL 9.7 (root filesystem),
// from nothing to every member ONLINE.
func BenchmarkDeployGroup(b *testing.B) { benchDeploy(b, "ptdg", topology.Group, topology.MySQL) }

// BenchmarkDeployGalera: a 3-node MariaDB Galera cluster (rsync SST), from nothing to
// every node Synced in a Primary component of 3.
func BenchmarkDeployGalera(b *testing.B) { benchDeploy(b, "ptdw", topology.Galera, topology.MariaDB) }

// BenchmarkDeployAsync: a source and two async replicas, for reference, on both flavors
// (MySQL: the group's servers; MariaDB: Galera's).
func BenchmarkDeployAsync(b *testing.B) {
	b.Run("mysql", func(b *testing.B) { benchDeploy(b, "ptdm", topology.Async, topology.MySQL) })
	b.Run("mariadb", func(b *testing.B) { benchDeploy(b, "ptda", topology.Async, topology.MariaDB) })
}
