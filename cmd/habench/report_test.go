package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/topology"
)

// chromium returns the headless browser the report tests use (Debian's chromium
// package, installed by scripts/install-deps.sh), skipping or failing like a missing
// server.
func chromium(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		prereq.Missing(t, "chromium missing: install with `make deps`")
	}
	return p
}

// runChromium runs headless Chromium on a local file with everything that could reach a
// network off: no background services, every host name unresolvable, any request sent to
// a dead loopback port. Bounded by 60 s.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-default-apps", "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars", "--force-device-scale-factor=1"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

// svgBox is one <svg> element as Chromium laid it out (CSS pixels, page coordinates).
type svgBox struct {
	X, Y, W, H   float64
	Paths, Texts int
	Title        string
}

type layout struct {
	SVGs          []svgBox
	Width, Height int
}

// measureScript is appended to a copy of the page (the report itself has no script):
// it records every <svg>'s box and content after layout, into a <pre> that --dump-dom
// prints.
const measureScript = `<script>
(function () {
  var out = [], svgs = document.querySelectorAll('svg');
  for (var i = 0; i < svgs.length; i++) {
    var r = svgs[i].getBoundingClientRect();
    out.push({X: r.left + window.scrollX, Y: r.top + window.scrollY, W: r.width, H: r.height,
      Paths: svgs[i].querySelectorAll('path').length, Texts: svgs[i].querySelectorAll('text').length,
      Title: svgs[i].parentElement.getAttribute('title') || ''});
  }
  var pre = document.createElement('pre');
  pre.id = 'hb-layout';
  pre.textContent = JSON.stringify({SVGs: out, Width: document.documentElement.scrollWidth, Height: document.documentElement.scrollHeight});
  document.body.appendChild(pre);
})();
</script>`

var layoutPre = regexp.MustCompile(`(?s)<pre id="hb-layout">(.*?)</pre>`)

// checkRendered loads page in Chromium, checks it has want <svg> charts laid out with a
// real size and drawn content, takes a screenshot of the whole page, and checks each
// chart's region of the screenshot is not blank (saving it as <prefix>-chart-N.png in
// shots). It returns the layout.
func checkRendered(t *testing.T, bin, page string, want int, shots, prefix string) layout {
	t.Helper()
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(src, []byte("<script")) {
		t.Errorf("%s has a script: the report must be static", page)
	}
	probe := filepath.Join(t.TempDir(), "probe.html")
	os.WriteFile(probe, bytes.Replace(src, []byte("</body>"), []byte(measureScript+"</body>"), 1), 0o644)
	dom := runChromium(t, bin, "--window-size=1280,1000", "--dump-dom", "file://"+probe)
	m := layoutPre.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("%s: no layout in Chromium's DOM (%d bytes)", page, len(dom))
	}
	var l layout
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &l); err != nil {
		t.Fatalf("layout: %v", err)
	}
	if len(l.SVGs) != want {
		t.Fatalf("%s: Chromium laid out %d <svg> charts, want %d", page, len(l.SVGs), want)
	}
	for i, s := range l.SVGs {
		if s.W < 300 || s.H < 150 || s.X < 0 || s.X+s.W > 1280 || s.Paths < 10 || s.Texts < 5 {
			t.Errorf("chart %d %q: %.0fx%.0f px at (%.0f,%.0f), %d paths, %d texts", i, s.Title, s.W, s.H, s.X, s.Y, s.Paths, s.Texts)
		}
	}
	// Screenshot of the whole page (the original, without the probe script).
	shot := filepath.Join(shots, prefix+"-page.png")
	runChromium(t, bin, fmt.Sprintf("--window-size=1280,%d", l.Height), "--screenshot="+shot, "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	type subImager interface {
		SubImage(r image.Rectangle) image.Image
	}
	for i, s := range l.SVGs {
		r := image.Rect(int(s.X), int(s.Y), int(s.X+s.W), int(s.Y+s.H)).Intersect(img.Bounds())
		if r.Dy() < int(s.H)-1 {
			t.Errorf("chart %d is outside the screenshot %v: %v", i, img.Bounds(), r)
			continue
		}
		// Ink: anything not near-white; colour: a saturated pixel (lines, bars).
		var ink, colour int
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				cr, cg, cb, _ := img.At(x, y).RGBA()
				hi, lo := max(cr, cg, cb)>>8, min(cr, cg, cb)>>8
				if lo < 235 {
					ink++
				}
				if hi-lo > 80 {
					colour++
				}
			}
		}
		area := r.Dx() * r.Dy()
		if ink < area/100 || colour < 100 {
			t.Errorf("chart %d %q renders blank: %d of %d pixels inked, %d coloured", i, s.Title, ink, area, colour)
		}
		crop := filepath.Join(shots, fmt.Sprintf("%s-chart-%d.png", prefix, i+1))
		if out, err := os.Create(crop); err == nil {
			png.Encode(out, img.(subImager).SubImage(r))
			out.Close()
		}
	}
	return l
}

