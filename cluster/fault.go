package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/topology"
)

// WriterAlias is the node name that means "whoever is the writer at that moment" in
// faults (habench fault kill writer).
const WriterAlias = "writer"

// CurrentWriter resolves node: WriterAlias becomes the node that takes writes now (a
// group's PRIMARY as the running members say, refreshed in the state; the recorded source
// otherwise; Galera's first writable node, or with a proxy the node its write endpoint
// uses), any other name must be one of c's nodes. Error: *topology.FieldError on "node".
func (c *Cluster) CurrentWriter(ctx context.Context, node string) (*Node, error) {
	if node != WriterAlias {
		n := c.Node(node)
		if n == nil {
			return nil, &topology.FieldError{Field: "node", Value: node, Reason: fmt.Sprintf("no such node in %s (nodes: %s, or %s)", c.Name, strings.Join(c.nodeNames(), ", "), WriterAlias)}
		}
		return n, nil
	}
	if f := c.ops().RefreshRoles; f != nil {
		if err := f(ctx, c); err != nil {
			return nil, fmt.Errorf("cluster %s: finding the writer: %w", c.Name, err)
		}
	}
	if def := topology.KindOf(c.Spec.Kind); def.NoSingleWriter != nil && def.NoSingleWriter(c.Spec) != "" {
		if n := c.ProxyWriter(ctx); n != nil { // every node takes writes: the application's go where its proxy sends them
			return n, nil
		}
	}
	return c.Writer(), nil
}

func (c *Cluster) nodeNames() []string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, n.Name)
	}
	return s
}

// PromoteReport says what Promote did.
type PromoteReport struct {
	// NewSource and OldSource are node names; OldSourceUp tells whether the old source
	// was running (then it was made read-only, the new source caught up with it first,
	// and it now replicates from the new source).
	NewSource, OldSource string
	OldSourceUp          bool
	// CaughtUp: the new source had applied everything the running old source had
	// (false when the old source was down: what it had not sent is lost).
	CaughtUp bool
	// Repointed are the nodes now replicating from NewSource; Down the replicas that
	// were not running (they replicate from NewSource when started with StartNode).
	Repointed, Down []string
	Took            time.Duration
	// ProxyOff, with a proxy and a running old source, is how long the old source stayed
	// fenced (writes blocked) after the promotion until the proxy stopped sending writes
	// to it; ProxyStill says it still did when habench stopped waiting (ProxyWait).
	ProxyOff   time.Duration
	ProxyStill bool
	// SessionsKilled are the benchmark user's sessions still on the running old source
	// after the promotion, closed by habench (KILL CONNECTION, with every other client
	// session, while the fence holds) as a switchover does: their clients reconnect to the
	// new source (or through the proxy).
	SessionsKilled int
}

// ProxyWait bounds how long a promotion keeps the old source fenced for a proxy to stop
// sending it writes.
const ProxyWait = 10 * time.Second

