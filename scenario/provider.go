package scenario

import (
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// Deploys reports whether habench deploys the servers of the topology spec describes:
// its provider's Deployed (cluster.ProviderOf), true for a local sandbox or sandboxes on
// the user's hosts, false for an existing cluster (servers registered by their dsns, or
// a cluster of the state directory named by cluster:). A spec naming no known provider
// (refused by topology.Spec.Validate) deploys nothing.
func Deploys(spec topology.Spec) bool {
	p, err := cluster.ProviderOf(spec)
	return err == nil && p.Deployed()
}
