package experiment

import (
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
)

func TestLinkEndpoints(t *testing.T) {
	c := &cluster.Cluster{Name: "t1", Network: cluster.NetNamespaces, Nodes: []*cluster.Node{
		{Name: "n1", Host: "10.233.3.11", Netns: "hb-t1-n1"},
		{Name: "n2", Host: "10.233.3.12", Netns: "hb-t1-n2"},
	}}
	eps, err := LinkEndpoints(c)
	if err != nil || len(eps) != 2 || eps[1].Addr.String() != "10.233.3.12" || eps[0].Netns != "hb-t1-n1" {
		t.Fatalf("%+v %v", eps, err)
	}
	c.Network = cluster.NetLoopback
	if _, err := LinkEndpoints(c); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("loopback: %v", err)
	}
	c.Network = cluster.NetNamespaces
	c.Nodes[0].Host = "localhost"
	if _, err := LinkEndpoints(c); err == nil || !strings.Contains(err.Error(), `"localhost"`) {
		t.Errorf("bad host: %v", err)
	}
}