// Promote makes replica node the source of an async or semi-sync sandbox and repoints
// every other running node to it with GTID auto-positioning (MySQL SOURCE_AUTO_POSITION,
// MariaDB MASTER_USE_GTID=slave_pos): the old source, if it runs, is made read-only
// first and the new source waits (up to catchUp) until it has applied everything the old
// one had, so nothing acknowledged is lost; a dead old source loses what it had not
// sent. Read-only settings and, for semi-sync, the source/replica plugin switches are
// changed at run time and in the option files, so restarts keep the new roles. Errors:
// *topology.FieldError for a node that is not a running replica or a kind without a
// single source.
func (s *Store) Promote(ctx context.Context, c *Cluster, node string, catchUp time.Duration) (*PromoteReport, error) {
	start := time.Now()
	nr, old, err := promotable(c, node)
	if err != nil {
		return nil, err
	}
	caps := c.Capabilities()
	rep := &PromoteReport{NewSource: nr.Name, OldSource: old.Name, OldSourceUp: old.Running()}
	ndb, err := c.OpenAdmin(nr)
	if err != nil {
		return nil, err
	}
	defer ndb.Close()
	var fence *sql.Conn
	defer func() {
		if fence != nil {
			fence.Close()
		}
	}()
	if rep.OldSourceUp {
		odb, err := c.OpenAdmin(old)
		if err != nil {
			return nil, err
		}
		defer odb.Close()
		if fence, err = fenceSource(ctx, odb, old.Name, caps); err != nil {
			return nil, err
		}
		defer fence.Close()
		if err := catchUpWithFence(ctx, fence, ndb, caps, nr.Name, old.Name, catchUp); err != nil {
			return nil, err
		}
		rep.CaughtUp = true
	} else if err := c.catchUpFromPeers(ctx, nr, ndb, catchUp); err != nil {
		return nil, err
	}
	// Everything the new source received (its relay log: with semi-sync AFTER_SYNC, the
	// commits the old source acknowledged) is applied before replication is reset.
	if err := drainRelayLog(ctx, ndb, caps, catchUp); err != nil {
		return nil, fmt.Errorf("node %s: applying its relay log before the promotion: %w", nr.Name, err)
	}
	for _, q := range promoteSQL(caps, c.Spec.Is(topology.SemiSync)) {
		if _, err := ndb.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("node %s: %s: %w", nr.Name, redact(q), err)
		}
	}
	nr.Role = topology.RoleSource
	old.Role = topology.RoleReplica
	if fence != nil {
		// A proxy sends writes to the old source until its checks see it read-only: the
		// fence holds them (read_only does not stop a user with SUPER) until it stops.
		rep.ProxyOff, rep.ProxyStill = c.waitProxyLeaves(ctx, old)
		// habench's own writers (the probe, the heartbeat) find the new source in the
		// state from here on; every client session on the old one is closed while the
		// fence holds: a commit waiting for the fence would complete when it goes.
		if err := c.save(); err != nil {
			return rep, err
		}
		rep.SessionsKilled = killClientSessions(ctx, fence)
		// The new source takes writes; the old one stays read-only (its SET GLOBAL
		// read_only would wait for this lock while it is held).
		fence.Close()
		fence = nil
	}
	if err := c.repointAll(ctx, nr, rep); err != nil {
		return rep, errors.Join(err, c.save())
	}
	if err := c.writeRoleOptions(); err != nil {
		return rep, errors.Join(err, c.save())
	}
	rep.Took = time.Since(start)
	return rep, c.save()
}

// promotable checks that node of c can be promoted and returns it and the current
// source. Errors: the refusal of an operation habench does not own, or a
// *topology.FieldError for a kind without a single source or a node that is not a
// running replica.
func promotable(c *Cluster, node string) (nr, old *Node, err error) {
	if err := c.Refuse(OpPromote, "promote node "+node); err != nil {
		return nil, nil, err
	}
	if k := c.Spec.Kind; !topology.KindOf(k).Promotable {
		return nil, nil, &topology.FieldError{Field: "kind", Value: string(k), Reason: "promote is for topologies whose replicas can become the source, like async and semisync (a group elects its primary, Galera has none)"}
	}
	nr = c.Node(node)
	if nr == nil {
		return nil, nil, &topology.FieldError{Field: "node", Value: node, Reason: "no such node in " + c.Name}
	}
	old = c.Writer()
	if nr == old || nr.Role != topology.RoleReplica {
		return nil, nil, &topology.FieldError{Field: "node", Value: node, Reason: fmt.Sprintf("is the %s, not a replica", nr.Role)}
	}
	if !nr.Running() {
		return nil, nil, &topology.FieldError{Field: "node", Value: node, Reason: "is not running (habench fault start " + node + " first)"}
	}
	return nr, old, nil
}

// fenceSource fences the running old source (admin connection odb, node name name):
// read_only (super_read_only on MySQL) and, because MariaDB's read_only does not stop
// users with SUPER (the benchmark user), a global read lock held on the returned
// connection until the caller closes it.
func fenceSource(ctx context.Context, odb *sql.DB, name string, caps topology.Capabilities) (*sql.Conn, error) {
	fence, err := odb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	for _, q := range append(readOnlySQL(caps, true), "FLUSH TABLES WITH READ LOCK") {
		if _, err := fence.ExecContext(ctx, q); err != nil {
			fence.Close()
			return nil, fmt.Errorf("node %s: fencing the old source: %s: %w", name, q, err)
		}
	}
	return fence, nil
}

