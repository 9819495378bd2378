package topology

import (
	"crypto/sha1"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

func init() {
	RegisterKind(KindDef{
		Kind: Group, Existing: true, Order: 40,
		Summary: "MySQL Group Replication, single- or multi-primary",
		Defaults: func(s *Spec) {
			if s.Group.Mode == "" {
				s.Group.Mode = GroupSinglePrimary
			}
		},
		// Its flavors and member count are a group's own words, before the common checks.
		Precheck: func(s *Spec) error { return s.validateGroup() },
		Flavors:  []Flavor{Percona},
		Plan: func(spec Spec, caps Capabilities, addr Addr) (Plan, error) {
			if !caps.GroupReplication {
				return Plan{}, &FieldError{"kind", spec.Kind, fmt.Sprintf("%s %s has no Group Replication plugin", caps.Flavor, caps.Version)}
			}
			return planGroup(spec, caps, addr), nil
		},
		Samplers:       []string{"heartbeat", "gtid", "group", "host"},
		AutoWriter:     func(s Spec) bool { return s.Group.Mode != GroupMultiPrimary },
		NoSingleWriter: groupNoSingleWriter,
		MemberWord:     "member",
		ConflictErrors: func(Spec) ([]uint16, string) {
			return GroupConflictErrors, "certification failures (3101, 1180)"
		},
		// Measured on MySQL 9.7: a clean shutdown takes 6 s (3 s leaving the group), then
		// 2-3 s to start and rejoin.
		Deploy:         func(Spec) (time.Duration, time.Duration) { return 5 * time.Second, 3 * time.Second },
		RestartPerNode: 9 * time.Second,
	})
}

// GroupConflictErrors are what concurrent writes on several group members cause by design:
// 3101 (ER_TRANSACTION_ROLLBACK_DURING_COMMIT: certification failed) and 1180 (the
// rollback reported at commit).
var GroupConflictErrors = []uint16{3101, 1180}

func groupNoSingleWriter(s Spec) string {
	if s.Group.Mode == GroupMultiPrimary {
		return "a multi-primary group takes writes on every member: there is no single writer to follow"
	}
	return ""
}

// Group Replication modes (GroupOptions.Mode).
const (
	GroupSinglePrimary = "single-primary" // one primary accepts writes, the others are read-only secondaries
	GroupMultiPrimary  = "multi-primary"  // every member accepts writes; conflicts are found at certification
)

// MinGroupMembers is the smallest group habench deploys: three members tolerate the loss of
// one (a majority of 3 is 2). Group Replication itself allows 1 to 9 members.
const MinGroupMembers = 3

// GroupOptions configure a Group Replication topology (kind group).
type GroupOptions struct {
	// Mode is single-primary (default) or multi-primary.
	Mode string `json:"mode,omitempty" yaml:"mode,omitempty"`
}

// GroupName is the group_replication_group_name of cluster name: a UUID derived
// deterministically from the name (SHA-1 of "habench-group:"+name, formatted as an RFC 4122
// version-5 UUID), so a redeploy of the same name forms the same group name and two
// clusters never share one.
func GroupName(cluster string) string {
	h := sha1.Sum([]byte("habench-group:" + cluster))
	h[6] = h[6]&0x0f | 0x50 // version 5
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// GroupPort is the port of a member's group communication endpoint
// (group_replication_local_address) for a server listening on sqlPort: the conventional
// 33061 for a server on 3306 (its own address in a network namespace), else sqlPort+10000
// (sqlPort-10000 above 55535), so members sharing 127.0.0.1 do not collide.
func GroupPort(sqlPort int) int {
	switch {
	case sqlPort == 3306:
		return 33061
	case sqlPort+10000 <= 65535:
		return sqlPort + 10000
	}
	return sqlPort - 10000
}

// planGroup: every node is a Group Replication member. n1 bootstraps the group, the others
// join one at a time; in single-primary mode n1 is the primary (the bootstrapping member
// is elected), in multi-primary mode every member is a primary.
//
// Per-node options (group_replication_* with the loose_ prefix, so a server that has not
// loaded the plugin yet, or a datadir initialiser, does not refuse them):
// plugin_load_add=group_replication.so, group_name (GroupName), local_address
// host:GroupPort, group_seeds (every member), start_on_boot OFF, bootstrap_group OFF,
// single_primary_mode and enforce_update_everywhere_checks per mode,
// recovery_get_public_key ON (caching_sha2_password without TLS), and
// disabled_storage_engines (GR needs InnoDB: a MyISAM table could not be certified). Before
// 8.0.21 binlog_checksum=NONE, before 8.0.2 transaction_write_set_extraction=XXHASH64 and
// TABLE replication repositories.
//
// Steps, member by member (a member's steps need only its own server up, so n1
// bootstraps while the others may still be starting; StaggerStarts): (not binlogged) create the users
// and point the group_replication_recovery channel at the repl user (CHANGE REPLICATION
// SOURCE or CHANGE MASTER ... FOR CHANNEL by capability), and where
// Capabilities.GRFlowControlStats install component_group_replication_flow_control_stats
// (an already installed component counts as done); then n1 runs
// group_replication_bootstrap_group=ON, START GROUP_REPLICATION, bootstrap_group=OFF, and
// each joiner START GROUP_REPLICATION, one member at a time: each of these steps waits
// until the member is ONLINE (WaitGroupOnline). They are
// Background steps: START GROUP_REPLICATION returns about 1 s after the member is ONLINE
// (MySQL 9.7.4), and the next member need not wait for that.
func planGroup(spec Spec, caps Capabilities, addr Addr) Plan {
	multi := spec.Group.Mode == GroupMultiPrimary
	var seeds []string
	for i := 1; i <= spec.Nodes; i++ {
		h, p := addr(NodeName(i))
		seeds = append(seeds, groupAddr(h, p))
	}
	p := Plan{StaggerStarts: true}
	for i := 1; i <= spec.Nodes; i++ {
		name := NodeName(i)
		n := NodePlan{Name: name, Role: RoleSecondary, ServerID: i}
		if i == 1 || multi {
			n.Role = RolePrimary
		}
		host, port := addr(name)
		n.Options = baseOptions(spec, caps, i)
		n.Options = append(n.Options, groupOptions(spec, caps, groupAddr(host, port), strings.Join(seeds, ","))...)
		// A member starts read-only: until START GROUP_REPLICATION makes it the primary
		// (the plugin lifts super_read_only there and keeps it on secondaries), nothing
		// can commit a transaction the group does not have, which would keep the member
		// from rejoining ("more executed transactions than those present in the group").
		n.Options = append(n.Options, Option{"super_read_only", "ON"})
		n.Options = append(n.Options, userOptions(spec)...)
		p.Nodes = append(p.Nodes, n)
	}
	for i, n := range p.Nodes {
		sql := append([]string{"SET GLOBAL super_read_only=OFF"}, groupUsersSQL(spec, caps)...)
		sql = append(sql, caps.ChangeGroupRecovery(ReplUser, spec.Credentials.ReplPass()))
		p.Steps = append(p.Steps, Step{Node: n.Name, Desc: "create users and the recovery channel", SQL: sql})
		if caps.GRFlowControlStats {
			p.Steps = append(p.Steps, Step{
				Node: n.Name, Desc: "install the flow-control stats component",
				SQL:          []string{"SET SESSION sql_log_bin=0", "INSTALL COMPONENT '" + GRFlowControlComponent + "'", "SET SESSION sql_log_bin=1"},
				IgnoreErrors: []uint16{ErComponentsCantLoad},
			})
		}
		p.Steps = append(p.Steps, Step{Node: n.Name, Desc: "read-only until it joins", SQL: []string{"SET GLOBAL super_read_only=ON"}})
		if i == 0 {
			p.Steps = append(p.Steps, Step{
				Node: n.Name, Desc: "bootstrap the group",
				SQL: []string{
					"SET GLOBAL group_replication_bootstrap_group=ON",
					"START GROUP_REPLICATION",
					"SET GLOBAL group_replication_bootstrap_group=OFF",
				},
				Wait:       WaitGroupOnline,
				Background: true,
			})
			continue
		}
		p.Steps = append(p.Steps, Step{Node: n.Name, Desc: "join the group", SQL: []string{"START GROUP_REPLICATION"}, Wait: WaitGroupOnline, Background: true})
	}
	return p
}

// GRFlowControlComponent is the URN of the component that adds the Gr_flow_control_*
// status variables (MySQL community >= 9.7.0).
const GRFlowControlComponent = "file://component_group_replication_flow_control_stats"

// ErComponentsCantLoad is ER_COMPONENTS_CANT_LOAD (3529), what INSTALL COMPONENT returns
// for a component that is already installed (and for one that cannot be loaded at all: the
// provider checks after the deploy that the component's status variables exist).
const ErComponentsCantLoad = 3529

func groupAddr(host string, port int) string {
	return host + ":" + strconv.Itoa(GroupPort(port))
}

// groupOptions are the server options of one member (see planGroup).
func groupOptions(spec Spec, caps Capabilities, local, seeds string) []Option {
	multi := spec.Group.Mode == GroupMultiPrimary
	onOff := func(b bool) string {
		if b {
			return "ON"
		}
		return "OFF"
	}
	plugins := "group_replication.so"
	if caps.Clone {
		// A member can be rebuilt by CLONE INSTANCE (cluster.CloneNode), and distributed
		// recovery may clone (group_replication_clone_threshold).
		plugins += ";mysql_clone.so"
	}
	o := []Option{
		{"plugin_load_add", plugins},
		{"disabled_storage_engines", "MyISAM,BLACKHOLE,FEDERATED,ARCHIVE,MEMORY"},
	}
	if caps.GRNeedsChecksumNone {
		o = append(o, Option{"binlog_checksum", "NONE"})
	}
	if caps.GRNeedsLegacyRepos {
		o = append(o,
			Option{"transaction_write_set_extraction", "XXHASH64"},
			Option{"master_info_repository", "TABLE"},
			Option{"relay_log_info_repository", "TABLE"})
	}
	o = append(o,
		Option{"loose_group_replication_group_name", GroupName(spec.Name)},
		Option{"loose_group_replication_local_address", local},
		Option{"loose_group_replication_group_seeds", seeds},
		Option{"loose_group_replication_start_on_boot", "OFF"},
		Option{"loose_group_replication_bootstrap_group", "OFF"},
		Option{"loose_group_replication_single_primary_mode", onOff(!multi)},
		Option{"loose_group_replication_enforce_update_everywhere_checks", onOff(multi)},
	)
	if caps.CachingSHA2 {
		o = append(o, Option{"loose_group_replication_recovery_get_public_key", "ON"})
	}
	if spec.IsHosts() {
		// The default allowlist (AUTOMATIC) admits private networks only; a user's hosts
		// may have any address: the members' own, and loopback.
		o = append(o, Option{"loose_group_replication_ip_allowlist", groupAllowlist(seeds)})
	}
	return o
}

// groupAllowlist is the members' addresses of seeds (host:port,...), then 127.0.0.1/8.
// Pure.
func groupAllowlist(seeds string) string {
	var hosts []string
	for _, s := range strings.Split(seeds, ",") {
		if i := strings.LastIndexByte(s, ':'); i > 0 && !slices.Contains(hosts, s[:i]) {
			hosts = append(hosts, s[:i])
		}
	}
	return strings.Join(append(hosts, "127.0.0.1/8"), ",")
}

// groupUsersSQL is usersSQL with the privileges a Group Replication recovery user needs:
// REPLICATION SLAVE, GROUP_REPLICATION_STREAM where it exists (8.0.27+; needed with
// group_replication_communication_stack=MYSQL), and BACKUP_ADMIN where the clone plugin
// exists (a donor's side of a clone).
func groupUsersSQL(spec Spec, caps Capabilities) []string {
	sql := usersSQL(spec, caps)
	var grants []string
	if caps.GRStreamPrivilege {
		grants = append(grants, fmt.Sprintf("GRANT GROUP_REPLICATION_STREAM ON *.* TO '%s'@'%%'", ReplUser))
	}
	if caps.Clone {
		// A clone's donor side: the recipient connects as the recovery user.
		grants = append(grants, fmt.Sprintf("GRANT BACKUP_ADMIN ON *.* TO '%s'@'%%'", ReplUser))
	}
	if len(grants) == 0 {
		return sql
	}
	// Before the trailing SET SESSION sql_log_bin=1.
	return slices.Concat(sql[:len(sql)-1:len(sql)-1], grants, sql[len(sql)-1:])
}

// ChangeGroupRecovery renders the statement that sets the credentials of the
// group_replication_recovery channel (distributed recovery): CHANGE REPLICATION SOURCE TO
// SOURCE_USER=..., SOURCE_PASSWORD=... FOR CHANNEL 'group_replication_recovery' on
// MySQL >= 8.0.23, CHANGE MASTER TO MASTER_USER=..., MASTER_PASSWORD=... FOR CHANNEL
// before. The public key for caching_sha2_password is requested with
// group_replication_recovery_get_public_key (an option, see planGroup): MySQL 9.7 refuses
// GET_SOURCE_PUBLIC_KEY on this channel (error 3139).
func (c Capabilities) ChangeGroupRecovery(user, password string) string {
	if c.SourceTerms {
		return fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_USER=%s, SOURCE_PASSWORD=%s FOR CHANNEL 'group_replication_recovery'", quoteString(user), quoteString(password))
	}
	return fmt.Sprintf("CHANGE MASTER TO MASTER_USER=%s, MASTER_PASSWORD=%s FOR CHANNEL 'group_replication_recovery'", quoteString(user), quoteString(password))
}

// validateGroup checks the group-specific fields of spec (kind group).
func (s *Spec) validateGroup() error {
	switch s.Flavor {
	case MySQL, Percona:
	case MariaDB:
		return &FieldError{"flavor", s.Flavor, "MariaDB has no Group Replication; use kind galera for a virtually synchronous MariaDB cluster"}
	default:
		return &FieldError{"flavor", s.Flavor, "Group Replication needs mysql or percona"}
	}
	if s.Nodes < MinGroupMembers || s.Nodes > MaxNodes {
		return &FieldError{"nodes", s.Nodes, fmt.Sprintf("a group needs %d to %d members", MinGroupMembers, MaxNodes)}
	}
	switch s.Group.Mode {
	case GroupSinglePrimary, GroupMultiPrimary:
	default:
		return &FieldError{"group.mode", s.Group.Mode, "want single-primary or multi-primary"}
	}
	for k, v := range s.Options {
		name := strings.TrimPrefix(strings.ReplaceAll(k, "-", "_"), "loose_")
		switch name {
		case "group_replication_communication_stack":
			if !strings.EqualFold(strings.TrimSpace(v), "XCOM") {
				// The MYSQL stack talks over the SQL port: group_replication_local_address
				// and group_seeds would have to name SQL ports, not the XCom port habench sets.
				return &FieldError{"options." + k, v, "habench sets group_replication_local_address and group_seeds for the XCOM stack; the MYSQL communication stack is not supported"}
			}
		case "group_replication_single_primary_mode", "group_replication_enforce_update_everywhere_checks":
			return &FieldError{"options", k, "set by group.mode (single-primary or multi-primary)"}
		case "group_replication_group_name", "group_replication_local_address", "group_replication_group_seeds",
			"group_replication_start_on_boot", "group_replication_bootstrap_group":
			return &FieldError{"options", k, "set by habench for every group member (group identity, addresses, bootstrap); not overridable"}
		}
	}
	return nil
}
