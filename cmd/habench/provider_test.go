package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// testHostsProvider stands for a third provider (sandboxes on the user's hosts): it
// deploys like the local sandbox (every operation of the sandbox provider it embeds,
// Deployed true) but its nodes are on hosts db-NODE reached over SSH (LinksSSH). cmd/
// must treat it by what it answers, never by its name.
type testHostsProvider struct{ cluster.Provider }

const testHostsName = "testhosts"

func init() {
	cluster.RegisterProvider(testHostsProvider{(&cluster.Cluster{}).Provider()})
}

func (testHostsProvider) Name() string                                        { return testHostsName }
func (testHostsProvider) Why(*cluster.Cluster, cluster.Op) string             { return "" }
func (testHostsProvider) Links(*cluster.Cluster) cluster.LinkAccess           { return cluster.LinksSSH }
func (testHostsProvider) HostName(_ *cluster.Cluster, n *cluster.Node) string { return "db-" + n.Name }
func (testHostsProvider) NodeRunning(*cluster.Cluster, *cluster.Node) (bool, bool) {
	return true, true
}

func testClusterOf(provider, network string) *cluster.Cluster {
	c := &cluster.Cluster{Name: "pc1", ProviderName: provider, Network: network, User: "habench", Password: "pw",
		Binaries: &cluster.Binaries{VersionText: "MariaDB 10.11"}, State: "ready",
		Spec: topology.Spec{Name: "pc1", Kind: topology.Async}}
	for i, name := range []string{"n1", "n2"} {
		c.Nodes = append(c.Nodes, &cluster.Node{Name: name, Role: topology.Role("replica"), Host: "10.0.0." + string(rune('1'+i)), Port: 3306, PID: 4000 + i, Dir: "/state/pc1/" + name})
	}
	return c
}

// TestStatusPerProvider: status's header and node table say per provider what it answers:
// HOST is Provider.HostName, PID only where the provider runs the process, DIR only for
// servers habench deployed; a registered cluster reads "existing cluster (registered".
func TestStatusPerProvider(t *testing.T) {
	for _, tc := range []struct {
		provider, network string
		header            string
		row               string // n2's row
	}{
		{topology.ProviderSandbox, cluster.NetLoopback, `^pc1: async, 2 node\(s\), MariaDB 10.11, network loopback, state ready`,
			`(?m)^n2\s+replica\s+10\.0\.0\.2:3306\s+local\s+4001\s+/state/pc1/n2$`},
		{topology.ProviderExisting, "", `^pc1: existing cluster \(registered; habench does not deploy, restart or stop its servers\)`,
			`(?m)^n2\s+replica\s+10\.0\.0\.2:3306\s+10\.0\.0\.2\s+-\s+- \(existing\)$`},
		{testHostsName, "hosts", `^pc1: async, 2 node\(s\), MariaDB 10.11, network hosts, state ready`,
			`(?m)^n2\s+replica\s+10\.0\.0\.2:3306\s+db-n2\s+4001\s+/state/pc1/n2$`},
	} {
		c := testClusterOf(tc.provider, tc.network)
		var b bytes.Buffer
		printHeader(&b, c)
		printNodes(&b, c, nil)
		out := b.String()
		if !regexp.MustCompile(tc.header).MatchString(out) || !regexp.MustCompile(tc.row).MatchString(out) {
			t.Errorf("%s: want header %s and row %s:\n%s", tc.provider, tc.header, tc.row, out)
		}
		if !regexp.MustCompile(`(?m)^NODE\s+ROLE\s+ADDRESS\s+HOST\s+PID\s+DIR`).MatchString(out) {
			t.Errorf("%s: no HOST column:\n%s", tc.provider, out)
		}
	}
}

// TestDestroyAsksProvider: what destroy refuses or clears first depends on the provider's
// answers: a cluster habench deployed is never refused for pending knobs (its servers go
// with it); links over SSH are cleared from the hosts first (nothing recorded here: nil);
// measuring links on a cluster without any is one refusal naming the cluster.
func TestDestroyAsksProvider(t *testing.T) {
	for _, p := range []string{topology.ProviderSandbox, testHostsName} {
		if err := refuseForgetWithKnobs(testClusterOf(p, cluster.NetLoopback)); err != nil {
			t.Errorf("%s: %v, want nil (deployed: destroyed with its servers)", p, err)
		}
	}
	if err := clearHostImpairments(testClusterOf(testHostsName, "hosts")); err != nil {
		t.Errorf("hosts cluster without a links record: %v", err)
	}
	_, err := measureLinks(context.Background(), testClusterOf(topology.ProviderExisting, ""), nil)
	var fe *topology.FieldError
	if !errors.As(err, &fe) || fe.Field != "cluster" || fe.Value != "pc1" || !strings.Contains(err.Error(), "no ssh: access") {
		t.Errorf("measure links of an existing cluster without ssh: %v, want a refusal on cluster pc1", err)
	}
}
