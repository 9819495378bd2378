package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testenv"
	"github.com/habench/habench/internal/testserver"
	"github.com/habench/habench/topology"
)

func TestParseExistingDSN(t *testing.T) {
	t.Setenv(cluster.NetworkGuardEnv, "1")
	n, err := cluster.ParseExistingDSN("dsns[0]", "bench:s3cret@tcp(127.0.0.1:23306)/", "", "")
	if err != nil || n != (cluster.ExistingNode{Host: "127.0.0.1", Port: 23306, User: "bench", Password: "s3cret"}) {
		t.Fatalf("%+v %v", n, err)
	}
	n, err = cluster.ParseExistingDSN("dsns[1]", "tcp(localhost)/", "habench", "pw")
	if err != nil || n != (cluster.ExistingNode{Host: "127.0.0.1", Port: 3306, User: "habench", Password: "pw"}) {
		t.Fatalf("defaults: %+v %v", n, err)
	}
	for _, c := range []struct{ dsn, want string }{
		{"u:secretpw@tcp(192.0.2.10:3306)/", "HABENCH_TEST_NETWORK_GUARD=1"},
		{"u:secretpw@tcp(db.example.com:3306)/", "resolves no names"},
		{"u:secretpw@unix(/tmp/x.sock)/", "want tcp"},
		{"tcp(127.0.0.1:3306)/", "no user"},
		{"u:secretpw@tcp(127.0.0.1:99999)/", "port"},
		{"u:secretpw@nonsense", "want user:password@tcp"},
	} {
		_, err := cluster.ParseExistingDSN("dsns[2]", c.dsn, "", "")
		var fe *topology.FieldError
		if !errors.As(err, &fe) || fe.Field != "dsns[2]" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a dsns[2] FieldError with %q", c.dsn, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%s: the error shows the password: %v", c.dsn, err)
		}
	}
}

