package links

import (
	"errors"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

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
		if left := Leftovers(tc.c); len(left) != 0 {
			t.Errorf("%s: leftovers %v on links that cannot be impaired", tc.c.Name, left)
		}
	}
}
