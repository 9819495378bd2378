package topology

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]Version{
		"10.11.19-MariaDB-0+deb12u1":    V(10, 11, 19),
		"/usr/sbin/mysqld  Ver 9.7.4-2": V(9, 7, 4),
		"8.0":                           V(8, 0, 0),
		"5.7.44-log":                    V(5, 7, 44),
	} {
		got, err := ParseVersion(in)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseVersion("no digits"); err == nil {
		t.Error("ParseVersion accepted a string without a version")
	}
	if !V(8, 0, 23).AtLeast(V(8, 0, 22)) || V(8, 0, 22).AtLeast(V(8, 0, 23)) || !V(9, 0, 0).AtLeast(V(8, 4, 9)) {
		t.Error("AtLeast ordering wrong")
	}
}

// TestCapabilityBoundaries checks each documented version boundary on both sides.
func TestCapabilityBoundaries(t *testing.T) {
	type row struct {
		f        Flavor
		v        Version
		check    func(Capabilities) bool
		want     bool
		describe string
	}
	rows := []row{
		{MySQL, V(8, 0, 22), func(c Capabilities) bool { return c.SourceTerms }, false, "CHANGE REPLICATION SOURCE before 8.0.23"},
		{MySQL, V(8, 0, 23), func(c Capabilities) bool { return c.SourceTerms }, true, "CHANGE REPLICATION SOURCE from 8.0.23"},
		{MySQL, V(8, 0, 21), func(c Capabilities) bool { return c.ReplicaStatements }, false, "START REPLICA before 8.0.22"},
		{MySQL, V(8, 0, 22), func(c Capabilities) bool { return c.ReplicaStatements }, true, "START REPLICA from 8.0.22"},
		{MySQL, V(8, 0, 25), func(c Capabilities) bool { return c.SemiSyncSourceTerms }, false, "semisync_master before 8.0.26"},
		{MySQL, V(8, 0, 26), func(c Capabilities) bool { return c.SemiSyncSourceTerms }, true, "semisync_source from 8.0.26"},
		{Percona, V(8, 0, 26), func(c Capabilities) bool { return c.SemiSyncSourceTerms }, true, "Percona follows MySQL"},
		{MySQL, V(8, 1, 0), func(c Capabilities) bool { return c.ResetBinaryLogs }, false, "RESET MASTER before 8.2"},
		{MySQL, V(8, 4, 0), func(c Capabilities) bool { return c.ResetBinaryLogs }, true, "RESET BINARY LOGS AND GTIDS in 8.4"},
		{MySQL, V(9, 6, 0), func(c Capabilities) bool { return c.GRFlowControlStats }, false, "no GR flow-control stats before 9.7"},
		{MySQL, V(9, 7, 0), func(c Capabilities) bool { return c.GRFlowControlStats }, true, "GR flow-control stats from 9.7"},
		{Percona, V(9, 7, 0), func(c Capabilities) bool { return c.GRFlowControlStats }, false, "community only"},
		{MariaDB, V(10, 11, 0), func(c Capabilities) bool { return c.SourceTerms }, false, "MariaDB keeps CHANGE MASTER"},
		{MariaDB, V(10, 5, 0), func(c Capabilities) bool { return c.ReplicaStatements }, false, "MariaDB START SLAVE before 10.5.1"},
		{MariaDB, V(10, 5, 1), func(c Capabilities) bool { return c.ReplicaStatements }, true, "MariaDB START REPLICA from 10.5.1"},
		{MariaDB, V(10, 11, 0), func(c Capabilities) bool { return c.SemiSyncBuiltin && !c.SemiSyncWaitCount }, true, "MariaDB semi-sync built in, no wait count"},
		{MariaDB, V(10, 5, 0), func(c Capabilities) bool { return c.WsrepApplierThreads }, false, "wsrep_slave_threads on MariaDB"},
		{MariaDB, V(10, 11, 19), func(c Capabilities) bool { return c.WsrepApplierThreads }, false, "wsrep_slave_threads on MariaDB 10.11 (wsrep_applier_threads: ER 1193)"},
		{PXC, V(8, 0, 25), func(c Capabilities) bool { return c.WsrepApplierThreads }, false, "PXC wsrep_slave_threads before 8.0.26"},
		{PXC, V(8, 0, 26), func(c Capabilities) bool { return c.WsrepApplierThreads && c.Galera }, true, "PXC wsrep_applier_threads from 8.0.26"},
	}
	for _, r := range rows {
		if got := r.check(CapabilitiesFor(r.f, r.v)); got != r.want {
			t.Errorf("%s %s: got %v (%s)", r.f, r.v, got, r.describe)
		}
	}
	if got := CapabilitiesFor(MariaDB, V(10, 11, 19)).ServerBinary; got != "mariadbd" {
		t.Errorf("MariaDB 10.11 server binary %q", got)
	}
	if got := CapabilitiesFor(MySQL, V(9, 7, 4)).ParallelWorkersVar(); got != "replica_parallel_workers" {
		t.Errorf("parallel workers var %q", got)
	}
	if got := CapabilitiesFor(MariaDB, V(10, 11, 19)).ParallelWorkersVar(); got != "slave_parallel_threads" {
		t.Errorf("MariaDB parallel var %q", got)
	}
}

