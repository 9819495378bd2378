package clients

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckCopyDir: a client removes only a directory /…/habench-client-<something>
// (clean and absolute) that holds the program it runs.
func TestCheckCopyDir(t *testing.T) {
	for dir, ok := range map[string]bool{
		"/tmp/habench-client-AbC123": true, "/var/tmp/habench-client-1": true,
		"/": false, "/tmp": false, "/tmp/habench-client-": false, "tmp/habench-client-a": false,
		"/tmp/habench-client-a/": false, "/tmp/x/../habench-client-a": false, "/tmp/habench-client-a/..": false,
		"/home/u": false, "/tmp/other-habench-client-a": false,
	} {
		if err := CheckCopyDir(dir); (err == nil) != ok {
			t.Errorf("CheckCopyDir(%q): %v, want ok %v", dir, err, ok)
		}
	}
	// A copy directory that does not hold this program is not removed.
	dir := filepath.Join(t.TempDir(), CopyDirPrefix+"x")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := RemoveOwnDir(dir); err == nil {
		t.Errorf("RemoveOwnDir(%q): nil, want an error (this test does not run from it)", dir)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("RemoveOwnDir removed %q: %v", dir, err)
	}
	if err := RemoveOwnDir(""); err != nil {
		t.Errorf("RemoveOwnDir(\"\"): %v", err)
	}
}
