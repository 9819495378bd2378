package cluster

import (
	"fmt"

	"github.com/habench/habench/topology"
)

// RebuildMethod is how a node is rebuilt from nothing (KindOps.RebuildBy).
type RebuildMethod string

const (
	// RebuildSST: the stopped node's datadir is emptied (OpWipeNode) and its start
	// rejoins it by full state transfer (Galera SST), as a joiner is deployed.
	RebuildSST RebuildMethod = "SST"
	// RebuildClone: the running node replaces its data by CLONE INSTANCE from another
	// member (CloneNode), then starts again and recovers the rest from the group.
	RebuildClone RebuildMethod = "clone"
)

// RebuildOf is how a node of spec's kind is rebuilt, "" when the kind offers no rebuild.
func RebuildOf(spec topology.Spec) RebuildMethod { return OpsOf(spec.Kind).RebuildBy }

// RebuildWhy is "" when a node of spec can be rebuilt, else why not (a clause after
// "cannot rebuild a node: "): read when a scenario or fault is checked, before anything
// runs. SST needs a provider that can empty a datadir (NodeWiper: the local sandbox);
// clone needs only SQL and a start, so every provider that starts nodes can.
func RebuildWhy(spec topology.Spec) string {
	p, err := ProviderOf(spec)
	if err != nil {
		return err.Error()
	}
	switch RebuildOf(spec) {
	case RebuildSST:
		if _, ok := p.(NodeWiper); !ok {
			return fmt.Sprintf("provider %s cannot empty a node's datadir for an SST (the local sandbox can)", p.Name())
		}
		return ""
	case RebuildClone:
		return ""
	}
	return fmt.Sprintf("kind %s: only Galera nodes (by SST) and group members (by clone) can be rebuilt", spec.Kind)
}