func TestChangeSourceSyntax(t *testing.T) {
	my := CapabilitiesFor(MySQL, V(9, 7, 4)).ChangeSource("10.0.0.1", 3306, "repl", "p'w")
	for _, w := range []string{"CHANGE REPLICATION SOURCE TO", "SOURCE_HOST='10.0.0.1'", "SOURCE_AUTO_POSITION=1", "GET_SOURCE_PUBLIC_KEY=1", `SOURCE_PASSWORD='p\'w'`} {
		if !strings.Contains(my, w) {
			t.Errorf("MySQL 9.7: %q lacks %q", my, w)
		}
	}
	old := CapabilitiesFor(MySQL, V(8, 0, 20)).ChangeSource("h", 1, "u", "p")
	if !strings.Contains(old, "CHANGE MASTER TO MASTER_HOST='h'") || !strings.Contains(old, "MASTER_AUTO_POSITION=1") || !strings.Contains(old, "GET_MASTER_PUBLIC_KEY=1") {
		t.Errorf("MySQL 8.0.20: %q", old)
	}
	ma := CapabilitiesFor(MariaDB, V(10, 11, 19)).ChangeSource("h", 1, "u", "p")
	if !strings.Contains(ma, "CHANGE MASTER TO") || !strings.Contains(ma, "MASTER_USE_GTID=slave_pos") || strings.Contains(ma, "AUTO_POSITION") {
		t.Errorf("MariaDB: %q", ma)
	}
	if s := CapabilitiesFor(MySQL, V(5, 7, 44)).ShowReplicaStatus(); s != "SHOW SLAVE STATUS" {
		t.Errorf("5.7: %q", s)
	}
	if s := CapabilitiesFor(MySQL, V(9, 7, 4)).ReplicaStatusColumn("sql_running"); s != "Replica_SQL_Running" {
		t.Errorf("9.7 column %q", s)
	}
	if s := CapabilitiesFor(MariaDB, V(10, 11, 4)).ReplicaStatusColumn("sql_running"); s != "Slave_SQL_Running" {
		t.Errorf("MariaDB column %q", s)
	}
}

func TestSemiSyncNames(t *testing.T) {
	my := CapabilitiesFor(MySQL, V(9, 7, 4)).SemiSyncNames()
	if my.SourceLibrary != "semisync_source.so" || my.SourceEnabled != "rpl_semi_sync_source_enabled" || my.WaitCount != "rpl_semi_sync_source_wait_for_replica_count" || my.StatusPrefix != "Rpl_semi_sync_source_" {
		t.Errorf("MySQL 9.7: %+v", my)
	}
	old := CapabilitiesFor(MySQL, V(8, 0, 25)).SemiSyncNames()
	if old.SourceLibrary != "semisync_master.so" || old.WaitCount != "rpl_semi_sync_master_wait_for_slave_count" {
		t.Errorf("MySQL 8.0.25: %+v", old)
	}
	ma := CapabilitiesFor(MariaDB, V(10, 11, 4)).SemiSyncNames()
	if ma.SourceLibrary != "" || ma.WaitCount != "" || ma.SourceEnabled != "rpl_semi_sync_master_enabled" || ma.WaitPoint == "" {
		t.Errorf("MariaDB: %+v", ma)
	}
}

func validSpec() Spec {
	s := Spec{Name: "t1", Kind: Async, Nodes: 3, Flavor: MariaDB}
	s.Defaults()
	return s
}

