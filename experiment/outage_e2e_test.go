package experiment_test

import (
	"context"
	"encoding/json"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	var once sync.Once
	var killedAt, backAt time.Duration
	done := make(chan struct{})
	var stdout strings.Builder
	b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir(), Stdout: &stdout,
		OnInterval: func(iv workload.Interval) {
			once.Do(func() {
				go func() {
					defer close(done)
					base := time.Now().Add(-iv.Elapsed)
					if err := s.KillNode(c, "n2"); err != nil {
						t.Errorf("kill n2: %v", err)
					}
					killedAt = time.Since(base)
					time.Sleep(2 * time.Second)
					if err := s.StartNode(ctx, c, "n2"); err != nil {
						t.Errorf("start n2: %v", err)
					}
					backAt = time.Since(base)
				}()
			})
		}}
	out, err := b.Run(ctx)
	<-done
	t.Logf("n2 killed at %v, back at %v; output:\n%s", killedAt, backAt, stdout.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
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
	ot := sum.Outages[0]
	if ot.Node != "n2" || ot.Open || ot.StartS < killedAt.Seconds()-0.3 || ot.StartS > killedAt.Seconds()+1 ||
		ot.EndS < backAt.Seconds()-0.5 || ot.EndS > backAt.Seconds()+3 || ot.FailedAttempts < 2 {
		t.Errorf("outage %+v, want n2 from the kill at %v to just after the restart at %v", ot, killedAt, backAt)
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
