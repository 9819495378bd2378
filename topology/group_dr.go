package topology

import (
	"fmt"
	"strings"
)

func init() {
	RegisterKind(KindDef{
		Kind: GroupDR, Existing: true, Base: Group, Order: 45, DefaultNodes: GroupDRMembers + 1,
		Summary: "a single-primary Group Replication group (n1-n3) and asynchronous DR replicas (n4...) that follow its primary",
		// The group's defaults (single-primary) come first; without sites the group is
		// one site and the DR replicas another (dc1, dc2), so that links: {inter: 2ms}
		// means the distance to the DR site.
		Defaults: func(s *Spec) {
			if len(s.Sites) == 0 && s.Nodes > GroupDRMembers {
				s.Sites = GroupDRSites(s.Nodes)
			}
		},
		Validate: func(s *Spec) error { return s.validateGroupDR() },
		Plan:     planGroupDR,
		Samplers: []string{"heartbeat", "gtid", "group", "replica", "host"},
		// The group elects a new primary when it loses one: the workers follow it.
		AutoWriter: func(Spec) bool { return true },
		// Group members and DR replicas: neither word fits both.
		MemberWord: "node",
		// The group's estimates (KindDef.Base): measured on MySQL 9.7.4, 3 members and 1
		// DR replica were ready in 6.2 s, as a group of 4 is estimated.
	})
}

// GroupDR is a single-primary Group Replication group (n1..nM, M = GroupDRMembers) with
// one or more asynchronous DR replicas (nM+1..nN) replicating from the group's primary with
// automatic source failover: after a primary change (an election, set_as_primary) the
// replicas follow the new primary by themselves.
const GroupDR Kind = "group-dr"

// GroupDRMembers is how many of a group-dr topology's nodes are group members; the others
// are DR replicas. A group needs three members to survive losing one.
const GroupDRMembers = MinGroupMembers

// Managed source failover weights (asynchronous_connection_failover_add_managed): a DR
// replica prefers the primary and falls back to a secondary, which also has every
// transaction (log_replica_updates), while the group elects a new primary.
const (
	GroupDRPrimaryWeight   = 80
	GroupDRSecondaryWeight = 60
)

// GroupDRRetryCount is SOURCE_RETRY_COUNT of a DR replica's channel: with
// SOURCE_CONNECT_RETRY=1 it gives up on a dead source after about 3 s and fails over to
// the next source of its list (measured on MySQL 9.7.4: connected to a secondary 3.2 s
// after the primary was killed).
const GroupDRRetryCount = 3

// GroupDRMinVersion is the first MySQL with managed (Group Replication) source lists for
// asynchronous connection failover.
var GroupDRMinVersion = V(8, 0, 23)

// GroupDRSites are a group-dr topology's default sites for nodes nodes: dc1 the group's
// members, dc2 the DR replicas.
func GroupDRSites(nodes int) Sites {
	dc1, dc2 := Site{Name: "dc1"}, Site{Name: "dc2"}
	for i := 1; i <= nodes; i++ {
		if IsGroupDRReplica(i) {
			dc2.Nodes = append(dc2.Nodes, NodeName(i))
		} else {
			dc1.Nodes = append(dc1.Nodes, NodeName(i))
		}
	}
	return Sites{dc1, dc2}
}

// IsGroupDRReplica reports whether node i (1-based) of a group-dr topology is a DR replica.
func IsGroupDRReplica(i int) bool { return i > GroupDRMembers }

// validateGroupDR checks a group-dr spec: what a group checks for its members, plus a
// single-primary mode (the replicas follow the one primary) and at least one DR replica.
func (s *Spec) validateGroupDR() error {
	if s.Nodes < GroupDRMembers+1 || s.Nodes > MaxNodes {
		return &FieldError{"nodes", s.Nodes, fmt.Sprintf("group-dr needs %d group members and 1 to %d DR replicas (%d to %d nodes)", GroupDRMembers, MaxNodes-GroupDRMembers, GroupDRMembers+1, MaxNodes)}
	}
	if s.Group.Mode != GroupSinglePrimary {
		return &FieldError{"group.mode", s.Group.Mode, "group-dr needs single-primary: its DR replicas follow the group's one primary"}
	}
	members := *s
	members.Nodes = GroupDRMembers
	return members.validateGroup()
}

