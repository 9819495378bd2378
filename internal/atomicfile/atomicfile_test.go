package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriters: 8 writers replace one file 50 times each at once; every write
// succeeds, the file is one writer's content whole, and no temporary file is left.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			body := []byte(strings.Repeat(string(rune('a'+w)), 4096))
			for i := 0; i < 50; i++ {
				errs <- WriteFile(p, body, 0o600)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(p)
	if err != nil || len(b) != 4096 || strings.Count(string(b), string(b[:1])) != 4096 {
		t.Fatalf("file after concurrent writes: %d bytes, mixed or unreadable (%v)", len(b), err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm()&0o077 != 0 {
		t.Errorf("mode %v, want no group/other bits (0600)", st.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only f.json", len(entries))
	}
}

// TestFailedWriteKeepsOld: a write function that fails leaves the old file and no
// temporary file; a target in a missing directory is an error naming the target.
func TestFailedWriteKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(p, 0o644, func(w io.Writer) error {
		io.WriteString(w, "partial")
		return errors.New("disk full")
	})
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("failed write: %v, want an error naming %s", err, p)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("file after a failed write: %q, want old", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want 1", len(entries))
	}
	missing := filepath.Join(dir, "no", "f.txt")
	if err := WriteFile(missing, nil, 0o644); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("write into a missing directory: %v, want an error naming %s", err, missing)
	}
}
