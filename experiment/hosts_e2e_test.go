package experiment_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"github.com/habench/habench/internal/testmachine"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/experiment"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// procBusy reads this machine's /proc/stat cpu line: busy (neither idle nor iowait) and
// total ticks, to measure the machine independently of the sampler.
func procBusy(t *testing.T) (busy, total uint64) {
	t.Helper()
	busy, total, err := readProcBusy()
	if err != nil {
		t.Fatal(err)
	}
	return busy, total
}

func readProcBusy() (busy, total uint64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	st, err := sampler.ParseProcStat(b)
	if err != nil {
		return 0, 0, err
	}
	c := st.CPU
	return c.Busy(), c.Busy() + c.Idle + c.IOWait, nil
}

// spin starts one busy-loop process per CPU, killed (with its process group) in cleanup.
func spin(t *testing.T) (stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	for range runtime.NumCPU() {
		cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		for _, c := range cmds {
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			c.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestHostCPUSaturationIsReported: on a 2-node sandbox, a short run while busy loops take
// every CPU is reported as CPU-saturated (summary, WARNING line, manifest warnings,
// report.md, and the scenario-style comparison calls it CPU-bound); a quiet run on the
// same cluster has host numbers too but no such verdict when the machine really was
// quiet. The host is counted once for both nodes.
func TestHostCPUSaturationIsReported(t *testing.T) {
	testmachine.Alone(t) // it judges the machine's CPU saturation: nothing else may load the machine
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "hm"), topology.Async, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := workload.Lookup("oltp_read_write")
	o := smallOptions(2, 6*time.Second)
	o.ReportInterval = 0
	tg := target(c)
	if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	run := func(label string) (*experiment.Outcome, string) {
		var stdout bytes.Buffer
		b := &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: results, Label: label, Stdout: &stdout}
		out, err := b.Run(ctx)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		return out, stdout.String()
	}

	// Quiet first (nothing of ours loading the machine), measured independently too: the
	// whole run's busy share, and each second's, to apply the rule to.
	b0, t0 := procBusy(t)
	var perSecond []float64
	watchDone, watchStop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watchDone)
		pb, pt, _ := readProcBusy()
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-watchStop:
				return
			case <-tk.C:
				nb, nt, err := readProcBusy()
				if err == nil && nt > pt && pt > 0 {
					perSecond = append(perSecond, float64(nb-pb)/float64(nt-pt))
				}
				pb, pt = nb, nt
			}
		}
	}()
	quiet, quietOut := run("quiet")
	close(watchStop)
	<-watchDone
	b1, t1 := procBusy(t)
	machineBusy := float64(b1-b0) / float64(t1-t0)
	_, indepShare := sampler.CPUSaturated(perSecond)

	stop := spin(t)
	hot, hotOut := run("hot")
	stop()

	for _, o := range []*experiment.Outcome{quiet, hot} {
		checkHosts(t, c, o)
	}
	h := hot.Summary.Hosts[0]
	t.Logf("saturated run: busy mean %.3f max %.3f, %.0f%% of %d seconds >= 0.9, mysqld %v", *h.CPUBusyMean, *h.CPUBusyMax, 100*h.SaturatedShare, h.Samples, h.ServerCPU)
	if !h.CPUSaturated || *h.CPUBusyMean < 0.9 {
		t.Errorf("busy loops on every CPU: host not CPU-saturated: %+v", h)
	}
	var man schema.Manifest
	json.Unmarshal(mustReadFile(t, filepath.Join(hot.Dir, "manifest.json")), &man)
	const warn = "host local (nodes n1, n2) was CPU-saturated"
	if !strings.Contains(hotOut, "WARNING: "+warn) {
		t.Errorf("run output lacks the WARNING:\n%s", hotOut)
	}
	if !strings.Contains(strings.Join(man.Warnings, "\n"), warn) {
		t.Errorf("manifest warnings %q", man.Warnings)
	}
	if md := string(mustReadFile(t, filepath.Join(hot.Dir, "report.md"))); !strings.Contains(md, "**WARNING: "+warn) || !strings.Contains(md, "**yes** (") {
		t.Errorf("report.md lacks the warning or the saturated host:\n%s", md)
	}

	// Both runs side by side, as the scenario report shows them.
	res, err := report.Load(results)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := report.Render(res, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Both runs carry the cluster's name; they are listed in the order they ran.
	var rows []string
	for _, l := range strings.Split(string(pg.Markdown), "\n") {
		// The comparison table's rows (with the busiest host column, "96% / 99%"), not the
		// cells table that summarises repeats.
		if (strings.HasPrefix(l, "| "+c.Name) || strings.HasPrefix(l, "| **"+c.Name)) && strings.Contains(l, "% / ") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("comparison rows %q:\n%s", rows, pg.Markdown)
	}
	quietRow, hotRow := rows[0], rows[1]
	if !strings.Contains(hotRow, "CPU-bound") {
		t.Errorf("comparison row of the saturated run %q does not say CPU-bound:\n%s", hotRow, pg.Markdown)
	}

	// The quiet run: only what is reliable on a shared machine, where other tests may
	// load it. The verdict must agree with the machine measured independently, second by
	// second (the rule applied to the test's own /proc/stat readings), wherever that is
	// clearly on one side of the rule: "not CPU-bound" when few seconds were busy,
	// "CPU-bound" when most were (other jobs saturating the machine).
	q := quiet.Summary.Hosts[0]
	t.Logf("quiet run: busy mean %.3f max %.3f; independently: machine %.3f over the run, %.0f%% of %d seconds >= 0.9; mysqld %v",
		*q.CPUBusyMean, *q.CPUBusyMax, machineBusy, 100*indepShare, len(perSecond), q.ServerCPU)
	switch {
	case indepShare <= 0.25 && machineBusy < 0.8:
		if q.CPUSaturated || strings.Contains(quietOut, "CPU-saturated") || strings.Contains(quietRow, "CPU-bound") {
			t.Errorf("quiet run (machine %.0f%% busy, %.0f%% of seconds saturated) reported CPU-saturated: %+v\n%s", 100*machineBusy, 100*indepShare, q, quietRow)
		}
	case indepShare >= 0.75 && len(perSecond) >= 4:
		if !q.CPUSaturated || !strings.Contains(quietRow, "CPU-bound") {
			t.Errorf("quiet run on a machine saturated by other jobs (%.0f%% of seconds) not reported CPU-bound: %+v\n%s", 100*indepShare, q, quietRow)
		}
	default:
		t.Logf("the machine was near the rule's threshold during the quiet run: not asserting its verdict")
	}
	if q.CPUSaturated != strings.Contains(quietOut, "CPU-saturated") {
		t.Errorf("quiet run: verdict %v but output %q", q.CPUSaturated, quietOut)
	}
	if *q.CPUBusyMean >= *h.CPUBusyMean+0.05 {
		t.Errorf("quiet run busier (%.3f) than the saturated one (%.3f)", *q.CPUBusyMean, *h.CPUBusyMean)
	}
}

