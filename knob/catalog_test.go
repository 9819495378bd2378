package knob

import (
	"errors"
	"strings"
	"testing"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

func mustKnob(t *testing.T, s string) topology.KnobSetting {
	t.Helper()
	k, err := topology.ParseKnob(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var (
	maria1011 = topology.CapabilitiesFor(topology.MariaDB, topology.V(10, 11, 19))
	mysql97   = topology.CapabilitiesFor(topology.MySQL, topology.V(9, 7, 4))
	mysql8020 = topology.CapabilitiesFor(topology.MySQL, topology.V(8, 0, 20))
	pxc8035   = topology.CapabilitiesFor(topology.PXC, topology.V(8, 0, 35))
	pxc57     = topology.CapabilitiesFor(topology.PXC, topology.V(5, 7, 18))
)

// TestResolveAliasesByCapability: one knob name maps to the flavor/version's variable.
func TestResolveAliasesByCapability(t *testing.T) {
	cases := []struct {
		knob   string
		caps   topology.Capabilities
		vari   string
		key    string
		method Method
	}{
		{"wsrep_slave_threads=8", maria1011, "wsrep_slave_threads", "", MethodSetGlobal},
		{"wsrep_applier_threads=8", maria1011, "wsrep_slave_threads", "", MethodSetGlobal},
		{"applier_threads=8", pxc8035, "wsrep_applier_threads", "", MethodSetGlobal},
		{"wsrep_slave_threads=20", pxc8035, "wsrep_applier_threads", "", MethodSetGlobal},
		{"wsrep_applier_threads=20", pxc57, "wsrep_slave_threads", "", MethodSetGlobal},
		{"replica_parallel_workers=4", maria1011, "slave_parallel_threads", "", MethodApplierRestart},
		{"parallel_workers=4", mysql97, "replica_parallel_workers", "", MethodApplierRestart},
		{"slave_parallel_threads=4", mysql97, "replica_parallel_workers", "", MethodApplierRestart},
		{"replica_parallel_workers=4", mysql8020, "slave_parallel_workers", "", MethodApplierRestart},
		{"fc_limit=64", maria1011, "wsrep_provider_options", "gcs.fc_limit", MethodProvider},
		{"gcs.fc_factor=0.5", pxc8035, "wsrep_provider_options", "gcs.fc_factor", MethodProvider},
		{"evs.send_window=8", maria1011, "wsrep_provider_options", "evs.send_window", MethodProvider},
		{"gr_fc_applier_threshold=250000", mysql97, "group_replication_flow_control_applier_threshold", "", MethodSetGlobal},
		{"group_replication_flow_control_period=2", mysql97, "group_replication_flow_control_period", "", MethodSetGlobal},
		{"group_replication_mode=multi-primary", mysql97, "group_replication_single_primary_mode", "", MethodGroupMode},
		{"innodb_buffer_pool_size=256M", mysql97, "innodb_buffer_pool_size", "", MethodSetGlobal},
		{"max_connections=500", maria1011, "max_connections", "", MethodSetGlobal},
	}
	for _, c := range cases {
		got, err := Resolve(mustKnob(t, c.knob), c.caps)
		if err != nil {
			t.Errorf("%s on %s %s: %v", c.knob, c.caps.Flavor, c.caps.Version, err)
			continue
		}
		if got.Variable != c.vari || got.Key != c.key || got.Method != c.method {
			t.Errorf("%s on %s %s: %+v, want %s/%s %s", c.knob, c.caps.Flavor, c.caps.Version, got, c.vari, c.key, c.method)
		}
	}
	if got, _ := Resolve(mustKnob(t, "innodb_buffer_pool_size=1G"), mysql97); !got.WaitResize {
		t.Errorf("buffer pool does not wait for the resize")
	}
	// The ten GR flow control variables are all in the catalog.
	n := 0
	for _, e := range Catalog {
		if strings.HasPrefix(e.Name, "group_replication_flow_control_") {
			n++
		}
	}
	if n != 10 {
		t.Errorf("%d group_replication_flow_control_* knobs in the catalog, want 10", n)
	}
}

func TestResolveRefusesBadValues(t *testing.T) {
	for _, s := range []string{
		"group_replication_mode=ring", "n2:group_replication_mode=multi-primary", "wsrep_slave_threads=0",
		"gcs.fc_factor=1.5", "fc_limit=abc", "innodb_flush_log_at_trx_commit=4", "innodb_buffer_pool_size=lots",
		"gcs.fc_limit=16;gcache.size=1G", "evs.x=a'b", "parallel_workers=-1",
	} {
		_, err := Resolve(mustKnob(t, s), maria1011)
		var fe *topology.FieldError
		if !errors.As(err, &fe) || fe.Field != "knob" || !strings.Contains(err.Error(), s) {
			t.Errorf("Resolve(%s) = %v, want a knob FieldError naming it", s, err)
		}
	}
}

func TestSQLLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "250000": "250000", "0.5": "0.5", "-1": "-1", "256M": "268435456", "1g": "1073741824", "64K": "65536",
		"ON": "'ON'", "QUOTA": "'QUOTA'", "default": "DEFAULT", "it's": `'it''s'`, `x\', y=1 -- `: `'x\\'', y=1 -- '`, `a\b`: `'a\\b'`, "": "''",
		"gcs.fc_limit=16": "'gcs.fc_limit=16'",
	} {
		if got := SQLLiteral(in); got != want {
			t.Errorf("SQLLiteral(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSame(t *testing.T) {
	for _, p := range [][2]string{{"ON", "1"}, {"1", "ON"}, {"off", "0"}, {"256M", "268435456"}, {"1.0", "1"}, {"0.5", "0.50"}, {"quota", "QUOTA"}, {"single-primary", "single-primary"}, {"yes", "YES"}} {
		if !Same(p[0], p[1]) {
			t.Errorf("Same(%q, %q) = false", p[0], p[1])
		}
	}
	for _, p := range [][2]string{{"200000000", "268435456"}, {"ON", "0"}, {"2", "1"}, {"QUOTA", "DISABLED"}} {
		if Same(p[0], p[1]) {
			t.Errorf("Same(%q, %q) = true", p[0], p[1])
		}
	}
}

func TestMerge(t *testing.T) {
	base := []topology.KnobSetting{mustKnob(t, "sync_binlog=1"), mustKnob(t, "n2:sync_binlog=0"), mustKnob(t, "gcs.fc_limit=16")}
	over := []topology.KnobSetting{mustKnob(t, "sync_binlog=0"), mustKnob(t, "wsrep_slave_threads=8")}
	var got []string
	for _, k := range Merge(base, over) {
		got = append(got, k.String())
	}
	if want := "n2:sync_binlog=0 gcs.fc_limit=16 sync_binlog=0 wsrep_slave_threads=8"; strings.Join(got, " ") != want {
		t.Errorf("Merge = %v, want %s", got, want)
	}
}

// TestPlan: node lists, overrides of a setting for every node by one for a named node,
// aliases that name the same variable twice, unknown nodes.
func TestPlan(t *testing.T) {
	c := &cluster.Cluster{Name: "kx", Spec: topology.Spec{Flavor: topology.MariaDB}, Binaries: &cluster.Binaries{Flavor: topology.MariaDB, Version: topology.V(10, 11, 19)}}
	for i := 1; i <= 3; i++ {
		c.Nodes = append(c.Nodes, &cluster.Node{Name: topology.NodeName(i)})
	}
	plan, err := Plan(c, []topology.KnobSetting{mustKnob(t, "n2:wsrep_slave_threads=4"), mustKnob(t, "applier_threads=8"), mustKnob(t, "n1,n3:sync_binlog=0")})
	if err != nil {
		t.Fatal(err)
	}
	show := func(n string) string {
		var s []string
		for _, t := range plan[n] {
			s = append(s, t.Label()+"="+t.Value)
		}
		return strings.Join(s, " ")
	}
	if show("n1") != "wsrep_slave_threads=8 sync_binlog=0" || show("n2") != "wsrep_slave_threads=4" || show("n3") != "wsrep_slave_threads=8 sync_binlog=0" {
		t.Errorf("plan n1 %q n2 %q n3 %q", show("n1"), show("n2"), show("n3"))
	}
	for _, bad := range [][]string{{"n5:sync_binlog=1"}, {"wsrep_slave_threads=4", "applier_threads=8"}, {"n1:fc_limit=8", "n1:gcs.fc_limit=9"}} {
		var ks []topology.KnobSetting
		for _, s := range bad {
			ks = append(ks, mustKnob(t, s))
		}
		if _, err := Plan(c, ks); err == nil {
			t.Errorf("Plan(%v) succeeded", bad)
		}
	}
}
