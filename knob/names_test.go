package knob

import (
	"strings"
	"testing"

	"github.com/habench/habench/topology"
)

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"wsrep_slave_thread", "wsrep_slave_threads", 1},
		{"sync_binlg", "sync_binlog", 1}, {"kitten", "sitting", 3}, {"fc_limt", "fc_limit", 1}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestListedNames: the committed lists know the catalog's knobs where the flavor has them,
// refuse typos with the closest name, and refuse knobs of another flavor or kind.
func TestListedNames(t *testing.T) {
	maria, ok := ListedNames(topology.MariaDB, topology.V(10, 11, 19), true)
	if !ok {
		t.Fatal("no list for mariadb 10.11")
	}
	mysql, ok := ListedNames(topology.MySQL, topology.V(9, 7, 4), false)
	if !ok {
		t.Fatal("no list for mysql 9.7")
	}
	if _, ok := ListedNames(topology.Percona, topology.V(8, 0, 36), false); ok {
		t.Error("a list for percona 8.0: the docs say there is none")
	}
	for _, c := range []struct {
		n    *Names
		name string
		want string // "" known; else a part of the reason
	}{
		{maria, "wsrep_slave_threads", ""},
		{maria, "applier_threads", ""},
		{maria, "parallel_workers", ""},
		{maria, "sync_binlog", ""},
		{maria, "gcs.fc_limit", ""},
		{maria, "fc_factor", ""},
		{maria, "back_log", ""},
		{mysql, "innodb_buffer_pool_instances", ""},
		{maria, "wsrep_slave_thread", "unknown server variable on mariadb 10.11 (did you mean wsrep_slave_threads?)"},
		{maria, "gr_fc_mode", "mariadb 10.11 has no variable group_replication_flow_control_mode"},
		{maria, "gcs.fc_limt", "has no option gcs.fc_limt (did you mean gcs.fc_limit?)"},
		{maria, "zzzz_nothing_like_it", "unknown server variable on mariadb 10.11"},
		{mysql, "gr_fc_period", ""},
		{mysql, "group_replication_mode", ""},
		{mysql, "replica_parallel_workers", ""},
		{mysql, "parallel_workers", ""},
		{mysql, "wsrep_slave_threads", "mysql 9.7 has no variable wsrep_slave_threads"},
		{mysql, "gcs.fc_limit", "mysql 9.7 has no Galera provider"},
		{mysql, "replica_paralel_workers", "(did you mean replica_parallel_workers?)"},
	} {
		got := c.n.Unknown(c.name)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: Unknown(%q) = %q, want %q", c.n.Source, c.name, got, c.want)
		}
	}
	if got := maria.Unknown("zzzz_nothing_like_it"); strings.Contains(got, "did you mean") {
		t.Errorf("a suggestion for a name like nothing: %q", got)
	}
	err := maria.Check([]topology.KnobSetting{{Name: "sync_binlg"}, {Name: "sync_binlog"}, {Nodes: []string{"n2"}, Name: "wsrep_slave_thread"}, {Name: "sync_binlg"}})
	if err == nil || !strings.Contains(err.Error(), `knobs.sync_binlg "sync_binlg"`) || !strings.HasSuffix(err.Error(), "; also unknown: wsrep_slave_thread") {
		t.Errorf("Check: %v", err)
	}
}
