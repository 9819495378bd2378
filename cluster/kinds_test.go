package cluster

import (
	"testing"

	"github.com/habench/habench/topology"
)

func TestKindOpsRegistered(t *testing.T) {
	if errs := RegistrationErrors(); len(errs) > 0 {
		t.Fatalf("refused KindOps registrations: %v", errs)
	}
	for _, k := range topology.Kinds() {
		if _, own := kindOps[k]; !own && topology.KindOf(k).Base == "" {
			t.Errorf("kind %s: no KindOps registered (and no base kind to inherit from)", k)
		}
	}
	if OpsOf(topology.Group).Rejoin == nil || OpsOf(topology.Galera).StartArgs == nil {
		t.Error("group and galera ops are not the registered ones")
	}
}
