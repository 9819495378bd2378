package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// TestInjectRefusals: on a cluster habench did not deploy, partition, heal and promote are
// one FieldError naming the action (the text cmd/habench's TestFaultsOverSSH checks),
// also on a site; kill without ssh: is the provider's refusal.
func TestInjectRefusals(t *testing.T) {
	ex := &cluster.Cluster{Name: "t5", ProviderName: topology.ProviderExisting, Network: cluster.NetExisting,
		Nodes: []*cluster.Node{{Name: "n1", Host: "127.0.0.1", Port: 1, Role: topology.RoleSource}, {Name: "n2", Host: "127.0.0.1", Port: 2, Role: topology.RoleReplica}},
		Spec:  topology.Spec{Kind: topology.Async, Sites: topology.Sites{{Name: "dc1", Nodes: []string{"n1"}}, {Name: "dc2", Nodes: []string{"n2"}}}}}
	in := &Injector{Store: &cluster.Store{}}
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