// TestReportInChromium: a short real scenario (single primary and 3-node async, MariaDB)
// writes report.html, report.md and report.csv; Chromium renders the HTML with the
// comparison bars and each topology's time series and latency heatmap as real,
// non-blank charts. Each run's latency.hlog is read back by hdr-histogram-js
// (checkLatencyLogs). `habench
// report --baseline` re-renders it, and `habench compare` writes a before/after page.
// Screenshots go to a temporary directory removed with the test, or to
// $HABENCH_REPORT_SHOTS/<time>/, kept, when that is set (logged).
func TestReportInChromium(t *testing.T) {
	t.Parallel()
	testenv.Installation(t, topology.MariaDB)
	bin := chromium(t)
	state := stateDir(t)
	single, async := testenv.Name(t, "rps"), testenv.Name(t, "rpa")
	f := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(f, []byte(`name: rpreport
topologies:
  - {name: `+single+`, kind: single, flavor: mariadb}
  - {name: `+async+`, kind: async, nodes: 3, flavor: mariadb}
workload:
  test: oltp_read_write
  options: {tables: 1, table-size: 1000, threads: 2, rate: 100, time: 6, report-interval: 1}
`), 0o644)
	results := t.TempDir()
	r := habench(t, state, "run", f, "--results", results)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	noClusters(t, state, single, async)
	dirs, _ := filepath.Glob(filepath.Join(results, "*-rpreport"))
	if len(dirs) != 1 {
		t.Fatalf("scenario directory: %v", dirs)
	}
	dir := dirs[0]
	if !strings.Contains(r.stdout, "report: "+filepath.Join(dir, "report.html")) {
		t.Errorf("run does not print the report's path:\n%s", r.stdout)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "*-rp*", "report.html"))
	if len(runs) != 2 {
		t.Errorf("each run's report.html: %v", runs)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "| **"+single+"** (baseline) | single | mariadb |") || !strings.Contains(string(md), "the single primary, by default") {
		t.Errorf("report.md lacks the baseline row:\n%s", md)
	}
	recs, err := csv.NewReader(bytes.NewReader(mustReadFile(t, filepath.Join(dir, "report.csv")))).ReadAll()
	if err != nil || len(recs) != 3 || recs[1][0] != single || recs[2][0] != async {
		t.Errorf("report.csv: %v %v", recs, err)
	}

	shots := t.TempDir()
	if keep := os.Getenv("HABENCH_REPORT_SHOTS"); keep != "" {
		shots = filepath.Join(keep, time.Now().Format("20060102-150405"))
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Each run's latency.hlog read back by hdr-histogram-js: the same counts and
	// percentiles as the run published, merged across the two runs.
	rdirs, _ := filepath.Glob(filepath.Join(dir, "*-rp*"))
	checkLatencyLogs(t, rdirs)

	page := filepath.Join(dir, "report.html")
	// 2 comparison bar charts + per topology a time-series chart and a latency heatmap.
	checkRendered(t, bin, page, 6, shots, "scenario")
	h := mustReadFile(t, page)
	if n := bytes.Count(h, []byte("latency heatmap (transactions per second by latency)")); n != 2 {
		t.Errorf("report.html has %d latency heatmaps, want one per run", n)
	}
	// The async topology's chart has every node's lag line and the replicas' backlog.
	for _, w := range []string{">n1</text>", ">n2</text>", ">n3</text>", "visibility lag per node", "backlog and queues per node"} {
		if !bytes.Contains(h, []byte(w)) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	os.WriteFile(filepath.Join(shots, "report.html"), h, 0o644)
	for _, d := range rdirs { // for other HdrHistogram tools
		os.WriteFile(filepath.Join(shots, filepath.Base(d)+"-latency.hlog"), mustReadFile(t, filepath.Join(d, "latency.hlog")), 0o644)
	}

	// Re-render against the async topology; an unknown baseline is bad input.
	rr := habench(t, state, "report", dir, "--baseline", async)
	if rr.code != 0 || !strings.Contains(rr.stdout, filepath.Join(dir, "report.md")) {
		t.Fatalf("report --baseline: exit %d\n%s\n%s", rr.code, rr.stdout, rr.stderr)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "report.md")); !strings.Contains(string(md), "| **"+async+"** (baseline)") || !strings.Contains(string(md), "chosen with --baseline") {
		t.Errorf("re-rendered report.md has not the chosen baseline:\n%s", md)
	}
	if rr := habench(t, state, "report", dir, "--baseline", "nosuch"); rr.code != 2 || !strings.Contains(rr.stderr, `--baseline "nosuch"`) {
		t.Errorf("unknown baseline: exit %d %s", rr.code, rr.stderr)
	}
	if rr := habench(t, state, "report", t.TempDir()); rr.code != 2 {
		t.Errorf("not a results directory: exit %d %s", rr.code, rr.stderr)
	}

	// Before/after of the two runs.
	cmpHTML := filepath.Join(shots, "compare.html")
	cr := habench(t, state, "compare", rdirs[0], rdirs[1], "--html", cmpHTML)
	if cr.code != 0 || !strings.Contains(cr.stdout, "TPS (1/s)") || !strings.Contains(cr.stdout, "max lag (s)") {
		t.Fatalf("compare: exit %d\n%s\n%s", cr.code, cr.stdout, cr.stderr)
	}
	checkRendered(t, bin, cmpHTML, 1, shots, "compare")
	t.Logf("screenshots: %s (scenario-page.png, scenario-chart-1..6.png, compare-page.png, compare-chart-1.png; report.html, compare.html, each run's latency.hlog)", shots)
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReportRerendersRunMarkdown: `habench report RUN_DIR` renders the run's report.md
// again (from manifest.json and summary.json), with report.html and report.csv.
func TestReportRerendersRunMarkdown(t *testing.T) {
	src := filepath.Join("..", "..", "report", "testdata", "quick", "20261129-220411-qsemi")
	d := t.TempDir()
	for _, f := range []string{"manifest.json", "summary.json", "intervals.csv", "samples.csv"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(d, "report.md"), []byte("stale\n"), 0o644)
	r := habench(t, t.TempDir(), "report", d)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []string{"report.html", "report.csv", "report.md"} {
		if !strings.Contains(r.stdout, filepath.Join(d, f)) {
			t.Errorf("stdout does not list %s:\n%s", f, r.stdout)
		}
	}
	md, _ := os.ReadFile(filepath.Join(d, "report.md"))
	if !strings.HasPrefix(string(md), "# oltp_read_write on qsemi (semisync") || !strings.Contains(string(md), "## Throughput and latency") {
		t.Errorf("report.md not rendered again:\n%.400s", md)
	}
}
