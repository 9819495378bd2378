package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
)

// testdata/quick is a real `habench run scenarios/quick.yaml` (MariaDB 10.11 single,
// async and semi-sync, 4 threads, 20 s, report interval 5 s), without variables.json.
const quick = "testdata/quick"

// summaryOf reads a run's summary.json independently of the package's loader.
func summaryOf(t *testing.T, dir string) (tps float64, lat map[string]float64) {
	t.Helper()
	var s struct {
		TPS float64            `json:"tps"`
		Lat map[string]float64 `json:"latency_ms"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.TPS, s.Lat
}

func runDir(t *testing.T, name string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(quick, "*-"+name))
	if len(m) != 1 {
		t.Fatalf("run %s in %s: %v", name, quick, m)
	}
	return m[0]
}

// copyTree copies testdata into a temporary directory the test may change.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func TestLoadScenario(t *testing.T) {
	res, err := Load(quick)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != KindScenario || res.Name != "quick" {
		t.Errorf("kind %q name %q, want scenario quick", res.Kind, res.Name)
	}
	var names []string
	for _, r := range res.Runs {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "qsingle,qasync,qsemi" {
		t.Fatalf("runs %v, want comparison.json's order qsingle,qasync,qsemi", names)
	}
	for _, r := range res.Runs {
		// comparison.json names the run directories relative to where the scenario ran
		// (results/...); they are found inside the scenario directory.
		if filepath.Dir(r.Dir) != quick {
			t.Errorf("%s: dir %s, want inside %s", r.Name, r.Dir, quick)
		}
		if got, want := len(r.Intervals), countLines(t, filepath.Join(r.Dir, "intervals.csv"))-1; got != want {
			t.Errorf("%s: %d intervals, intervals.csv has %d rows", r.Name, got, want)
		}
		if got, want := len(r.Samples), countLines(t, filepath.Join(r.Dir, "samples.csv"))-1; got != want {
			t.Errorf("%s: %d samples, samples.csv has %d rows", r.Name, got, want)
		}
		tps, _ := summaryOf(t, r.Dir)
		if r.Summary == nil || r.Summary.TPS != tps || r.Error != "" {
			t.Errorf("%s: summary %+v error %q, want TPS %v", r.Name, r.Summary, r.Error, tps)
		}
		if r.Manifest.IntervalsOffsetS <= 0 || r.Manifest.IntervalsOffsetS > 1 {
			t.Errorf("%s: intervals offset %v", r.Name, r.Manifest.IntervalsOffsetS)
		}
	}
	semi := res.Runs[2]
	if semi.Kind() != "semisync" || semi.Flavor() != "mariadb" || semi.Version() != "10.11.19" {
		t.Errorf("qsemi: kind %q flavor %q version %q", semi.Kind(), semi.Flavor(), semi.Version())
	}
	if got := strings.Join(semi.NodeNames(), ","); got != "n1,n2,n3" {
		t.Errorf("qsemi nodes %s", got)
	}
	if lag, ok := semi.MaxLagS(); !ok || lag <= 0 {
		t.Errorf("qsemi max lag %v %v, want the largest node lag_max_s (> 0 in this run)", lag, ok)
	}
}

func TestLoadRunAndBadInput(t *testing.T) {
	res, err := Load(runDir(t, "qasync"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != KindRun || len(res.Runs) != 1 || res.Runs[0].Name != "qasync" {
		t.Fatalf("run dir: kind %q, %d runs", res.Kind, len(res.Runs))
	}

	var le *LoadError
	if _, err := Load(t.TempDir()); !errors.As(err, &le) {
		t.Errorf("empty directory: %v, want *LoadError", err)
	}
	if _, err := Load(filepath.Join(quick, "comparison.json")); !errors.As(err, &le) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "nope")); !errors.As(err, &le) {
		t.Errorf("missing: %v", err)
	}

	// Malformed manifest: the error names the file.
	d := copyTree(t, runDir(t, "qsingle"))
	os.WriteFile(filepath.Join(d, "manifest.json"), []byte("{not json"), 0o644)
	if _, err := Load(d); !errors.As(err, &le) || le.Path != filepath.Join(d, "manifest.json") {
		t.Errorf("bad manifest: %v", err)
	}

	// A killed run: no summary.json, last CSV rows cut short.
	d = copyTree(t, runDir(t, "qsemi"))
	os.Remove(filepath.Join(d, "summary.json"))
	iv, _ := os.ReadFile(filepath.Join(d, "intervals.csv"))
	os.WriteFile(filepath.Join(d, "intervals.csv"), append(iv, []byte("25.000,4,300")...), 0o644)
	r, err := LoadRun(d)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary != nil || !strings.Contains(r.Error, "no summary.json") {
		t.Errorf("killed run: summary %v error %q", r.Summary, r.Error)
	}
	if len(r.Intervals) != countLines(t, filepath.Join(runDir(t, "qsemi"), "intervals.csv"))-1 {
		t.Errorf("the cut row was not dropped: %d intervals", len(r.Intervals))
	}
	if _, err := Render(&Results{Dir: d, Kind: KindRun, Name: "x", Runs: []*Run{r}}, Options{}); err != nil {
		t.Errorf("a killed run must still render: %v", err)
	}

	// A scenario whose run directory went missing still renders, and says so.
	d = copyTree(t, quick)
	os.RemoveAll(filepath.Join(d, filepath.Base(runDir(t, "qasync"))))
	sres, err := Load(d)
	if err != nil || len(sres.Runs) != 2 || len(sres.Missing) != 1 || !strings.HasPrefix(sres.Missing[0], "qasync (") {
		t.Fatalf("missing run: %v, %d runs, missing %v", err, len(sres.Runs), sres.Missing)
	}
	if out, err := Render(sres, Options{}); err != nil || !bytes.Contains(out.Markdown, []byte("**not loaded:** qasync")) {
		t.Errorf("missing run not reported: %v", err)
	}

	// A non-numeric cell is an error naming the row and column.
	d = copyTree(t, runDir(t, "qsingle"))
	os.WriteFile(filepath.Join(d, "intervals.csv"), []byte("elapsed_s,tps\n1.0,abc\n"), 0o644)
	if _, err := LoadRun(d); err == nil || !strings.Contains(err.Error(), `row 2, tps "abc"`) {
		t.Errorf("bad number: %v", err)
	}
}

func TestBaseline(t *testing.T) {
	res, err := Load(quick)
	if err != nil {
		t.Fatal(err)
	}
	b, why, err := res.Baseline("")
	if err != nil || b.Name != "qsingle" || !strings.Contains(why, "single primary") {
		t.Errorf("default: %v %q %v, want the single primary", b, why, err)
	}
	b, why, err = res.Baseline("qsemi")
	if err != nil || b.Name != "qsemi" || !strings.Contains(why, "--baseline") {
		t.Errorf("--baseline qsemi: %v %q %v", b, why, err)
	}
	var be *BaselineError
	if _, _, err := res.Baseline("galera"); !errors.As(err, &be) || !strings.Contains(err.Error(), "qsingle, qasync, qsemi") {
		t.Errorf("unknown baseline: %v", err)
	}
	// The scenario's configured baseline (manifest extra.baseline) wins over the default.
	res.Runs[1].Manifest.Extra["baseline"] = "qasync"
	if b, why, _ := res.Baseline(""); b.Name != "qasync" || why != "the scenario's baseline" {
		t.Errorf("configured: %s %q", b.Name, why)
	}
	// Without a single primary: the first run.
	delete(res.Runs[1].Manifest.Extra, "baseline")
	res.Runs = res.Runs[1:]
	if b, why, _ := res.Baseline(""); b.Name != "qasync" || !strings.Contains(why, "first run") {
		t.Errorf("no single: %s %q", b.Name, why)
	}
}

func TestRowsPercentages(t *testing.T) {
	res, err := Load(quick)
	if err != nil {
		t.Fatal(err)
	}
	base, _, _ := res.Baseline("qasync")
	rows := res.Rows(base)
	btps, blat := summaryOf(t, runDir(t, "qasync"))
	for _, r := range rows {
		tps, lat := summaryOf(t, r.Run.Dir)
		if r.TPSPct == nil || math.Abs(*r.TPSPct-100*tps/btps) > 1e-9 {
			t.Errorf("%s: TPS vs base %v, want %v", r.Run.Name, fmtPct(r.TPSPct), 100*tps/btps)
		}
		if r.AvgPct == nil || math.Abs(*r.AvgPct-100*lat["avg"]/blat["avg"]) > 1e-9 {
			t.Errorf("%s: avg latency vs base %v", r.Run.Name, fmtPct(r.AvgPct))
		}
		if r.P95Pct == nil || math.Abs(*r.P95Pct-100*lat["p95"]/blat["p95"]) > 1e-9 {
			t.Errorf("%s: p95 vs base %v", r.Run.Name, fmtPct(r.P95Pct))
		}
		if r.IsBaseline != (r.Run.Name == "qasync") {
			t.Errorf("%s: IsBaseline %v", r.Run.Name, r.IsBaseline)
		}
		// Jitter from the intervals as they are in the file.
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, iv := range r.Run.Intervals {
			lo, hi = min(lo, iv.TPS), max(hi, iv.TPS)
		}
		if r.TPSMin != lo || r.TPSMax != hi || r.TPSCV <= 0 || r.TPSCV > 1 {
			t.Errorf("%s: interval TPS min %v max %v cv %v, want %v %v", r.Run.Name, r.TPSMin, r.TPSMax, r.TPSCV, lo, hi)
		}
	}
}

func TestClassify(t *testing.T) {
	for metric, want := range map[string]sampler.Class{
		sampler.MetricLag: sampler.ClassLag, sampler.MetricBacklog: sampler.ClassQueue, sampler.MetricGRApplierQueue: sampler.ClassQueue, sampler.MetricGRCertifierQueue: sampler.ClassQueue,
		sampler.MetricGaleraRecvQueue: sampler.ClassQueue, sampler.MetricGaleraSendQueue: sampler.ClassQueue, "wsrep_local_recv_queue": sampler.ClassQueue,
		sampler.MetricGaleraFCPaused: sampler.ClassPaused, "gr_flow_control_throttled_fraction": sampler.ClassPaused,
		"wsrep_flow_control_paused_fraction": sampler.ClassPaused, sampler.MetricGRFCThrottledSessions: sampler.ClassThrottle,
		sampler.MetricGRFCThrottleInferred: sampler.ClassThrottle, sampler.MetricGRFCThrottleTime: sampler.ClassOther, sampler.MetricGRFCThrottleCount: sampler.ClassOther,
		sampler.MetricSecondsBehindSource: sampler.ClassOther, sampler.MetricApplierLag: sampler.ClassOther,
		"sampler_errors_queue": sampler.ClassOther, sampler.MetricSemiSyncOn: sampler.ClassOther, "cpu_fraction": sampler.ClassOther,
		sampler.MetricGaleraClusterSize: sampler.ClassMembership, sampler.MetricGRMembersOnline: sampler.ClassMembership, sampler.MetricGRMembersUnreachable: sampler.ClassMembership,
		sampler.MetricGRMembersTotal: sampler.ClassOther, sampler.MetricGRMembersRecovering: sampler.ClassOther, sampler.MetricGRMemberState: sampler.ClassOther,
		"host_cpu_busy_fraction": sampler.ClassHostCPU, "host_cpu_iowait_fraction": sampler.ClassHostCPU, "host_cpu_steal_fraction": sampler.ClassHostCPU,
		"mysqld_cpu_cores": sampler.ClassServerCPU, "host_procs_running": sampler.ClassOther, "net_rx_bytes_ps": sampler.ClassOther,
	} {
		if got := sampler.Classify(metric); got != want {
			t.Errorf("sampler.Classify(%q) = %q, want %q", metric, got, want)
		}
	}
}

func TestRunPanels(t *testing.T) {
	res, err := Load(quick)
	if err != nil {
		t.Fatal(err)
	}
	semi := res.Runs[2]
	panels, xmax := runPanels(semi)
	var titles []string
	for _, p := range panels {
		titles = append(titles, p.title)
	}
	want := []string{"TPS per report interval", "latency per report interval", Panels[0].Title, Panels[1].Title}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Fatalf("panels %q, want %q (no paused panel without such samples)", titles, want)
	}
	// The TPS step line starts where measurement started on the samples' clock and
	// ends at the last interval's end moved by the same offset.
	tps := panels[0].lines[0].xys
	off := semi.Manifest.IntervalsOffsetS
	last := semi.Intervals[len(semi.Intervals)-1]
	if tps[0].X != off || tps[len(tps)-1].X != off+last.ElapsedS || tps[len(tps)-1].Y != last.TPS {
		t.Errorf("TPS line %v .. %v, want from %v to %v at %v", tps[0], tps[len(tps)-1], off, off+last.ElapsedS, last.TPS)
	}
	lastSample := semi.Samples[len(semi.Samples)-1].ElapsedS
	if xmax < lastSample {
		t.Errorf("x range %v ends before the last sample %v", xmax, lastSample)
	}
	var lagNodes, queueNodes []string
	for _, s := range panels[2].lines {
		lagNodes = append(lagNodes, s.label)
	}
	for _, s := range panels[3].lines {
		queueNodes = append(queueNodes, s.label)
	}
	if strings.Join(lagNodes, ",") != "n1,n2,n3" || strings.Join(queueNodes, ",") != "n2,n3" {
		t.Errorf("lag lines %v (want every node), backlog lines %v (want the replicas)", lagNodes, queueNodes)
	}

	// Galera/GR-like metrics, named by the rule, get their panels; several metrics in a
	// panel are labelled with their names.
	for _, n := range []string{"n1", "n2"} {
		for i := 1; i <= 3; i++ {
			semi.Samples = append(semi.Samples,
				schema.Sample{ElapsedS: float64(i), Node: n, Metric: "wsrep_local_recv_queue", Value: float64(i)},
				schema.Sample{ElapsedS: float64(i), Node: n, Metric: sampler.MetricGaleraFCPaused, Value: 0.25})
		}
	}
	semi.Samples = append(semi.Samples, schema.Sample{ElapsedS: 4, Node: "n3", Metric: sampler.MetricLag, Value: math.NaN()},
		schema.Sample{ElapsedS: 4, Node: "n3", Metric: sampler.MetricBacklog, Value: math.Inf(1)})
	if _, ok, err := RunChart(semi); err != nil || !ok {
		t.Errorf("non-finite samples break the chart: %v", err)
	}
	// A clean stop that took SIGKILL is marked as the crash it was, and only it.
	saved := semi.Manifest.Faults
	if err := json.Unmarshal([]byte(`[{"at_s":2,"action":"stop","node":"n1","escalated":"node n1 did not shut down within 90 s of SIGTERM"},{"at_s":3,"action":"stop","node":"n2"}]`), &semi.Manifest.Faults); err != nil {
		t.Fatal(err)
	}
	if c, _, err := RunChart(semi); err != nil || !strings.Contains(c.SVG, "fault: stop n1 at 2.0 s ⚠ escalated to SIGKILL (a crash)") ||
		!strings.Contains(c.SVG, "fault: stop n2 at 3.0 s") || strings.Count(c.SVG, "escalated to SIGKILL") != 1 {
		t.Errorf("fault marks do not flag the escalated stop alone (err %v)", err)
	}
	semi.Manifest.Faults = saved
	panels, _ = runPanels(semi)
	if len(panels) != 5 || panels[4].title != Panels[2].Title || !panels[4].fraction {
		t.Fatalf("with paused samples: %d panels", len(panels))
	}
	gr := *semi
	gr.Samples = append(slices.Clone(semi.Samples), schema.Sample{ElapsedS: 2, Node: "n2", Metric: sampler.MetricGRFCThrottledSessions, Value: 1.5})
	if p, _ := runPanels(&gr); len(p) != 6 || p[5].title != Panels[3].Title || p[5].fraction || p[5].lines[0].label != "n2" {
		t.Errorf("with GR throttle samples: %d panels", len(p))
	}
	// Membership last: a member's view of the group, two metrics labelled by name.
	gr.Samples = append(gr.Samples, schema.Sample{ElapsedS: 2, Node: "n1", Metric: sampler.MetricGRMembersOnline, Value: 2},
		schema.Sample{ElapsedS: 2, Node: "n1", Metric: sampler.MetricGRMembersUnreachable, Value: 1})
	if p, _ := runPanels(&gr); len(p) != 7 || p[6].title != Panels[4].Title || len(p[6].lines) != 2 || p[6].lines[1].label != "n1 gr_members_unreachable" {
		t.Errorf("with GR membership samples: %d panels", len(p))
	}
	var ql []string
	for _, s := range panels[3].lines {
		ql = append(ql, s.label)
	}
	if got := strings.Join(ql, ","); got != "n1 wsrep_local_recv_queue,n2 backlog_trx,n2 wsrep_local_recv_queue,n3 backlog_trx" {
		t.Errorf("queue lines %s", got)
	}
	ns := nodeTable(semi)
	if ns[1].Queues != "wsrep_local_recv_queue max 3" || ns[1].Paused != "galera_fc_paused_fraction avg 0.250, max 0.250" {
		t.Errorf("n2 node table: queues %q paused %q", ns[1].Queues, ns[1].Paused)
	}
}

var svgTag = regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt" viewBox="0 0 [0-9.]+ [0-9.]+"`)

func TestRenderScenario(t *testing.T) {
	res, err := Load(quick)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	out, err := Render(res, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	html := string(out.HTML)
	// 2 comparison bar charts + one time-series chart per run.
	tags := svgTag.FindAllStringSubmatch(html, -1)
	if len(tags) != 5 || len(out.Charts) != 5 {
		t.Fatalf("%d <svg> elements, %d charts; want 5", len(tags), len(out.Charts))
	}
	for _, m := range tags {
		w, _ := strconv.ParseFloat(m[1], 64)
		h, _ := strconv.ParseFloat(m[2], 64)
		if w < 100 || h < 100 {
			t.Errorf("svg %sx%s pt", m[1], m[2])
		}
	}
	for _, c := range out.Charts {
		if strings.Count(c.SVG, "<path") < 10 || c.Series == 0 {
			t.Errorf("chart %q: %d paths, %d series", c.Title, strings.Count(c.SVG, "<path"), c.Series)
		}
	}
	// Self-contained: no script, no external resource (only SVG namespace URIs).
	if strings.Contains(html, "<script") || regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(html) || strings.Contains(html, "<?xml") {
		t.Error("report.html is not self-contained or inlines an XML prolog")
	}
	for _, w := range []string{"Baseline: <b>qsingle</b> (the single primary, by default)", "rendered 2026-11-30 12:00:00 UTC",
		"rpl_semi_sync_master_wait_point", "10.11.19-MariaDB-0", `id="run-qsemi"`} {
		if !strings.Contains(html, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	md := string(out.Markdown)
	for _, w := range []string{"| topology | kind | flavor | version | TPS |", "| **qsingle** (baseline) | single | mariadb | 10.11.19 |",
		"## Settings that differ between runs", "| rpl_semi_sync_master_enabled | OFF | OFF | ON |", "## qsemi"} {
		if !strings.Contains(md, w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	recs, err := csv.NewReader(bytes.NewReader(out.CSV)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || strings.Join(recs[0], ",") != strings.Join(CSVColumns, ",") {
		t.Fatalf("report.csv: %d records, header %v", len(recs), recs[0])
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	btps, _ := summaryOf(t, runDir(t, "qsingle"))
	for _, rec := range recs[1:] {
		tps, _ := summaryOf(t, runDir(t, rec[col["name"]]))
		pct, _ := strconv.ParseFloat(rec[col["tps_vs_baseline_pct"]], 64)
		if math.Abs(pct-100*tps/btps) > 0.001 || (rec[col["baseline"]] == "true") != (rec[col["name"]] == "qsingle") {
			t.Errorf("csv row %v: tps vs base %v, want %.3f", rec[:3], pct, 100*tps/btps)
		}
	}
}

func TestWriteRunDirKeepsReportMD(t *testing.T) {
	d := copyTree(t, runDir(t, "qsemi"))
	before, _ := os.ReadFile(filepath.Join(d, "report.md"))
	paths, err := Write(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != "report.html" || filepath.Base(paths[1]) != "report.csv" {
		t.Errorf("wrote %v", paths)
	}
	after, _ := os.ReadFile(filepath.Join(d, "report.md"))
	if !bytes.Equal(before, after) {
		t.Error("report.md of a run directory was changed")
	}
	h, _ := os.ReadFile(filepath.Join(d, "report.html"))
	if n := len(svgTag.FindAll(h, -1)); n != 1 {
		t.Errorf("a run's report.html has %d charts, want its time series only", n)
	}
	if _, err := Write(d, Options{Baseline: "nope"}); err == nil {
		t.Error("unknown baseline accepted")
	}
}

func TestSweepCurves(t *testing.T) {
	d := copyTree(t, quick)
	var pts []SweepPoint
	// Two topologies swept over threads (numeric), one also over a categorical axis; the
	// failed cell is listed, not drawn.
	for i, th := range []string{"1", "2", "4", "8"} {
		pts = append(pts,
			SweepPoint{Topology: "qasync", Axis: "threads", Value: th, TPS: 100 * float64(i+1), P95Ms: 5 + float64(i)},
			SweepPoint{Topology: "qsemi", Axis: "threads", Value: th, TPS: 80 * float64(i+1), P95Ms: 6 + float64(i)})
	}
	pts = append(pts, SweepPoint{Topology: "qsemi", Axis: "threads", Value: "16", Error: "interrupted"},
		SweepPoint{Topology: "qsemi", Axis: "rpl_semi_sync_master_wait_point", Value: "AFTER_SYNC", TPS: 320, P95Ms: 18},
		SweepPoint{Topology: "qsemi", Axis: "rpl_semi_sync_master_wait_point", Value: "AFTER_COMMIT", TPS: 330, P95Ms: 17})
	if err := WriteSweepPoints(d, pts); err != nil {
		t.Fatal(err)
	}
	res, err := Load(d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != KindSweep || len(res.Sweep) != len(pts) || len(res.Runs) != 3 {
		t.Fatalf("sweep: kind %q, %d points, %d runs", res.Kind, len(res.Sweep), len(res.Runs))
	}
	axes, lines := sweepAxes(res.Sweep)
	if strings.Join(axes, ",") != "threads,rpl_semi_sync_master_wait_point" || len(lines["threads"]) != 2 {
		t.Fatalf("axes %v, threads lines %d", axes, len(lines["threads"]))
	}
	pos, labels, numeric := axisPositions(lines["threads"])
	if !numeric || pos["8"] != 8 || labels != nil {
		t.Errorf("threads: numeric %v pos %v", numeric, pos)
	}
	pos, labels, numeric = axisPositions(lines["rpl_semi_sync_master_wait_point"])
	if numeric || strings.Join(labels, ",") != "AFTER_SYNC,AFTER_COMMIT" || pos["AFTER_COMMIT"] != 1 {
		t.Errorf("categorical axis: %v %v %v", numeric, labels, pos)
	}
	paths, err := Write(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 4 {
		t.Errorf("wrote %v, want report.html, report.csv, report.md, sweep.csv", paths)
	}
	h, _ := os.ReadFile(filepath.Join(d, "report.html"))
	for _, w := range []string{"TPS against threads", "p95 latency against rpl_semi_sync_master_wait_point", "interrupted"} {
		if !bytes.Contains(h, []byte(w)) {
			t.Errorf("sweep report lacks %q", w)
		}
	}
	// 2 bars + 2 sweep charts + 3 runs.
	if n := len(svgTag.FindAll(h, -1)); n != 7 {
		t.Errorf("%d charts, want 7", n)
	}
	recs, _ := csv.NewReader(bytes.NewReader(mustRead(t, filepath.Join(d, "sweep.csv")))).ReadAll()
	if len(recs) != len(pts)+1 || recs[5][2] != "4" {
		t.Errorf("sweep.csv: %v", recs)
	}
	os.WriteFile(filepath.Join(d, SweepFile), []byte(`[{"topology":"x","value":"1"}]`), 0o644)
	if _, err := Load(d); err == nil || !strings.Contains(err.Error(), "point 0: no axis") {
		t.Errorf("point without axis: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompare(t *testing.T) {
	a, err := Load(runDir(t, "qasync"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(runDir(t, "qsemi"))
	if err != nil {
		t.Fatal(err)
	}
	c := Compare(a, b)
	if len(c.Pairs) != 1 || c.Pairs[0].Name != "qasync / qsemi" {
		t.Fatalf("pairs %+v", c.Pairs)
	}
	atps, alat := summaryOf(t, runDir(t, "qasync"))
	btps, blat := summaryOf(t, runDir(t, "qsemi"))
	want := map[string]float64{"TPS": 100 * (btps - atps) / atps, "latency p99": 100 * (blat["p99"] - alat["p99"]) / alat["p99"]}
	for _, d := range c.Pairs[0].Metrics {
		if w, ok := want[d.Metric]; ok && (d.Change == nil || math.Abs(*d.Change-w) > 1e-9) {
			t.Errorf("%s change %v, want %v", d.Metric, fmtChange(d.Change), w)
		}
		if d.Metric == "TPS" && d.Verdict() != "worse" {
			t.Errorf("TPS fell by %.1f%%: verdict %q", *d.Change, d.Verdict())
		}
		if d.Metric == "max lag" && (d.Before == nil || d.After == nil) {
			t.Errorf("max lag missing: %v %v", d.Before, d.After)
		}
	}
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "TPS (1/s)") || !strings.Contains(text.String(), fmtChange(c.Pairs[0].Metrics[0].Change)+" worse") {
		t.Errorf("text:\n%s", text.String())
	}
	h, err := c.HTML(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(svgTag.FindAll(h, -1)); n != 1 {
		t.Errorf("compare HTML has %d charts", n)
	}

	// Scenario against scenario: paired by topology name; the unmatched are listed.
	s1, _ := Load(quick)
	s2, _ := Load(quick)
	s2.Runs = s2.Runs[:2]
	c = Compare(s1, s2)
	if len(c.Pairs) != 2 || strings.Join(c.OnlyBefore, ",") != "qsemi" || len(c.OnlyAfter) != 0 {
		t.Errorf("scenario compare: %d pairs, only before %v", len(c.Pairs), c.OnlyBefore)
	}
	for _, d := range c.Pairs[0].Metrics {
		if d.Metric == "max lag" && d.Before == nil && d.After == nil {
			continue // a single node: no replicas, no lag
		}
		if d.Change == nil || *d.Change != 0 || d.Verdict() != "same" {
			t.Errorf("identical runs: %s change %v %q", d.Metric, fmtChange(d.Change), d.Verdict())
		}
	}
}

// TestSweepGroupBaseline: in a sweep every cell is compared with the baseline topology's
// cell of the same axis values.
func TestSweepGroupBaseline(t *testing.T) {
	res := &Results{Kind: KindSweep}
	tps := map[string]float64{"a threads=1": 100, "a threads=2": 180, "b threads=1": 50, "b threads=2": 120}
	for _, top := range []string{"a", "b"} {
		for _, th := range []string{"1", "2"} {
			name := top + " threads=" + th
			res.Runs = append(res.Runs, &Run{Name: name, Topology: top, Cell: "threads=" + th,
				topology: map[string]any{"name": top, "kind": "async"}, Manifest: schema.Manifest{Extra: map[string]any{"baseline": "a", "axes": map[string]any{"topology": top, "threads": th}}},
				Summary: &schema.Summary{TPS: tps[name], LatencyMs: map[string]float64{"avg": 1, "p95": 2}}})
		}
	}
	base, why, err := res.Baseline("")
	if err != nil || base.Topology != "a" || why != "the scenario's baseline" {
		t.Fatalf("baseline %v %q %v", base, why, err)
	}
	for _, r := range res.Rows(base) {
		ref := tps["a "+r.Run.Cell]
		if r.TPSPct == nil || *r.TPSPct != 100*r.TPS/ref || r.IsBaseline != (r.Run.Topology == "a") {
			t.Errorf("%s: TPS vs base %s, want %.1f%% of %v; baseline %v", r.Run.Name, fmtPct(r.TPSPct), 100*r.TPS/ref, ref, r.IsBaseline)
		}
	}
	out, err := Render(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.HTML, []byte("Baseline: <b>a</b>")) {
		t.Error("sweep baseline not named by its topology")
	}
}

// TestKnobsAndOtherManifestKeys: the knobs section of a newer manifest is shown as a table
// with a warning where the server adjusted the value; unknown keys are shown as they are.
func TestKnobsAndOtherManifestKeys(t *testing.T) {
	d := copyTree(t, runDir(t, "qasync"))
	var m map[string]any
	json.Unmarshal(mustRead(t, filepath.Join(d, "manifest.json")), &m)
	m["knobs"] = map[string]any{"requested": []string{"innodb_io_capacity=150"}, "keep": false, "restored": true,
		"nodes": []map[string]any{{"node": "n1", "knob": "innodb_io_capacity", "variable": "innodb_io_capacity", "method": "runtime",
			"requested": "150", "before": "200", "effective": "100", "matches": false, "restored": "200"}}}
	m["future_section"] = map[string]any{"answer": 42}
	m["warnings"] = []string{"the cluster's links changed during the run: applied `--partition n3` at 3.1 s"}
	m["link_changes"] = []map[string]any{{"at_s": 3.1, "event": "applied", "request": "--partition n3"}}
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(d, "manifest.json"), b, 0o644)
	res, err := Load(d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := string(out.HTML)
	for _, w := range []string{"knob innodb_io_capacity on n1: requested 150, the server runs with 100", "<td class=\"l\">runtime</td>",
		"future_section (manifest.json)", "<td class=\"l\">answer</td><td class=\"l\">42</td>",
		"<b>warning:</b> the cluster&#39;s links changed during the run: applied `--partition n3` at 3.1 s",
		"link_changes (manifest.json)", "<td class=\"l\">--partition n3</td>"} {
		if !strings.Contains(h, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if strings.Contains(h, "knobs (manifest.json)") || strings.Contains(h, "warnings (manifest.json)") {
		t.Error("knobs or warnings shown raw as well as in their own place")
	}
	if !strings.Contains(string(out.Markdown), "- **warning:** the cluster's links changed during the run") {
		t.Errorf("report.md lacks the run's warning:\n%s", out.Markdown)
	}
}

// TestSummarySections: summary sections of other topologies (semisync, group, galera)
// are shown as tables: an object as field/value, a list of objects as rows.
func TestSummarySections(t *testing.T) {
	d := copyTree(t, runDir(t, "qsemi"))
	var m map[string]any
	json.Unmarshal(mustRead(t, filepath.Join(d, "summary.json")), &m)
	m["galera"] = []map[string]any{{"node": "n2", "fc_paused_avg": 0.25, "bf_aborts": 3}, {"node": "n1", "fc_paused_avg": 0.5}}
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(d, "summary.json"), b, 0o644)
	res, err := Load(d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := string(out.Markdown)
	for _, w := range []string{"galera (summary.json):", "| node | bf_aborts | fc_paused_avg |", "| n2 | 3 | 0.25 |", "| n1 | n/a | 0.5 |",
		"semisync (summary.json):", "| seconds_off | 0 |"} {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q", w)
		}
	}
}

// TestCompareNearZeroAndDifferences: a before value near zero gives the difference, not
// a percentage of almost nothing; compare lists what the two runs were set up with
// differently and notes CPU-bound runs and single repeats.
func TestCompareNearZeroAndDifferences(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	run := func(lag float64, nodes float64, links string, bound bool) *Run {
		r := &Run{Name: "a", topology: map[string]any{"name": "a", "kind": "async", "nodes": nodes}, Manifest: schema.Manifest{Links: map[string]any{}},
			Summary: &schema.Summary{TPS: 100, LatencyMs: map[string]float64{"avg": 1},
				Nodes: []schema.NodeLag{{Node: "n1", Role: "source", LagMaxS: f(0)}, {Node: "n2", Role: "replica", LagMaxS: f(lag)}},
				Hosts: []schema.HostSummary{{Host: "local", CPUBusyMean: f(0.95), CPUSaturated: bound}}}}
		if links != "" {
			r.Manifest.Links["impairment"] = json.RawMessage(`{"backend":"userspace","request":"` + links + `"}`)
		}
		return r
	}
	c := Compare(&Results{Runs: []*Run{run(0.001, 3, "", true)}}, &Results{Runs: []*Run{run(0.498, 2, "all=1ms", true)}})
	var out bytes.Buffer
	c.WriteText(&out)
	s := out.String()
	for _, want := range []string{"+0.497 s worse", "topology.nodes: 3 -> 2", "links: none -> all=1ms", "both runs were CPU-bound", "one run on each side"} {
		if !strings.Contains(s, want) {
			t.Errorf("compare lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "54") && strings.Contains(s, "%  worse") {
		t.Errorf("a percentage of a near-zero lag:\n%s", s)
	}
}

// TestReportLostAckedAndCaveats: report.md's comparison has a "lost acked commits"
// column when a run had a probe writer ("550 of 1424"), and a line in the run's section;
// ratios of CPU-bound cells without a CI are marked ⚠ with the reason; a run on another
// server than the baseline's is named; a single node's max lag is n/a.
func TestReportLostAckedAndCaveats(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	res := &Results{Kind: KindScenario, Name: "df"}
	for i, x := range []struct {
		name, kind, flavor, probe string
		tps                       float64
	}{{"dfasync", "async", "mariadb", `{"acknowledged":1424,"lost_acknowledged_commits":550,"checked_on":"n2"}`, 2040},
		{"dfsemi", "semisync", "mariadb", `{"acknowledged":869,"lost_acknowledged_commits":0,"checked_on":"n2"}`, 846},
		{"dfsingle", "single", "mysql", "", 900}} {
		s := &schema.Summary{TPS: x.tps, LatencyMs: map[string]float64{"avg": 1, "p95": 2},
			Nodes: []schema.NodeLag{{Node: "n1", Role: "source", LagMaxS: f(0)}},
			Hosts: []schema.HostSummary{{Host: "local", CPUBusyMean: f(0.97), CPUBusyMax: f(1), CPUSaturated: true}}}
		if x.probe != "" {
			s.Probe = &schema.ProbeSummary{}
			if err := json.Unmarshal([]byte(x.probe), s.Probe); err != nil {
				t.Fatal(err)
			}
			s.Nodes = append(s.Nodes, schema.NodeLag{Node: "n2", Role: "replica", LagMaxS: f(1.5)})
		}
		res.Runs = append(res.Runs, &Run{Name: x.name, Topology: x.name, Dir: "d" + strconv.Itoa(i),
			topology: map[string]any{"name": x.name, "kind": x.kind}, Manifest: schema.Manifest{Binaries: &schema.Binaries{Flavor: x.flavor, Version: "10.11.19"},
				Extra: map[string]any{"baseline": "dfasync"}}, Summary: s})
	}
	out, err := Render(res, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := string(out.Markdown)
	for _, want := range []string{"| lost acked commits |", "| 550 of 1424 |", "| 0 of 869 |", "| n/a | n/a |", "41.5% ⚠",
		"⚠ compares CPU-bound cells: the ratio measures the host, not the topology", "- lost acknowledged commits: 550 of 1424 (probe writer, checked on n2)",
		"Other server than the baseline dfasync (MariaDB 10.11.19): dfsingle (MySQL 10.11.19)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md[:min(len(md), 3000)])
		}
	}
	if h := string(out.HTML); !strings.Contains(h, "<th>lost acked commits</th>") || !strings.Contains(h, "<td>550 of 1424</td>") {
		t.Error("report.html lacks the lost acked commits column")
	}
}
