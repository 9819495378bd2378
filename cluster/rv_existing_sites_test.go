package cluster

import (
	"testing"

	"github.com/habench/habench/topology"
)

// Register keeps the sites of the user's topology: status, links by site, site
// partitions and reports of an existing cluster need them.
func TestRvRegisterKeepsSites(t *testing.T) {
	spec, err := topology.ParseSpecYAML([]byte("name: x\nprovider: existing\n" +
		"dsns: ['u:p@tcp(127.0.0.1:3306)/', 'u:p@tcp(127.0.0.1:3307)/', 'u:p@tcp(127.0.0.1:3308)/']\n" +
		"sites: {dc1: [n1, n2], dc2: [n3]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	got := registeredSpec(spec, topology.Async, 3, topology.MariaDB, "u", nil)
	if got.Sites.SiteOf("n3") != "dc2" || len(got.Sites) != 2 {
		t.Errorf("registered spec sites %+v: want the topology's dc1: [n1, n2], dc2: [n3]", got.Sites)
	}
	c := &Cluster{Spec: got}
	if st := c.Spec.Sites.Site("dc2"); st == nil || st.Nodes[0] != "n3" {
		t.Errorf("cluster sites %+v", c.Spec.Sites)
	}
}
