package experiment_test

import (
	"context"
	"encoding/json"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestNodeKilledMidRunIsAnOutage: oltp_read_only on both nodes of an async pair, the
// connection codes ignored; n2's server is killed (SIGKILL) 1 s into the measured run and
// started again 2 s later. The run goes on, and summary.json, the manifest warnings,
// report.md's top and report.html's top name n2's outage with its window.
func TestNodeKilledMidRunIsAnOutage(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "errk"), topology.Async, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := workload.Lookup("oltp_read_only")
	o := smallOptions(4, 8*time.Second)
	o.Rate = behaviourRate
	o.Tables = 1
	o.IgnoreErrors = []uint16{1213, 1020, 1205, 2013, 2006, 2003}
	if err := wl.Prepare(ctx, target(c), o, os.Stderr); err != nil {
		t.Fatal(err)
	}
	tg, err := experiment.ClusterTarget(c, "sbtest", []string{"n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	// The kill and the start are stamped on the wall clock just before and just after
	// each call, and put on the run's clock (Result.StartedAt is its zero) afterwards.
	var once sync.Once
	var fired atomic.Bool
	var killBefore, killAfter, startBefore, startAfter time.Time
	done := make(chan struct{})
	var stdout strings.Builder
	b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir(), Stdout: &stdout,
		OnInterval: func(iv workload.Interval) {
			once.Do(func() {
				fired.Store(true)
				go func() {
					defer close(done)
					killBefore = time.Now()
					if err := s.KillNode(c, "n2"); err != nil {
						t.Errorf("kill n2: %v", err)
					}
					killAfter = time.Now()
					time.Sleep(2 * time.Second)
					startBefore = time.Now()
					if err := s.StartNode(ctx, c, "n2"); err != nil {
						t.Errorf("start n2: %v", err)
					}
					startAfter = time.Now()
				}()
			})
		}}
	out, err := b.Run(ctx)
	if !fired.Load() {
		t.Fatalf("run: %v (no interval: n2 was not killed)\n%s", err, stdout.String())
	}
	<-done
	if err != nil {
		t.Fatalf("run: %v (n2 start took %v)\n%s", err, startAfter.Sub(startBefore), stdout.String())
	}
	zero := out.Result.StartedAt
	runS := func(at time.Time) float64 { return at.Sub(zero).Seconds() }
	t.Logf("n2 killed from %.3f s to %.3f s of the run, started from %.3f s to %.3f s; output:\n%s",
		runS(killBefore), runS(killAfter), runS(startBefore), runS(startAfter), stdout.String())
	var sum struct {
		Outages []schema.OutageSummary `json:"outages"`
	}
	raw, err := os.ReadFile(filepath.Join(out.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Outages) != 1 {
		t.Fatalf("summary.json outages %+v, want one", sum.Outages)
	}
	// It opens with n2's first failed attempt, inside the kill or soon after it (an
	// arrival for one of n2's workers at 100/s); it closes with n2's first commit after
	// the start, inside it (the workers reconnecting before StartNode saw n2 ready) or
	// within 3 s of it; 10 ms of slack on the near sides (seconds as floats).
	const slack = 0.01
	ot := sum.Outages[0]
	if ot.Node != "n2" || ot.Open || ot.StartS < runS(killBefore)-slack || ot.StartS > runS(killAfter)+1 ||
		ot.EndS < runS(startBefore)-slack || ot.EndS > runS(startAfter)+3 || ot.FailedAttempts < 2 {
		t.Errorf("outage %+v, want n2 from the kill (%.3f-%.3f s) to just after the start (%.3f-%.3f s)", ot,
			runS(killBefore), runS(killAfter), runS(startBefore), runS(startAfter))
	}
	var man struct {
		Cluster struct {
			SandboxOptions map[string]string `json:"sandbox_options"`
		} `json:"cluster"`
		Nodes []struct {
			Variables map[string]string `json:"variables"`
		} `json:"nodes"`
		Warnings []string `json:"warnings"`
	}
	raw, err = os.ReadFile(filepath.Join(out.Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	// Exactly one outage; other warnings (a CPU-saturated host on a loaded machine) may
	// come with it.
	outages := 0
	for _, w := range man.Warnings {
		if strings.HasPrefix(w, "outage: ") {
			outages++
			if !strings.HasPrefix(w, "outage: n2 could not commit from ") {
				t.Errorf("manifest warning %q, want n2's outage", w)
			}
		}
	}
	if outages != 1 {
		t.Errorf("manifest warnings %q, want one outage (n2's)", man.Warnings)
	}
	// habench's own sandbox option is recorded and read back.
	if man.Cluster.SandboxOptions["max_connections"] != "1000" || len(man.Nodes) != 2 || man.Nodes[0].Variables["max_connections"] != "1000" {
		t.Errorf("manifest sandbox_options %v, nodes %+v: want max_connections 1000 recorded and read back", man.Cluster.SandboxOptions, man.Nodes)
	}
	md, _ := os.ReadFile(filepath.Join(out.Dir, "report.md"))
	top := string(md)
	if i := strings.Index(top, "\n- habench "); i > 0 {
		top = top[:i]
	}
	if !strings.Contains(top, "**WARNING: outage: n2 could not commit from ") {
		t.Errorf("report.md does not start with n2's outage:\n%s", md)
	}
	html, _ := os.ReadFile(filepath.Join(out.Dir, "report.html"))
	if i := strings.Index(string(html), "<h2"); i < 0 || !strings.Contains(string(html)[:i], "<b>WARNING:</b> outage: n2 could not commit") {
		t.Errorf("report.html does not show n2's outage before its first section")
	}
	if i := strings.Index(stdout.String(), "WARNING: n2 could not commit"); i < 0 || i > strings.Index(stdout.String(), "SQL statistics:") {
		t.Errorf("terminal output lacks the WARNING before the summary")
	}
	if out.Result.PerEndpoint["n1"].Errors != 0 || out.Result.PerEndpoint["n2"].Reconnects < 2 {
		t.Errorf("per endpoint %+v: want n1 without errors, n2's two workers reconnected", out.Result.PerEndpoint)
	}
}