func TestValidate(t *testing.T) {
	if err := func() error { s := validSpec(); return s.Validate() }(); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
	cases := []struct {
		mut   func(*Spec)
		field string
	}{
		{func(s *Spec) { s.Name = "" }, "name"},
		{func(s *Spec) { s.Name = "UPPER" }, "name"},
		{func(s *Spec) { s.Name = "abcdefghijk" }, "name"},
		{func(s *Spec) { s.Kind = "ring" }, "kind"},
		{func(s *Spec) { s.Flavor = "oracle" }, "flavor"},
		{func(s *Spec) { s.Nodes = 0 }, "nodes"},
		{func(s *Spec) { s.Nodes = 10 }, "nodes"},
		{func(s *Spec) { s.Kind = Single; s.Nodes = 2 }, "nodes"},
		{func(s *Spec) { s.Nodes = 1 }, "nodes"},
		{func(s *Spec) { s.Installation = Installation{Kind: InstallRootfs} }, "installation.path"},
		{func(s *Spec) { s.Installation = Installation{Kind: "docker"} }, "installation.kind"},
		{func(s *Spec) { s.Kind = SemiSync; s.SemiSync.WaitPoint = "LATER" }, "semisync.wait_point"},
		{func(s *Spec) { s.Kind = SemiSync; s.SemiSync.Timeout = time.Microsecond }, "semisync.timeout"},
		{func(s *Spec) { s.Kind = SemiSync; s.SemiSync.WaitForReplicas = 3 }, "semisync.wait_for_replicas"},
		{func(s *Spec) { s.Kind = SemiSync; s.SemiSync.WaitForReplicas = 2 }, "semisync.wait_for_replicas"}, // MariaDB waits for 1
		{func(s *Spec) { s.Options = map[string]string{"bad name;": "1"} }, "options"},
		{func(s *Spec) { s.Knobs = map[string]string{"n4:sync_binlog": "0"} }, "knob"}, // 3 nodes
		{func(s *Spec) { s.Kind = Single; s.Nodes = 1; s.Knobs = map[string]string{"n1,n2:sync_binlog": "0"} }, "knob"},
	}
	for i, c := range cases {
		s := validSpec()
		c.mut(&s)
		err := s.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("case %d: got %v, want a FieldError on %s", i, err, c.field)
		}
	}
}

func addrs(node string) (string, int) { return "10.233.1." + node[1:], 3306 }