// checkHosts: one host "local" with both nodes; its samples once per tick under
// host:local, never under a node; each node's mysqld CPU; in network-namespace mode each
// node's own traffic (the writer receives the workload's queries).
func checkHosts(t *testing.T, c *cluster.Cluster, o *experiment.Outcome) {
	t.Helper()
	hs := o.Summary.Hosts
	if len(hs) != 1 || hs[0].Host != "local" || strings.Join(hs[0].Nodes, ",") != "n1,n2" {
		t.Fatalf("summary hosts %+v, want local with n1, n2", hs)
	}
	h := hs[0]
	if h.Samples < 3 || h.CPUBusyMean == nil || *h.CPUBusyMean < 0 || *h.CPUBusyMax > 1 || h.CPUs != runtime.NumCPU() {
		t.Errorf("host summary %+v", h)
	}
	if h.ServerCPU["n1"] <= 0 || len(h.ServerCPU) != 2 {
		t.Errorf("mysqld CPU %v, want both nodes, the writer > 0", h.ServerCPU)
	}
	f, err := os.Open(filepath.Join(o.Dir, "samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	perTick := map[string]int{}
	netRx := 0.0
	for _, r := range rows[1:] {
		switch {
		case r[2] == sampler.MetricHostCPUBusy:
			if r[1] != "host:local" {
				t.Errorf("busy under node %q", r[1])
			}
			perTick[r[0]]++
		case strings.HasPrefix(r[2], "host_") && !sampler.IsHostNode(r[1]):
			t.Errorf("host metric under a node: %v", r)
		case r[1] == "n1" && r[2] == sampler.MetricNetRx:
			v, _ := strconv.ParseFloat(r[3], 64)
			netRx = max(netRx, v)
		}
	}
	var man0 schema.Manifest
	json.Unmarshal(mustReadFile(t, filepath.Join(o.Dir, "manifest.json")), &man0)
	t.Logf("%s: %d ticks with host samples, %d in the measured part (from %.2fs, %.1fs long)", filepath.Base(o.Dir), len(perTick), h.Samples, man0.IntervalsOffsetS, o.Summary.TimeS)
	for tick, n := range perTick {
		if n != 1 {
			t.Errorf("tick %s: %d busy samples, want 1 (the host once)", tick, n)
		}
	}
	if c.Network == cluster.NetNamespaces && netRx <= 0 {
		t.Errorf("n1 received no bytes in its namespace (net_rx_bytes_ps max %v)", netRx)
	}
	var man schema.Manifest
	json.Unmarshal(mustReadFile(t, filepath.Join(o.Dir, "manifest.json")), &man)
	if len(man.Hosts) != 1 || man.Hosts[0].Name != "local" || !strings.Contains(strings.Join(man.Samplers, ","), "host") {
		t.Errorf("manifest hosts %+v samplers %v", man.Hosts, man.Samplers)
	}
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHostMetricsFollowRestartedServer: a replica's server restarted in the middle of a
// run (as `habench fault restart` does, through the state file) keeps its mysqld CPU
// series: samples from its new process after the restart, not errors until the end.
func TestHostMetricsFollowRestartedServer(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "hmr"), topology.Async, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	wl, _ := workload.Lookup("oltp_read_only")
	o := smallOptions(2, 10*time.Second)
	o.ReportInterval, o.Rate = 0, behaviourRate
	tg := target(c)
	if err := wl.Prepare(ctx, tg, o, os.Stderr); err != nil {
		t.Fatal(err)
	}
	oldPID := c.Node("n2").PID
	var restartedAt, readyAt time.Duration
	var rerr error
	done := make(chan struct{})
	var b *experiment.Bench
	started := time.Now()
	go func() {
		defer close(done)
		time.Sleep(3 * time.Second)
		restartedAt = time.Since(started)
		rerr = s.RestartNode(ctx, c, "n2")
		readyAt = time.Since(started)
	}()
	b = &experiment.Bench{Workload: wl, Options: o, Target: tg, Cluster: c, ResultsDir: t.TempDir()}
	out, err := b.Run(ctx)
	<-done
	if rerr != nil {
		t.Fatalf("restart n2: %v", rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	newPID := c.Node("n2").PID
	if newPID == oldPID {
		t.Fatalf("n2 kept pid %d", oldPID)
	}
	var man schema.Manifest
	json.Unmarshal(mustReadFile(t, filepath.Join(out.Dir, "manifest.json")), &man)
	offset := man.SamplesStarted.Sub(started).Seconds() // samples clock = wall - offset
	f, _ := os.Open(filepath.Join(out.Dir, "samples.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var before, after int
	var errs float64
	for _, r := range rows[1:] {
		at, _ := strconv.ParseFloat(r[0], 64)
		wall := at + offset
		switch {
		case r[1] == "n2" && r[2] == sampler.MetricServerCPU && wall < restartedAt.Seconds():
			before++
		case r[1] == "n2" && r[2] == sampler.MetricServerCPU && wall > readyAt.Seconds()+1:
			after++
		case r[1] == "n2" && r[2] == "sampler_errors_host":
			v, _ := strconv.ParseFloat(r[3], 64)
			errs = max(errs, v)
		}
	}
	t.Logf("n2 pid %d -> %d, restart %.1f-%.1f s after the start; mysqld CPU samples before %d, after %d; host sampler errors on n2 %v",
		oldPID, newPID, restartedAt.Seconds(), readyAt.Seconds(), before, after, errs)
	if before == 0 || after < 2 {
		t.Errorf("n2 mysqld CPU samples: %d before the restart, %d after it (want some before and >= 2 after)", before, after)
	}
	if stopped := readyAt - restartedAt; errs > stopped.Seconds()+2 {
		t.Errorf("n2: %v host sampler errors for a restart of %v (the new process was not followed)", errs, stopped)
	}
}
