package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFailsNamingTheFile: a report or sweep_points.json that cannot be written (a
// directory where the file should be) is a *WriteError naming the file.
func TestWriteFailsNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, SweepFile, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteSweepPoints(dir, []SweepPoint{{Topology: "a", Axis: "threads", Value: "1"}})
	var we *WriteError
	if !errors.As(err, &we) || we.Path != filepath.Join(dir, SweepFile) || !strings.Contains(err.Error(), SweepFile) {
		t.Errorf("WriteSweepPoints over a directory: %v, want a *WriteError naming %s", err, SweepFile)
	}

	run := copyRun(t)
	if err := os.MkdirAll(filepath.Join(run, "report.csv", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths, err := Write(run, Options{})
	if !errors.As(err, &we) || we.Path != filepath.Join(run, "report.csv") {
		t.Fatalf("Write with report.csv a directory: %v, want a *WriteError naming report.csv", err)
	}
	if len(paths) != 1 || filepath.Base(paths[0]) != "report.html" {
		t.Errorf("paths written before the failure: %v, want report.html", paths)
	}
}

// copyRun copies one run directory of testdata/quick into a temporary directory.
func copyRun(t *testing.T) string {
	t.Helper()
	src := "testdata/quick/20261129-220324-qsingle"
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}
