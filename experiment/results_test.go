package experiment

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/workload"
)

// TestResultsOnAFullDisk: on a file system that fills up (a 64 KiB tmpfs), the CSV and
// latency.hlog writers keep the first error, Close names the file and renames it
// NAME.incomplete (no truncated CSV or latency.hlog that looks whole), a JSON file that
// does not fit is not left truncated, and the files are not readable by others.
func TestResultsOnAFullDisk(t *testing.T) {
	prereq.Root(t, "mounting a tmpfs needs root")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	r, err := NewResults(filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() }) // before the umount, also when the test fails
	if err := r.WriteJSON("manifest.json", map[string]string{"small": "yes"}); err != nil {
		t.Fatal(err)
	}
	h := workload.NewHistogram()
	for v := int64(100); v < 100_000; v += 37 {
		h.RecordValue(v)
	}
	// Until latency.hlog and a CSV file failed, whichever first.
	for i := 0; i < 5000 && (r.latency.err == nil || r.intervals.err == nil && r.samples.err == nil); i++ {
		r.Interval(workload.Interval{Elapsed: time.Duration(i+1) * time.Second, Length: time.Second, TPS: 1234.5, Histogram: h, Recorded: h})
		r.Samples([]sampler.Sample{{Elapsed: time.Duration(i) * time.Second, Node: "n1", Metric: "lag_s", Value: 0.001}})
	}
	if r.Err() == nil || r.latency.err == nil {
		t.Fatalf("64 KiB never filled up: %v", r.Err())
	}
	err = r.Close()
	if err == nil || !strings.Contains(err.Error(), ".csv") || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), ".incomplete") {
		t.Errorf("Close on a full disk: %v; want the file named, the cause and the .incomplete name", err)
	}
	if !strings.Contains(err.Error(), "writing latency.hlog: ") || !strings.Contains(err.Error(), "kept as latency.hlog.incomplete") {
		t.Errorf("Close on a full disk: %v; want latency.hlog named and kept as latency.hlog.incomplete", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "run", "*.incomplete"))
	if len(left) == 0 {
		t.Errorf("no .incomplete file after the failed write")
	}
	big := strings.Repeat("x", 200<<10)
	if err := r.WriteFile("report.md", big); err == nil || !strings.Contains(err.Error(), "report.md") {
		t.Errorf("WriteFile of 200 KiB on a full disk: %v; want an error naming report.md", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run", "report.md")); !os.IsNotExist(err) {
		t.Errorf("a truncated report.md was left: %v", err)
	}
	if err := r.WriteJSON("manifest.json", map[string]string{"big": big}); err == nil {
		t.Error("a manifest.json too big for the disk was written")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run", "manifest.json")); !strings.Contains(string(b), `"small"`) {
		t.Errorf("the earlier manifest.json was lost: %q", b)
	}
	fi, _ := os.Stat(filepath.Join(dir, "run", "manifest.json"))
	di, _ := os.Stat(filepath.Join(dir, "run"))
	if fi.Mode().Perm()&0o007 != 0 || di.Mode().Perm()&0o007 != 0 {
		t.Errorf("results readable by others: dir %v, manifest %v", di.Mode(), fi.Mode())
	}
}

// TestLatencyLogLines: latency.hlog gets one line per interval (its Recorded histogram,
// not the in-flight waits of Histogram) and the run's tail; an empty tail of no length
// is left out, and a run without an interval still gets its whole measured part as one
// line.
func TestLatencyLogLines(t *testing.T) {
	started := time.Date(2026, 12, 6, 7, 0, 0, 250_000_000, time.UTC)
	rec, waits, tail := workload.NewHistogram(), workload.NewHistogram(), workload.NewHistogram()
	for v := int64(1000); v < 50_000; v += 100 {
		rec.RecordValue(v)
	}
	waits.Merge(rec)
	waits.RecordValue(1_500_000) // a transaction in flight for 1.5 s at the interval's end
	tail.RecordValue(2_000)
	read := func(t *testing.T, r *Results) *schema.LatencyLog {
		t.Helper()
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(r.Dir, schema.LatencyLogFile))
		if err != nil {
			t.Fatal(err)
		}
		log, err := schema.ReadLatencyLog(b)
		if err != nil {
			t.Fatal(err)
		}
		return log
	}
	r, err := NewResults(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.Interval(workload.Interval{Started: started, Elapsed: time.Second, Length: time.Second, Histogram: rec, Recorded: rec})
	r.Interval(workload.Interval{Started: started, Elapsed: 2 * time.Second, Length: time.Second, Histogram: waits, Recorded: rec, InFlight: 1})
	r.LatencyTail(&workload.Result{StartedAt: started, TotalTime: 2500 * time.Millisecond, TailFrom: 2 * time.Second, Tail: tail})
	log := read(t, r)
	if !log.Start.Equal(started) || len(log.Intervals) != 3 {
		t.Fatalf("start %v, %d lines; want %v and 2 intervals + the tail", log.Start, len(log.Intervals), started)
	}
	for i, want := range []*hdrhistogram.Histogram{rec, rec, tail} {
		if !log.Intervals[i].Histogram.Equals(want) {
			t.Errorf("line %d: %d values, max %d us; want %d, max %d", i+1, log.Intervals[i].Histogram.TotalCount(), log.Intervals[i].Histogram.Max(), want.TotalCount(), want.Max())
		}
	}
	if iv := log.Intervals[2]; iv.From != 2*time.Second || iv.Length != 500*time.Millisecond {
		t.Errorf("tail from %v for %v, want from 2 s for 500 ms", iv.From, iv.Length)
	}

	r, _ = NewResults(t.TempDir())
	r.Interval(workload.Interval{Started: started, Elapsed: time.Second, Length: time.Second, Histogram: rec, Recorded: rec})
	r.LatencyTail(&workload.Result{StartedAt: started, TotalTime: time.Second, TailFrom: time.Second + time.Microsecond, Tail: workload.NewHistogram()})
	if log := read(t, r); len(log.Intervals) != 1 {
		t.Errorf("an empty tail after the last interval: %d lines, want the interval's only", len(log.Intervals))
	}

	r, _ = NewResults(t.TempDir())
	r.LatencyTail(&workload.Result{StartedAt: started, TotalTime: 700 * time.Millisecond, Tail: tail})
	if log := read(t, r); len(log.Intervals) != 1 || log.Intervals[0].Length != 700*time.Millisecond || !log.Start.Equal(started) {
		t.Errorf("a run shorter than an interval: %+v, want one line of 700 ms", log)
	}
}
