package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"github.com/habench/habench/schema"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/workload"
)

// TestRateResultsFiles runs a --rate the server cannot sustain through Bench against a
// real server (no cluster) and reads the results back: summary.json's rate section says
// the target was missed, the manifest (and so report.md) carries the WARNING, and
// intervals.csv's queue_length grows.
func TestRateResultsFiles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server test skipped in -short mode")
	}
	s := testserver.StartMariaDB(t)
	tg := workload.Target{Endpoints: []workload.Endpoint{{Name: "n1", Host: s.Host, Port: s.Port}}, User: "root", DB: "sbtest"}
	wl, err := workload.Lookup("oltp_read_write")
	if err != nil {
		t.Fatal(err)
	}
	o := workload.DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.Time, o.Rate, o.ReportInterval = 1, 1000, 1, 3*time.Second, 4000, time.Second
	o.ExtraPercentiles = []float64{99.9}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := wl.Prepare(ctx, tg, o, nil); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	b := &Bench{Workload: wl, Options: o, Target: tg, ResultsDir: t.TempDir(), Stdout: &out}
	res, err := b.Run(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(res.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var sum struct {
		LatencyMs map[string]float64  `json:"latency_ms"`
		Rate      *schema.RateSummary `json:"rate"`
	}
	if err := json.Unmarshal(read("summary.json"), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Rate == nil || sum.Rate.Met || sum.Rate.Target != 4000 || sum.Rate.Backlog < 1000 || sum.Rate.Warning == "" ||
		sum.Rate.ServiceMs["p95"] <= 0 || sum.Rate.ServiceMs["p95"] >= sum.LatencyMs["p95"] {
		t.Errorf("summary.json rate %+v, latency %v", sum.Rate, sum.LatencyMs)
	}
	if _, ok := sum.LatencyMs["p99.9"]; !ok {
		t.Errorf("latency_ms lacks p99.9: %v", sum.LatencyMs)
	}
	if man := string(read("manifest.json")); !strings.Contains(man, "the target rate was not met") {
		t.Errorf("manifest.json lacks the rate warning")
	}
	if rep := string(read("report.md")); !strings.Contains(rep, "**WARNING: the target rate was not met") {
		t.Errorf("report.md lacks the rate warning at the top:\n%.600s", rep)
	}
	rows, err := csv.NewReader(bytes.NewReader(read("intervals.csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, c := range rows[0] {
		if c == "queue_length" {
			col = i
		}
	}
	prev := -1
	for _, r := range rows[1:] {
		q, _ := strconv.Atoi(r[col])
		if q <= prev {
			t.Errorf("intervals.csv queue_length %d after %d, want growing:\n%v", q, prev, rows)
		}
		prev = q
	}
	if len(rows) < 3 || col < 0 {
		t.Errorf("intervals.csv: %v", rows)
	}
	if !strings.Contains(out.String(), "WARNING: the target rate was not met") {
		t.Errorf("stdout lacks the warning:\n%s", out.String())
	}
}
