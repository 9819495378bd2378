package cluster

import (
	"context"
	"database/sql"
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
	// A kind extending galera that sets only Health gets galera's other operations.
	topology.RegisterKind(topology.KindDef{Kind: "testgx", Base: topology.Galera, Plan: topology.KindOf(topology.Galera).Plan})
	RegisterKindOps(KindOps{Health: func(context.Context, *Cluster, *Node, *sql.DB) string { return "x" }}, "testgx")
	defer delete(kindOps, "testgx")
	if o := OpsOf("testgx"); o.StartArgs == nil || o.Health == nil || o.Health(context.Background(), nil, nil, nil) != "x" {
		t.Error("a kind extending galera: want its own Health and galera's StartArgs")
	}
}
