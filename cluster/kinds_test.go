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

// TestGaleraMembersNote: an existing Galera cluster's members that were not given, from
// wsrep_cluster_size and wsrep_incoming_addresses (an arbitrator has no address).
func TestGaleraMembersNote(t *testing.T) {
	c := &Cluster{ProviderName: topology.ProviderExisting, Spec: topology.Spec{Kind: topology.Galera},
		Nodes: []*Node{{Name: "n1", Host: "10.0.0.1", Port: 3306}, {Name: "n2", Host: "10.0.0.2", Port: 3306}}}
	for _, tc := range []struct{ size, incoming, want string }{
		{"2", "10.0.0.1:3306,10.0.0.2:3306", ""},
		{"3", "10.0.0.1:3306,10.0.0.2:3306,", "wsrep_cluster_size 3 for 2 given node(s): 1 without a client address (an arbitrator, garbd: it votes, holds no data)"},
		{"3", "10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306", "wsrep_cluster_size 3 for 2 given node(s): 1 server(s) not given (10.0.0.3:3306): habench neither loads nor samples them"},
		{"4", ",db1:3306,db2:3306,db3:3306", "wsrep_cluster_size 4 for 2 given node(s): 1 without a client address (an arbitrator, garbd: it votes, holds no data); 1 server(s) not given: habench neither loads nor samples them"},
		{"", "", ""},
		{"3", "", "wsrep_cluster_size 3 for 2 given node(s): 1 member(s) not given (arbitrators or servers: no wsrep_incoming_addresses)"},
	} {
		if got := galeraMembersNote(c, tc.size, tc.incoming); got != tc.want {
			t.Errorf("size %q incoming %q:\n got %q\nwant %q", tc.size, tc.incoming, got, tc.want)
		}
	}
}
