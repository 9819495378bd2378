package cluster

import (
	"context"
	"fmt"
	"strconv"
	"syscall"

	"github.com/habench/habench/topology"
)

// OpSignalNode sends a signal to a node's server process (SIGSTOP, SIGCONT: a pause).
const OpSignalNode Op = "signal node"

// Signals are the signals NodeSignaler sends, by name.
var Signals = map[string]syscall.Signal{"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT}

// NodeSignaler is what a provider that offers OpSignalNode implements: SignalNode sends
// sig (a key of Signals: "STOP", "CONT") to node n's server process, on this machine or
// on its host; an error when the process is not the one habench recorded (it is not
// signalled then) or the signal could not be sent.
type NodeSignaler interface {
	SignalNode(ctx context.Context, s *Store, c *Cluster, n *Node, sig string) error
}

// SignalNode sends sig ("STOP", "CONT") to node n's server through c's provider: the
// provider's *UnsupportedError when it does not offer OpSignalNode, a *topology.FieldError
// on "signal" for another name.
func (c *Cluster) SignalNode(ctx context.Context, s *Store, n *Node, sig string) error {
	if err := c.Refuse(OpSignalNode, "signal node "+n.Name); err != nil {
		return err
	}
	p, ok := c.Provider().(NodeSignaler)
	if !ok {
		return &UnsupportedError{Cluster: c.Name, Provider: providerNoun(c.Provider().Name()), Op: OpSignalNode, What: "signal node " + n.Name, Why: "it cannot signal its servers' processes"}
	}
	if _, ok := Signals[sig]; !ok {
		return &topology.FieldError{Field: "signal", Value: sig, Reason: "node " + n.Name + ": want STOP or CONT"}
	}
	return p.SignalNode(ctx, s, c, n, sig)
}

// SignalNode signals the local process recorded for n (the sandbox's servers run on this
// machine, in their namespaces or not).
func (sandboxProvider) SignalNode(_ context.Context, _ *Store, _ *Cluster, n *Node, sig string) error {
	if !ourProcess(n.PID, n.StartTicks) {
		return fmt.Errorf("node %s: pid %d is not running: nothing to signal", n.Name, n.PID)
	}
	if err := syscall.Kill(n.PID, Signals[sig]); err != nil {
		return fmt.Errorf("node %s: SIG%s to pid %d: %w", n.Name, sig, n.PID, err)
	}
	return nil
}

// SignalNode signals the process recorded for n on its host over SSH (kill -s SIG).
func (hostsProvider) SignalNode(ctx context.Context, _ *Store, c *Cluster, n *Node, sig string) error {
	h := c.hostsSSH(n)
	if h == nil {
		return fmt.Errorf("node %s: no host", n.Name)
	}
	if !hostProcessOurs(ctx, h, n.PID, n.StartTicks) {
		return fmt.Errorf("node %s: pid %d is not running on %s: nothing to signal", n.Name, n.PID, h.Name())
	}
	if _, err := shRun(ctx, h, `kill -s "$1" "$2"`, sig, strconv.Itoa(n.PID)); err != nil {
		return fmt.Errorf("node %s: SIG%s to pid %d on %s: %w", n.Name, sig, n.PID, h.Name(), err)
	}
	return nil
}
