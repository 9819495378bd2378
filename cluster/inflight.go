package cluster

import (
	"slices"
	"sync"
)

// The sandboxes this process deployed and has not destroyed, so that a second Ctrl-C,
// which exits without cleanup, can say what it leaves and how to remove it.
var (
	inflightMu sync.Mutex
	inflight   = map[string]string{} // cluster name -> state directory
)

func deployedByUs(name, stateDir string) {
	inflightMu.Lock()
	inflight[name] = stateDir
	inflightMu.Unlock()
}

func destroyedByUs(name string) {
	inflightMu.Lock()
	delete(inflight, name)
	inflightMu.Unlock()
}

// LeftByThisProcess returns the names of the sandboxes this process deployed (or began
// to) and has not destroyed, sorted, and the state directory of the first.
func LeftByThisProcess() (names []string, stateDir string) {
	inflightMu.Lock()
	defer inflightMu.Unlock()
	for n := range inflight {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 0 {
		stateDir = inflight[names[0]]
	}
	return names, stateDir
}