func TestPlans(t *testing.T) {
	caps := CapabilitiesFor(MySQL, V(9, 7, 4))
	s := Spec{Name: "p", Kind: SemiSync, Nodes: 3, Flavor: MySQL, Options: map[string]string{"sync_binlog": "0"}}
	s.Defaults()
	p, err := BuildPlan(s, caps, addrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 3 || p.Nodes[0].Role != RoleSource || p.Nodes[1].Role != RoleReplica || p.Nodes[2].ServerID != 3 {
		t.Fatalf("nodes: %+v", p.Nodes)
	}
	opt := func(n NodePlan, name string) (string, bool) {
		v, ok := "", false
		for _, o := range n.Options { // last wins, as in an option file
			if o.Name == name {
				v, ok = o.Value, true
			}
		}
		return v, ok
	}
	for _, want := range [][2]string{{"gtid_mode", "ON"}, {"log_replica_updates", "ON"}, {"loose_rpl_semi_sync_source_enabled", "ON"}, {"loose_rpl_semi_sync_source_timeout", "10000"}, {"loose_rpl_semi_sync_source_wait_point", "AFTER_SYNC"}, {"sync_binlog", "0"}, {"plugin_load_add", "semisync_source.so;semisync_replica.so"}} {
		if v, _ := opt(p.Nodes[0], want[0]); v != want[1] {
			t.Errorf("source option %s = %q, want %q", want[0], v, want[1])
		}
	}
	if v, _ := opt(p.Nodes[1], "super_read_only"); v != "ON" {
		t.Errorf("replica super_read_only = %q", v)
	}
	if _, ok := opt(p.Nodes[1], "loose_rpl_semi_sync_source_enabled"); ok {
		t.Error("replica got the source's semi-sync switch")
	}
	// Steps: users everywhere (unbinlogged), replication on replicas, semi-sync wait last.
	var repl []Step
	for _, st := range p.Steps {
		if strings.Contains(strings.Join(st.SQL, ";"), "CHANGE REPLICATION SOURCE") {
			repl = append(repl, st)
			if st.Wait != WaitReplicaRunning || !strings.Contains(st.SQL[0], "SOURCE_HOST='10.233.1.1'") {
				t.Errorf("replication step %+v", st)
			}
		}
		if st.Desc == "create users" && (st.SQL[0] != "SET SESSION sql_log_bin=0" && !strings.Contains(st.SQL[0], "super_read_only")) {
			t.Errorf("users step is binlogged: %v", st.SQL)
		}
	}
	if len(repl) != 2 {
		t.Errorf("%d replication steps, want 2", len(repl))
	}
	if last := p.Steps[len(p.Steps)-1]; last.Wait != WaitSemiSyncReady || last.Node != "n1" {
		t.Errorf("last step %+v, want the semi-sync wait on n1", last)
	}
	// MariaDB semi-sync: built in, no plugin, master/slave names, no loose_ prefix.
	ma := CapabilitiesFor(MariaDB, V(10, 11, 19))
	s.Flavor = MariaDB
	s.SemiSync.WaitForReplicas = 1
	p, _ = BuildPlan(s, ma, addrs)
	if _, ok := opt(p.Nodes[0], "plugin_load_add"); ok {
		t.Error("MariaDB plan loads a semi-sync plugin")
	}
	if v, _ := opt(p.Nodes[0], "rpl_semi_sync_master_enabled"); v != "ON" {
		t.Errorf("MariaDB source semi-sync switch %q", v)
	}
	if v, _ := opt(p.Nodes[0], "gtid_strict_mode"); v != "ON" {
		t.Errorf("MariaDB gtid_strict_mode %q", v)
	}
	// Single: one node, no replication step.
	p, _ = BuildPlan(Spec{Name: "s", Kind: Single, Nodes: 1, Flavor: MariaDB}, ma, addrs)
	if len(p.Nodes) != 1 || len(p.Steps) != 1 {
		t.Errorf("single plan %+v", p)
	}
	// A one-node Galera cluster (a snapshot's server): Synced before its users are made.
	p, _ = BuildPlan(Spec{Name: "s", Kind: Single, Nodes: 1, Flavor: MariaDB, Options: map[string]string{"wsrep_on": "ON", "wsrep_cluster_address": "gcomm://"}}, ma, addrs)
	if len(p.Steps) != 2 || p.Steps[0].Wait != WaitSynced || p.Steps[0].ClusterSize != 1 || p.Steps[1].Desc != "create users" {
		t.Errorf("single plan with wsrep_on=ON: %+v, want it Synced before the users are created", p.Steps)
	}
	if _, err := BuildPlan(Spec{Kind: "ring"}, ma, addrs); err == nil {
		t.Error("BuildPlan accepted an unknown kind")
	}
}

func TestParseSpecYAML(t *testing.T) {
	s, err := ParseSpecYAML([]byte("name: y1\nkind: semisync\nnodes: 3\nflavor: mysql\nsemisync:\n  timeout: 2s\n  wait_point: AFTER_COMMIT\noptions:\n  sync_binlog: \"0\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.SemiSync.Timeout != 2*time.Second || s.SemiSync.WaitPoint != "AFTER_COMMIT" || s.Options["sync_binlog"] != "0" || s.Installation.Kind != InstallRootfs {
		t.Errorf("parsed %+v", s)
	}
	_, err = ParseSpecYAML([]byte("name: y1\nkind: async\nnodse: 3\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "nodse") {
		t.Errorf("unknown key error %v, want line 3 naming nodse", err)
	}
}

func TestYAMLErrorsInUserTerms(t *testing.T) {
	_, err := ParseSpecYAML([]byte("name: y1\nflavour: mysql\n"))
	if err == nil || !strings.Contains(err.Error(), `line 2: unknown key "flavour"`) || strings.Contains(err.Error(), "topology.Spec") {
		t.Errorf("unknown key: %v", err)
	}
	_, err = ParseSpecYAML([]byte("name: y1\nsemisync:\n  timeout: 10\n"))
	if err == nil || !strings.Contains(err.Error(), "want a duration like 10s") || strings.Contains(err.Error(), "time.Duration") {
		t.Errorf("bad duration: %v", err)
	}
	for in, want := range map[string]string{
		"name: y1\nknobs: {sync_binlog: [1]}\n": "line 2: a list: want a single value",
		"name: y1\noptions: [sync_binlog]\n":    "line 2: a list: want a mapping of name: value",
		"name: y1\nkind: [single]\n":            "line 2: a list: want a kind (single, async",
		"name: y1\ninstallation: system\n":      "line 2: value system: want a mapping with kind and path",
		"vm\n":                                  "line 1: value vm: want a topology (a mapping",
	} {
		_, err := ParseSpecYAML([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "!!") {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestSemiSyncJSONRoundTrip(t *testing.T) {
	in := SemiSyncOptions{WaitPoint: "AFTER_SYNC", Timeout: 2500 * time.Millisecond, WaitForReplicas: 2}
	b, err := json.Marshal(in)
	if err != nil || !strings.Contains(string(b), `"timeout":"2.5s"`) {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var out SemiSyncOptions
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Errorf("round trip: %+v %v", out, err)
	}
}

func TestReservedOptionsRefused(t *testing.T) {
	for _, k := range []string{"server_id", "server-id", "port", "datadir", "bind_address", "loose_gtid_mode"} {
		s := validSpec()
		s.Options = map[string]string{k: "7"}
		var fe *FieldError
		if err := s.Validate(); !errors.As(err, &fe) || fe.Field != "options" {
			t.Errorf("option %s accepted: %v", k, err)
		}
	}
	s := validSpec()
	s.Options = map[string]string{"innodb_buffer_pool_size": "256M", "sync_binlog": "0"}
	if err := s.Validate(); err != nil {
		t.Errorf("ordinary options refused: %v", err)
	}
}