// catchUpWithFence waits (up to catchUp) until the new source (ndb, node newName) has
// applied the GTID position of the fenced old source (connection fence, node oldName).
func catchUpWithFence(ctx context.Context, fence *sql.Conn, ndb *sql.DB, caps topology.Capabilities, newName, oldName string, catchUp time.Duration) error {
	var pos string
	if err := fence.QueryRowContext(ctx, gtidPositionSQL(caps)).Scan(&pos); err != nil {
		return fmt.Errorf("node %s: %w", oldName, err)
	}
	wctx, cancel := context.WithTimeout(ctx, catchUp)
	err := waitGTID(wctx, ndb, caps, strings.ReplaceAll(pos, "\n", ""))
	cancel()
	if err != nil {
		return fmt.Errorf("node %s did not catch up with %s (%s) within %v: %w; nothing was changed but %s's read_only", newName, oldName, pos, catchUp, err, oldName)
	}
	return nil
}

// promoteSQL are the statements that make a caught-up replica the source: stop and
// reset replication, writable, and for semi-sync the source side on, the replica side off.
func promoteSQL(caps topology.Capabilities, semi bool) []string {
	q := []string{caps.StopReplica(""), resetReplicaAll(caps)}
	q = append(q, readOnlySQL(caps, false)...)
	if semi {
		v := caps.SemiSyncNames()
		q = append(q, "SET GLOBAL "+v.ReplicaEnabled+"=OFF", "SET GLOBAL "+v.SourceEnabled+"=ON")
	}
	return q
}

// repointAll makes every running node but nr a replica of nr, recording them in
// rep.Repointed and the stopped ones in rep.Down; it stops at the first error.
func (c *Cluster) repointAll(ctx context.Context, nr *Node, rep *PromoteReport) error {
	for _, n := range c.Nodes {
		if n == nr {
			continue
		}
		if !n.Running() {
			rep.Down = append(rep.Down, n.Name)
			continue
		}
		if err := c.repoint(ctx, n, nr); err != nil {
			return err
		}
		rep.Repointed = append(rep.Repointed, n.Name)
	}
	return nil
}

// repoint makes running node n a read-only replica of src (semi-sync: replica side on,
// source side off).
func (c *Cluster) repoint(ctx context.Context, n, src *Node) error {
	caps := c.Capabilities()
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	defer db.Close()
	stmts := readOnlySQL(caps, true)
	stmts = append(stmts, caps.StopReplica(""), caps.ChangeSource(src.Host, src.Port, topology.ReplUser, c.Credentials().ReplPass()))
	if c.Spec.Is(topology.SemiSync) {
		v := caps.SemiSyncNames()
		stmts = append(stmts, "SET GLOBAL "+v.SourceEnabled+"=OFF", "SET GLOBAL "+v.ReplicaEnabled+"=ON")
	}
	stmts = append(stmts, caps.StartReplica())
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("node %s: repointing to %s: %s: %w", n.Name, src.Name, redact(q), err)
		}
	}
	return waitReplicaRunning(ctx, db, caps, n.Name)
}

// RejoinAsReplica is for a replica that was started after a Promote: it points it at
// the current source unless it already replicates from it. A no-op for other kinds.
func (c *Cluster) RejoinAsReplica(ctx context.Context, node string) error {
	n := c.Node(node)
	if n == nil || !topology.KindOf(c.Spec.Kind).Promotable || n.Role != topology.RoleReplica {
		return nil
	}
	src := c.Writer()
	db, err := c.OpenAdmin(n)
	if err != nil {
		return err
	}
	caps := c.Capabilities()
	st, err := ReplicaStatus(ctx, db, caps)
	db.Close()
	if err == nil && st != nil && st[caps.ReplicaStatusColumn("source_host")] == src.Host {
		return nil
	}
	return c.repoint(ctx, n, src)
}

