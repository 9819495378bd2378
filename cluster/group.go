package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/habench/habench/topology"
)

func init() {
	RegisterKindOps(KindOps{
		RebuildBy:  RebuildClone,
		ExtraPorts: func(_ topology.Spec, sqlPort int) []int { return []int{topology.GroupPort(sqlPort)} },
		Rejoin: func(ctx context.Context, s *Store, c *Cluster, n *Node) error {
			return s.rejoinGroup(ctx, c, n) // start_on_boot is OFF: habench rejoins the member
		},
		AfterPlan: func(ctx context.Context, c *Cluster) error {
			// The roles recorded are the ones the members report, not the plan's.
			if err := c.syncGroupRoles(ctx); err != nil {
				return err
			}
			return c.checkFlowControlComponent(ctx)
		},
		Ready: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) error {
			return waitGroupOnline(ctx, db, n.Name)
		},
		Health: func(ctx context.Context, c *Cluster, n *Node, db *sql.DB) string {
			h := groupHealth(ctx, db, n)
			if v, err := c.ReadGroupView(ctx, db); err == nil {
				h = v.minority(h, n.Name)
				if note := v.Note(c, n.Name); note != "" {
					h += "; " + note
				}
			}
			return h
		},
		Stuck: groupStuck,
		Live:  groupLive,
		RefreshRoles: func(ctx context.Context, c *Cluster) error {
			if !c.Deployed() {
				return nil // the roles of servers habench does not run are read, not recorded
			}
			return c.refreshGroupRoles(ctx)
		},
		WriterNow: groupWriterNow,
	}, topology.Group)
}

// groupStuck: a RECOVERING member can have the writer's GTID set before it has applied
// its cached transactions and gone ONLINE, and an expelled one is in ERROR until its
// auto-rejoin: both are still settling. OFFLINE (Group Replication stopped) waits for
// someone to start it.
func groupStuck(ctx context.Context, c *Cluster, n *Node, db *sql.DB) (stuck string, settling bool) {
	m, err := ReadGroupMember(ctx, db, n.Name)
	switch {
	case err == nil && m.State == "OFFLINE":
		return "member state " + m.State, false
	case err == nil && m.State != "ONLINE":
		return "", true
	}
	return "", false
}

// groupLive is KindOps.Live of a group member: ONLINE in its own view, which has a
// majority of its members reachable (a member cut off in a minority still calls itself
// ONLINE and cannot commit). One query: its view of the group.
func groupLive(ctx context.Context, c *Cluster, n *Node, db *sql.DB) string {
	v, err := c.ReadGroupView(ctx, db)
	if err != nil {
		return err.Error()
	}
	own, ok := v.Lookup(n.Name)
	switch {
	case !ok:
		return "not in the group"
	case own.State != "ONLINE":
		return "member state " + own.State
	case !v.HasMajority():
		return "ONLINE in a minority of its group"
	}
	return ""
}

// GroupMember is one Group Replication member as it sees itself: its own row of
// performance_schema.replication_group_members (MEMBER_ID = @@server_uuid).
type GroupMember struct {
	Node     string // habench node name (n1, ...)
	MemberID string // @@server_uuid
	// State is MEMBER_STATE: ONLINE, RECOVERING, OFFLINE, ERROR or UNREACHABLE; OFFLINE
	// also when the member has no row (Group Replication stopped).
	State string
	// Role is MEMBER_ROLE: PRIMARY or SECONDARY ("" while not ONLINE).
	Role string
	// SinglePrimary is @@group_replication_single_primary_mode.
	SinglePrimary bool
	// GroupName is @@group_replication_group_name ("" when unset).
	GroupName string
}

// memberQuery reads a member's own row; a member without a row is OFFLINE.
const memberQuery = `SELECT @@server_uuid, COALESCE(m.MEMBER_STATE, 'OFFLINE'), COALESCE(m.MEMBER_ROLE, ''),
 @@GLOBAL.group_replication_single_primary_mode, COALESCE(@@GLOBAL.group_replication_group_name, '')
 FROM (SELECT 1) AS one LEFT JOIN performance_schema.replication_group_members AS m ON m.MEMBER_ID = @@server_uuid`

