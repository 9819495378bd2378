package topology

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func groupSpec(mode string) Spec {
	s := Spec{Name: "g1", Kind: Group, Nodes: 3, Flavor: MySQL, Group: GroupOptions{Mode: mode},
		Options: map[string]string{"group_replication_flow_control_applier_threshold": "1"}}
	s.Defaults()
	return s
}

// opt returns the last value of option name (last wins, as in an option file).
func opt(n NodePlan, name string) (string, bool) {
	v, ok := "", false
	for _, o := range n.Options {
		if o.Name == name {
			v, ok = o.Value, true
		}
	}
	return v, ok
}

func sqlOf(p Plan, node string) string {
	var all []string
	for _, st := range p.Steps {
		if st.Node == node {
			all = append(all, st.SQL...)
		}
	}
	return strings.Join(all, ";\n")
}

func TestGroupName(t *testing.T) {
	a, b := GroupName("gr1"), GroupName("gr2")
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(a) || !uuid.MatchString(b) {
		t.Errorf("not version-5 UUIDs: %s %s", a, b)
	}
	if a == b || a != GroupName("gr1") {
		t.Errorf("GroupName not deterministic per name: %s %s %s", a, b, GroupName("gr1"))
	}
	for in, want := range map[int]int{3306: 33061, 23306: 33306, 60000: 50000} {
		if got := GroupPort(in); got != want {
			t.Errorf("GroupPort(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestValidateGroup(t *testing.T) {
	if s := groupSpec(""); s.Validate() != nil || s.Group.Mode != GroupSinglePrimary {
		t.Fatalf("default group spec: %v, mode %q", s.Validate(), s.Group.Mode)
	}
	if s := groupSpec(GroupMultiPrimary); s.Validate() != nil {
		t.Fatalf("multi-primary: %v", s.Validate())
	}
	s := groupSpec("")
	s.Flavor = Percona
	if err := s.Validate(); err != nil {
		t.Errorf("percona group refused: %v", err)
	}
	cases := []struct {
		mut    func(*Spec)
		field  string
		reason string
	}{
		{func(s *Spec) { s.Flavor = MariaDB }, "flavor", "MariaDB has no Group Replication"},
		{func(s *Spec) { s.Nodes = 2 }, "nodes", "3 to 9"},
		{func(s *Spec) { s.Nodes = 10 }, "nodes", "3 to 9"},
		{func(s *Spec) { s.Group.Mode = "ring" }, "group.mode", "single-primary or multi-primary"},
		{func(s *Spec) { s.Options = map[string]string{"loose-group_replication_single_primary_mode": "OFF"} }, "options", "group.mode"},
		{func(s *Spec) { s.Options = map[string]string{"group_replication_group_seeds": "x"} }, "options", "not overridable"},
		{func(s *Spec) { s.Options = map[string]string{"group-replication-communication-stack": "mysql"} }, "options.group-replication-communication-stack", "MYSQL communication stack"},
	}
	for i, c := range cases {
		s := groupSpec("")
		c.mut(&s)
		err := s.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Reason, c.reason) {
			t.Errorf("case %d: got %v, want a FieldError on %s saying %q", i, err, c.field, c.reason)
		}
	}
	s = groupSpec("")
	s.Options = map[string]string{"group_replication_communication_stack": "XCOM"}
	if err := s.Validate(); err != nil {
		t.Errorf("communication stack XCOM refused: %v", err)
	}
	// A group: section on another kind is an error, like galera: (not silently ignored).
	g := Spec{Name: "a", Kind: Async, Nodes: 2, Flavor: MySQL, Group: GroupOptions{Mode: GroupMultiPrimary}}
	g.Defaults()
	var fe *FieldError
	if err := g.Validate(); !errors.As(err, &fe) || fe.Field != "group.mode" || fe.Reason != "only for kind group" {
		t.Errorf("async with group.mode: %v, want a FieldError on group.mode", err)
	}
	// Other kinds still refuse percona (no sandbox support outside group).
	a := Spec{Name: "a", Kind: Async, Nodes: 2, Flavor: Percona}
	a.Defaults()
	if err := a.Validate(); err == nil {
		t.Error("async percona accepted")
	}
}

// TestGroupPlanByVersion checks the options and bootstrap steps for the version lines whose
// syntax differs: 9.7 (flow-control component), 8.4, 8.0.30 (CHANGE REPLICATION SOURCE, no
// component), 8.0.22 (CHANGE MASTER ... FOR CHANNEL), 8.0.20 (binlog_checksum=NONE), and
// Percona 8.0.36.
func TestGroupPlanByVersion(t *testing.T) {
	type want struct {
		f                Flavor
		v                Version
		change           string // prefix of the recovery-channel statement
		component        bool
		checksumNone     bool
		streamPrivilege  bool
		legacyRepository bool
	}
	for _, w := range []want{
		{MySQL, V(9, 7, 4), "CHANGE REPLICATION SOURCE TO SOURCE_USER='repl', SOURCE_PASSWORD='repl' FOR CHANNEL 'group_replication_recovery'", true, false, true, false},
		{MySQL, V(8, 4, 3), "CHANGE REPLICATION SOURCE TO SOURCE_USER=", false, false, true, false},
		{MySQL, V(8, 0, 30), "CHANGE REPLICATION SOURCE TO SOURCE_USER=", false, false, true, false},
		{MySQL, V(8, 0, 22), "CHANGE MASTER TO MASTER_USER='repl', MASTER_PASSWORD='repl' FOR CHANNEL 'group_replication_recovery'", false, false, false, false},
		{MySQL, V(8, 0, 20), "CHANGE MASTER TO MASTER_USER=", false, true, false, false},
		{MySQL, V(5, 7, 44), "CHANGE MASTER TO MASTER_USER=", false, true, false, true},
		{Percona, V(8, 0, 36), "CHANGE REPLICATION SOURCE TO SOURCE_USER=", false, false, true, false},
		{Percona, V(9, 7, 0), "CHANGE REPLICATION SOURCE TO SOURCE_USER=", false, false, true, false},
	} {
		caps := CapabilitiesFor(w.f, w.v)
		s := groupSpec("")
		s.Flavor = w.f
		p, err := BuildPlan(s, caps, addrs)
		if err != nil {
			t.Fatalf("%s %s: %v", w.f, w.v, err)
		}
		name := string(w.f) + " " + w.v.String()
		n2 := sqlOf(p, "n2")
		if !strings.Contains(n2, w.change) {
			t.Errorf("%s: recovery channel statement missing %q in\n%s", name, w.change, n2)
		}
		if got := strings.Contains(n2, "INSTALL COMPONENT 'file://component_group_replication_flow_control_stats'"); got != w.component {
			t.Errorf("%s: flow-control component installed = %v, want %v", name, got, w.component)
		}
		if got := strings.Contains(n2, "GROUP_REPLICATION_STREAM"); got != w.streamPrivilege {
			t.Errorf("%s: GROUP_REPLICATION_STREAM grant = %v", name, got)
		}
		plugins, _ := opt(p.Nodes[0], "plugin_load_add")
		if got := strings.Contains(n2, "GRANT BACKUP_ADMIN") && strings.Contains(plugins, "mysql_clone.so"); got != caps.Clone {
			t.Errorf("%s: clone plugin and BACKUP_ADMIN grant = %v, want %v (plugins %q)", name, got, caps.Clone, plugins)
		}
		if _, got := opt(p.Nodes[0], "binlog_checksum"); got != w.checksumNone {
			t.Errorf("%s: binlog_checksum set = %v", name, got)
		}
		if _, got := opt(p.Nodes[0], "transaction_write_set_extraction"); got != w.legacyRepository {
			t.Errorf("%s: transaction_write_set_extraction set = %v", name, got)
		}
		if v, _ := opt(p.Nodes[0], "log_replica_updates"); caps.ReplicaVarNames && v != "ON" {
			t.Errorf("%s: log_replica_updates %q", name, v)
		}
		// Users and the recovery channel are never binlogged: they come before
		// START GROUP_REPLICATION, and with sql_log_bin=0 (after lifting the read-only the
		// member starts with; SET GLOBAL is not binlogged).
		if !strings.HasPrefix(strings.TrimPrefix(n2, "SET GLOBAL super_read_only=OFF;\n"), "SET SESSION sql_log_bin=0") {
			t.Errorf("%s: n2 starts with %q", name, strings.SplitN(n2, ";", 2)[0])
		}
	}
}

func TestGroupPlanSteps(t *testing.T) {
	caps := CapabilitiesFor(MySQL, V(9, 7, 4))
	for _, mode := range []string{GroupSinglePrimary, GroupMultiPrimary} {
		p, err := BuildPlan(groupSpec(mode), caps, addrs)
		if err != nil {
			t.Fatal(err)
		}
		multi := mode == GroupMultiPrimary
		for i, n := range p.Nodes {
			wantRole := RoleSecondary
			if i == 0 || multi {
				wantRole = RolePrimary
			}
			if n.Role != wantRole {
				t.Errorf("%s %s role %s, want %s", mode, n.Name, n.Role, wantRole)
			}
			for k, v := range map[string]string{
				"plugin_load_add":                                          "group_replication.so;mysql_clone.so",
				"loose_group_replication_group_name":                       GroupName("g1"),
				"loose_group_replication_local_address":                    "10.233.1." + n.Name[1:] + ":33061",
				"loose_group_replication_group_seeds":                      "10.233.1.1:33061,10.233.1.2:33061,10.233.1.3:33061",
				"loose_group_replication_start_on_boot":                    "OFF",
				"loose_group_replication_bootstrap_group":                  "OFF",
				"loose_group_replication_single_primary_mode":              map[bool]string{true: "OFF", false: "ON"}[multi],
				"loose_group_replication_enforce_update_everywhere_checks": map[bool]string{true: "ON", false: "OFF"}[multi],
				"loose_group_replication_recovery_get_public_key":          "ON",
				"group_replication_flow_control_applier_threshold":         "1", // the user's option, last
				"gtid_mode": "ON",
			} {
				if got, _ := opt(n, k); got != v {
					t.Errorf("%s %s: %s = %q, want %q", mode, n.Name, k, got, v)
				}
			}
			if v, _ := opt(n, "disabled_storage_engines"); !strings.Contains(v, "MyISAM") {
				t.Errorf("%s: disabled_storage_engines %q", n.Name, v)
			}
			// Read-only until START GROUP_REPLICATION (the plugin lifts it on the primary),
			// so a restarted member cannot commit what the group lacks before it rejoins.
			if v, _ := opt(n, "super_read_only"); v != "ON" {
				t.Errorf("%s: super_read_only %q in the option file, want ON", n.Name, v)
			}
		}
		// Order: per-node setup, then bootstrap on n1, then joins in node order, each
		// waiting for ONLINE.
		var tail []string
		for _, st := range p.Steps {
			if st.Wait == WaitGroupOnline {
				tail = append(tail, st.Node+":"+strings.Join(st.SQL, ";"))
				if !st.Background {
					t.Errorf("%s: START GROUP_REPLICATION step not in the background: %+v", mode, st)
				}
			} else if st.Background {
				t.Errorf("%s: setup step in the background: %+v", mode, st)
			}
			if st.Desc == "install the flow-control stats component" && (len(st.IgnoreErrors) != 1 || st.IgnoreErrors[0] != 3529) {
				t.Errorf("component step not idempotent: %+v", st)
			}
		}
		want := []string{
			"n1:SET GLOBAL group_replication_bootstrap_group=ON;START GROUP_REPLICATION;SET GLOBAL group_replication_bootstrap_group=OFF",
			"n2:START GROUP_REPLICATION", "n3:START GROUP_REPLICATION",
		}
		if strings.Join(tail, "|") != strings.Join(want, "|") {
			t.Errorf("%s: group steps\n%v\nwant\n%v", mode, tail, want)
		}
		if last := p.Steps[len(p.Steps)-1]; last.Node != "n3" || last.Wait != WaitGroupOnline {
			t.Errorf("last step %+v", last)
		}
	}
	// No Group Replication plugin (MySQL before 5.7.17): refused, not planned.
	if _, err := BuildPlan(groupSpec(""), CapabilitiesFor(MySQL, V(5, 7, 16)), addrs); err == nil {
		t.Error("planned a group on MySQL 5.7.16")
	}
}

func TestGroupCapabilityBoundaries(t *testing.T) {
	for _, r := range []struct {
		v    Version
		get  func(Capabilities) bool
		want bool
		what string
	}{
		{V(8, 0, 20), func(c Capabilities) bool { return c.GRNeedsChecksumNone }, true, "binlog_checksum=NONE before 8.0.21"},
		{V(8, 0, 21), func(c Capabilities) bool { return c.GRNeedsChecksumNone }, false, "checksums allowed from 8.0.21"},
		{V(8, 0, 26), func(c Capabilities) bool { return c.GRStreamPrivilege }, false, "no GROUP_REPLICATION_STREAM before 8.0.27"},
		{V(8, 0, 27), func(c Capabilities) bool { return c.GRStreamPrivilege }, true, "GROUP_REPLICATION_STREAM from 8.0.27"},
		{V(8, 0, 12), func(c Capabilities) bool { return c.GRSwitchMode }, false, "no mode switch functions before 8.0.13"},
		{V(8, 0, 13), func(c Capabilities) bool { return c.GRSwitchMode }, true, "mode switch functions from 8.0.13"},
		{V(8, 0, 16), func(c Capabilities) bool { return c.Clone }, false, "no clone plugin before 8.0.17"},
		{V(8, 0, 17), func(c Capabilities) bool { return c.Clone }, true, "clone plugin from 8.0.17"},
		{V(8, 0, 1), func(c Capabilities) bool { return c.GRNeedsLegacyRepos }, true, "write-set extraction explicit before 8.0.2"},
		{V(8, 0, 2), func(c Capabilities) bool { return c.GRNeedsLegacyRepos }, false, "defaults from 8.0.2"},
	} {
		if got := r.get(CapabilitiesFor(MySQL, r.v)); got != r.want {
			t.Errorf("MySQL %s: %v (%s)", r.v, got, r.what)
		}
	}
	if CapabilitiesFor(MariaDB, V(11, 8, 0)).GroupReplication {
		t.Error("MariaDB has Group Replication")
	}
}

func TestGroupSpecYAML(t *testing.T) {
	s, err := ParseSpecYAML([]byte("name: g1\nkind: group\nflavor: mysql\ngroup:\n  mode: multi-primary\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Group.Mode != GroupMultiPrimary || s.Nodes != 3 || s.Validate() != nil {
		t.Errorf("parsed %+v (%v)", s, s.Validate())
	}
	if _, err := ParseSpecYAML([]byte("name: g1\nkind: group\ngroup:\n  mdoe: x\n")); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("unknown group key: %v", err)
	}
}