// writeRoleOptions rewrites each node's option file for its current role: read_only
// (and super_read_only on MySQL) ON for replicas, OFF for the source; semi-sync's source
// and replica switches likewise.
func (c *Cluster) writeRoleOptions() error {
	caps := c.Capabilities()
	v := caps.SemiSyncNames()
	loose := func(name string) string {
		if v.SourceLibrary != "" {
			return "loose_" + name
		}
		return name
	}
	for _, n := range c.Nodes {
		content, err := c.ReadOptionFile(n)
		if err != nil {
			return err
		}
		on := "OFF"
		if n.Role == topology.RoleReplica {
			on = "ON"
		}
		opts := []topology.Option{{Name: "read_only", Value: on}}
		if caps.GTIDKind == topology.GTIDMySQL {
			opts = append(opts, topology.Option{Name: "super_read_only", Value: on})
		}
		if c.Spec.Is(topology.SemiSync) {
			src, repl := "ON", "OFF"
			if n.Role == topology.RoleReplica {
				src, repl = "OFF", "ON"
			}
			opts = append(opts, topology.Option{Name: loose(v.SourceEnabled), Value: src}, topology.Option{Name: loose(v.ReplicaEnabled), Value: repl})
		}
		if err := c.WriteOptionFile(n, SetOptionLines(content, opts)); err != nil {
			return err
		}
	}
	return nil
}

func readOnlySQL(caps topology.Capabilities, on bool) []string {
	if on {
		if caps.GTIDKind == topology.GTIDMySQL {
			return []string{"SET GLOBAL read_only=ON", "SET GLOBAL super_read_only=ON"}
		}
		return []string{"SET GLOBAL read_only=ON"}
	}
	if caps.GTIDKind == topology.GTIDMySQL {
		return []string{"SET GLOBAL super_read_only=OFF", "SET GLOBAL read_only=OFF"}
	}
	return []string{"SET GLOBAL read_only=OFF"}
}

func resetReplicaAll(caps topology.Capabilities) string {
	if caps.ReplicaStatements {
		return "RESET REPLICA ALL"
	}
	return "RESET SLAVE ALL"
}

// gtidPositionSQL reads a node's executed GTID set (MySQL) or binlog position (MariaDB).
func gtidPositionSQL(caps topology.Capabilities) string {
	if caps.GTIDKind == topology.GTIDMariaDB {
		return "SELECT @@GLOBAL.gtid_binlog_pos"
	}
	return "SELECT @@GLOBAL.gtid_executed"
}

func gtidPosition(ctx context.Context, db *sql.DB, caps topology.Capabilities) (string, error) {
	var pos string
	err := db.QueryRowContext(ctx, gtidPositionSQL(caps)).Scan(&pos)
	return strings.ReplaceAll(pos, "\n", ""), err
}

// catchUpFromPeers is for a promotion whose old source is down: another running replica
// may have received more of the old source's transactions than the new source nr. For
// each such peer, nr replicates from it until it has everything the peer has (what
// MHA calls applying the differential relay logs), so no replica is left ahead of the
// new source (it could not replicate from it). Up to catchUp in all.
func (c *Cluster) catchUpFromPeers(ctx context.Context, nr *Node, ndb *sql.DB, catchUp time.Duration) error {
	caps := c.Capabilities()
	ctx, cancel := context.WithTimeout(ctx, catchUp)
	defer cancel()
	// Freeze what every replica has received (bytes still on their way from the dead
	// source are not waited for), then compare what each has applied.
	for _, p := range c.Nodes {
		if p.Role != topology.RoleReplica || !p.Running() {
			continue
		}
		pdb, err := c.OpenAdmin(p)
		if err != nil {
			return err
		}
		_, err = pdb.ExecContext(ctx, caps.StopReplica("IO_THREAD"))
		pdb.Close()
		if err != nil {
			return fmt.Errorf("node %s: stopping its receiver: %w", p.Name, err)
		}
	}
	if err := drainRelayLog(ctx, ndb, caps, catchUp); err != nil {
		return fmt.Errorf("node %s: applying its relay log: %w", nr.Name, err)
	}
	for _, p := range c.Nodes {
		if p == nr || p.Role != topology.RoleReplica || !p.Running() {
			continue
		}
		pdb, err := c.OpenAdmin(p)
		if err != nil {
			return err
		}
		// What the peer received but has not applied yet counts too.
		err = drainRelayLog(ctx, pdb, caps, catchUp)
		var pos string
		if err == nil {
			pos, err = gtidPosition(ctx, pdb, caps)
		}
		pdb.Close()
		if err != nil {
			return fmt.Errorf("node %s: %w", p.Name, err)
		}
		if has, err := hasGTID(ctx, ndb, caps, pos); err != nil || has {
			if err != nil {
				return fmt.Errorf("node %s: %w", nr.Name, err)
			}
			continue
		}
		for _, q := range []string{caps.StopReplica(""), caps.ChangeSource(p.Host, p.Port, topology.ReplUser, c.Credentials().ReplPass()), caps.StartReplica()} {
			if _, err := ndb.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("node %s: catching up from %s: %s: %w", nr.Name, p.Name, redact(q), err)
			}
		}
		if err := waitGTID(ctx, ndb, caps, pos); err != nil {
			return fmt.Errorf("node %s: catching up from %s (%s): %w", nr.Name, p.Name, pos, err)
		}
	}
	return nil
}

