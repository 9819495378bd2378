package experiment

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testenv/prereq"

	"github.com/habench/habench/sampler"
	"github.com/habench/habench/workload"
)

// TestResultsOnAFullDisk: on a file system that fills up (a 64 KiB tmpfs), the CSV
// writer keeps the first error, Close names the file and renames it NAME.incomplete (no
// truncated CSV that looks whole), a JSON file that does not fit is not left truncated,
// and the files are not readable by others.
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
	if err := r.WriteJSON("manifest.json", map[string]string{"small": "yes"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5000 && r.Err() == nil; i++ {
		r.Interval(workload.Interval{Elapsed: time.Duration(i) * time.Second, TPS: 1234.5})
		r.Samples([]sampler.Sample{{Elapsed: time.Duration(i) * time.Second, Node: "n1", Metric: "lag_s", Value: 0.001}})
	}
	if r.Err() == nil {
		t.Fatal("64 KiB never filled up")
	}
	err = r.Close()
	if err == nil || !strings.Contains(err.Error(), ".csv") || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), ".incomplete") {
		t.Errorf("Close on a full disk: %v; want the file named, the cause and the .incomplete name", err)
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
