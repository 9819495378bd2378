package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/habench/habench/topology"
)

// TestProvidersRegistered: every provider file registered once, under its spec name.
func TestProvidersRegistered(t *testing.T) {
	if errs := ProviderRegistrationErrors(); len(errs) > 0 {
		t.Fatalf("refused registrations: %v", errs)
	}
	for _, name := range []string{topology.ProviderSandbox, topology.ProviderExisting} {
		if !slices.Contains(ProviderNames(), name) {
			t.Errorf("provider %s not registered: %v", name, ProviderNames())
		}
		if got := (&Cluster{ProviderName: name}).Provider().Name(); got != name {
			t.Errorf("provider of a %s cluster is %s", name, got)
		}
	}
	if got := (&Cluster{}).Provider().Name(); got != topology.ProviderSandbox {
		t.Errorf("a state file without provider is %s, want the local sandbox", got)
	}
}

// TestSignalersOfferSignals: a provider offers OpSignalNode exactly when it implements
// NodeSignaler (the sandbox and the hosts provider; an existing cluster does not).
func TestSignalersOfferSignals(t *testing.T) {
	for _, name := range ProviderNames() {
		c := &Cluster{Name: "x", ProviderName: name, Network: NetNamespaces}
		_, signals := c.Provider().(NodeSignaler)
		if c.Offers(OpSignalNode) != signals {
			t.Errorf("provider %s: offers %s %v, implements NodeSignaler %v", name, OpSignalNode, c.Offers(OpSignalNode), signals)
		}
		if want := name != topology.ProviderExisting; signals != want {
			t.Errorf("provider %s implements NodeSignaler %v, want %v", name, signals, want)
		}
	}
}

// TestProviderRefusals: what each provider does not offer is one *UnsupportedError, which
// callers see as bad input (*topology.FieldError on "cluster") naming the cluster, the
// operation and why; what it offers is nil.
func TestProviderRefusals(t *testing.T) {
	ns := &Cluster{Name: "sb1", Network: NetNamespaces}
	lo := &Cluster{Name: "sb2", Network: NetLoopback}
	ex := &Cluster{Name: "ex1", ProviderName: topology.ProviderExisting}
	exSSH := &Cluster{Name: "ex2", ProviderName: topology.ProviderExisting, Spec: topology.Spec{ExistingSpec: topology.ExistingSpec{SSH: &topology.SSHSpec{}}}}
	future := &Cluster{Name: "fu1", ProviderName: "kubernetes"}
	for _, tc := range []struct {
		c       *Cluster
		op      Op
		refused bool
		want    string
	}{
		{ns, OpLinks, false, ""},
		{ns, OpRestartNode, false, ""},
		{lo, OpLinks, true, `network "loopback"`},
		{lo, OpStopNode, false, ""},
		{ex, OpStopNode, true, "no ssh: access"},
		{ex, OpLinks, true, "no ssh: access"},
		{exSSH, OpStopNode, false, ""},
		{exSSH, OpLinks, false, ""},
		{exSSH, OpRestartNode, true, "not habench's to restart"},
		{exSSH, OpPromote, true, "servers it does not run"},
		{exSSH, OpOptionFiles, true, "servers it does not run"},
		{future, OpStopNode, true, "knows providers"},
		{ns, OpSignalNode, false, ""},
		{lo, OpSignalNode, false, ""},
		{exSSH, OpSignalNode, true, "servers it does not run"},
	} {
		err := tc.c.Refuse(tc.op, "")
		if (err != nil) != tc.refused {
			t.Errorf("%s %s: err %v, want refused %v", tc.c.Name, tc.op, err, tc.refused)
			continue
		}
		if tc.c.Offers(tc.op) == tc.refused {
			t.Errorf("%s: Offers(%s) disagrees with Refuse", tc.c.Name, tc.op)
		}
		if err == nil {
			continue
		}
		var ue *UnsupportedError
		var fe *topology.FieldError
		if !errors.As(err, &ue) || !errors.As(err, &fe) || fe.Field != "cluster" || fe.Value != tc.c.Name {
			t.Errorf("%s %s: %T %v, want *UnsupportedError as a FieldError on cluster", tc.c.Name, tc.op, err, err)
		}
		if msg := err.Error(); !strings.Contains(msg, string(tc.op)) || !strings.Contains(msg, tc.want) {
			t.Errorf("%s %s: %q, want the operation and %q", tc.c.Name, tc.op, msg, tc.want)
		}
	}
}

// TestNodeOpsAskTheProvider: Store.StopNode, KillNode and StartNode on a cluster whose
// provider refuses them return its refusal before looking at the node, and an unknown node
// of a sandbox is a FieldError on node.
func TestNodeOpsAskTheProvider(t *testing.T) {
	s := &Store{StateDir: t.TempDir()}
	ex := &Cluster{Name: "ex1", ProviderName: topology.ProviderExisting, Nodes: []*Node{{Name: "n1"}}}
	for op, err := range map[Op]error{OpStopNode: s.StopNode(ex, "n9"), OpKillNode: s.KillNode(ex, "n1"), OpStartNode: s.StartNode(context.Background(), ex, "n1")} {
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Op != op {
			t.Errorf("%s on an existing cluster without ssh: %v", op, err)
		}
	}
	sb := &Cluster{Name: "sb1", Network: NetNamespaces, Nodes: []*Node{{Name: "n1"}}}
	var fe *topology.FieldError
	if err := s.StopNode(sb, "n9"); !errors.As(err, &fe) || fe.Field != "node" {
		t.Errorf("stop of an unknown node: %v", err)
	}
	if ex.NodeDown(ex.Nodes[0]) {
		t.Error("an existing cluster's node is never known down")
	}
	if !sb.NodeDown(sb.Nodes[0]) {
		t.Error("a sandbox node without a process is down")
	}
}