// hasGTID reports whether db has applied every transaction of pos.
func hasGTID(ctx context.Context, db *sql.DB, caps topology.Capabilities, pos string) (bool, error) {
	if pos == "" {
		return true, nil
	}
	var r int
	q := "SELECT GTID_SUBSET(?, @@GLOBAL.gtid_executed)"
	if caps.GTIDKind == topology.GTIDMariaDB {
		// MASTER_GTID_WAIT with a 0 timeout: 0 when reached, -1 otherwise.
		q = "SELECT MASTER_GTID_WAIT(?, 0) + 1"
	}
	if err := db.QueryRowContext(ctx, q, pos).Scan(&r); err != nil {
		return false, err
	}
	return r == 1, nil
}

// waitGTID waits until db has applied pos (MySQL WAIT_FOR_EXECUTED_GTID_SET, MariaDB
// MASTER_GTID_WAIT), polling in 1 s slices until ctx ends.
func waitGTID(ctx context.Context, db *sql.DB, caps topology.Capabilities, pos string) error {
	if pos == "" {
		return nil
	}
	q := "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, 1)" // 0 done, 1 timeout
	if caps.GTIDKind == topology.GTIDMariaDB {
		q = "SELECT MASTER_GTID_WAIT(?, 1)" // 0 done, -1 timeout
	}
	for {
		var r int
		if err := db.QueryRowContext(ctx, q, pos).Scan(&r); err != nil {
			return err
		}
		if r == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// drainRelayLog waits (up to timeout) until the replica has applied every transaction
// its receiver got: MySQL's Retrieved_Gtid_Set, MariaDB's Gtid_IO_Pos.
func drainRelayLog(ctx context.Context, db *sql.DB, caps topology.Capabilities, timeout time.Duration) error {
	st, err := ReplicaStatus(ctx, db, caps)
	if err != nil || st == nil {
		return err
	}
	col := "Retrieved_Gtid_Set"
	if caps.GTIDKind == topology.GTIDMariaDB {
		col = "Gtid_IO_Pos"
	}
	got := strings.ReplaceAll(st[col], "\n", "")
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return waitGTID(wctx, db, caps, got)
}

// WriterNow returns the node that takes writes now, without changing the state file: in
// a single-primary group the member the running ONLINE members call PRIMARY (the
// recorded writer while none does, e.g. during an election), else the recorded writer
// (which Promote updates). For following workers (workload.Target.Follow).
func (c *Cluster) WriterNow(ctx context.Context) *Node {
	if f := c.ops().WriterNow; f != nil {
		if n := f(ctx, c); n != nil {
			return n
		}
	}
	return c.Writer()
}

// LiveWriter is WriterNow without its fallback: nil while a kind that names its writer
// live (a group) names none, e.g. during an election; the recorded writer for the others.
func (c *Cluster) LiveWriter(ctx context.Context) *Node {
	if f := c.ops().WriterNow; f != nil {
		return f(ctx, c)
	}
	return c.Writer()
}

// groupWriterNow is KindOps.WriterNow of a group: the member that calls itself PRIMARY in
// single-primary mode while it sees a majority of the group ONLINE (an old primary cut off
// in a minority still calls itself PRIMARY, and cannot commit), and whose claim the members
// it sees ONLINE confirm (primaryClaim); nil while none does, e.g. during an election. A
// sandbox's stopped members are skipped; an existing cluster's are all asked (habench does
// not know which of them run). The members are asked at once, within one second together,
// so an unreachable member delays the answer by at most that.
func groupWriterNow(ctx context.Context, c *Cluster) *Node {
	var cands []*Node
	for _, n := range c.Nodes {
		if n.Role != topology.RoleReplica && !c.NodeDown(n) {
			cands = append(cands, n)
		}
	}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	claims := readClaims(qctx, c, cands)
	if i := confirmedPrimary(claims); i >= 0 {
		return cands[i]
	}
	return nil
}

// readClaims asks every node of nodes at once for its own group state and its view of the
// group (primaryClaim; read false for a node that could not be asked within ctx).
func readClaims(ctx context.Context, c *Cluster, nodes []*Node) []primaryClaim {
	claims := make([]primaryClaim, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := c.OpenAdmin(n)
			if err != nil {
				return
			}
			defer db.Close()
			m, err := ReadGroupMember(ctx, db, n.Name)
			if err != nil {
				return
			}
			v, err := c.ReadGroupView(ctx, db)
			if err != nil {
				return
			}
			claims[i] = primaryClaim{read: true, self: m.MemberID, view: v, member: m,
				claims: m.State == "ONLINE" && m.SinglePrimary && m.Role == "PRIMARY"}
		}()
	}
	wg.Wait()
	return claims
}

// primaryClaim is what one member said when asked for the group's primary: its
// @@server_uuid, its view of the group, and whether it calls itself the ONLINE PRIMARY in
// single-primary mode. read is false when it could not be asked.
type primaryClaim struct {
	read   bool
	self   string
	view   GroupView
	member GroupMember
	claims bool
}

// confirmedPrimary returns the index of the first claim (in order) of a member that calls
// itself PRIMARY, sees a majority of its view ONLINE, and is listed in the view of every
// other member it sees ONLINE that could be read; -1 when none is. An old primary that was
// expelled while cut off and has not learnt it yet sees its old group all ONLINE once the
// partition heals, and still calls itself PRIMARY: the others' views, without it, refuse
// its claim.
func confirmedPrimary(claims []primaryClaim) int {
	byID := map[string]GroupView{}
	for _, c := range claims {
		if c.read && c.self != "" {
			byID[c.self] = c.view
		}
	}
	for i, c := range claims {
		if !c.read || !c.claims || 2*c.view.Count("ONLINE") <= len(c.view) {
			continue
		}
		confirmed := true
		for _, m := range c.view {
			if m.MemberID == c.self || m.State != "ONLINE" {
				continue
			}
			if other, read := byID[m.MemberID]; read && !other.listsID(c.self) {
				confirmed = false
			}
		}
		if confirmed {
			return i
		}
	}
	return -1
}

// listsID reports whether the view has a row for the member with @@server_uuid id.
func (v GroupView) listsID(id string) bool {
	for _, m := range v {
		if m.MemberID == id {
			return true
		}
	}
	return false
}

// waitProxyLeaves waits, when c has a proxy, until its write endpoint no longer sends
// connections to old (ProxyWait at most): how long it waited, and true when it still did.
func (c *Cluster) waitProxyLeaves(ctx context.Context, old *Node) (time.Duration, bool) {
	if c.Proxy() == nil {
		return 0, false
	}
	start := time.Now()
	for time.Since(start) < ProxyWait {
		if w := c.ProxyWriter(ctx); w == nil || w.Name != old.Name {
			return time.Since(start), false
		}
		select {
		case <-ctx.Done():
			return time.Since(start), true
		case <-time.After(50 * time.Millisecond):
		}
	}
	return time.Since(start), true
}

// killClientSessions closes (KILL CONNECTION), through the fence's own connection, every
// client session on the old source but the fence's (not the replication threads nor
// the server's own), and returns how many of them were the benchmark user's (0 when the
// sessions cannot be listed).
func killClientSessions(ctx context.Context, fence *sql.Conn) int {
	rows, err := fence.QueryContext(ctx, "SELECT ID, USER FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "+
		"AND COMMAND NOT IN ('Daemon', 'Binlog Dump', 'Binlog Dump GTID') AND USER NOT IN ('system user', 'event_scheduler')")
	if err != nil {
		return 0
	}
	type sess struct {
		id   int64
		user string
	}
	var all []sess
	for rows.Next() {
		var s sess
		if rows.Scan(&s.id, &s.user) == nil {
			all = append(all, s)
		}
	}
	rows.Close()
	bench := 0
	for _, s := range all {
		if _, err := fence.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", s.id)); err == nil && s.user == topology.BenchUser {
			bench++
		}
	}
	return bench
}
