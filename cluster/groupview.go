package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// GroupViewMember is one row of a member's performance_schema.replication_group_members:
// a member of the group (possibly itself) as this member sees it.
type GroupViewMember struct {
	// Node is the habench node name whose address is MEMBER_HOST:MEMBER_PORT (matched by
	// port alone when the host differs), else "MEMBER_HOST:MEMBER_PORT".
	Node string
	// MemberID is MEMBER_ID, the member's @@server_uuid.
	MemberID string
	Host     string
	Port     int
	// State is MEMBER_STATE: ONLINE, RECOVERING, UNREACHABLE, OFFLINE or ERROR.
	State string
	// Role is MEMBER_ROLE ("" when the server leaves it empty).
	Role string
}

// GroupView is what one member sees of the group: every row of its
// replication_group_members. A member cut off from the others lists them UNREACHABLE
// while its own row stays ONLINE; members the majority expelled are missing from the
// majority's view; a member in ERROR or OFFLINE lists only itself.
type GroupView []GroupViewMember

// ReadGroupView reads the member's view over db (an admin pool to that member) and names
// the rows by c's node addresses. Error when the query fails (server down, plugin not
// loaded).
func (c *Cluster) ReadGroupView(ctx context.Context, db *sql.DB) (GroupView, error) {
	rows, err := db.QueryContext(ctx, `SELECT COALESCE(MEMBER_ID, ''), COALESCE(MEMBER_HOST, ''), COALESCE(MEMBER_PORT, 0), COALESCE(MEMBER_STATE, ''), COALESCE(MEMBER_ROLE, '')
 FROM performance_schema.replication_group_members ORDER BY MEMBER_HOST, MEMBER_PORT`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var v GroupView
	for rows.Next() {
		var m GroupViewMember
		if err := rows.Scan(&m.MemberID, &m.Host, &m.Port, &m.State, &m.Role); err != nil {
			return nil, err
		}
		m.Node = c.nodeAt(m.Host, m.Port)
		v = append(v, m)
	}
	return v, rows.Err()
}

// nodeAt names the node listening on host:port: exact match, else the only node on that
// port, else "host:port".
func (c *Cluster) nodeAt(host string, port int) string {
	var byPort []string
	for _, n := range c.Nodes {
		if n.Port == port {
			if n.Host == host {
				return n.Name
			}
			byPort = append(byPort, n.Name)
		}
	}
	if len(byPort) == 1 {
		return byPort[0]
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// Count returns how many rows of the view are in state.
func (v GroupView) Count(state string) int {
	k := 0
	for _, m := range v {
		if m.State == state {
			k++
		}
	}
	return k
}

// Lookup returns node's row in the view.
func (v GroupView) Lookup(node string) (GroupViewMember, bool) {
	for _, m := range v {
		if m.Node == node {
			return m, true
		}
	}
	return GroupViewMember{}, false
}

// HasMajority reports whether the members this view can reach (every row but the
// UNREACHABLE ones) are more than half of the view: without a majority Group Replication
// blocks updates on the member until contact is restored.
func (v GroupView) HasMajority() bool {
	return 2*(len(v)-v.Count("UNREACHABLE")) > len(v)
}

// minority rewrites member self's health line h ("group ONLINE PRIMARY") when its view has
// no majority while its own row says ONLINE: "group PRIMARY (minority, not writable; own
// view ONLINE)". The group does not count it (an old primary cut off keeps calling itself
// PRIMARY) and it cannot commit. h is unchanged otherwise.
func (v GroupView) minority(h, self string) string {
	own, ok := v.Lookup(self)
	if !ok || own.State != "ONLINE" || v.HasMajority() {
		return h
	}
	return strings.Replace(h, strings.TrimSpace("group ONLINE "+own.Role), "group "+strings.TrimSpace(own.Role+" (minority, not writable; own view ONLINE)"), 1)
}

// Note says, in a few words, how member self's view differs from a healthy group of all
// of c's members (groupNodes): members it sees UNREACHABLE or RECOVERING, members missing
// from its view (expelled, not joined), and a lost majority. "" when it sees every node ONLINE, and
// when self is not in the group itself (OFFLINE, ERROR: its view then lists only itself).
func (v GroupView) Note(c *Cluster, self string) string {
	own, ok := v.Lookup(self)
	if !ok || (own.State != "ONLINE" && own.State != "RECOVERING") {
		return ""
	}
	var parts []string
	byState := map[string][]string{}
	var states []string
	for _, m := range v {
		if m.Node == self || m.State == "ONLINE" {
			continue
		}
		if byState[m.State] == nil {
			states = append(states, m.State)
		}
		byState[m.State] = append(byState[m.State], m.Node)
	}
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("sees %s %s", strings.Join(byState[s], ","), s))
	}
	// Nodes missing from the view, when every row is one of c's nodes (an existing
	// cluster's members may report other addresses than its DSNs: then nothing is said).
	var missing []string
	matched := true
	for _, m := range v {
		matched = matched && c.Node(m.Node) != nil
	}
	for _, n := range c.groupNodes() {
		if _, ok := v.Lookup(n.Name); !ok && matched {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 {
		parts = append(parts, strings.Join(missing, ",")+" not in its view")
	}
	if !v.HasMajority() {
		parts = append(parts, "no majority: updates blocked")
	}
	return strings.Join(parts, "; ")
}

// onlineOnlyInOwnView returns, for each member that a majority of the readable members'
// views do not list as ONLINE, the members that see it otherwise ("n1,n2 UNREACHABLE").
// A member cut off from the others stays ONLINE in its own row; this is how GroupStatus
// tells. Members that cannot be read are left out of the vote.
func (c *Cluster) onlineOnlyInOwnView(ctx context.Context) map[string]string {
	var views []GroupView
	var viewers []string
	byUUID := map[string]string{}
	for _, n := range c.groupNodes() {
		if c.NodeDown(n) {
			continue
		}
		db, err := c.OpenAdmin(n)
		if err != nil {
			continue
		}
		if m, err := ReadGroupMember(ctx, db, n.Name); err == nil {
			byUUID[m.MemberID] = n.Name
		}
		if v, err := c.ReadGroupView(ctx, db); err == nil {
			views, viewers = append(views, v), append(viewers, n.Name)
		}
		db.Close()
	}
	// Rows named by the members' own server_uuid where known (addresses may differ from
	// an existing cluster's DSNs).
	for _, v := range views {
		for i := range v {
			if name, ok := byUUID[v[i].MemberID]; ok {
				v[i].Node = name
			}
		}
	}
	out := map[string]string{}
	for _, n := range c.groupNodes() {
		seen := 0
		byState := map[string][]string{}
		var states []string
		for i, v := range views {
			r, ok := v.Lookup(n.Name)
			switch {
			case ok && r.State == "ONLINE":
				seen++
				continue
			case !ok:
				r.State = "absent"
			}
			if byState[r.State] == nil {
				states = append(states, r.State)
			}
			byState[r.State] = append(byState[r.State], viewers[i])
		}
		if len(views) == 0 || 2*seen > len(views) {
			continue
		}
		var parts []string
		for _, st := range states {
			if st == "absent" {
				parts = append(parts, "not in the view of "+strings.Join(byState[st], ","))
			} else {
				parts = append(parts, fmt.Sprintf("%s for %s", st, strings.Join(byState[st], ",")))
			}
		}
		out[n.Name] = strings.Join(parts, ", ")
	}
	return out
}
