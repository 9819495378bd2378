package cluster

// Node operations asked of the store (stop, kill, start a member), carried out by the
// cluster's provider (Provider.StopNode, KillNode, StartNode), and what a stop reports.

import (
	"context"
	"fmt"
	"time"

	"github.com/habench/habench/topology"
)

// DefaultStopGrace is how long StopNode waits for a server to shut down after SIGTERM
// before it kills it with SIGKILL (Store.StopGrace overrides it). 90 s: a loaded MySQL
// group primary needs 57-59 s for a clean shutdown (Group Replication's stop waits up to
// its fixed 50 s TRANSACTION_KILL_TIMEOUT for commits in flight, docs/topologies.md); a
// 60 s grace turned some of those into crashes.
const DefaultStopGrace = 90 * time.Second

// StopEscalatedError says that a clean stop was not one: the server did not exit within
// Grace of SIGTERM and was killed with SIGKILL (a crash as far as the server, its group
// and its clients are concerned). The node is down when it is returned.
type StopEscalatedError struct {
	Node  string
	PID   int
	Grace time.Duration
}

func (e *StopEscalatedError) Error() string {
	return fmt.Sprintf("node %s did not shut down within %g s of SIGTERM: killed with SIGKILL (a crash, not a clean stop)", e.Node, e.Grace.Seconds())
}

// StopNode shuts node's server down cleanly: for a sandbox SIGTERM, then SIGKILL if it
// has not exited after s.StopGrace (default DefaultStopGrace, 90 s); other providers as
// they do it (Provider.StopNode). Errors: *StopEscalatedError when it took SIGKILL (the
// node is down, but it crashed: callers must say so), *topology.FieldError for an unknown
// node, *UnsupportedError when c's provider does not stop nodes.
func (s *Store) StopNode(c *Cluster, node string) error {
	n, err := c.memberFor(OpStopNode, node)
	if err != nil {
		return err
	}
	return c.Provider().StopNode(context.Background(), s, c, n)
}

// KillNode kills node's server (a crash: SIGKILL for a sandbox). Error when the process
// is still there 10 s later (stuck in the kernel): the fault did not happen as recorded;
// *UnsupportedError when c's provider does not kill nodes.
func (s *Store) KillNode(c *Cluster, node string) error {
	n, err := c.memberFor(OpKillNode, node)
	if err != nil {
		return err
	}
	return c.Provider().KillNode(context.Background(), s, c, n)
}

// StartNode starts a stopped node again and waits until it accepts connections; a Galera
// node also until it has rejoined (Synced in a Primary component, after IST or SST), a Group
// Replication member until it is ONLINE in its group again (see rejoinGroup). When no other
// node runs, a group member bootstraps the group again and a Galera node bootstraps a new
// Primary component, the latter only if it stopped last (see galeraStartArgs).
// *UnsupportedError when c's provider does not start nodes.
func (s *Store) StartNode(ctx context.Context, c *Cluster, node string) error {
	n, err := c.memberFor(OpStartNode, node)
	if err != nil {
		return err
	}
	return c.Provider().StartNode(ctx, s, c, n)
}

// memberFor returns member node for op: the provider's refusal first (as before, a
// provider that cannot do op says so whatever the node), then *topology.FieldError for
// an unknown node.
func (c *Cluster) memberFor(op Op, node string) (*Node, error) {
	if err := c.Refuse(op, string(op)+" "+node); err != nil {
		return nil, err
	}
	n := c.Member(node)
	if n == nil {
		return nil, &topology.FieldError{Field: "node", Value: node, Reason: "no such node in " + c.Name}
	}
	return n, nil
}
