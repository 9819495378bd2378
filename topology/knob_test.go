package topology

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseKnob(t *testing.T) {
	cases := []struct {
		in   string
		want KnobSetting
		err  string
	}{
		{"sync_binlog=0", KnobSetting{Name: "sync_binlog", Value: "0"}, ""},
		{"innodb-buffer-pool-size=256M", KnobSetting{Name: "innodb_buffer_pool_size", Value: "256M"}, ""},
		{"n2:wsrep_slave_threads=4", KnobSetting{Nodes: []string{"n2"}, Name: "wsrep_slave_threads", Value: "4"}, ""},
		{"n1,n3:gcs.fc_limit=32", KnobSetting{Nodes: []string{"n1", "n3"}, Name: "gcs.fc_limit", Value: "32"}, ""},
		{"init_connect=''", KnobSetting{Name: "init_connect", Value: ""}, ""},
		{"Group_Replication_Flow_Control_Mode='DISABLED'", KnobSetting{Name: "group_replication_flow_control_mode", Value: "DISABLED"}, ""},
		{"sync_binlog", KnobSetting{}, "want NAME=VALUE"},
		{"sync_binlog=", KnobSetting{}, "empty value"},
		{"x2:sync_binlog=1", KnobSetting{}, `node "x2"`},
		{"n2,n2:sync_binlog=1", KnobSetting{}, "given twice"},
		{"sync binlog=1", KnobSetting{}, "not a variable name"},
		{"1abc=1", KnobSetting{}, "not a variable name"},
		{"a;drop=1", KnobSetting{}, "not a variable name"},
	}
	for _, c := range cases {
		got, err := ParseKnob(c.in)
		if c.err != "" {
			var fe *FieldError
			if err == nil || !errors.As(err, &fe) || fe.Field != "--set" || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.in) {
				t.Errorf("ParseKnob(%q) = %+v, %v; want a --set FieldError naming it with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseKnob(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := ParseKnob(got.String()); err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("round trip of %q: %+v, %v", got.String(), back, err)
		}
	}
}

func TestKnobsFromMapAndCheck(t *testing.T) {
	ks, err := KnobsFromMap(map[string]string{"sync_binlog": "1", "n2:sync_binlog": "0", "gcs.fc_limit": "64"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range ks {
		got = append(got, k.String())
	}
	if want := []string{"gcs.fc_limit=64", "n2:sync_binlog=0", "sync_binlog=1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sorted settings %v, want %v", got, want)
	}
	if !ks[1].AppliesTo("n2") || ks[1].AppliesTo("n1") || !ks[2].AppliesTo("n3") {
		t.Errorf("AppliesTo wrong: %+v", ks)
	}
	for _, dup := range [][]string{{"sync_binlog=1", "sync_binlog=0"}, {"n1:sync_binlog=1", "n1,n2:sync_binlog=0"}, {"sync-binlog=1", "sync_binlog=1"}} {
		var ks []KnobSetting
		for _, s := range dup {
			k, err := ParseKnob(s)
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
		if err := CheckKnobs(ks); err == nil || !strings.Contains(err.Error(), "already set by") {
			t.Errorf("CheckKnobs(%v) = %v, want already set", dup, err)
		}
	}
	if _, err := KnobsFromMap(map[string]string{"n2:bad name": "1"}); err == nil || !strings.Contains(err.Error(), "knobs.n2:bad name") {
		t.Errorf("bad key: %v", err)
	}
	// Variables habench sets for the topology are not knobs (SET GLOBAL server_id works at
	// runtime; port, being read only, would go into the option file and restart the node
	// on another port; a restart with group_replication_bootstrap_group ON forms a second
	// group).
	for _, s := range []string{"server_id=9", "n2:port=3307", "loose-gtid-mode=OFF", "group_replication_group_name=aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
		"n3:group_replication_bootstrap_group=ON", "group_replication_single_primary_mode=OFF"} {
		k, err := ParseKnob(s)
		if err != nil {
			t.Fatal(err)
		}
		var fe *FieldError
		if err := CheckKnobs([]KnobSetting{k}); !errors.As(err, &fe) || fe.Field != "knob" || !strings.Contains(fe.Reason, "not a knob") {
			t.Errorf("CheckKnobs(%s) = %v, want a knob FieldError saying it is not a knob", s, err)
		}
	}
	if err := CheckKnobs([]KnobSetting{{Name: "group_replication_member_weight", Value: "70"}}); err != nil {
		t.Errorf("an ordinary GR variable refused: %v", err)
	}
}

func TestProviderOptionsParseAndMerge(t *testing.T) {
	server := "base_dir = /var/lib/mysql/; base_port = 4567; gcs.fc_debug = 0; gcs.fc_factor = 1.0; gcs.fc_limit = 16; gcs.fc_master_slave = no; repl.causal_read_timeout = PT30S"
	opts, err := ParseShownProviderOptions(server)
	if err != nil || len(opts) != 7 || opts[4] != (ProviderOption{"gcs.fc_limit", "16"}) {
		t.Fatalf("ParseShownProviderOptions = %v, %v", opts, err)
	}
	if v, ok := ProviderOptionValue(server, "gcs.fc_factor"); !ok || v != "1.0" {
		t.Errorf("gcs.fc_factor = %q %v", v, ok)
	}
	if _, ok := ProviderOptionValue(server, "gcs.fc"); ok {
		t.Errorf("prefix matched a key")
	}
	merged, err := MergeProviderOptionString(server, []ProviderOption{{"gcs.fc_limit", "64"}, {"gcache.size", "256M"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "base_dir=/var/lib/mysql/;base_port=4567;gcs.fc_debug=0;gcs.fc_factor=1.0;gcs.fc_limit=64;gcs.fc_master_slave=no;repl.causal_read_timeout=PT30S;gcache.size=256M"
	if merged != want {
		t.Errorf("merge:\n got %s\nwant %s", merged, want)
	}
	if m, _ := MergeProviderOptionString("", []ProviderOption{{"gcs.fc_limit", "8"}}); m != "gcs.fc_limit=8" {
		t.Errorf("merge into empty: %q", m)
	}
	if m, _ := MergeProviderOptionString("gcs.fc_limit=16; gcache.size=1G; gcs.fc_limit=32", []ProviderOption{{"gcs.fc_limit", "64"}}); m != "gcs.fc_limit=64;gcache.size=1G" {
		t.Errorf("merge into a line with the key twice: %q", m)
	}
	if _, err := ParseShownProviderOptions("gcs.fc_limit"); err == nil {
		t.Errorf("a part without = parsed")
	}
}

func TestExistingSpecValidate(t *testing.T) {
	ok := Spec{Name: "ex1", Provider: ProviderExisting, ExistingSpec: ExistingSpec{DSNs: []string{"u:p@tcp(127.0.0.1:3306)/"}}}
	ok.Defaults()
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid existing spec: %v", err)
	}
	if ok.Installation != (Installation{}) || ok.Nodes != 0 {
		t.Errorf("Defaults filled sandbox fields of an existing spec: %+v", ok)
	}
	ref := Spec{Provider: ProviderExisting, ExistingSpec: ExistingSpec{Cluster: "reg1"}}
	ref.Defaults()
	if err := ref.Validate(); err != nil || ref.Name != "reg1" {
		t.Errorf("cluster reference: %v, name %q", err, ref.Name)
	}
	// A group with DR replicas is discovered; Galera with an arbitrator registers as
	// galera (its arbitrator is reported, not managed).
	dr := Spec{Name: "e", Provider: ProviderExisting, Kind: GroupDR, ExistingSpec: ExistingSpec{DSNs: []string{"x"}}}
	dr.Defaults()
	if err := dr.Validate(); err != nil {
		t.Errorf("kind hint group-dr: %v", err)
	}
	arb := Spec{Name: "e", Provider: ProviderExisting, Kind: GaleraArbitrator, ExistingSpec: ExistingSpec{DSNs: []string{"x"}}}
	arb.Defaults()
	if err := arb.Validate(); err == nil || !strings.Contains(err.Error(), "register them as galera") {
		t.Errorf("galera with an arbitrator, existing: %v, want a refusal naming galera", err)
	}
	bad := []struct {
		s     Spec
		field string
	}{
		{Spec{Name: "e", Provider: ProviderExisting}, "dsns"},
		{Spec{Name: "e", Provider: ProviderExisting, ExistingSpec: ExistingSpec{Cluster: "a", DSNs: []string{"x"}}}, "cluster"},
		{Spec{Name: "e", Provider: ProviderExisting, Kind: "ring", ExistingSpec: ExistingSpec{DSNs: []string{"x"}}}, "kind"},
		{Spec{Name: "e", Provider: ProviderExisting, Options: map[string]string{"a": "1"}, ExistingSpec: ExistingSpec{DSNs: []string{"x"}}}, "options"},
		{Spec{Name: "e", Provider: ProviderExisting, Knobs: map[string]string{"x y": "1"}, ExistingSpec: ExistingSpec{DSNs: []string{"x"}}}, "knobs.x y"},
		{Spec{Name: "e", Provider: "cloud"}, "provider"},
		{Spec{Name: "e", Kind: Async, Flavor: MariaDB, ExistingSpec: ExistingSpec{DSNs: []string{"x"}}}, "dsns"},
		{Spec{Name: "e", Kind: Async, Flavor: MariaDB, Knobs: map[string]string{"n1:": "1"}}, "knobs.n1:"},
	}
	for _, b := range bad {
		b.s.Defaults()
		err := b.s.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != b.field {
			t.Errorf("%+v: %v, want a FieldError on %s", b.s, err, b.field)
		}
	}
}

// TestExistingSSHSpec: ssh: in an existing-cluster file parses into SSHSpec; its errors
// name the field (ssh.hosts, ssh.port, ssh.options[i], ...) and the value.
func TestExistingSSHSpec(t *testing.T) {
	s, err := ParseSpecYAML([]byte(`name: ex1
provider: existing
dsns: ["tcp(db1:3306)/", "tcp(db2:3306)/"]
user: u
ssh:
  hosts: [jump-db1, db2.example.com]
  user: root
  port: 2222
  identity: ~/.ssh/id_ed25519
  config: /etc/habench/ssh_config
  options: ["StrictHostKeyChecking=accept-new"]
`))
	if err != nil {
		t.Fatal(err)
	}
	s.Defaults()
	want := SSHSpec{Hosts: []string{"jump-db1", "db2.example.com"}, User: "root", Port: 2222, Identity: "~/.ssh/id_ed25519",
		Config: "/etc/habench/ssh_config", Options: []string{"StrictHostKeyChecking=accept-new"}}
	if err := s.Validate(); err != nil || s.SSH == nil || !reflect.DeepEqual(*s.SSH, want) {
		t.Fatalf("%+v %v", s.SSH, err)
	}
	dsns := ExistingSpec{DSNs: []string{"tcp(a)/", "tcp(b)/"}}
	for _, c := range []struct {
		ssh   SSHSpec
		field string
	}{
		{SSHSpec{Hosts: []string{"a"}}, "ssh.hosts"},
		{SSHSpec{Hosts: []string{"a", "-oProxyCommand=x"}}, "ssh.hosts[1]"},
		{SSHSpec{User: "ro ot"}, "ssh.user"},
		{SSHSpec{Port: 70000}, "ssh.port"},
		{SSHSpec{Options: []string{"NoEquals"}}, "ssh.options[0]"},
	} {
		sp := Spec{Name: "e", Provider: ProviderExisting, ExistingSpec: dsns}
		sp.SSH = &c.ssh
		err := sp.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want a FieldError on %s", c.ssh, err, c.field)
		}
	}
	sb := Spec{Name: "s", Kind: Single, Flavor: MariaDB, ExistingSpec: ExistingSpec{SSH: &SSHSpec{}}}
	sb.Defaults()
	if err := sb.Validate(); err == nil || !strings.Contains(err.Error(), "ssh") {
		t.Errorf("ssh on a sandbox: %v", err)
	}
}