func TestInferTopology(t *testing.T) {
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	src := &cluster.NodeFacts{ServerID: 1}
	rep := func(id, from int) *cluster.NodeFacts {
		return &cluster.NodeFacts{ServerID: id, Replica: true, SourceServerID: from}
	}
	k, roles, err := cluster.InferTopology([]*cluster.NodeFacts{src, rep(2, 1), rep(3, 1)}, addrs)
	if err != nil || k != topology.Async || roles[0] != topology.RoleSource || roles[1] != topology.RoleReplica || roles[2] != topology.RoleReplica {
		t.Errorf("async: %s %v %v", k, roles, err)
	}
	// Replicas listed first; the source found by server_id wherever it is.
	k, roles, err = cluster.InferTopology([]*cluster.NodeFacts{rep(2, 9), rep(3, 9), {ServerID: 9, SemiSyncSource: true}}, addrs)
	if err != nil || k != topology.SemiSync || roles[2] != topology.RoleSource {
		t.Errorf("semisync: %s %v %v", k, roles, err)
	}
	// Source matched by address when the replica has not seen its server_id yet.
	k, _, err = cluster.InferTopology([]*cluster.NodeFacts{src, {ServerID: 2, Replica: true, SourceHost: "127.0.0.1", SourcePort: 1}}, addrs)
	if err != nil || k != topology.Async {
		t.Errorf("by address: %s %v", k, err)
	}
	if k, _, err := cluster.InferTopology([]*cluster.NodeFacts{src}, addrs); err != nil || k != topology.Single {
		t.Errorf("single: %s %v", k, err)
	}
	gal := func(uuid string) *cluster.NodeFacts {
		return &cluster.NodeFacts{Galera: true, GaleraClusterSize: 3, GaleraStatus: "Primary", GaleraUUID: uuid}
	}
	k, roles, err = cluster.InferTopology([]*cluster.NodeFacts{gal("u"), gal("u"), gal("u")}, addrs)
	if err != nil || k != topology.Galera || roles[1] != topology.RoleNode {
		t.Errorf("galera: %s %v %v", k, roles, err)
	}
	gr := func(role string) *cluster.NodeFacts { return &cluster.NodeFacts{GRState: "ONLINE", GRRole: role} }
	k, roles, err = cluster.InferTopology([]*cluster.NodeFacts{gr("SECONDARY"), gr("PRIMARY"), gr("SECONDARY")}, addrs)
	if err != nil || k != topology.Group || roles[1] != topology.RolePrimary || roles[0] != topology.RoleSecondary {
		t.Errorf("group: %s %v %v", k, roles, err)
	}
	// A single-primary group of three, then DR replicas of its members: group-dr, the
	// replicas matched by server_id or by address; one with the plugin stopped (OFFLINE).
	grm := func(id int, role string) *cluster.NodeFacts {
		return &cluster.NodeFacts{ServerID: id, GRState: "ONLINE", GRRole: role, GRSinglePrimary: true, GRGroupName: "g"}
	}
	dr := func(id, from int) *cluster.NodeFacts {
		return &cluster.NodeFacts{ServerID: id, Replica: true, SourceServerID: from}
	}
	addrs5 := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"}
	offline := &cluster.NodeFacts{ServerID: 5, Replica: true, GRState: "OFFLINE", SourceHost: "127.0.0.1", SourcePort: 2}
	k, roles, err = cluster.InferTopology([]*cluster.NodeFacts{grm(1, "SECONDARY"), grm(2, "PRIMARY"), grm(3, "SECONDARY"), dr(4, 2), offline}, addrs5)
	if err != nil || k != topology.GroupDR || roles[1] != topology.RolePrimary || roles[3] != topology.RoleReplica || roles[4] != topology.RoleReplica {
		t.Errorf("group-dr: %s %v %v", k, roles, err)
	}
	multi := func(id int) *cluster.NodeFacts {
		return &cluster.NodeFacts{ServerID: id, GRState: "ONLINE", GRRole: "PRIMARY", GRGroupName: "g"}
	}
	for name, c := range map[string]struct {
		facts []*cluster.NodeFacts
		want  string
	}{
		"dr: two members":     {[]*cluster.NodeFacts{grm(1, "PRIMARY"), grm(2, "SECONDARY"), dr(4, 1)}, "has 3 members, 2 given"},
		"dr: replica first":   {[]*cluster.NodeFacts{dr(4, 1), grm(1, "PRIMARY"), grm(2, "SECONDARY"), grm(3, "SECONDARY")}, "give the group's members first"},
		"dr: multi-primary":   {[]*cluster.NodeFacts{multi(1), multi(2), multi(3), dr(4, 1)}, "multi-primary"},
		"dr: foreign source":  {[]*cluster.NodeFacts{grm(1, "PRIMARY"), grm(2, "SECONDARY"), grm(3, "SECONDARY"), dr(4, 9)}, "none of the group's members"},
		"dr: not a replica":   {[]*cluster.NodeFacts{grm(1, "PRIMARY"), grm(2, "SECONDARY"), grm(3, "SECONDARY"), {ServerID: 4}}, "neither a Group Replication member nor a replica"},
		"dr: member in error": {[]*cluster.NodeFacts{grm(1, "PRIMARY"), grm(2, "SECONDARY"), {ServerID: 3, GRState: "ERROR"}, dr(4, 1)}, "state ERROR"},
		// A member of the group that left it keeps its channels: still a member.
		"left, with a channel": {[]*cluster.NodeFacts{grm(1, "PRIMARY"), grm(2, "SECONDARY"), grm(3, "SECONDARY"), {ServerID: 4, GRState: "OFFLINE", GRGroupName: "g", Replica: true, SourceServerID: 1}}, "state OFFLINE, want ONLINE"},
	} {
		_, _, err := cluster.InferTopology(c.facts, addrs5)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	for name, facts := range map[string][]*cluster.NodeFacts{
		"two sources":        {src, {ServerID: 2}},
		"unknown source":     {src, rep(2, 7)},
		"galera mixed":       {gal("u"), src},
		"galera two":         {gal("u"), gal("v")},
		"group not online":   {gr("PRIMARY"), {GRState: "RECOVERING"}},
		"two groups":         {gr("PRIMARY"), {GRState: "ONLINE", GRRole: "PRIMARY", GRGroupName: "other"}},
		"circular":           {rep(1, 2), rep(2, 1)},
		"galera non-primary": {{Galera: true, GaleraClusterSize: 1, GaleraStatus: "non-Primary"}},
	} {
		if _, _, err := cluster.InferTopology(facts, addrs); err == nil {
			t.Errorf("%s: inferred a topology", name)
		}
	}
}

func TestFlavorOf(t *testing.T) {
	for _, c := range []struct {
		v, comment string
		want       topology.Flavor
	}{
		{"10.11.19-MariaDB-0+deb12u1-log", "Debian 12", topology.MariaDB},
		{"9.7.4-2", "(Debian)", topology.MySQL},
		{"8.0.35-27.1", "Percona XtraDB Cluster (GPL), Release rel27, Revision 2f8eed6, WSREP version 26.1.4.3", topology.PXC},
		{"8.0.36-28", "Percona Server (GPL), Release 28", topology.Percona},
	} {
		if got := cluster.FlavorOf(c.v, c.comment); got != c.want {
			t.Errorf("FlavorOf(%q, %q) = %s, want %s", c.v, c.comment, got, c.want)
		}
	}
}

func TestSetOptionLines(t *testing.T) {
	in := "# written by habench\n[mysqld]\nuser=root\nsync-binlog=1\nloose_rpl_semi_sync_master_enabled=ON\n"
	got := cluster.SetOptionLines(in, []topology.Option{{Name: "sync_binlog", Value: "0"}, {Name: "back_log", Value: "100"}, {Name: "rpl_semi_sync_master_enabled", Value: "OFF"}})
	want := "# written by habench\n[mysqld]\nuser=root\nsync-binlog=0\nloose_rpl_semi_sync_master_enabled=OFF\n" + cluster.KnobsMarker + "\nback_log=100\n"
	if got != want {
		t.Errorf("SetOptionLines:\n%s\nwant\n%s", got, want)
	}
	if v, ok := cluster.OptionLineValue(got, "back-log"); !ok || v != "100" {
		t.Errorf("OptionLineValue back_log = %q %v", v, ok)
	}
	other := cluster.SetOptionLines("[mysqld]\na=1\n[client]\nuser=x\n", []topology.Option{{Name: "b", Value: "2"}})
	if other != "[mysqld]\na=1\n"+cluster.KnobsMarker+"\nb=2\n[client]\nuser=x\n" {
		t.Errorf("insert before the next section:\n%s", other)
	}
	if _, ok := cluster.OptionLineValue("[client]\nb=2\n", "b"); ok {
		t.Errorf("a [client] line counted as a server option")
	}
}

// TestRegisterDiscoversAndRefuses registers the servers of sandboxes as existing clusters
// (TCP DSNs for the benchmark user): a MySQL 9.7 semi-sync pair in namespaces, discovered
// as semisync with the sandbox's roles and semi-sync settings, and a MariaDB single node
// on loopback. Node stop/kill/start/restart and option files are refused on the existing
// cluster; destroying it forgets the registration and leaves the servers running.
func TestRegisterDiscoversAndRefuses(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	spec := testenv.Spec(t, testenv.Name(t, "knm"), topology.SemiSync, 2, topology.MySQL)
	sbx, err := s.Deploy(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var dsns []string
	for _, n := range sbx.Nodes {
		dsns = append(dsns, fmt.Sprintf("%s:%s@tcp(%s)/", sbx.User, sbx.Password, n.Addr()))
	}
	ex, err := s.Register(ctx, topology.Spec{Name: testenv.Name(t, "knxm"), Kind: topology.SemiSync, Flavor: topology.MySQL, ExistingSpec: topology.ExistingSpec{DSNs: dsns}})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Spec.Kind != topology.SemiSync || ex.ProviderName != topology.ProviderExisting || ex.Network != cluster.NetExisting {
		t.Errorf("registered %s provider %s network %s", ex.Spec.Kind, ex.ProviderName, ex.Network)
	}
	for i, n := range ex.Nodes {
		if n.Role != sbx.Nodes[i].Role || n.Addr() != sbx.Nodes[i].Addr() || n.ServerID != sbx.Nodes[i].ServerID {
			t.Errorf("node %s: %s %s id %d, sandbox has %s %s id %d", n.Name, n.Role, n.Addr(), n.ServerID, sbx.Nodes[i].Role, sbx.Nodes[i].Addr(), sbx.Nodes[i].ServerID)
		}
	}
	if ss := ex.Spec.SemiSync; ss.Timeout != sbx.Spec.SemiSync.Timeout || ss.WaitPoint != "AFTER_SYNC" || ss.WaitForReplicas != 1 {
		t.Errorf("discovered semi-sync %+v", ss)
	}
	if v := ex.Capabilities().Version; v != sbx.Binaries.Version {
		t.Errorf("version %s, sandbox %s", v, sbx.Binaries.Version)
	}
	// Loaded back from state.json: same, and health works over TCP.
	ld, err := s.Load(ex.Name)
	if err != nil || !ld.Existing() || ld.Password != sbx.Password || len(ld.Nodes) != 2 {
		t.Fatalf("load: %+v %v", ld, err)
	}
	if h := ld.Health(ctx, ld.Nodes[1]); !strings.HasPrefix(h, "io=Yes sql=Yes") {
		t.Errorf("health of the existing replica: %s", h)
	}
	if h := ld.Health(ctx, ld.Nodes[0]); !strings.Contains(h, "semi-sync ON with 1") {
		t.Errorf("health of the existing source: %s", h)
	}
	refused := map[string]error{
		"stop":    s.StopNode(ld, "n2"),
		"kill":    s.KillNode(ld, "n2"),
		"start":   s.StartNode(ctx, ld, "n2"),
		"restart": s.RestartNode(ctx, ld, "n2"),
	}
	_, refused["option file"] = ld.ReadOptionFile(ld.Nodes[0])
	for what, err := range refused {
		var fe *topology.FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "existing cluster") {
			t.Errorf("%s on an existing cluster: %v, want a refusal", what, err)
		}
	}
	pids := []int{sbx.Nodes[0].PID, sbx.Nodes[1].PID}
	if err := s.Destroy(ctx, ex.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ex.Name); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("registration still there: %v", err)
	}
	for i, n := range sbx.Nodes {
		if !n.Running() || n.PID != pids[i] {
			t.Errorf("sandbox node %s not running after forgetting the existing cluster", n.Name)
		}
		if h := sbx.Health(ctx, n); h != "ok, semi-sync ON with 1 replica(s) acknowledging" && !strings.HasPrefix(h, "io=Yes sql=Yes") {
			t.Errorf("sandbox node %s after forgetting: %s", n.Name, h)
		}
	}
	// A loopback MariaDB single node, registered through 127.0.0.1.
	s.Network = cluster.NetLoopback
	s.BasePort = testserver.LoopbackPorts(t, 1)
	one, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "knl"), topology.Single, 1, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	ex1, err := s.Register(ctx, topology.Spec{Name: testenv.Name(t, "knxl"), ExistingSpec: topology.ExistingSpec{
		DSNs: []string{fmt.Sprintf("tcp(127.0.0.1:%d)/", one.Nodes[0].Port)}, User: one.User, Password: one.Password}})
	if err != nil {
		t.Fatal(err)
	}
	if ex1.Spec.Kind != topology.Single || ex1.Spec.Flavor != topology.MariaDB || ex1.Nodes[0].Role != topology.RoleSource {
		t.Errorf("loopback single: %s %s %s", ex1.Spec.Kind, ex1.Spec.Flavor, ex1.Nodes[0].Role)
	}
	// The same server twice, and a name taken, are bad input.
	d := fmt.Sprintf("tcp(127.0.0.1:%d)/", one.Nodes[0].Port)
	if _, err := s.Register(ctx, topology.Spec{Name: testenv.Name(t, "knxd"), ExistingSpec: topology.ExistingSpec{DSNs: []string{d, "tcp(localhost:" + fmt.Sprint(one.Nodes[0].Port) + ")/"}, User: "habench", Password: "habench"}}); err == nil {
		t.Errorf("the same server twice was registered")
	}
	if _, err := s.Register(ctx, topology.Spec{Name: ex1.Name, ExistingSpec: topology.ExistingSpec{DSNs: []string{d}, User: "habench", Password: "habench"}}); err == nil {
		t.Errorf("a taken name was registered again")
	}
}

