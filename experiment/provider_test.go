package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// TestDeploys: a spec's provider says whether habench deploys it; a spec naming a
// cluster of the state directory, or dsns, is not deployed by the run.
func TestDeploys(t *testing.T) {
	for _, tc := range []struct {
		spec topology.Spec
		want bool
	}{
		{topology.Spec{}, true},
		{topology.Spec{Provider: topology.ProviderSandbox}, true},
		{topology.Spec{Provider: topology.ProviderExisting, ExistingSpec: topology.ExistingSpec{Cluster: "prod"}}, false},
		{topology.Spec{Provider: topology.ProviderExisting, ExistingSpec: topology.ExistingSpec{DSNs: []string{"root@tcp(127.0.0.1:3306)/"}}}, false},
		{topology.Spec{Provider: "no-such-provider"}, false},
	} {
		if got := deploys(tc.spec); got != tc.want {
			t.Errorf("deploys(provider %q cluster %q) = %v, want %v", tc.spec.Provider, tc.spec.Cluster, got, tc.want)
		}
	}
}

// TestLinksOf: the link backend follows c.Links(): namespaces for a netns sandbox, SSH
// for an existing cluster with ssh:, the provider's refusal otherwise.
func TestLinksOf(t *testing.T) {
	nodes := func() []*cluster.Node {
		return []*cluster.Node{{Name: "n1", Host: "10.233.3.11", Netns: "hb-t1-n1", Port: 3306}, {Name: "n2", Host: "10.233.3.12", Netns: "hb-t1-n2", Port: 3306}}
	}
	ssh := topology.ExistingSpec{SSH: &topology.SSHSpec{User: "root"}}
	ns := &cluster.Cluster{Name: "t1", Network: cluster.NetNamespaces, Nodes: nodes()}
	lo := &cluster.Cluster{Name: "t2", Network: cluster.NetLoopback, Nodes: nodes()}
	exSSH := &cluster.Cluster{Name: "t3", ProviderName: topology.ProviderExisting, Network: cluster.NetExisting, Nodes: nodes(), Spec: topology.Spec{ExistingSpec: ssh}}
	ex := &cluster.Cluster{Name: "t4", ProviderName: topology.ProviderExisting, Network: cluster.NetExisting, Nodes: nodes()}

	if la, err := linksOf(ns); err != nil {
		t.Errorf("netns sandbox: %v", err)
	} else if l, ok := la.(*nsLinks); !ok || l.size() != 2 {
		t.Errorf("netns sandbox: %T %+v, want nsLinks over 2 nodes", la, la)
	}
	if la, err := linksOf(exSSH); err != nil {
		t.Errorf("existing with ssh: %v", err)
	} else if l, ok := la.(*sshLinks); !ok || l.size() != 2 || l.eps[1].Addr != "10.233.3.12" {
		t.Errorf("existing with ssh: %T %+v, want sshLinks over 2 nodes", la, la)
	}
	for _, tc := range []struct {
		c    *cluster.Cluster
		want string
	}{{lo, "loopback"}, {ex, "no ssh: access"}} {
		_, err := linksOf(tc.c)
		var ue *cluster.UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want the provider's refusal naming %q", tc.c.Name, err, tc.want)
		}
		if left := LinkLeftovers(tc.c); len(left) != 0 {
			t.Errorf("%s: leftovers %v on links that cannot be impaired", tc.c.Name, left)
		}
	}
}

// TestInjectRefusals: on a cluster habench did not deploy, partition, heal and promote are
// one FieldError naming the action (the text cmd/habench's TestFaultsOverSSH checks),
// also on a site; kill without ssh: is the provider's refusal.
func TestInjectRefusals(t *testing.T) {
	ex := &cluster.Cluster{Name: "t5", ProviderName: topology.ProviderExisting, Network: cluster.NetExisting,
		Nodes: []*cluster.Node{{Name: "n1", Host: "127.0.0.1", Port: 1, Role: topology.RoleSource}, {Name: "n2", Host: "127.0.0.1", Port: 2, Role: topology.RoleReplica}},
		Spec:  topology.Spec{Kind: topology.Async, Sites: topology.Sites{{Name: "dc1", Nodes: []string{"n1"}}, {Name: "dc2", Nodes: []string{"n2"}}}}}
	in := &Injector{Sandbox: &cluster.Sandbox{}}
	for _, action := range []string{"partition", "heal", "promote"} {
		for _, node := range []string{"n2", "dc1"} {
			_, _, err := in.Inject(context.Background(), ex, action, node)
			var fe *topology.FieldError
			if !errors.As(err, &fe) || fe.Field != "action" || !strings.Contains(err.Error(), "on an existing cluster") {
				t.Errorf("%s %s: %v, want a FieldError on action with \"on an existing cluster\"", action, node, err)
			}
		}
	}
	_, _, err := in.Inject(context.Background(), ex, "kill", "n2")
	var ue *cluster.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no ssh: access") {
		t.Errorf("kill without ssh: %v, want the provider's refusal", err)
	}
}
