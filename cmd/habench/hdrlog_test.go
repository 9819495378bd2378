package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/schema"
)

// hdrJSDir holds the second reader of latency.hlog: hdr-histogram-js, installed from its
// package-lock.json by `make deps` (scripts/install-deps.sh), and readlog.js.
var hdrJSDir = filepath.Join("testdata", "hdrjs")

// jsHistogram is one histogram as hdr-histogram-js read it (readlog.js): times in ms
// since the epoch, values in microseconds.
type jsHistogram struct {
	StartMs float64          `json:"start_ms"`
	EndMs   float64          `json:"end_ms"`
	Count   int64            `json:"count"`
	Max     int64            `json:"max"`
	Pct     map[string]int64 `json:"pct"`
	AtRank  map[string]int64 `json:"at_rank"`
}

type jsRead struct {
	Files []struct {
		File      string        `json:"file"`
		BaseTimeS float64       `json:"base_time_s"`
		Intervals []jsHistogram `json:"intervals"`
		Total     jsHistogram   `json:"total"`
	} `json:"files"`
	Merged jsHistogram `json:"merged"`
}

// readWithHdrJS reads the logs with hdr-histogram-js under node (failing like a missing
// server when either is not installed). Bounded by 60 s.
func readWithHdrJS(t *testing.T, logs ...string) jsRead {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		prereq.Missing(t, "node missing: install with `make deps`")
	}
	if _, err := os.Stat(filepath.Join(hdrJSDir, "node_modules", "hdr-histogram-js", "package.json")); err != nil {
		prereq.Missing(t, "hdr-histogram-js missing in %s: install with `make deps` (npm ci there)", hdrJSDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(hdrJSDir, "readlog.js")}, logs...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node readlog.js: %v\n%s", err, errb.String())
	}
	var r jsRead
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("readlog.js output: %v\n%.500s", err, out.String())
	}
	if len(r.Files) != len(logs) {
		t.Fatalf("readlog.js read %d files of %d", len(r.Files), len(logs))
	}
	return r
}

// checkLatencyLogs reads the latency.hlog of each run directory with hdr-histogram-js,
// an implementation other than hdrhistogram-go, which wrote it, and finds what the run
// published from its own histograms: per interval, intervals.csv's transactions and
// p50/p95/p99 (and its end, on the log's BaseTime); per run, summary.json's transactions
// and waits and its p50/p95/p99; the logs merged across runs hold every run's
// transactions. hdrhistogram-go picks the value at the rank p/100*N rounded to the
// nearest, HdrHistogram's JS and Java round it up: readlog.js asks for the value at Go's
// rank (at_rank) besides its own (pct, logged). Published percentiles are clamped to the
// exact max (ns), which the histograms' values (us) are not.
func checkLatencyLogs(t *testing.T, runDirs []string) {
	t.Helper()
	var logs []string
	for _, d := range runDirs {
		logs = append(logs, filepath.Join(d, schema.LatencyLogFile))
	}
	js := readWithHdrJS(t, logs...)
	var all int64
	for i, d := range runDirs {
		f := js.Files[i]
		var sum schema.Summary
		if err := json.Unmarshal(mustReadFile(t, filepath.Join(d, schema.SummaryFile)), &sum); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(d)
		all += sum.Transactions
		if want := sum.Transactions + int64(sum.Waits); f.Total.Count != want || want == 0 {
			t.Errorf("%s: hdr-histogram-js counts %d in latency.hlog, summary.json %d transactions + %d waits", name, f.Total.Count, sum.Transactions, sum.Waits)
		}
		for _, p := range []string{"50", "95", "99"} {
			got := math.Min(float64(f.Total.AtRank[p])/1000, sum.LatencyMs["max"])
			if got != sum.LatencyMs["p"+p] {
				t.Errorf("%s: p%s %.3f ms read by hdr-histogram-js, summary.json %.3f ms", name, p, got, sum.LatencyMs["p"+p])
			}
		}
		t.Logf("%s: hdr-histogram-js read %d intervals, %d transactions, p50/p95/p99 %v us at Go's ranks, %v us by its own (summary.json: %d, %v ms)",
			name, len(f.Intervals), f.Total.Count, f.Total.AtRank, f.Total.Pct, sum.Transactions, sum.LatencyMs)
		checkLogIntervals(t, name, f.BaseTimeS, f.Intervals, mustReadFile(t, filepath.Join(d, schema.IntervalsFile)), sum.Waits == 0)
	}
	if js.Merged.Count != all || all == 0 {
		t.Errorf("the logs merged by hdr-histogram-js hold %d transactions, the runs %d", js.Merged.Count, all)
	}
}

// checkLogIntervals compares the log's lines as hdr-histogram-js read them with
// intervals.csv's rows: one line per row (and the tail after the last), each ending
// where its row does; its count is the row's transactions when the run gave up none
// (exact), and its percentiles the row's when the row's max shows no wait in flight (a
// row's percentiles count the waits of transactions in flight for 1 s or more, its line
// not).
func checkLogIntervals(t *testing.T, name string, baseS float64, ivs []jsHistogram, csvText []byte, exact bool) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(csvText)).ReadAll()
	if err != nil || len(recs) < 3 {
		t.Fatalf("%s: intervals.csv: %d rows, %v", name, len(recs), err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	rows := recs[1:]
	if len(ivs) != len(rows) && len(ivs) != len(rows)+1 {
		t.Fatalf("%s: %d lines in latency.hlog for %d rows of intervals.csv", name, len(ivs), len(rows))
	}
	num := func(row []string, c string) float64 {
		v, err := strconv.ParseFloat(row[col[c]], 64)
		if err != nil {
			t.Fatalf("%s: intervals.csv %s %q", name, c, row[col[c]])
		}
		return v
	}
	f3 := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for i, row := range rows {
		iv := ivs[i]
		if end := iv.EndMs/1000 - baseS; math.Abs(end-num(row, "elapsed_s")) > 0.0025 {
			t.Errorf("%s: line %d ends at %.3f s, its row at %s s", name, i+1, end, row[col["elapsed_s"]])
		}
		if n := int64(num(row, "transactions")); exact && iv.Count != n {
			t.Errorf("%s: line %d holds %d transactions, its row %d", name, i+1, iv.Count, n)
		}
		maxMs := num(row, "lat_max_ms")
		if maxMs >= 1000 {
			continue // waits in flight may be in the row's percentiles
		}
		for _, p := range []string{"50", "95", "99"} {
			if got := f3(math.Min(float64(iv.AtRank[p])/1000, maxMs)); got != row[col["lat_p"+p+"_ms"]] {
				t.Errorf("%s: line %d p%s %s ms read by hdr-histogram-js, intervals.csv %s ms", name, i+1, p, got, row[col["lat_p"+p+"_ms"]])
			}
		}
	}
}