// ReadGroupMember reads node's own Group Replication state over db (an admin pool to that
// node). Error when the query fails (server down, plugin not loaded).
func ReadGroupMember(ctx context.Context, db *sql.DB, node string) (GroupMember, error) {
	m := GroupMember{Node: node}
	var single int
	if err := db.QueryRowContext(ctx, memberQuery).Scan(&m.MemberID, &m.State, &m.Role, &single, &m.GroupName); err != nil {
		return m, fmt.Errorf("node %s: group member state: %w", node, err)
	}
	m.SinglePrimary = single == 1
	return m, nil
}

// groupNodes are the nodes that are Group Replication members: every node but those
// recorded as (asynchronous) replicas, which a kind extending group may add beside the
// group (a DR replica of kind group-dr). Every node of kind group.
func (c *Cluster) groupNodes() []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.Role != topology.RoleReplica {
			out = append(out, n)
		}
	}
	return out
}

// GroupMembers reads every member's own Group Replication state (groupNodes), in node
// order. Error if any member cannot be read.
func (c *Cluster) GroupMembers(ctx context.Context) ([]GroupMember, error) {
	var out []GroupMember
	for _, n := range c.groupNodes() {
		db, err := c.OpenAdmin(n)
		if err != nil {
			return nil, err
		}
		m, err := ReadGroupMember(ctx, db, n.Name)
		db.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// groupRole maps MEMBER_ROLE to a habench role.
func groupRole(memberRole string) (topology.Role, bool) {
	switch memberRole {
	case "PRIMARY":
		return topology.RolePrimary, true
	case "SECONDARY":
		return topology.RoleSecondary, true
	}
	return "", false
}

// syncGroupRoles reads every member's MEMBER_ROLE back and records it as the node's role
// (and the group mode in the spec), then saves the state file. Error if a member is not
// ONLINE, has no role, or the members disagree on the mode.
func (c *Cluster) syncGroupRoles(ctx context.Context) error {
	ms, err := c.GroupMembers(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.State != "ONLINE" {
			return fmt.Errorf("node %s: group member is %s, want ONLINE", m.Node, m.State)
		}
		r, ok := groupRole(m.Role)
		if !ok {
			return fmt.Errorf("node %s: group member role %q", m.Node, m.Role)
		}
		if m.SinglePrimary != ms[0].SinglePrimary {
			return fmt.Errorf("node %s: group_replication_single_primary_mode differs from %s's", m.Node, ms[0].Node)
		}
		c.Node(m.Node).Role = r
	}
	c.Spec.Group.Mode = topology.GroupMultiPrimary
	if ms[0].SinglePrimary {
		c.Spec.Group.Mode = topology.GroupSinglePrimary
	}
	return c.save()
}

// checkFlowControlComponent verifies, where the servers have the flow-control stats
// component (Capabilities.GRFlowControlStats), that every member shows its
// Gr_flow_control_throttle_count status variable: the install step tolerates error 3529,
// which also means "cannot load". Error naming the first member without it.
func (c *Cluster) checkFlowControlComponent(ctx context.Context) error {
	if !c.Capabilities().GRFlowControlStats {
		return nil
	}
	for _, n := range c.groupNodes() {
		db, err := c.OpenAdmin(n)
		if err != nil {
			return err
		}
		var name, val string
		err = db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Gr_flow_control_throttle_count'").Scan(&name, &val)
		db.Close()
		if err != nil {
			return fmt.Errorf("node %s: %s not loaded (no Gr_flow_control_throttle_count status): %w", n.Name, topology.GRFlowControlComponent, err)
		}
	}
	return nil
}

// waitGroupOnline waits until node's own member row says ONLINE. Error when ctx ends first
// (naming how long it waited and the last state it read) or the member reaches ERROR (or,
// after having joined, OFFLINE): it will not get ONLINE by waiting.
func waitGroupOnline(ctx context.Context, db *sql.DB, node string) error {
	last := GroupMember{State: "unknown (never read)"}
	var lastErr error
	seen := false
	start := time.Now()
	for {
		m, err := ReadGroupMember(ctx, db, node)
		lastErr = err
		if err == nil {
			last = m
			switch m.State {
			case "ONLINE":
				return nil
			case "ERROR":
				return fmt.Errorf("node %s: group member in ERROR state (see its error.log)", node)
			case "RECOVERING", "UNREACHABLE":
				seen = true
			case "OFFLINE":
				if seen {
					return fmt.Errorf("node %s: group member went OFFLINE while joining (see its error.log)", node)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: group member %s after %v, not ONLINE (last error: %v)", node, last.State, waited(start), lastErr)
		case <-time.After(10 * time.Millisecond): // a deploy waits here three times
		}
	}
}

// SwitchGroupMode switches a deployed Group Replication cluster to mode (topology.GroupSinglePrimary
// or topology.GroupMultiPrimary) at runtime, with the server's own group actions:
//
//	multi-primary:  SELECT group_replication_switch_to_multi_primary_mode()
//	single-primary: SELECT group_replication_switch_to_single_primary_mode('<uuid>'), the new
//	                primary being c.Writer() (the first writable node: n1 after a
//	                multi-primary deploy)
//
// run on that node over its admin socket; the functions return when every member has
// changed mode. Then every member's MEMBER_ROLE and group_replication_single_primary_mode
// are read back: the nodes' roles and Spec.Group.Mode in state.json are what the servers
// report, never what was asked. Switching to the mode the group is in changes nothing (but
// still reads the roles back). Errors: *topology.FieldError for another kind or an unknown
// mode; an error when the servers lack the functions (before MySQL 8.0.13), when a member
// is not ONLINE, or when the group action fails (then the roles read back, if readable,
// are saved all the same).
func SwitchGroupMode(ctx context.Context, c *Cluster, mode string) error {
	return SwitchGroupModeTo(ctx, c, mode, "")
}

// SwitchGroupModeTo is SwitchGroupMode with the member a switch to single-primary makes the
// primary: node primary ("" = c.Writer()), so that switching back restores the primary the
// group had (after a multi-primary phase every member is writable and c.Writer() is n1).
// Ignored for multi-primary. *topology.FieldError for a node the cluster lacks.
func SwitchGroupModeTo(ctx context.Context, c *Cluster, mode, primary string) error {
	if !c.Spec.Is(topology.Group) {
		return &topology.FieldError{Field: "kind", Value: c.Spec.Kind, Reason: "the group mode applies to kind group only"}
	}
	if mode != topology.GroupSinglePrimary && mode != topology.GroupMultiPrimary {
		return &topology.FieldError{Field: "group.mode", Value: mode, Reason: "want single-primary or multi-primary"}
	}
	if !c.Capabilities().GRSwitchMode {
		return fmt.Errorf("cluster %s: %s %s cannot switch the group mode at runtime (MySQL 8.0.13+)", c.Name, c.Spec.Flavor, c.Capabilities().Version)
	}
	ms, err := c.GroupMembers(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.State != "ONLINE" {
			return fmt.Errorf("node %s: group member is %s; every member must be ONLINE to switch the mode", m.Node, m.State)
		}
	}
	if ms[0].SinglePrimary == (mode == topology.GroupSinglePrimary) {
		return c.syncGroupRoles(ctx)
	}
	w := c.Writer()
	if primary != "" {
		if w = c.Node(primary); w == nil {
			return &topology.FieldError{Field: "primary", Value: primary, Reason: "no such node in " + c.Name}
		}
	}
	db, err := c.OpenAdmin(w)
	if err != nil {
		return err
	}
	defer db.Close()
	q := "SELECT group_replication_switch_to_multi_primary_mode()"
	if mode == topology.GroupSinglePrimary {
		var uuid string
		for _, m := range ms {
			if m.Node == w.Name {
				uuid = m.MemberID
			}
		}
		q = "SELECT group_replication_switch_to_single_primary_mode('" + strings.ReplaceAll(uuid, "'", "") + "')"
	}
	var msg sql.NullString
	// A configuration change still finishing on some member (the previous switch returns
	// before every member has completed it) refuses a new one with error 3910
	// ER_GRP_RPL_UDF_ERROR "already a configuration action being executed": retry for up to 30 s.
	var aerr error
	for deadline := time.Now().Add(30 * time.Second); ; {
		aerr = db.QueryRowContext(ctx, q).Scan(&msg)
		var me *mysql.MySQLError
		if aerr == nil || !errors.As(aerr, &me) || me.Number != 3910 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if aerr != nil {
		aerr = fmt.Errorf("node %s: %s: %w", w.Name, q, aerr)
	}
	if err := c.syncGroupRoles(ctx); err != nil {
		return errors.Join(aerr, err)
	}
	if aerr != nil {
		return aerr
	}
	if c.Spec.Group.Mode != mode {
		return fmt.Errorf("cluster %s: %s reported %q but the members say %s", c.Name, q, msg.String, c.Spec.Group.Mode)
	}
	return nil
}

// GroupStatus is a one-line summary of a Group Replication cluster as its members report
// it: the group name (@@group_replication_group_name, the servers' own, also for an
// existing cluster), the mode, how many members say they are ONLINE and which are
// PRIMARY, then each member that is not ONLINE or cannot be read, with its state or why.
// A member counts as ONLINE when its own row says so and so do the views of a majority of
// the readable members (a member cut off from the others stays ONLINE in its own row):
//
//	group 77b6...: single-primary mode, 2/3 members ONLINE, primary n1; n2 not running
func (c *Cluster) GroupStatus(ctx context.Context) string {
	var name, mode string
	var primaries, others []string
	online := 0
	cutOff := c.onlineOnlyInOwnView(ctx)
	for _, n := range c.groupNodes() {
		if c.NodeDown(n) {
			others = append(others, n.Name+" not running")
			continue
		}
		db, err := c.OpenAdmin(n)
		if err != nil {
			others = append(others, n.Name+" "+err.Error())
			continue
		}
		m, err := ReadGroupMember(ctx, db, n.Name)
		db.Close()
		if err != nil {
			others = append(others, "unreadable: "+err.Error())
			continue
		}
		if name == "" {
			name = m.GroupName
		} else if m.GroupName != name {
			others = append(others, fmt.Sprintf("%s in another group %s", n.Name, m.GroupName))
		}
		if mode == "" {
			mode = topology.GroupMultiPrimary
			if m.SinglePrimary {
				mode = topology.GroupSinglePrimary
			}
		}
		if m.State != "ONLINE" {
			others = append(others, n.Name+" "+m.State)
			continue
		}
		if why, ok := cutOff[n.Name]; ok {
			others = append(others, n.Name+" ONLINE only in its own view ("+why+")")
			continue
		}
		online++
		if m.Role == "PRIMARY" {
			primaries = append(primaries, n.Name)
		}
	}
	if name == "" {
		name = "(unknown)"
	}
	if mode == "" {
		mode = "unknown"
	}
	if len(primaries) == 0 {
		primaries = []string{"none"}
	}
	s := fmt.Sprintf("group %s: %s mode, %d/%d members ONLINE, primary %s", name, mode, online, len(c.groupNodes()), strings.Join(primaries, ","))
	if len(others) > 0 {
		s += "; " + strings.Join(others, "; ")
	}
	return s
}

// groupHealth is Health for a group member: its state and role as it reports them, and a
// note when the role differs from the one recorded in the state file.
func groupHealth(ctx context.Context, db *sql.DB, n *Node) string {
	m, err := ReadGroupMember(ctx, db, n.Name)
	if err != nil {
		return err.Error()
	}
	s := "group " + m.State
	if m.Role != "" {
		s += " " + m.Role
	}
	if r, ok := groupRole(m.Role); ok && r != n.Role {
		s += fmt.Sprintf(" (state.json says %s)", n.Role)
	}
	return s
}

// ignoredError reports whether err is a server error whose number is in codes.
func ignoredError(err error, codes []uint16) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	return slices.Contains(codes, me.Number)
}

// rejoinGroup brings sandbox member n back into its group after its server started
// (StartNode, RestartNode): members run with group_replication_start_on_boot=OFF (see
// topology.planGroup), so a started member would otherwise stay OFFLINE, out of the group.
// It runs START GROUP_REPLICATION on n, or, when every other member is stopped or says it
// is not ONLINE (the whole group was stopped), bootstraps the group again from n
// (group_replication_bootstrap_group ON around START GROUP_REPLICATION). A member that was
// killed may still be listed as UNREACHABLE until the group expels it
// (group_replication_member_expel_timeout, 5 s by default) and is refused meanwhile, so a
// failed START is retried until s.ReadyTimeout. Then it waits until n is ONLINE and records
// the roles the members report (refreshGroupRoles). Errors name the node and carry the
// last server error.
func (s *Store) rejoinGroup(ctx context.Context, c *Cluster, n *Node) error {
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	wctx, cancel := context.WithTimeout(ctx, s.ReadyTimeout)
	defer cancel()
	m, err := ReadGroupMember(wctx, db, n.Name)
	if err != nil {
		return err
	}
	if m.State != "ONLINE" {
		bootstrap := !c.anyOtherOnline(wctx, n)
		if !bootstrap {
			// A killed member stays in the group's view (UNREACHABLE) until it is expelled;
			// a START before that fails only after a join timeout of its own.
			c.waitExpelled(wctx, n, m.MemberID)
		}
		var lastErr error
		start := time.Now()
		for {
			if lastErr = startGroupReplication(wctx, db, bootstrap); lastErr == nil {
				break
			}
			s.log().Debug("START GROUP_REPLICATION failed, retrying", "cluster", c.Name, "node", n.Name, "err", lastErr)
			select {
			case <-wctx.Done():
				return fmt.Errorf("node %s: rejoining the group: START GROUP_REPLICATION did not succeed in %v (the ready timeout): member %s; last error: %w",
					n.Name, waited(start), lastMemberState(ctx, db, n.Name), lastErr)
			case <-time.After(time.Second):
			}
		}
		if err := waitGroupOnline(wctx, db, n.Name); err != nil {
			return err
		}
		s.log().Info("member rejoined the group", "cluster", c.Name, "node", n.Name, "bootstrap", bootstrap)
	}
	return c.refreshGroupRoles(wctx)
}

// lastMemberState is node's member state as it reports it now, read with a bound of its
// own (the wait's context has ended), for an error message: "OFFLINE", or "unreadable
// (ERR)".
func lastMemberState(ctx context.Context, db *sql.DB, node string) string {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	m, err := ReadGroupMember(rctx, db, node)
	if err != nil {
		return fmt.Sprintf("state unreadable (%v)", err)
	}
	return "state " + m.State
}

// waitExpelled waits until no other running member lists member uuid (node n's previous
// incarnation) in performance_schema.replication_group_members, or ctx ends. Best effort:
// an unreadable member is skipped.
func (c *Cluster) waitExpelled(ctx context.Context, n *Node, uuid string) {
	for {
		listed := false
		for _, o := range c.groupNodes() {
			if running, _ := c.NodeRunning(o); o == n || !running {
				continue
			}
			db, err := c.OpenAdmin(o)
			if err != nil {
				continue
			}
			var k int
			err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM performance_schema.replication_group_members WHERE MEMBER_ID = ?", uuid).Scan(&k)
			db.Close()
			listed = listed || (err == nil && k > 0)
		}
		if !listed {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startGroupReplication runs START GROUP_REPLICATION on one connection of db, between
// group_replication_bootstrap_group ON and OFF when bootstrap. After a failure it stops
// Group Replication again (a member left in ERROR would refuse the next START).
func startGroupReplication(ctx context.Context, db *sql.DB, bootstrap bool) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if bootstrap {
		if _, err := conn.ExecContext(ctx, "SET GLOBAL group_replication_bootstrap_group=ON"); err != nil {
			return err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SET GLOBAL group_replication_bootstrap_group=OFF")
	}
	if _, err := conn.ExecContext(ctx, "START GROUP_REPLICATION"); err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), "STOP GROUP_REPLICATION")
		return err
	}
	return nil
}

// anyOtherOnline reports whether a running member other than n says it is ONLINE, or
// cannot be read (it may be ONLINE: bootstrapping beside it would form a second group of
// the same name).
func (c *Cluster) anyOtherOnline(ctx context.Context, n *Node) bool {
	for _, o := range c.groupNodes() {
		if running, _ := c.NodeRunning(o); o == n || !running {
			continue
		}
		db, err := c.OpenAdmin(o)
		if err != nil {
			return true
		}
		m, err := ReadGroupMember(ctx, db, o.Name)
		db.Close()
		if err != nil || m.State == "ONLINE" {
			return true
		}
	}
	return false
}

// refreshGroupRoles records the MEMBER_ROLE of every member that is running and ONLINE
// (and the group mode) in the state file. Members that are down or not ONLINE keep their
// recorded role, except that in single-primary mode only the member the group calls
// PRIMARY is recorded as primary (confirmedPrimary: an old primary cut off, or expelled
// without having learnt it, still calls itself PRIMARY), so Writer() never names a stopped
// or expelled former primary. Unlike syncGroupRoles it does not need every member ONLINE.
func (c *Cluster) refreshGroupRoles(ctx context.Context) error {
	var nodes []*Node
	for _, n := range c.groupNodes() {
		if running, _ := c.NodeRunning(n); running {
			nodes = append(nodes, n)
		}
	}
	claims := readClaims(ctx, c, nodes)
	var primary *Node
	if i := confirmedPrimary(claims); i >= 0 {
		primary = nodes[i]
	}
	single, known := false, false
	for i, n := range nodes {
		m := claims[i].member
		if !claims[i].read || m.State != "ONLINE" {
			continue
		}
		if r, ok := groupRole(m.Role); ok && (r != topology.RolePrimary || !m.SinglePrimary || n == primary) {
			n.Role = r
		}
		single, known = m.SinglePrimary, true
	}
	if !known {
		return fmt.Errorf("cluster %s: no member is ONLINE", c.Name)
	}
	c.Spec.Group.Mode = topology.GroupMultiPrimary
	if single {
		c.Spec.Group.Mode = topology.GroupSinglePrimary
		if primary != nil {
			for _, n := range c.groupNodes() {
				if n != primary {
					n.Role = topology.RoleSecondary
				}
			}
		}
	}
	return c.save()
}

// keepGroupPrimary is called by RestartNode before it stops node: when node is the
// primary of a single-primary group, the group elects another primary while it is down;
// the returned function (run after the node rejoined) makes it the primary again with
// group_replication_set_as_primary(), so a restart (for a knob, say) does not move the
// writes to another member behind the workload's back. A no-op function otherwise, and
// where the server lacks the function (before MySQL 8.0.13).
func (c *Cluster) keepGroupPrimary(ctx context.Context, node string) func(context.Context) error {
	noop := func(context.Context) error { return nil }
	n := c.Node(node)
	if !c.Spec.Is(topology.Group) || n == nil || !c.Capabilities().GRSwitchMode {
		return noop
	}
	db, err := c.OpenAdmin(n)
	if err != nil {
		return noop
	}
	m, err := ReadGroupMember(ctx, db, n.Name)
	db.Close()
	if err != nil || !m.SinglePrimary || m.Role != "PRIMARY" {
		return noop
	}
	return func(ctx context.Context) error {
		db, err := c.OpenAdmin(n)
		if err != nil {
			return err
		}
		defer db.Close()
		cur, err := ReadGroupMember(ctx, db, n.Name)
		if err != nil {
			return err
		}
		if cur.Role != "PRIMARY" {
			var msg sql.NullString
			if err := db.QueryRowContext(ctx, "SELECT group_replication_set_as_primary(?)", m.MemberID).Scan(&msg); err != nil {
				return fmt.Errorf("node %s: making it the primary again: %w", n.Name, err)
			}
		}
		return c.refreshGroupRoles(ctx)
	}
}

// SetGroupPrimary makes member node the primary of c's single-primary group with
// group_replication_set_as_primary(), asked on node itself (a no-op when it already is),
// and refreshes the recorded roles: a switchover, the group's counterpart of Promote.
// Errors: node is not a member, the group is not single-primary, the server lacks the
// function (before MySQL 8.0.13), or the server's own error.
func (c *Cluster) SetGroupPrimary(ctx context.Context, node string) error {
	n := c.Node(node)
	if !c.Spec.Is(topology.Group) || n == nil {
		return fmt.Errorf("cluster %s: %s is not a group member", c.Name, node)
	}
	if !c.Capabilities().GRSwitchMode {
		return fmt.Errorf("cluster %s: the server has no group_replication_set_as_primary()", c.Name)
	}
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := ReadGroupMember(ctx, db, n.Name)
	if err != nil {
		return err
	}
	if !m.SinglePrimary {
		return fmt.Errorf("cluster %s: the group is not single-primary: no switchover", c.Name)
	}
	if m.Role != "PRIMARY" {
		var msg sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT group_replication_set_as_primary(?)", m.MemberID).Scan(&msg); err != nil {
			return fmt.Errorf("node %s: group_replication_set_as_primary: %w", n.Name, err)
		}
	}
	return c.refreshGroupRoles(ctx)
}