// TestRegisterGroupDR registers a sandbox group-dr topology's servers as an existing
// cluster: discovered as group-dr (the kind given as a hint, and without one), the
// members' roles read from the group, the DR replica's health a replica's; with the DR
// replica listed before the members it is refused.
func TestRegisterGroupDR(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sbx, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "kdr"), topology.GroupDR, 4, topology.MySQL))
	if err != nil {
		t.Fatal(err)
	}
	var dsns []string
	for _, n := range sbx.Nodes {
		dsns = append(dsns, fmt.Sprintf("%s:%s@tcp(%s)/", sbx.User, sbx.Password, n.Addr()))
	}
	for i, kind := range []topology.Kind{topology.GroupDR, ""} {
		name := testenv.Name(t, fmt.Sprintf("kdrx%d", i))
		ex, err := s.Register(ctx, topology.Spec{Name: name, Kind: kind, ExistingSpec: topology.ExistingSpec{DSNs: dsns}})
		if err != nil {
			t.Fatalf("register (kind %q): %v", kind, err)
		}
		if ex.Spec.Kind != topology.GroupDR || ex.Spec.Group.Mode != topology.GroupSinglePrimary || len(ex.Nodes) != 4 {
			t.Errorf("registered %s, group mode %s, %d nodes", ex.Spec.Kind, ex.Spec.Group.Mode, len(ex.Nodes))
		}
		for j, n := range ex.Nodes {
			if n.Role != sbx.Nodes[j].Role {
				t.Errorf("node %s: role %s, the sandbox's %s", n.Name, n.Role, sbx.Nodes[j].Role)
			}
		}
		ld, err := s.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		// The group's primary is read from the members of an existing group too: n4
		// replicates from it, not from "a secondary".
		if h := ld.Health(ctx, ld.Nodes[3]); !strings.HasPrefix(h, "io=Yes sql=Yes") || !strings.HasSuffix(h, ", from n1") {
			t.Errorf("health of the existing DR replica: %q, want it replicating from the primary n1", h)
		}
		if w := ld.WriterNow(ctx); w == nil || w.Name != "n1" {
			t.Errorf("existing group-dr: writer now %v, want n1", w)
		}
		if err := s.Destroy(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	swapped := []string{dsns[3], dsns[0], dsns[1], dsns[2]}
	_, err = s.Register(ctx, topology.Spec{Name: testenv.Name(t, "kdrxs"), ExistingSpec: topology.ExistingSpec{DSNs: swapped}})
	if err == nil || !strings.Contains(err.Error(), "members first") {
		t.Errorf("DR replica listed first: %v, want a refusal", err)
	}
}

// TestRegisterGaleraWithArbitrator registers the two servers of a sandbox Galera cluster
// with an arbitrator: a galera cluster whose members note names the arbitrator; with one
// server given, the other is named as not given.
func TestRegisterGaleraWithArbitrator(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sbx, err := s.Deploy(ctx, testenv.Spec(t, testenv.Name(t, "kga"), topology.GaleraArbitrator, 2, topology.MariaDB))
	if err != nil {
		t.Fatal(err)
	}
	dsn := func(n *cluster.Node) string { return fmt.Sprintf("%s:%s@tcp(%s)/", sbx.User, sbx.Password, n.Addr()) }
	for _, tc := range []struct {
		nodes []*cluster.Node
		want  string
	}{
		{sbx.Nodes, "wsrep_cluster_size 3 for 2 given node(s): 1 without a client address (an arbitrator, garbd: it votes, holds no data)"},
		{sbx.Nodes[:1], "wsrep_cluster_size 3 for 1 given node(s): 1 without a client address (an arbitrator, garbd: it votes, holds no data); 1 server(s) not given (" + sbx.Nodes[1].Addr() + "): habench neither loads nor samples them"},
	} {
		var dsns []string
		for _, n := range tc.nodes {
			dsns = append(dsns, dsn(n))
		}
		name := testenv.Name(t, fmt.Sprintf("kgax%d", len(dsns)))
		ex, err := s.Register(ctx, topology.Spec{Name: name, ExistingSpec: topology.ExistingSpec{DSNs: dsns}})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Spec.Kind != topology.Galera {
			t.Errorf("registered as %s, want galera", ex.Spec.Kind)
		}
		if got := cluster.GaleraMembersNote(ctx, ex); got != tc.want {
			t.Errorf("%d node(s) given: members note\n %q\nwant %q", len(dsns), got, tc.want)
		}
		if err := s.Destroy(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if got := cluster.GaleraMembersNote(ctx, sbx); got != "" {
		t.Errorf("the sandbox itself: members note %q, want none", got)
	}
}

// TestParseExistingDSNAnyHost: without the test harness's network guard an existing node
// may be any IPv4/IPv6 address or host name. Parse only: nothing is resolved or dialled.
func TestParseExistingDSNAnyHost(t *testing.T) {
	t.Setenv(cluster.NetworkGuardEnv, "")
	for dsn, want := range map[string]cluster.ExistingNode{
		"u:p@tcp(db1.example.com:3307)/": {Host: "db1.example.com", Port: 3307, User: "u", Password: "p"},
		"u:p@tcp(192.0.2.10)/":           {Host: "192.0.2.10", Port: 3306, User: "u", Password: "p"},
		"u:p@tcp([2001:db8::5]:3306)/":   {Host: "2001:db8::5", Port: 3306, User: "u", Password: "p"},
		"u:p@tcp(db-2.dc1)/":             {Host: "db-2.dc1", Port: 3306, User: "u", Password: "p"},
	} {
		n, err := cluster.ParseExistingDSN("dsns[0]", dsn, "", "")
		if err != nil || n != want {
			t.Errorf("%s: %+v %v, want %+v", dsn, n, err, want)
		}
	}
	for _, dsn := range []string{"u:p@tcp(db_1.example.com)/", "u:p@tcp(-db.example.com)/", "u:p@tcp(a..b)/"} {
		_, err := cluster.ParseExistingDSN("dsns[1]", dsn, "", "")
		var fe *topology.FieldError
		if !errors.As(err, &fe) || fe.Field != "dsns[1]" || !strings.Contains(err.Error(), "want an IP address or a host name") {
			t.Errorf("%s: %v, want a dsns[1] error about the host", dsn, err)
		}
	}
	if err := cluster.CheckDestination("192.0.2.10"); err != nil {
		t.Errorf("CheckDestination without the guard: %v", err)
	}
	t.Setenv(cluster.NetworkGuardEnv, "1")
	if _, err := cluster.ParseExistingDSN("dsns[0]", "u:p@tcp([2001:db8::5]:3306)/", "", ""); err == nil || !strings.Contains(err.Error(), cluster.NetworkGuardEnv) {
		t.Errorf("IPv6 outside this machine under the guard: %v", err)
	}
}

// TestGuardSSH: under the network guard an SSH destination must resolve (by the ssh
// configuration) to an address on this machine, directly. Route lookups only: no packet.
func TestGuardSSH(t *testing.T) {
	t.Setenv(cluster.NetworkGuardEnv, "1")
	for _, c := range []struct {
		r    host.Resolved
		want string
	}{
		{host.Resolved{HostName: "127.0.0.1", Port: 22}, ""},
		{host.Resolved{HostName: "db1.example.com"}, "resolves no names"},
		{host.Resolved{HostName: "127.0.0.1", Proxy: "proxyjump bastion"}, "no proxies"},
		{host.Resolved{HostName: "192.0.2.77"}, "refusing to connect"},
	} {
		err := cluster.GuardSSH(c.r)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
}
