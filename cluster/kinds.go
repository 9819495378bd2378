package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"reflect"
	"slices"

	"github.com/habench/habench/topology"
)

// KindOps is the behaviour of one topology kind in a sandbox and on a deployed cluster:
// the counterpart of its topology.KindDef. Each kind registers its KindOps from its own
// file in this package (replication.go for single, async and semisync, group.go,
// galera.go, ...). Every func may be nil: nil takes the replication behaviour described on
// the field, so a kind sets only what differs. A kind with a Base (topology.KindDef.Base)
// and no KindOps of its own uses its base's.
type KindOps struct {
	// CheckInstallation says why the installation cannot deploy the kind (galera: the
	// provider library and SST tools); nil: any installation can.
	CheckInstallation func(bins *Binaries, spec topology.Spec) error
	// ExtraPorts are the loopback ports a node listening on sqlPort needs besides it
	// (group: its group communication port), checked free before a loopback deploy.
	ExtraPorts func(spec topology.Spec, sqlPort int) []int
	// PrepareNode writes the kind's own files for n before its first start (galera: its
	// bin directory with the SST helpers).
	PrepareNode func(c *Cluster, n *Node) error
	// Command is the process that runs n's server with args (galera: with /proc mounted
	// and the SST PATH); nil: the installation's server binary in n's namespace.
	Command func(c *Cluster, n *Node, args []string) *exec.Cmd
	// StartArgs are the extra server arguments when a stopped node starts again (galera:
	// --wsrep-new-cluster when it must bootstrap); nil: none.
	StartArgs func(c *Cluster, n *Node) ([]string, error)
	// Rejoin runs after a stopped node's server accepts connections again, before the
	// state is saved (group: START GROUP_REPLICATION); nil: nothing.
	Rejoin func(ctx context.Context, s *Store, c *Cluster, n *Node) error
	// Rejoined waits, after the state is saved, until a restarted node is part of the
	// topology again (galera: Synced in the Primary component); nil: no wait.
	Rejoined func(ctx context.Context, s *Store, c *Cluster, n *Node) error
	// AfterPlan runs once the bootstrap plan is done (group: record the roles the members
	// report, check the flow-control component); nil: nothing.
	AfterPlan func(ctx context.Context, c *Cluster) error
	// Ready waits until n is part of the topology again (WaitTopologyReady); nil:
	// ReplicationReady.
	Ready func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) error
	// Health is n's one-line health for status (Health); nil: ReplicationHealth.
	Health func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) string
	// Stuck says why n cannot catch up by itself ("" when it can), and whether it is still
	// settling (a member RECOVERING): the convergence check stops waiting for a stuck node
	// and keeps waiting for a settling one; nil: ReplicationStuck.
	Stuck func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) (stuck string, settling bool)
	// RefreshRoles updates the recorded roles from the servers before the writer is
	// resolved (group: elections); nil: the recorded roles stand.
	RefreshRoles func(ctx context.Context, c *Cluster) error
	// RebuildBy is how a node of the kind is rebuilt from nothing (the rebuild fault,
	// RebuildWhy): RebuildSST (galera: emptied, it rejoins by state transfer) or
	// RebuildClone (group: CLONE INSTANCE from a member, CloneNode); "": not offered.
	RebuildBy RebuildMethod
	// WriterNow is the node that takes writes now, without changing the state file (group:
	// the member the others call PRIMARY); nil or a nil result: the recorded writer.
	WriterNow func(ctx context.Context, c *Cluster) *Node
	// Live says, over db (an admin pool to n), whether n takes a client's writes as part
	// of its topology now, and why not ("" when it does): a Galera node Synced and ready
	// in the Primary component, a group member ONLINE in a view with a majority. Asked
	// by a run whose workers fail over between nodes that all take writes (NodeLive);
	// nil: the kind has no such view (its clients follow the writer instead).
	Live func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) (why string)
}

var kindOps = map[topology.Kind]*KindOps{}

// kindOpsErrs are refused registrations (RegistrationErrors).
var kindOpsErrs []string

// RegisterKindOps adds the behaviour of kinds (one KindOps may serve several, like
// single, async and semisync's replication). A kind registered twice is refused and
// recorded in RegistrationErrors.
func RegisterKindOps(ops KindOps, kinds ...topology.Kind) {
	for _, k := range kinds {
		if _, dup := kindOps[k]; dup {
			kindOpsErrs = append(kindOpsErrs, fmt.Sprintf("kind %q: KindOps registered twice", k))
			continue
		}
		o := ops
		kindOps[k] = &o
	}
}

// RegistrationErrors lists refused RegisterKindOps calls (a unit test keeps it empty).
func RegistrationErrors() []string { return slices.Clone(kindOpsErrs) }

// OpsOf returns the KindOps of kind k: its own, with every nil field taken from its
// base's (topology.KindDef.Base, transitively), so a kind extending another sets only
// what differs, whatever order the files initialise in; empty ones (replication
// behaviour) for a kind nobody registered. Never nil.
func OpsOf(k topology.Kind) *KindOps {
	out := &KindOps{}
	for i := 0; k != "" && i < 8; i++ {
		if o, ok := kindOps[k]; ok {
			fillNil(out, o)
		}
		k = topology.KindOf(k).Base
	}
	return out
}

// fillNil sets every unset field of dst (a nil func, an empty value) to src's.
func fillNil(dst, src *KindOps) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := 0; i < d.NumField(); i++ {
		if d.Field(i).IsZero() {
			d.Field(i).Set(s.Field(i))
		}
	}
}

// ops is OpsOf the cluster's kind.
func (c *Cluster) ops() *KindOps { return OpsOf(c.Spec.Kind) }

// serverCommand is the process that runs n's server with args.
func (c *Cluster) serverCommand(n *Node, args []string) *exec.Cmd {
	if f := c.ops().Command; f != nil {
		return f(c, n, args)
	}
	return c.Binaries.Command(n.Netns, c.Binaries.Server, args...)
}

// nodeReady is KindOps.Ready of c's kind for n.
func (c *Cluster) nodeReady(ctx context.Context, n *Node, db *sql.DB) error {
	if f := c.ops().Ready; f != nil {
		return f(ctx, c, n, db)
	}
	return ReplicationReady(ctx, c, n, db)
}

// NodeLive is KindOps.Live of c's kind for node n over db (an admin pool to n): "" when n
// takes writes as part of its topology now, else why not (the error of a query that
// failed: a server down or hung until ctx ended). offered is false for a kind without
// Live (why is then "").
func (c *Cluster) NodeLive(ctx context.Context, n *Node, db *sql.DB) (why string, offered bool) {
	f := c.ops().Live
	if f == nil {
		return "", false
	}
	return f(ctx, c, n, db), true
}

// OffersLive reports whether c's kind says which of its nodes are live (KindOps.Live).
func (c *Cluster) OffersLive() bool { return c.ops().Live != nil }

// NodeStuck is KindOps.Stuck of c's kind for node n over db (an admin connection): why n
// cannot catch up by itself ("" when it can) and whether it is still settling.
func (c *Cluster) NodeStuck(ctx context.Context, n *Node, db *sql.DB) (stuck string, settling bool) {
	if f := c.ops().Stuck; f != nil {
		return f(ctx, c, n, db)
	}
	return ReplicationStuck(ctx, c, n, db)
}
