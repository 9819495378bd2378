// Package atomicfile writes files whole or not at all, for results and state files that
// several writers (a run, its probe writer, a `habench fault` beside it) may replace at
// the same time. It is a thin layer over github.com/google/renameio/v2 that keeps the
// temporary file next to its target (so a crash never leaves one in $TMPDIR) and names
// the target in every error.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// WriteFile replaces path with data (mode perm, umask applied) atomically: readers see
// the old file or the new one, never a part; concurrent writers each use their own
// temporary file, and the last rename wins. The error names path.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces path atomically with what write writes (mode perm, umask applied); a
// write that returns an error leaves path as it was and no temporary file. The error
// names path.
func Write(path string, perm os.FileMode, write func(io.Writer) error) error {
	f, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)), renameio.WithPermissions(perm))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer f.Cleanup()
	if err := write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
