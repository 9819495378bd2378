package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/topology"
)

// rvAuxKind is an async kind with one aux member, for the aux tests of this package.
const rvAuxKind topology.Kind = "rvaux"

func init() {
	topology.RegisterKind(topology.KindDef{Kind: rvAuxKind, Base: topology.Async,
		Plan: func(topology.Spec, topology.Capabilities, topology.Addr) (topology.Plan, error) {
			return topology.Plan{}, nil
		},
		Aux: func(topology.Spec) []topology.AuxNode {
			return []topology.AuxNode{{Name: "arb", Role: topology.RoleNode, Program: "rvprog"}}
		}})
	RegisterProgram("rvprog", Program{Start: func(context.Context, *Store, *Cluster, *Node) error { return nil }})
}

// In loopback mode an aux member has a port of its own after the servers': it is taken
// like theirs, checked free like theirs, and counted in the base port's range.
func TestRvLoopbackAuxPorts(t *testing.T) {
	dir := t.TempDir()
	// Seven free ports in a row (b's base 3 below and above a's), below Linux's ephemeral
	// range, so that no client connection takes one meanwhile: a fixed 41306 was taken by
	// one during a CI run.
	base := testserver.LoopbackPorts(t, 7) + 3
	sa := &Store{StateDir: dir, BasePort: base}
	a, err := sa.allocate(topology.Spec{Name: "a", Kind: rvAuxKind, Nodes: 3}, &Binaries{}, NetLoopback)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Aux) != 1 || a.Aux[0].Port != base+3 {
		t.Fatalf("cluster a aux %+v: want arb on port %d", a.Aux, base+3)
	}
	for _, b := range []int{base + 3, base - 3} { // b's n1 on a's arb; b's arb on a's n1
		sb := &Store{StateDir: dir, BasePort: b}
		_, err := sb.allocate(topology.Spec{Name: "b", Kind: rvAuxKind, Nodes: 3}, &Binaries{}, NetLoopback)
		var fe *topology.FieldError
		if !errors.As(err, &fe) || fe.Field != "port" || !strings.Contains(fe.Reason, "sandbox a") {
			t.Errorf("base port %d next to cluster a (ports %d-%d with its arbitrator): %v, want a FieldError on port used by sandbox a", b, base, base+3, err)
		}
		sb.Destroy(context.Background(), "b")
	}
	sc := &Store{StateDir: dir, BasePort: 65533}
	if _, err := sc.allocate(topology.Spec{Name: "c", Kind: rvAuxKind, Nodes: 3}, &Binaries{}, NetLoopback); err == nil {
		t.Error("base port 65533 for 3 nodes and an aux member (up to 65536): no error")
	}
}
