package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/knob"
	"github.com/habench/habench/links"
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

// savedClusterOf is testClusterOf(provider, network) written to a state directory of its
// own and loaded back, so that it has a directory for the records destroy reads
// (knob.PendingFile, links.StandingFile).
func savedClusterOf(t *testing.T, provider, network string) *cluster.Cluster {
	t.Helper()
	state := t.TempDir()
	dir := filepath.Join(state, "clusters", "pc1")
	b, err := json.Marshal(testClusterOf(provider, network))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := (&cluster.Store{StateDir: state}).Load("pc1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Provider().Name() != provider {
		t.Fatalf("saved cluster has provider %s, want %s", c.Provider().Name(), provider)
	}
	return c
}

// writeClusterRecord writes a record file into c's directory.
func writeClusterRecord(t *testing.T, c *cluster.Cluster, file, content string) string {
	t.Helper()
	p := filepath.Join(c.Dir(), file)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDestroyAsksProvider: what destroy refuses or clears first depends on the provider's
// answers: knobs an interrupted run left changed (knob.PendingFile) refuse forgetting an
// existing cluster, never destroying one habench deployed (its servers go with it); a
// standing links record on a cluster whose links are over SSH is cleared from its hosts
// first (the record goes; a host that cannot be cleared keeps the cluster, with an error
// naming it), while a sandbox's links go with its namespaces (the record is not touched);
// measuring links on a cluster without any is one refusal naming the cluster.
func TestDestroyAsksProvider(t *testing.T) {
	const pending = `{"cluster":"pc1","pid":0,"requested":["sync_binlog=0"],"entries":[]}`
	for _, tc := range []struct {
		provider, network string
		refused           bool
	}{
		{topology.ProviderSandbox, cluster.NetLoopback, false},
		{testHostsName, "hosts", false},
		{topology.ProviderExisting, "", true},
	} {
		c := savedClusterOf(t, tc.provider, tc.network)
		writeClusterRecord(t, c, knob.PendingFile, pending)
		err := cluster.DestroyRefusal(c)
		var fe *topology.FieldError
		switch {
		case !tc.refused && err != nil:
			t.Errorf("%s with pending knobs: %v, want nil (deployed: destroyed with its servers)", tc.provider, err)
		case tc.refused && (!errors.As(err, &fe) || fe.Field != "name" || fe.Value != "pc1" ||
			!strings.Contains(err.Error(), "left knobs sync_binlog=0 changed: habench knob restore pc1")):
			t.Errorf("%s with pending knobs: %v, want a refusal on name pc1 naming the knobs and knob restore", tc.provider, err)
		}
	}

	const standing = `{"cluster":"pc1","backend":"remote","hosts":[{"node":"%s","host":"db-%s","devs":[]}]}`
	for _, tc := range []struct {
		provider, network, node string
		err                     string // "" for nil
		kept                    bool   // the links record is still there
	}{
		{topology.ProviderSandbox, cluster.NetNamespaces, "n1", "", true},
		{testHostsName, "hosts", "n1", "", false},
		{testHostsName, "hosts", "n9", "cluster pc1: could not remove habench's impairments from its hosts, so it was kept", true},
	} {
		c := savedClusterOf(t, tc.provider, tc.network)
		rec := writeClusterRecord(t, c, links.StandingFile, fmt.Sprintf(standing, tc.node, tc.node))
		err := cluster.PrepareDestroy(c)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s, links record on %s: %v, want error %q", tc.provider, tc.node, err, tc.err)
		}
		_, serr := os.Stat(rec)
		if kept := serr == nil; kept != tc.kept {
			t.Errorf("%s, links record on %s: record kept %v, want %v", tc.provider, tc.node, kept, tc.kept)
		}
	}
	if err := cluster.PrepareDestroy(testClusterOf(testHostsName, "hosts")); err != nil {
		t.Errorf("hosts cluster without a links record: %v", err)
	}
	_, err := measureLinks(context.Background(), testClusterOf(topology.ProviderExisting, ""), nil)
	var fe *topology.FieldError
	if !errors.As(err, &fe) || fe.Field != "cluster" || fe.Value != "pc1" || !strings.Contains(err.Error(), "no ssh: access") {
		t.Errorf("measure links of an existing cluster without ssh: %v, want a refusal on cluster pc1", err)
	}
}
