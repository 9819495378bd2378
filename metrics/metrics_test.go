package metrics

import (
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/workload"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// gather returns the registry's families by name.
func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// value is the value of the family's series with exactly these labels (NaN if none).
func value(f *dto.MetricFamily, labels ...string) float64 {
	if f == nil {
		return math.NaN()
	}
	for _, m := range f.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(got, ",") != strings.Join(labels, ",") {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		}
	}
	return math.NaN()
}

func TestLatencyHistogramFromHDR(t *testing.T) {
	// Latencies in microseconds, some exactly on bucket bounds (1 ms, 20 ms).
	lat := map[int64]int64{300: 10, 1000: 5, 1500: 3, 15000: 2, 20000: 4, 3_000_000: 1}
	h := workload.NewHistogram()
	var n, sumUs int64
	for v, c := range lat {
		if err := h.RecordValues(v, c); err != nil {
			t.Fatal(err)
		}
		n += c
		sumUs += v * c
	}
	m := New()
	avgMs := float64(sumUs) / float64(n) / 1000
	m.ObserveInterval(workload.Interval{Transactions: n, LatencyAvg: avgMs, Histogram: h})
	m.ObserveInterval(workload.Interval{Transactions: n, LatencyAvg: avgMs, Histogram: h})
	hist := gather(t, m)[Latency].GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != uint64(2*n) || math.Abs(hist.GetSampleSum()-2*float64(sumUs)/1e6) > 1e-9 {
		t.Errorf("count %d sum %v, want %d %v", hist.GetSampleCount(), hist.GetSampleSum(), 2*n, 2*float64(sumUs)/1e6)
	}
	if len(hist.GetBucket()) != len(LatencyBuckets) {
		t.Fatalf("%d buckets", len(hist.GetBucket()))
	}
	for _, b := range hist.GetBucket() {
		// A value counts at or below a bound when HdrHistogram cannot confuse it with any
		// value above the bound: 20000 us shares its bin with 20001..20015 us, so it is
		// counted above 20 ms (never a value above a bound below it).
		ub := int64(math.Round(b.GetUpperBound() * 1e6))
		var want uint64
		for v, c := range lat {
			if v <= ub && !h.ValuesAreEquivalent(v, ub+1) {
				want += uint64(2 * c)
			}
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}

// TestLatencyHistogramCountsInFlightWaitsNever: a transaction hung across intervals is in
// each interval's Histogram as a lower-bound wait, but not in Recorded; the cumulative
// latency histogram counts the completed events only, each once.
func TestLatencyHistogramCountsInFlightWaitsNever(t *testing.T) {
	m := New()
	for i := 1; i <= 3; i++ {
		rec := workload.NewHistogram()
		_ = rec.RecordValues(2000, 10)
		withWait := rec.Clone()
		_ = withWait.RecordValue(int64(i) * 1_000_000) // still waiting: i s so far
		m.ObserveInterval(workload.Interval{Transactions: 10, LatencyAvg: 2, Histogram: withWait, Recorded: rec, InFlight: 1})
	}
	hist := gather(t, m)[Latency].GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != 30 || math.Abs(hist.GetSampleSum()-0.06) > 1e-9 {
		t.Errorf("count %d sum %v, want 30 events of 2 ms (the waits of the one in flight not counted)", hist.GetSampleCount(), hist.GetSampleSum())
	}
	for _, b := range hist.GetBucket() {
		if b.GetUpperBound() >= 0.5 && b.GetCumulativeCount() != 30 {
			t.Errorf("le=%v: %d, want 30", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
}

func TestCountersAndIntervalGauges(t *testing.T) {
	m := New()
	iv := workload.Interval{Transactions: 100, Reads: 1400, Writes: 400, Others: 200, Reconnects: 1, TPS: 50, QPS: 1000, Threads: 4,
		LatencyP95: 20, LatencyP99: 30, LatencyAvg: 10, ErrorsByCode: map[uint16]int64{1213: 2, 1205: 1}}
	m.ObserveInterval(iv)
	iv.ErrorsByCode = map[uint16]int64{1213: 3}
	iv.TPS = 60
	m.ObserveInterval(iv)
	f := gather(t, m)
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{Transactions, nil, 200}, {Reconnects, nil, 2},
		{Queries, []string{"type=read"}, 2800}, {Queries, []string{"type=write"}, 800}, {Queries, []string{"type=other"}, 400},
		{Errors, []string{"code=1213"}, 5}, {Errors, []string{"code=1205"}, 1},
		{IntervalTPS, nil, 60}, {IntervalQPS, nil, 1000}, {Threads, nil, 4},
		{IntervalLatency, []string{"stat=p95"}, 0.020}, {IntervalLatency, []string{"stat=p99"}, 0.030},
	}
	for _, c := range checks {
		if got := value(f[c.name], c.labels...); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func tick(elapsed time.Duration, vals map[[2]string]float64) []sampler.Sample {
	var ss []sampler.Sample
	for k, v := range vals {
		ss = append(ss, sampler.Sample{Elapsed: elapsed, Node: k[0], Metric: k[1], Value: v})
	}
	return ss
}

func TestSamplesToNodeGauges(t *testing.T) {
	m := New()
	m.StartRun(Run{Scenario: "s", Topology: "t1", Kind: "galera", Flavor: "mariadb", Workload: "oltp_read_write", Cell: "threads=8"})
	m.ObserveSamples(tick(time.Second, map[[2]string]float64{
		{"n1", sampler.MetricLag}: 0, {"n2", sampler.MetricLag}: 0.25, {"n3", sampler.MetricLag}: 1.5,
		{"n2", sampler.MetricBacklog}: 7, {"n2", sampler.MetricGaleraRecvQueue}: 12, {"n3", sampler.MetricGaleraFCPaused}: 0.4,
		{"n1", sampler.MetricSamplerErrors}: 0, {"n3", sampler.MetricGRFCThrottledSessions}: 2.5,
	}))
	f := gather(t, m)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{NodeLag, []string{"node=n2"}, 0.25}, {NodeLag, []string{"node=n3"}, 1.5}, {NodeBacklog, []string{"node=n2"}, 7},
		{NodeQueue, []string{"node=n2", "queue=galera_recv_queue"}, 12},
		{NodeThrottle, []string{"metric=gr_fc_throttled_sessions_avg", "node=n3"}, 2.5},
		{NodePaused, []string{"metric=galera_fc_paused_fraction", "node=n3"}, 0.4},
		{NodeSample, []string{"metric=sampler_errors", "node=n1"}, 0},
		{RunInfo, []string{"cell=threads=8", "flavor=mariadb", "kind=galera", "scenario=s", "topology=t1", "workload=oltp_read_write"}, 1},
		{RunActive, nil, 1},
	} {
		if got := value(f[c.name], c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(f[NodeSample].GetMetric()); n != 8 {
		t.Errorf("%d habench_node_sample series, want one per sample (8)", n)
	}
	// n3 stops answering: its series disappear instead of showing stale values.
	m.ObserveSamples(tick(2*time.Second, map[[2]string]float64{{"n1", sampler.MetricLag}: 0, {"n2", sampler.MetricLag}: 0.5}))
	f = gather(t, m)
	if !math.IsNaN(value(f[NodeLag], "node=n3")) || value(f[NodeLag], "node=n2") != 0.5 || f[NodeQueue] != nil || f[NodePaused] != nil || f[NodeThrottle] != nil {
		t.Errorf("after n3 went silent: lag series %d, queue %v, paused %v", len(f[NodeLag].GetMetric()), f[NodeQueue], f[NodePaused])
	}
	// The next run starts clean; counters keep counting.
	m.ObserveInterval(workload.Interval{Transactions: 5})
	m.EndRun()
	if v := value(gather(t, m)[RunActive]); v != 0 {
		t.Errorf("run_active after EndRun: %v", v)
	}
	m.StartRun(Run{Topology: "t2", Kind: "async"})
	f = gather(t, m)
	if f[NodeLag] != nil || len(f[RunInfo].GetMetric()) != 1 || value(f[Transactions]) != 5 {
		t.Errorf("after StartRun: lag %v, %d run_info series, transactions %v", f[NodeLag], len(f[RunInfo].GetMetric()), value(f[Transactions]))
	}
}

func TestServe(t *testing.T) {
	m := New()
	m.StartRun(Run{Topology: "t1"})
	m.ObserveSamples(tick(time.Second, map[[2]string]float64{{"n1", sampler.MetricLag}: 0.125}))
	m.ObserveInterval(workload.Interval{Transactions: 3, Histogram: workload.NewHistogram()})
	srv, err := m.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	if value(fams[NodeLag], "node=n1") != 0.125 || value(fams[Transactions]) != 3 {
		t.Errorf("served lag %v transactions %v", value(fams[NodeLag], "node=n1"), value(fams[Transactions]))
	}
	for name := range fams {
		if !strings.HasPrefix(name, "habench_") {
			t.Errorf("non-habench metric served: %s (the global registry leaked in?)", name)
		}
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := http.Get("http://" + srv.Addr() + "/metrics"); err == nil {
		t.Error("still serving after Close")
	}

	if _, err := m.Serve("9099"); err == nil || !strings.Contains(err.Error(), "want host:port") {
		t.Errorf("bad address: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := m.Serve(ln.Addr().String()); err == nil {
		t.Error("busy address accepted")
	}
}

var metricName = regexp.MustCompile(`\bhabench_[a-z_]+`)

// sampleFilter finds the sample names a query selects with metric=~"a|b" or metric="a".
var sampleFilter = regexp.MustCompile(`metric=~?"([a-z0-9_|]+)"`)

// TestGrafanaDashboard: the shipped dashboard is valid dashboard JSON and every metric
// its queries use is one this package produces (fed with every kind of input).
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../grafana/habench-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Inputs        []struct {
			Name     string `json:"name"`
			PluginID string `json:"pluginId"`
		} `json:"__inputs"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
			GridPos struct{ H, W, X, Y int } `json:"gridPos"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 30 || len(d.Panels) < 6 {
		t.Fatalf("dashboard: title %q uid %q schema %d, %d panels", d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	if len(d.Inputs) != 1 || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs %+v: want one prometheus datasource input", d.Inputs)
	}

	m := New()
	m.StartRun(Run{Topology: "t"})
	h := workload.NewHistogram()
	h.RecordValue(1000)
	m.ObserveInterval(workload.Interval{Transactions: 1, Histogram: h, ErrorsByCode: map[uint16]int64{1213: 1}})
	m.ObserveSamples(tick(time.Second, map[[2]string]float64{{"n1", sampler.MetricLag}: 0, {"n2", sampler.MetricBacklog}: 1,
		{"n2", sampler.MetricGRApplierQueue}: 1, {"n2", sampler.MetricGaleraFCPaused}: 0.1, {"n2", sampler.MetricGRFCThrottledSessions}: 1,
		{"host:local", sampler.MetricHostCPUBusy}: 0.5, {"n1", sampler.MetricServerCPU}: 0.7}))
	produced := map[string]bool{}
	for name, f := range gather(t, m) {
		produced[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				produced[name+s] = true
			}
		}
	}
	ids := map[int]bool{}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] || p.Title == "" || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %d %q: duplicate id, no title or no size", p.ID, p.Title)
		}
		ids[p.ID] = true
		if p.Type == "row" || p.Type == "text" {
			continue
		}
		if p.Datasource.UID != "${DS_PROMETHEUS}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			// Sample names a habench_node_sample query selects must be ones the samplers emit.
			for _, m := range sampleFilter.FindAllStringSubmatch(tg.Expr, -1) {
				for _, name := range strings.Split(m[1], "|") {
					if !slices.ContainsFunc(sampler.Metrics, func(mi sampler.MetricInfo) bool { return mi.Name == name }) {
						t.Errorf("panel %q: metric=%q is not a sample name (sampler.Metrics)", p.Title, name)
					}
				}
			}
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q uses no habench metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] = true
				if !produced[n] {
					t.Errorf("panel %q: %s is not a metric habench serves", p.Title, n)
				}
			}
		}
	}
	// Every named metric is on the dashboard.
	for _, n := range []string{Transactions, Queries, Errors, Reconnects, Latency, IntervalTPS, IntervalLatency, Threads,
		NodeLag, NodeBacklog, NodeQueue, NodePaused, NodeThrottle, NodeSample, HostCPU, NodeServerCPU, RunInfo, RunActive} {
		if !used[n] {
			t.Errorf("%s is not on the dashboard", n)
		}
	}
}

// Host CPU is one series per host and mode, whatever the number of nodes on it; each
// server's CPU is per node; both go when the tick no longer carries them.
func TestHostCPUGauges(t *testing.T) {
	m := New()
	m.StartRun(Run{Topology: "t"})
	m.ObserveSamples(tick(time.Second, map[[2]string]float64{
		{"host:local", sampler.MetricHostCPUBusy}: 0.95, {"host:local", sampler.MetricHostCPUIOWait}: 0.02,
		{"host:local", sampler.MetricHostCPUSteal}: 0, {"host:local", sampler.MetricHostProcsRunning}: 7,
		{"n1", sampler.MetricServerCPU}: 1.2, {"n2", sampler.MetricServerCPU}: 0.4, {"n1", sampler.MetricLag}: 0}))
	g := gather(t, m)
	if v := value(g[HostCPU], "host=local", "mode=busy"); v != 0.95 {
		t.Errorf("busy %v", v)
	}
	if v := value(g[HostCPU], "host=local", "mode=iowait"); v != 0.02 {
		t.Errorf("iowait %v", v)
	}
	if n := len(g[HostCPU].GetMetric()); n != 3 {
		t.Errorf("%d host CPU series, want 3 (busy, iowait, steal of one host)", n)
	}
	if v := value(g[NodeServerCPU], "node=n1"); v != 1.2 {
		t.Errorf("n1 mysqld CPU %v", v)
	}
	if v := value(g[NodeSample], "metric=host_procs_running", "node=host:local"); v != 7 {
		t.Errorf("procs_running sample %v", v)
	}
	m.ObserveSamples(tick(2*time.Second, map[[2]string]float64{{"n1", sampler.MetricLag}: 0}))
	g = gather(t, m)
	if g[HostCPU] != nil && len(g[HostCPU].GetMetric()) != 0 || g[NodeServerCPU] != nil && len(g[NodeServerCPU].GetMetric()) != 0 {
		t.Errorf("stale CPU series kept: %v %v", g[HostCPU], g[NodeServerCPU])
	}
}
