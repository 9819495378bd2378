package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveFailsNamingTheStateFile: a cluster state file that cannot be written (a
// directory where it should be) fails save with an error naming the file, and leaves no
// temporary file; the state is written whole when it can be.
func TestSaveFailsNamingTheStateFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r19-c.json")
	c := &Cluster{Name: "r19-c", path: p}
	if err := c.save(); err != nil {
		t.Fatal(err)
	}
	if got, err := loadState(p); err != nil || got.Name != "r19-c" {
		t.Fatalf("state written: %+v, %v", got, err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := c.save()
	if err == nil || !strings.Contains(err.Error(), "cluster state "+p) {
		t.Fatalf("save over a directory: %v, want an error naming %s", err, p)
	}
	if _, err := os.Stat(p + ".tmp"); err == nil {
		t.Error("save left its temporary file behind")
	}
}
