package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDestroyHostsUnreadableState: `destroy NAME --hosts` with a state file for NAME that
// cannot be read reports that error and removes nothing (no host is contacted): only a
// cluster the state directory does not have is destroyed by the hosts' records.
func TestDestroyHostsUnreadableState(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "clusters", "fxbrk1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := habench(t, state, "destroy", "fxbrk1", "--hosts", "127.0.0.1")
	if r.code == 0 || !strings.Contains(r.stderr, "destroy --hosts: cluster fxbrk1") || !strings.Contains(r.stderr, "nothing removed") ||
		strings.Contains(r.stdout+r.stderr, "127.0.0.1") {
		t.Errorf("exit %d, stdout %q, stderr %q: want the state file's error, nothing removed, no host contacted", r.code, r.stdout, r.stderr)
	}
}
