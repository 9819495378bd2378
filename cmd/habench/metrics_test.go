package main

import (
	"bytes"
	"context"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/metrics"
	"github.com/habench/habench/topology"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// freeAddr is a free 127.0.0.1 port (closed again, so the caller can bind it).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape GETs url and parses it with Prometheus' own text parser.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// series returns the family's series as label string ("node=n1") -> value.
func series(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Histogram != nil:
			v = float64(m.GetHistogram().GetSampleCount())
		}
		out[strings.Join(ls, ",")] = v
	}
	return out
}

// TestLiveMetricsDuringRun: `habench sysbench run --metrics-addr` on a 3-node MariaDB
// async sandbox serves /metrics while the run is in progress; the text parses with
// Prometheus' expfmt parser and has a lag series for every node, a growing transaction
// counter, the latency histogram and the run's labels; the server is gone after the run.
func TestLiveMetricsDuringRun(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	state := stateDir(t)
	name := testenv.Name(t, "rpm")
	must := func(args ...string) {
		t.Helper()
		if r := habench(t, state, args...); r.code != 0 {
			t.Fatalf("habench %v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
	must("deploy", "--name", name, "--kind", "async", "--nodes", "3", "--flavor", "mariadb")
	must("sysbench", "oltp_read_write", "prepare", "--cluster", name, "--tables", "1", "--table-size", "1000")

	addr := freeAddr(t)
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, habenchBin, "sysbench", "oltp_read_write", "run", "--cluster", name, "--tables", "1", "--table-size", "1000",
		"--threads", "2", "--rate", "100", "--time", "8", "--report-interval", "1", "--results", results, "--metrics-addr", addr)
	cmd.Env = append(os.Environ(), "HABENCH_STATE_DIR="+state)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	url := "http://" + addr + "/metrics"
	var fams map[string]*dto.MetricFamily
	var firstTx, lastTx float64
	var scrapes int
	deadline := time.Now().Add(60 * time.Second)
poll:
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("run ended before /metrics showed every node's lag (%d scrapes): %v\n%s\n%s", scrapes, err, stdout.String(), stderr.String())
		case <-time.After(500 * time.Millisecond):
		}
		f, err := scrape(url)
		if err != nil {
			continue // not listening yet
		}
		scrapes++
		tx := series(f[metrics.Transactions])[""]
		if firstTx == 0 {
			firstTx = tx
		}
		lastTx = tx
		// Every node's lag, the counter moving, and a report interval in (the histogram and
		// the interval TPS are updated per interval, the counter live).
		if len(series(f[metrics.NodeLag])) == 3 && tx > firstTx && tx > 0 && series(f[metrics.Latency])[""] > 0 {
			fams = f
			break poll
		}
	}
	if fams == nil {
		t.Fatalf("no scrape with every node's lag, a growing transaction counter and an interval's latencies in 60 s (%d scrapes, transactions %v -> %v)\n%s", scrapes, firstTx, lastTx, stderr.String())
	}
	lag := series(fams[metrics.NodeLag])
	var nodes []string
	for k, v := range lag {
		nodes = append(nodes, k)
		if v < 0 || math.IsNaN(v) || v > 30 {
			t.Errorf("lag %s = %v", k, v)
		}
	}
	slices.Sort(nodes)
	if strings.Join(nodes, " ") != "node=n1 node=n2 node=n3" {
		t.Errorf("lag series %v, want n1 n2 n3", nodes)
	}
	if b := series(fams[metrics.NodeBacklog]); len(b) != 2 {
		t.Errorf("backlog series %v, want the two replicas", b)
	}
	tx := series(fams[metrics.Transactions])[""]
	hist := series(fams[metrics.Latency])[""]
	// The histogram holds every event of the intervals the counter counted (a scrape
	// may fall between the two updates of one interval).
	if tx <= 0 || hist <= 0 || hist > tx {
		t.Errorf("transactions %v, latency histogram count %v", tx, hist)
	}
	// oltp_read_write: 14 reads, 4 writes, 2 other per transaction (at most one interval
	// behind the transaction counter, which is updated first). An attempt that failed with
	// an ignored error (1213, a deadlock between the two threads) counts the statements it
	// ran: up to 14 reads and 4 writes more per error, and then the ratio is not exact.
	var errs float64
	for _, v := range series(fams[metrics.Errors]) {
		errs += v
	}
	q := series(fams[metrics.Queries])
	if r, w := q["type=read"], q["type=write"]; r <= 0 || r > 14*(tx+errs) || w > 4*(tx+errs) || (errs == 0 && w*14 != r*4) {
		t.Errorf("queries %v for %v transactions and %v ignored errors", q, tx, errs)
	}
	if v := series(fams[metrics.IntervalTPS])[""]; v <= 0 {
		t.Errorf("interval TPS %v", v)
	}
	info := series(fams[metrics.RunInfo])
	want := "cell=,flavor=mariadb,kind=async,scenario=,topology=" + name + ",workload=oltp_read_write"
	if info[want] != 1 || series(fams[metrics.RunActive])[""] != 1 {
		t.Errorf("run info %v active %v, want %s", info, series(fams[metrics.RunActive]), want)
	}
	for n := range fams {
		if !strings.HasPrefix(n, "habench_") {
			t.Errorf("served %s: only habench_* metrics belong to habench's registry", n)
		}
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("run: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("run did not end")
	}
	if !strings.Contains(stderr.String(), "metrics: http://"+addr+"/metrics") {
		t.Errorf("the run does not print the metrics address: %s", stderr.String())
	}
	if _, err := scrape(url); err == nil {
		t.Error("/metrics still served after the run ended")
	}
	// The run also wrote its report.
	if m, _ := filepath.Glob(filepath.Join(results, "*", "report.html")); len(m) != 1 {
		t.Errorf("report.html of the run: %v", m)
	}
	must("destroy", name)
	noClusters(t, state, name)
}

// TestMetricsAddrBadInput: a malformed or busy --metrics-addr, or one on a command that
// runs no workload, is bad input (exit 2) before anything is deployed.
func TestMetricsAddrBadInput(t *testing.T) {
	t.Parallel()
	state := stateDir(t)
	f := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(f, []byte("name: rpbad\ntopologies:\n  - {name: rpbad, kind: single, flavor: mariadb}\nworkload: {test: oltp_read_write}\n"), 0o644)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, args := range [][]string{
		{"run", f, "--metrics-addr", "9099"},
		{"run", f, "--metrics-addr", busy.Addr().String()},
		{"sysbench", "oltp_read_write", "prepare", "--metrics-addr", "127.0.0.1:0"},
	} {
		r := habench(t, state, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--metrics-addr") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming --metrics-addr", args, r.code, r.stderr)
		}
	}
	noClusters(t, state, "rpbad")
}
