package cluster

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/habench/habench/internal/atomicfile"
)

// State files are written by more than one Cluster value at a time: a run's fault
// injection, its probe writer and the workers following the writer each load the cluster
// and record what they learnt (a new PID, the group's roles), and `habench fault` may run
// beside `habench run`. Every save therefore holds an exclusive flock on state.json.lock,
// re-reads the file, keeps what other writers changed in it since c was loaded or last
// saved (for every field c did not change itself: mergeNewer), and writes the result
// through its own temporary file, renamed over state.json.

// lockState takes the exclusive lock on c's state file; the returned function releases it.
// Errors: the lock file cannot be opened or locked (named).
func (c *Cluster) lockState() (func(), error) {
	unlock, err := lockFile(c.path+".lock", false)
	if err != nil {
		return nil, fmt.Errorf("locking cluster state %s: %w", c.path, err)
	}
	return unlock, nil
}

// save writes c to its state file atomically, under the state lock, after taking from
// the file what other writers changed there since c was loaded or last saved (mergeNewer;
// c then holds it too). A file that cannot be read (a cluster being deployed) is written
// from c alone. Errors name the file.
func (c *Cluster) save() error {
	if c.path == "" {
		return fmt.Errorf("cluster %s: no state file to write", c.Name)
	}
	unlock, err := c.lockState()
	if err != nil {
		return err
	}
	defer unlock()
	if disk, err := loadState(c.path); err == nil && c.base != nil {
		mergeNewer(c, c.base, disk)
	}
	if err := c.writeState(); err != nil {
		return err
	}
	c.base = c.snapshot()
	return nil
}

// snapshot is a deep copy of c's recorded fields (what its state file holds).
func (c *Cluster) snapshot() *Cluster {
	b, err := json.Marshal(c)
	cp := &Cluster{}
	if err != nil || json.Unmarshal(b, cp) != nil {
		return nil
	}
	return cp
}

// mergeNewer takes into c, from disk, every field another writer changed since base (what
// c's file held when c read or wrote it) and c did not change itself: each field of each
// node and aux member, the cluster's state, its group options (mode) and its proxy's
// spec (its health checks: RestartProxy). Fields c changed keep c's value (the last
// writer of a field wins).
func mergeNewer(c, base, disk *Cluster) {
	for _, n := range append(append([]*Node{}, c.Nodes...), c.Aux...) {
		b, d := base.member(n.Name), disk.member(n.Name)
		if b == nil || d == nil {
			continue
		}
		cv, bv, dv := reflect.ValueOf(n).Elem(), reflect.ValueOf(b).Elem(), reflect.ValueOf(d).Elem()
		for i := 0; i < cv.NumField(); i++ {
			if cv.Field(i).Equal(bv.Field(i)) && !dv.Field(i).Equal(bv.Field(i)) {
				cv.Field(i).Set(dv.Field(i))
			}
		}
	}
	if c.State == base.State {
		c.State = disk.State
	}
	if c.Spec.Group == base.Spec.Group {
		c.Spec.Group = disk.Spec.Group
	}
	if reflect.DeepEqual(c.Spec.Proxy, base.Spec.Proxy) { // restarted with other checks (RestartProxy)
		c.Spec.Proxy = disk.Spec.Proxy
	}
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
