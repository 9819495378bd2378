package cluster

import (
	"fmt"
	"syscall"
	"time"
)

// stopProcess shuts node n's server down: SIGTERM, then SIGKILL after grace. Errors:
// *StopEscalatedError when SIGKILL was needed (the server is gone), else an error when
// the process survived SIGKILL for 5 s.
func stopProcess(n *Node, grace time.Duration) error {
	if !ourProcess(n.PID, n.StartTicks) {
		return nil
	}
	if signalAndWait(n.PID, n.StartTicks, syscall.SIGTERM, grace) {
		return nil
	}
	if signalAndWait(n.PID, n.StartTicks, syscall.SIGKILL, 5*time.Second) {
		return &StopEscalatedError{Node: n.Name, PID: n.PID, Grace: grace}
	}
	return fmt.Errorf("node %s: pid %d survived SIGTERM and SIGKILL", n.Name, n.PID)
}

// Running reports whether node n's recorded server process is alive.
func (n *Node) Running() bool { return ourProcess(n.PID, n.StartTicks) }
