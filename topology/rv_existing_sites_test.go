package topology

import (
	"errors"
	"strings"
	"testing"
)

// An existing cluster's topology takes sites too (topologies.md: "the same topology,
// sites included, runs on a sandbox or on the user's own servers"): its members are the
// dsns' nodes n1..nN, nodes: or not. With cluster: (already registered) the sites are the
// registered cluster's, like its user and ssh.
func TestRvExistingSites(t *testing.T) {
	dsns := "dsns: ['u:p@tcp(127.0.0.1:3306)/', 'u:p@tcp(127.0.0.1:3307)/', 'u:p@tcp(127.0.0.1:3308)/']\n"
	if err := rvValidate(t, "name: x\nprovider: existing\n"+dsns+"sites: {dc1: [n1, n2], dc2: [n3]}\n"); err != nil {
		t.Errorf("existing with dsns and sites: %v", err)
	}
	if err := rvValidate(t, "name: x\nprovider: existing\n"+dsns+"sites: {dc1: [n1, n2], dc2: [n4]}\n"); err == nil {
		t.Error("existing with a site naming n4 of 3 dsns: no error")
	}
	err := rvValidate(t, "name: x\nprovider: existing\ncluster: foo\nsites: {dc1: [n1, n2], dc2: [n3]}\n")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "sites" || !strings.Contains(fe.Reason, "registered") {
		t.Errorf("cluster: with sites: %v, want a FieldError on sites saying the registered cluster has its own", err)
	}
}
