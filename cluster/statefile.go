package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"github.com/habench/habench/internal/atomicfile"
)

// State files are written by more than one Cluster value at a time: a run's fault
// injection, its probe writer and the workers following the writer each load the cluster
// and record what they learnt (a new PID, the group's roles), and `habench fault` may run
// beside `habench run`. Every write therefore holds an exclusive flock on state.json.lock
// and goes through its own temporary file, renamed over state.json.

// lockState takes the exclusive lock on c's state file; the returned function releases it.
// Errors: the lock file cannot be opened or locked (named).
func (c *Cluster) lockState() (func(), error) {
	lp := c.path + ".lock"
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking cluster state %s: %w", c.path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking cluster state %s: %w", lp, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// save writes the whole of c to its state file atomically (under the state lock).
// Errors name the file.
func (c *Cluster) save() error {
	unlock, err := c.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	return c.writeState()
}

// saveRoles records c's node roles and group mode in the state file without overwriting
// what other writers recorded since c was loaded (a restarted node's PID): under the
// state lock it re-reads the file, takes the roles from c and writes it. c itself keeps
// what it holds (a node it has just started keeps its new PID until its own save). A
// state file that cannot be read is written whole from c.
func (c *Cluster) saveRoles() error {
	unlock, err := c.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	disk, err := loadState(c.path)
	if err != nil {
		return c.writeState()
	}
	for _, dn := range append(append([]*Node{}, disk.Nodes...), disk.Aux...) {
		if n := c.member(dn.Name); n != nil {
			dn.Role = n.Role
		}
	}
	disk.Spec.Group = c.Spec.Group
	return disk.writeState()
}

// member returns the node or aux member called name, or nil.
func (c *Cluster) member(name string) *Node {
	if n := c.Node(name); n != nil {
		return n
	}
	for _, a := range c.Aux {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// writeState writes c to its state file through a temporary file of its own in the same
// directory; the caller holds the state lock.
func (c *Cluster) writeState() error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(c.path, b, 0o600); err != nil {
		return fmt.Errorf("cluster state: %w", err)
	}
	return nil
}