// planGroupDR: n1..n3 are planned as a single-primary group (planGroup), n4..nN as
// read-only replicas (super_read_only) without the Group Replication plugin; their user
// options named group_replication_* get the loose_ prefix, so a server without the plugin
// starts with them.
//
// Extra steps: on every member, before it bootstraps or joins the group (after its users
// are created), GRANT SELECT ON performance_schema.replication_group_members to
// the repl user (not binlogged): a replica's failover monitor reads the membership over
// its replication connection and refuses a source it cannot check ("SELECT command
// denied ... replication_group_members"). On each replica: the users (before the
// bootstrap), then, after the
// members joined, CHANGE REPLICATION SOURCE to n1 with SOURCE_AUTO_POSITION=1,
// SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=GroupDRRetryCount and
// SOURCE_CONNECTION_AUTO_FAILOVER=1, asynchronous_connection_failover_add_managed with
// the default channel, type GroupReplication, the group name, n1's address and weights 80
// (primary) and 60 (secondaries) (the replica learns the other
// members from n1 and keeps the list in step with the group), START REPLICA, waiting for
// both replica threads.
func planGroupDR(spec Spec, caps Capabilities, addr Addr) (Plan, error) {
	if !caps.GroupReplication {
		return Plan{}, &FieldError{"kind", spec.Kind, fmt.Sprintf("%s %s has no Group Replication plugin", caps.Flavor, caps.Version)}
	}
	if !caps.Version.AtLeast(GroupDRMinVersion) {
		return Plan{}, &FieldError{"kind", spec.Kind, fmt.Sprintf("%s %s has no managed asynchronous connection failover (needs %s)", caps.Flavor, caps.Version, GroupDRMinVersion)}
	}
	members := spec
	members.Nodes = GroupDRMembers
	g := planGroup(members, caps, addr)

	p := Plan{Nodes: g.Nodes, StaggerStarts: g.StaggerStarts}
	for i := GroupDRMembers + 1; i <= spec.Nodes; i++ {
		n := NodePlan{Name: NodeName(i), Role: RoleReplica, ServerID: i}
		n.Options = baseOptions(spec, caps, i)
		n.Options = append(n.Options, Option{"read_only", "ON"}, Option{"super_read_only", "ON"})
		n.Options = append(n.Options, groupDRReplicaUserOptions(spec)...)
		p.Nodes = append(p.Nodes, n)
	}
	replicas := p.Nodes[GroupDRMembers:]

	grant := []string{
		"SET GLOBAL super_read_only=OFF", // members are read-only until they join
		"SET SESSION sql_log_bin=0",
		fmt.Sprintf("GRANT SELECT ON performance_schema.replication_group_members TO '%s'@'%%'", ReplUser),
		"SET SESSION sql_log_bin=1",
		"SET GLOBAL super_read_only=ON",
	}
	for _, st := range g.Steps {
		if st.Wait == WaitGroupOnline {
			// Before a member bootstraps or joins: the grant (after its users); before the
			// bootstrap, the replicas' users.
			p.Steps = append(p.Steps, Step{Node: st.Node, Desc: "let the repl user read the group's members (DR source failover)", SQL: grant})
		}
		if st.Node == g.Nodes[0].Name && st.Wait == WaitGroupOnline {
			for _, n := range replicas {
				sql := append([]string{"SET GLOBAL super_read_only=OFF"}, usersSQL(spec, caps)...)
				sql = append(sql, "SET GLOBAL super_read_only=ON")
				p.Steps = append(p.Steps, Step{Node: n.Name, Desc: "create users", SQL: sql})
			}
		}
		p.Steps = append(p.Steps, st)
	}
	srcHost, srcPort := addr(g.Nodes[0].Name)
	for _, n := range replicas {
		p.Steps = append(p.Steps, Step{
			Node: n.Name,
			Desc: "replicate from the group's primary with source failover",
			SQL:  groupDRReplicaSQL(spec, caps, srcHost, srcPort),
			Wait: WaitReplicaRunning,
		})
	}
	return p, nil
}

// groupDRReplicaSQL points a DR replica at the group member host:port with managed source
// failover (see planGroupDR).
func groupDRReplicaSQL(spec Spec, caps Capabilities, host string, port int) []string {
	change := caps.ChangeSource(host, port, ReplUser, spec.Credentials.ReplPass()) +
		fmt.Sprintf(", SOURCE_RETRY_COUNT=%d, SOURCE_CONNECTION_AUTO_FAILOVER=1", GroupDRRetryCount)
	managed := fmt.Sprintf("SELECT asynchronous_connection_failover_add_managed('', 'GroupReplication', %s, %s, %d, '', %d, %d)",
		quoteString(GroupName(spec.Name)), quoteString(host), port, GroupDRPrimaryWeight, GroupDRSecondaryWeight)
	return []string{change, managed, caps.StartReplica()}
}

// groupDRReplicaUserOptions are userOptions for a DR replica: group_replication_* options
// (meant for the members) get the loose_ prefix, since the replica does not load the
// plugin and would refuse an unknown variable.
func groupDRReplicaUserOptions(spec Spec) []Option {
	o := userOptions(spec)
	for i, x := range o {
		if strings.HasPrefix(strings.ReplaceAll(x.Name, "-", "_"), "group_replication_") {
			o[i].Name = "loose_" + x.Name
		}
	}
	return o
}
