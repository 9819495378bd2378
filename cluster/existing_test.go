package cluster_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

func TestParseExistingDSN(t *testing.T) {
	n, err := cluster.ParseExistingDSN("dsns[0]", "bench:s3cret@tcp(127.0.0.1:23306)/", "", "")
	if err != nil || n != (cluster.ExistingNode{Host: "127.0.0.1", Port: 23306, User: "bench", Password: "s3cret"}) {
		t.Fatalf("%+v %v", n, err)
	}
	n, err = cluster.ParseExistingDSN("dsns[1]", "tcp(localhost)/", "habench", "pw")
	if err != nil || n != (cluster.ExistingNode{Host: "127.0.0.1", Port: 3306, User: "habench", Password: "pw"}) {
		t.Fatalf("defaults: %+v %v", n, err)
	}
	for _, c := range []struct{ dsn, want string }{
		{"u:secretpw@tcp(192.0.2.10:3306)/", "this machine's network rule"},
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
	for name, facts := range map[string][]*cluster.NodeFacts{
		"two sources":        {src, {ServerID: 2}},
		"unknown source":     {src, rep(2, 7)},
		"galera mixed":       {gal("u"), src},
		"galera two":         {gal("u"), gal("v")},
		"group not online":   {gr("PRIMARY"), {GRState: "RECOVERING"}},
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
