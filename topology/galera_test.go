package topology

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseProviderOptions(t *testing.T) {
	got, err := ParseProviderOptions(" gcs.fc_limit=16; gcs.fc_factor = 0.8 ;; evs.suspect_timeout=PT5S;")
	want := []ProviderOption{{"gcs.fc_limit", "16"}, {"gcs.fc_factor", "0.8"}, {"evs.suspect_timeout", "PT5S"}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("parse: %v %v, want %v", got, err, want)
	}
	if got, err := ParseProviderOptions(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, bad := range []string{
		"gcs.fc_limit",                     // no =
		"=16",                              // no key
		"gcs.fc_limit=",                    // no value
		"gcs.fc_limit=1 6",                 // white space in the value
		"gcs.fc_limit=16; gcs.fc_limit=32", // twice
		"gcs fc=1",                         // not a name
		`gcs.fc_limit="16"`,                // quotes
		"gcache.size=1G # big",             // comment character
	} {
		_, err := ParseProviderOptions(bad)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "options.wsrep_provider_options" || fe.Value != bad {
			t.Errorf("%q: got %v, want a FieldError on options.wsrep_provider_options with the value", bad, err)
		}
	}
}

func TestMergeProviderOptions(t *testing.T) {
	base := []ProviderOption{{"gmcast.listen_addr", "tcp://10.0.0.1:4567"}, {"ist.recv_addr", "10.0.0.1:4568"}}
	got, err := MergeProviderOptions(base, "gcs.fc_limit=16; ist.recv_addr=10.0.0.9:5000; gcs.fc_factor=0.8")
	want := []ProviderOption{{"gmcast.listen_addr", "tcp://10.0.0.1:4567"}, {"ist.recv_addr", "10.0.0.9:5000"}, {"gcs.fc_limit", "16"}, {"gcs.fc_factor", "0.8"}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("merge: %v %v, want %v", got, err, want)
	}
	if base[1].Value != "10.0.0.1:4568" {
		t.Error("merge changed its base")
	}
	if got, _ := MergeProviderOptions(base, ""); !slices.Equal(got, base) {
		t.Errorf("merge with nothing: %v", got)
	}
	if _, err := MergeProviderOptions(base, "gcs.fc_limit"); err == nil {
		t.Error("malformed user options accepted")
	}
	if s := FormatProviderOptions(want[:2]); s != `"gmcast.listen_addr=tcp://10.0.0.1:4567;ist.recv_addr=10.0.0.9:5000"` {
		t.Errorf("format: %s", s)
	}
}

func galeraSpec() Spec {
	s := Spec{Name: "g1", Kind: Galera, Nodes: 3, Flavor: MariaDB}
	s.Defaults()
	return s
}

func TestGaleraPlan(t *testing.T) {
	s := galeraSpec()
	s.Options = map[string]string{"wsrep_provider_options": "gcs.fc_limit=1", "wsrep_applier_threads": "4", "sync_binlog": "0"}
	caps := CapabilitiesFor(MariaDB, V(10, 11, 19))
	caps.WsrepProvider = "/opt/galera/libgalera_smm.so"
	p, err := BuildPlan(s, caps, addrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 3 {
		t.Fatalf("%d nodes", len(p.Nodes))
	}
	for i, n := range p.Nodes {
		if n.Role != RoleNode {
			t.Errorf("%s role %s, want node", n.Name, n.Role)
		}
		host := "10.233.1." + n.Name[1:]
		for name, want := range map[string]string{
			"wsrep_on": "ON", "wsrep_provider": "/opt/galera/libgalera_smm.so", "wsrep_cluster_name": "g1",
			"wsrep_cluster_address": "gcomm://10.233.1.1:4567,10.233.1.2:4567,10.233.1.3:4567",
			"wsrep_node_name":       n.Name, "wsrep_node_address": host + ":4567", "wsrep_sst_method": "rsync",
			"wsrep_sst_receive_address": host + ":4444", "binlog_format": "ROW", "innodb_autoinc_lock_mode": "2",
			"default_storage_engine": "InnoDB", "log_slave_updates": "ON", "wsrep_gtid_mode": "ON",
			"wsrep_gtid_domain_id": strconv.Itoa(WsrepGTIDDomain("g1")), "gtid_domain_id": n.Name[1:], "sync_binlog": "0",
			// MariaDB names the applier threads wsrep_slave_threads (a user's
			// wsrep_applier_threads is renamed).
			"wsrep_slave_threads":    "4",
			"wsrep_provider_options": `"gmcast.listen_addr=tcp://` + host + `:4567;ist.recv_addr=` + host + `:4568;gcs.fc_limit=1"`,
		} {
			if v, _ := opt(n, name); v != want {
				t.Errorf("%s: %s = %q, want %q", n.Name, name, v, want)
			}
		}
		if _, ok := opt(n, "wsrep_applier_threads"); ok {
			t.Errorf("%s: wsrep_applier_threads written for MariaDB 10.11", n.Name)
		}
		if i == 0 != slices.Contains(n.StartArgs, "--wsrep-new-cluster") {
			t.Errorf("%s start args %v", n.Name, n.StartArgs)
		}
		if i > 0 != n.EmptyDatadir {
			t.Errorf("%s EmptyDatadir %v", n.Name, n.EmptyDatadir)
		}
		for _, o := range n.Options {
			if strings.Contains(o.Value, "new-cluster") || strings.Contains(o.Value, "join_retrans") {
				t.Errorf("%s: deploy-only setting in the option file: %v", n.Name, o)
			}
		}
		// The deploy starts with a short join retransmission period, on top of the merged options.
		if a := n.StartArgs[len(n.StartArgs)-1]; !strings.HasPrefix(a, "--wsrep-provider-options=gmcast.listen_addr=") || !strings.HasSuffix(a, ";gcs.fc_limit=1;evs.join_retrans_period=PT0.1S") {
			t.Errorf("%s start provider options %q", n.Name, a)
		}
	}
	// Steps: bootstrap n1, users on n1, then n2 and n3 one after the other, each waiting for
	// a growing Primary component; then the join period goes back to the default.
	var desc []string
	for _, st := range p.Steps {
		desc = append(desc, st.Node+":"+st.Desc)
	}
	wantDesc := []string{"n1:bootstrap a new cluster", "n1:create users", "n2:join (state transfer by rsync)", "n3:join (state transfer by rsync)",
		"n1:restore evs.join_retrans_period", "n2:restore evs.join_retrans_period", "n3:restore evs.join_retrans_period"}
	if !slices.Equal(desc, wantDesc) {
		t.Fatalf("steps %v, want %v", desc, wantDesc)
	}
	for i, size := range []int{1, 0, 2, 3} {
		st := p.Steps[i]
		if st.ClusterSize != size || (size > 0) != (st.Start && st.Wait == WaitSynced) {
			t.Errorf("step %d %+v: want start and a Synced wait for size %d", i, st, size)
		}
	}
	if !p.StartedBySteps("n3") || p.StartedBySteps("n9") {
		t.Error("StartedBySteps")
	}
	if last := p.Steps[6].SQL; len(last) != 1 || last[0] != "SET GLOBAL wsrep_provider_options='evs.join_retrans_period=PT1S'" {
		t.Errorf("restore SQL %v", last)
	}
	// MariaDB 11 (provider options as system variables) restores it another way.
	if p11, _ := BuildPlan(s, CapabilitiesFor(MariaDB, V(11, 8, 9)), addrs); p11.Steps[6].SQL[0] != "SET GLOBAL wsrep_provider_evs_join_retrans_period=1" {
		t.Errorf("11.8 restore SQL %v", p11.Steps[6].SQL)
	}
	if got := CapabilitiesFor(MariaDB, V(11, 8, 9)).SetProviderOption("gcs.fc_limit", "64"); got != "SET GLOBAL wsrep_provider_gcs_fc_limit=64" {
		t.Errorf("11.8 fc_limit: %s", got)
	}
	if got := CapabilitiesFor(MariaDB, V(11, 8, 9)).SetProviderOption("gmcast.isolate", "yes"); got != "SET GLOBAL wsrep_provider_gmcast_isolate='yes'" {
		t.Errorf("11.8 string option: %s", got)
	}
	if strings.Contains(strings.Join(p.Steps[1].SQL, ";"), "sql_log_bin=0") {
		t.Errorf("galera users must replicate: %v", p.Steps[1].SQL)
	}

	// A user's own join period: no deploy override, no restore step.
	s.Options = map[string]string{"wsrep_provider_options": "evs.join_retrans_period=PT2S"}
	p, _ = BuildPlan(s, caps, addrs)
	if len(p.Steps) != 4 || len(p.Nodes[1].StartArgs) != 0 {
		t.Errorf("user join period: steps %d, n2 start args %v", len(p.Steps), p.Nodes[1].StartArgs)
	}

	// PXC 8.0.26+: wsrep_applier_threads; mariabackup SST gets credentials.
	s.Options = map[string]string{"wsrep_slave_threads": "8"}
	s.Galera.SST = SSTMariabackup
	p, _ = BuildPlan(s, CapabilitiesFor(PXC, V(8, 0, 36)), addrs)
	if v, _ := opt(p.Nodes[1], "wsrep_applier_threads"); v != "8" {
		t.Errorf("PXC 8.0.36 applier threads: %q", v)
	}
	p, _ = BuildPlan(s, CapabilitiesFor(MariaDB, V(10, 5, 9)), addrs)
	if v, _ := opt(p.Nodes[1], "wsrep_provider"); v != DefaultWsrepProvider {
		t.Errorf("default provider %q", v)
	}
	if v, _ := opt(p.Nodes[1], "wsrep_sst_auth"); v != "root:" {
		t.Errorf("mariabackup sst auth %q", v)
	}
	// PXC: MySQL GTIDs, no MariaDB wsrep GTID options.
	pxc := CapabilitiesFor(PXC, V(8, 0, 36))
	if !pxc.PXCStrictMode || pxc.WsrepApplierThreadsVar() != "wsrep_applier_threads" || CapabilitiesFor(PXC, V(8, 0, 25)).WsrepApplierThreadsVar() != "wsrep_slave_threads" {
		t.Errorf("PXC capabilities %+v", pxc)
	}
	p, _ = BuildPlan(s, pxc, addrs)
	if v, _ := opt(p.Nodes[0], "gtid_mode"); v != "ON" {
		t.Errorf("PXC gtid_mode %q", v)
	}
	if _, ok := opt(p.Nodes[0], "wsrep_gtid_mode"); ok {
		t.Error("PXC plan sets wsrep_gtid_mode")
	}
}

func TestGaleraPlanLoopbackPorts(t *testing.T) {
	loop := func(node string) (string, int) { return "127.0.0.1", 23305 + int(node[1]-'0') }
	p, err := BuildPlan(galeraSpec(), CapabilitiesFor(MariaDB, V(10, 11, 19)), loop)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := opt(p.Nodes[1], "wsrep_cluster_address"); v != "gcomm://127.0.0.1:33306,127.0.0.1:33307,127.0.0.1:33308" {
		t.Errorf("loopback cluster address %q", v)
	}
	if v, _ := opt(p.Nodes[1], "wsrep_sst_receive_address"); v != "127.0.0.1:53307" {
		t.Errorf("loopback SST address %q", v)
	}
	if v, _ := opt(p.Nodes[1], "wsrep_provider_options"); !strings.Contains(v, "ist.recv_addr=127.0.0.1:43307") {
		t.Errorf("loopback provider options %q", v)
	}
	high := func(node string) (string, int) { return "127.0.0.1", 40000 + int(node[1]-'0') }
	var fe *FieldError
	if _, err := BuildPlan(galeraSpec(), CapabilitiesFor(MariaDB, V(10, 11, 19)), high); !errors.As(err, &fe) || fe.Field != "port" {
		t.Errorf("ports past 65535: %v", err)
	}
}

func TestGaleraValidate(t *testing.T) {
	if s := galeraSpec(); s.Validate() != nil || s.Galera.SST != SSTRsync {
		t.Fatalf("valid galera spec: %v, sst %q", s.Validate(), s.Galera.SST)
	}
	cases := []struct {
		mut   func(*Spec)
		field string
	}{
		{func(s *Spec) { s.Nodes = 2 }, "nodes"},
		{func(s *Spec) { s.Nodes = 1 }, "nodes"},
		{func(s *Spec) { s.Nodes = 10 }, "nodes"},
		{func(s *Spec) { s.Flavor = MySQL }, "flavor"},
		{func(s *Spec) { s.Galera.SST = "xtrabackup" }, "galera.sst"},
		{func(s *Spec) { s.Options = map[string]string{"wsrep_provider_options": "gcs.fc_limit"} }, "options.wsrep_provider_options"},
		{func(s *Spec) { s.Options = map[string]string{"wsrep-provider-options": "gcs.fc_limit=1;;x"} }, "options.wsrep_provider_options"},
		{func(s *Spec) { s.Options = map[string]string{"wsrep_cluster_address": "gcomm://"} }, "options"},
		{func(s *Spec) { s.Options = map[string]string{"wsrep_sst_method": "mysqldump"} }, "options"},
		{func(s *Spec) { s.Kind = Async; s.Galera.SST = "rsync" }, "galera.sst"},
	}
	for i, c := range cases {
		s := galeraSpec()
		c.mut(&s)
		err := s.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("case %d: got %v, want a FieldError on %s", i, err, c.field)
		}
	}
	s := galeraSpec()
	s.Options = map[string]string{"wsrep_provider_options": "gcs.fc_limit=16; gcs.fc_factor=0.8", "wsrep_slave_threads": "8"}
	if err := s.Validate(); err != nil {
		t.Errorf("ordinary galera options refused: %v", err)
	}
	y, err := ParseSpecYAML([]byte("name: g2\nkind: galera\nflavor: mariadb\ngalera:\n  sst: mariabackup\n"))
	if err != nil || y.Galera.SST != SSTMariabackup || y.Nodes != 3 || y.Validate() != nil {
		t.Errorf("yaml: %+v %v", y, err)
	}
}

func TestWsrepGTIDDomain(t *testing.T) {
	a, b := WsrepGTIDDomain("g1"), WsrepGTIDDomain("g2")
	if a == b || a < 1000 || a > 9999 || a != WsrepGTIDDomain("g1") {
		t.Errorf("domains %d %d", a, b)
	}
}
