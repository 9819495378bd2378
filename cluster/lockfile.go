package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes the lock file name in c's directory (an exclusive flock, which dies with
// its process: a held lock always means a live holder), waiting for it unless nonBlock;
// with nonBlock a lock held elsewhere returns (nil, nil). The returned function releases
// it. Errors: the file cannot be opened or locked (named).
func (c *Cluster) Lock(name string, nonBlock bool) (func(), error) {
	return lockFile(filepath.Join(c.Dir(), name), nonBlock)
}

// lockFile takes an exclusive flock on path (created when missing), as Lock does: the
// one lock of the house (state files, the machine-wide allocation lock, snapshots, links).
func lockFile(path string, nonBlock bool) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if nonBlock {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if nonBlock && errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
