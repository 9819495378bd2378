package sampler

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// Metric names this sampler emits (Sample.Metric; see Metrics and docs/results.md).
const (
	// MetricGRMemberState: the member's own MEMBER_STATE code.
	MetricGRMemberState = "gr_member_state"
	// MetricGRMemberRole: the member's own MEMBER_ROLE code.
	MetricGRMemberRole = "gr_member_role"
	// MetricGRMemberChanges: changes of its state or role so far.
	MetricGRMemberChanges = "gr_member_changes"
	// MetricGRMembersTotal: rows of the member's view of the group.
	MetricGRMembersTotal = "gr_members_total"
	// MetricGRMembersOnline: ONLINE rows of its view.
	MetricGRMembersOnline = "gr_members_online"
	// MetricGRMembersRecovering: RECOVERING rows of its view.
	MetricGRMembersRecovering = "gr_members_recovering"
	// MetricGRMembersUnreachable: UNREACHABLE rows of its view.
	MetricGRMembersUnreachable = "gr_members_unreachable"
	// MetricGRCertifierQueue: transactions waiting for certification.
	MetricGRCertifierQueue = "gr_certifier_queue_trx"
	// MetricGRApplierQueue: certified remote transactions waiting to be applied.
	MetricGRApplierQueue = "gr_applier_queue_trx"
	// MetricGRConflicts: transactions that failed certification in the tick.
	MetricGRConflicts = "gr_conflicts_trx"
	// MetricGRChecked: transactions certified in the tick.
	MetricGRChecked = "gr_checked_trx"
	// MetricGRRemoteApplied: remote transactions applied in the tick.
	MetricGRRemoteApplied = "gr_remote_applied_trx"
	// MetricGRLocalRollback: local transactions rolled back by certification in the tick.
	MetricGRLocalRollback = "gr_local_rollback_trx"
	// MetricGRFCThrottleCount: transactions flow control held back in the tick (MySQL 9.7+).
	MetricGRFCThrottleCount = "gr_fc_throttle_count"
	// MetricGRFCThrottleTime: time flow control held commits in the tick, seconds.
	MetricGRFCThrottleTime = "gr_fc_throttle_time_s"
	// MetricGRFCThrottleActive: sessions throttled now.
	MetricGRFCThrottleActive = "gr_fc_throttle_active"
	// MetricGRFCThrottledSessions: average sessions throttled over the tick.
	MetricGRFCThrottledSessions = "gr_fc_throttled_sessions_avg"
	// MetricGRFCThrottleInferred: flow control inferred from queues and thresholds, 0/1.
	MetricGRFCThrottleInferred = "gr_fc_throttle_inferred"
)

// Group samples MySQL Group Replication on every member, once per tick, from the member's
// own view (MySQL/Percona 8.0.2+), in one query:
//
//	performance_schema.replication_group_members     its own row (MEMBER_ID = @@server_uuid),
//	                                                 and all rows counted by MEMBER_STATE
//	performance_schema.replication_group_member_stats its own row (MEMBER_ID = @@server_uuid)
//
// Metrics, per member:
//
//	gr_member_state        MEMBER_STATE as a number: 0 OFFLINE (also: no row, Group
//	                       Replication stopped), 1 ONLINE, 2 RECOVERING, 3 UNREACHABLE, 4 ERROR
//	gr_member_role         MEMBER_ROLE as a number: 0 none (not ONLINE), 1 PRIMARY, 2 SECONDARY
//	gr_member_changes      how often (state, role) changed since the baseline (Start, else
//	                       the node's first tick): a counter
//	gr_members_total       rows of the member's replication_group_members: the members in
//	                       its view of the group (itself included; 1 while it is OFFLINE or
//	                       in ERROR, as it then lists only itself)
//	gr_members_online      of those, how many are ONLINE in its view (itself included)
//	gr_members_recovering  how many are RECOVERING (joining, distributed recovery)
//	gr_members_unreachable how many are UNREACHABLE: the member has not heard from them for
//	                       about 5 s (a suspicion); a member cut off from the others sees
//	                       all of them UNREACHABLE while its own row stays ONLINE, so its
//	                       gr_member_state alone does not show a partition. Members the
//	                       majority expelled (group_replication_member_expel_timeout after
//	                       the suspicion) leave the majority's view: gr_members_total drops.
//	gr_majority_state      the member's MEMBER_STATE in the majority's view: the view of the
//	                       first member (in node order) whose own row is ONLINE, that
//	                       sees more than half of its rows ONLINE and whose ONLINE members
//	                       list it in their views too (an expelled member that has not
//	                       learnt it sees its old group ONLINE after a heal), read from every member
//	                       at once, once per tick: gr_member_state's codes, 5 when that
//	                       view has no row for it (expelled, left). Absent while no
//	                       readable member sees a majority. A partitioned old primary is
//	                       ONLINE/PRIMARY in its own view and UNREACHABLE (about 5 s after
//	                       the cut), then 5, here. This, not the member's own view, is its
//	                       role in node_states and reports.
//	gr_majority_role       its MEMBER_ROLE in that view: 0 none (not ONLINE there), 1
//	                       PRIMARY, 2 SECONDARY
//	gr_certifier_queue_trx COUNT_TRANSACTIONS_IN_QUEUE: transactions waiting for conflict
//	                       detection (certification)
//	gr_applier_queue_trx   COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE: certified remote
//	                       transactions waiting to be applied
//	gr_conflicts_trx       delta of COUNT_CONFLICTS_DETECTED (transactions that failed
//	                       certification) since the previous tick
//	gr_checked_trx         delta of COUNT_TRANSACTIONS_CHECKED (certified, local and remote)
//	gr_remote_applied_trx  delta of COUNT_TRANSACTIONS_REMOTE_APPLIED
//	gr_local_rollback_trx  delta of COUNT_TRANSACTIONS_LOCAL_ROLLBACK (local transactions
//	                       rolled back after failing certification)
//
// Flow control, where the member has component_group_replication_flow_control_stats
// (MySQL community 9.7+, installed by the sandbox; found by its status variables, read with
// SHOW GLOBAL STATUS LIKE 'Gr\_flow\_control\_throttle\_%'). The component has exactly
// these four (MySQL 9.7.4):
//
//	Gr_flow_control_throttle_count                   transactions this member held back
//	                                                 (throttled) since the member started GR
//	Gr_flow_control_throttle_time_sum                total time those transactions waited, µs
//	                                                 (summed over transactions)
//	Gr_flow_control_throttle_active_count            sessions being throttled right now
//	Gr_flow_control_throttle_last_throttle_timestamp when the last transaction was throttled
//	                                                 (text; not sampled)
//
// All four reset on bootstrap, join, rejoin and restart (a counter that went down gives the
// new value as its delta). They grow on the members that write: the throttle holds commits
// on the writer, whichever member's queue caused it. Sampled as
//
//	gr_fc_throttle_count         delta of Gr_flow_control_throttle_count: transactions throttled
//	gr_fc_throttle_time_s        delta of Gr_flow_control_throttle_time_sum, in seconds
//	gr_fc_throttle_active        Gr_flow_control_throttle_active_count
//	gr_fc_throttled_sessions_avg gr_fc_throttle_time_s / seconds since the previous read: the
//	                             average number of sessions held by flow control over the
//	                             interval (0 = none; 1 = one session's worth of waiting, e.g.
//	                             4 sessions throttled a quarter of the time)
//
// Where the component is absent (before 9.7, Percona, or not installed), flow control is
// inferred instead, labelled so in its name:
//
//	gr_fc_throttle_inferred 1 when this member's group_replication_flow_control_mode is QUOTA
//	                        and its certifier queue exceeds the certifier threshold or its
//	                        applier queue the applier threshold of a writer (a member with a
//	                        writable role: the primary, every member in multi-primary mode)
//	                        whose mode is QUOTA too, else 0. Each writer decides with its own
//	                        group_replication_flow_control_*_threshold whether the queues
//	                        the others report call for limiting its commits in the next
//	                        period, so the lowest writer thresholds are the ones compared
//	                        (measured on MySQL 9.7.4: thresholds 1 on the secondaries only
//	                        never throttled the primary; 1 on the primary only did); the
//	                        member's own thresholds when no writer's were read. In
//	                        multi-primary mode a writable member that does not write does
//	                        not throttle anyone, yet its thresholds count here. The queues
//	                        are sampled once per tick, not when the group exchanges its stats
//	                        (every group_replication_flow_control_period), so a short
//	                        excursion can be missed or seen without throttling following.
//
// Mode and thresholds are read in Start, on every member (after the topology's options and
// the run's knobs took effect; SET GLOBAL during a run is not seen), or on a member's first
// tick. Infer forces the inferred
// metric also where the component exists (to compare both).
//
// Supports primaries and secondaries (the roles of kind group) of MySQL-like servers with
// Group Replication. Sample errors when the queries fail (plugin not loaded) or a counter is
// not a number; the member's state is sampled even when it has no stats row (OFFLINE).
type Group struct {
	// Infer emits gr_fc_throttle_inferred also on members that have the flow-control stats
	// component.
	Infer bool

	now func() time.Time

	mu    sync.Mutex
	nodes map[string]*groupNode
	uuids map[string]string // node -> @@server_uuid, as its last view read said
}

// groupNode is the per-member state of the Group sampler.
type groupNode struct {
	fc        *fcSettings // nil until read
	writer    bool        // a writable role (its thresholds decide throttling)
	prev      map[string]float64
	prevAt    time.Time
	stateRole string // last "state/role"
	changes   float64
}

// fcSettings are the flow-control settings that decide throttling.
type fcSettings struct {
	mode               string
	certifier, applier float64
}

// NewGroup returns the Group Replication sampler.
func NewGroup() *Group {
	return &Group{now: time.Now, nodes: map[string]*groupNode{}, uuids: map[string]string{}}
}

// Name is "group".
func (*Group) Name() string { return "group" }

// Supports Group Replication members (roles primary and secondary) of MySQL-like servers.
func (*Group) Supports(n Node) bool {
	return (n.Role == topology.RolePrimary || n.Role == topology.RoleSecondary) && n.Caps.GroupReplication
}

// memberStatsQuery reads a member's own state, role and certification counters, and how
// many members it sees in each state, in one row.
const memberStatsQuery = `SELECT COALESCE(m.MEMBER_STATE, 'OFFLINE'), COALESCE(m.MEMBER_ROLE, ''),
 s.COUNT_TRANSACTIONS_IN_QUEUE, s.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE,
 s.COUNT_CONFLICTS_DETECTED, s.COUNT_TRANSACTIONS_CHECKED,
 s.COUNT_TRANSACTIONS_REMOTE_APPLIED, s.COUNT_TRANSACTIONS_LOCAL_ROLLBACK,
 v.total, v.online, v.recovering, v.unreachable
 FROM (SELECT COUNT(*) AS total, COALESCE(SUM(MEMBER_STATE = 'ONLINE'), 0) AS online,
   COALESCE(SUM(MEMBER_STATE = 'RECOVERING'), 0) AS recovering, COALESCE(SUM(MEMBER_STATE = 'UNREACHABLE'), 0) AS unreachable
   FROM performance_schema.replication_group_members) AS v
 LEFT JOIN performance_schema.replication_group_members AS m ON m.MEMBER_ID = @@server_uuid
 LEFT JOIN performance_schema.replication_group_member_stats AS s ON s.MEMBER_ID = @@server_uuid`

// fcStatusPrefix is the prefix of the flow-control stats component's counters.
const fcStatusPrefix = "Gr_flow_control_throttle_"

// groupRead is one read of a member.
type groupRead struct {
	state, role string
	hasStats    bool
	counters    map[string]float64 // cumulative: conflicts, checked, applied, rollback, fc_count, fc_time_us
	certQueue   float64
	applQueue   float64
	hasFC       bool
	fcActive    float64
	// view counts the rows of the member's replication_group_members: total, ONLINE,
	// RECOVERING, UNREACHABLE.
	view [4]float64
	at   time.Time
}

// read queries member n once.
func (g *Group) read(ctx context.Context, n Node) (groupRead, error) {
	r := groupRead{counters: map[string]float64{}}
	var q, aq, conf, chk, appl, rb sql.NullInt64
	if err := n.DB.QueryRowContext(ctx, memberStatsQuery).Scan(&r.state, &r.role, &q, &aq, &conf, &chk, &appl, &rb,
		&r.view[0], &r.view[1], &r.view[2], &r.view[3]); err != nil {
		return r, err
	}
	r.at = g.now()
	if q.Valid {
		r.hasStats = true
		r.certQueue, r.applQueue = float64(q.Int64), float64(aq.Int64)
		r.counters["conflicts"] = float64(conf.Int64)
		r.counters["checked"] = float64(chk.Int64)
		r.counters["applied"] = float64(appl.Int64)
		r.counters["rollback"] = float64(rb.Int64)
	}
	st, err := globalStatus(ctx, n.DB, fcStatusPrefix+"%")
	if err != nil {
		return r, err
	}
	if _, ok := st[fcStatusPrefix+"count"]; ok {
		r.hasFC = true
		for k, name := range map[string]string{"fc_count": "count", "fc_time_us": "time_sum"} {
			f, err := parseFloat(fcStatusPrefix+name, st[fcStatusPrefix+name])
			if err != nil {
				return r, err
			}
			r.counters[k] = f
		}
		a, err := parseFloat(fcStatusPrefix+"active_count", st[fcStatusPrefix+"active_count"])
		if err != nil {
			return r, err
		}
		r.fcActive = a
	}
	return r, nil
}

// readFC reads the flow-control mode and thresholds of member n.
func readFC(ctx context.Context, n Node) (*fcSettings, error) {
	var fc fcSettings
	err := n.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.group_replication_flow_control_mode, "+
		"@@GLOBAL.group_replication_flow_control_certifier_threshold, @@GLOBAL.group_replication_flow_control_applier_threshold").
		Scan(&fc.mode, &fc.certifier, &fc.applier)
	if err != nil {
		return nil, fmt.Errorf("flow-control settings: %w", err)
	}
	fc.mode = strings.ToUpper(fc.mode)
	return &fc, nil
}

// memberStateCode and memberRoleCode are the numeric encodings of gr_member_state and
// gr_member_role.
var (
	memberStateCode = map[string]float64{"OFFLINE": 0, "ONLINE": 1, "RECOVERING": 2, "UNREACHABLE": 3, "ERROR": 4}
	memberRoleCode  = map[string]float64{"": 0, "PRIMARY": 1, "SECONDARY": 2}
)

// Start reads every member's flow-control settings and counters as the baseline for the
// first tick's deltas. A member that cannot be read is skipped (its first tick reads the
// settings and reports 0 deltas); Start never fails.
func (g *Group) Start(ctx context.Context, cfg Config, nodes []Node) (func(), error) {
	cfg = cfg.withDefaults()
	for _, n := range nodes {
		if !g.Supports(n) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		fc, err := readFC(cctx, n)
		if err == nil {
			var r groupRead
			if r, err = g.read(cctx, n); err == nil {
				g.mu.Lock()
				gn := g.node(n.Name)
				gn.fc, gn.writer = fc, n.Role.Writable()
				gn.prev, gn.prevAt, gn.stateRole = r.counters, r.at, r.state+"/"+r.role
				g.mu.Unlock()
				if v, verr := readView(cctx, n); verr == nil {
					g.mu.Lock()
					g.uuids[n.Name] = v.self
					g.mu.Unlock()
				}
			}
		}
		cancel()
		if err != nil {
			cfg.Logger.Warn("group sampler: no baseline", "node", n.Name, "err", err)
		}
	}
	return nil, nil
}

// node returns the state of member name, creating it; g.mu must be held.
func (g *Group) node(name string) *groupNode {
	gn := g.nodes[name]
	if gn == nil {
		gn = &groupNode{}
		g.nodes[name] = gn
	}
	return gn
}

// Sample reads member n and returns the metrics described on Group: its own view's, then
// the majority's (also when n itself could not be read, with the error).
func (g *Group) Sample(ctx context.Context, t *Tick, n Node) ([]Sample, error) {
	out, err := g.own(ctx, n)
	return append(out, g.majoritySamples(ctx, t, n)...), err
}

// own reads member n's own view and counters.
func (g *Group) own(ctx context.Context, n Node) ([]Sample, error) {
	g.mu.Lock()
	needFC := g.node(n.Name).fc == nil
	g.mu.Unlock()
	var fc *fcSettings
	if needFC {
		var err error
		if fc, err = readFC(ctx, n); err != nil {
			return nil, err
		}
	}
	r, err := g.read(ctx, n)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	gn := g.node(n.Name)
	if fc != nil {
		gn.fc = fc
	}
	gn.writer = n.Role.Writable()
	sr := r.state + "/" + r.role
	if gn.stateRole != "" && sr != gn.stateRole {
		gn.changes++
	}
	gn.stateRole = sr
	prev, prevAt := gn.prev, gn.prevAt
	gn.prev, gn.prevAt = r.counters, r.at
	delta := func(k string) float64 {
		cur, ok := r.counters[k]
		p, seen := prev[k]
		if !ok || !seen {
			return 0
		}
		if d := cur - p; d >= 0 {
			return d
		}
		return cur // reset (rejoin, restart)
	}
	state, ok := memberStateCode[r.state]
	if !ok {
		return nil, fmt.Errorf("unknown MEMBER_STATE %q", r.state)
	}
	out := []Sample{
		{Metric: MetricGRMemberState, Value: state},
		{Metric: MetricGRMemberRole, Value: memberRoleCode[r.role]},
		{Metric: MetricGRMemberChanges, Value: gn.changes},
		{Metric: MetricGRMembersTotal, Value: r.view[0]},
		{Metric: MetricGRMembersOnline, Value: r.view[1]},
		{Metric: MetricGRMembersRecovering, Value: r.view[2]},
		{Metric: MetricGRMembersUnreachable, Value: r.view[3]},
	}
	if r.hasStats {
		out = append(out,
			Sample{Metric: MetricGRCertifierQueue, Value: r.certQueue},
			Sample{Metric: MetricGRApplierQueue, Value: r.applQueue},
			Sample{Metric: MetricGRConflicts, Value: delta("conflicts")},
			Sample{Metric: MetricGRChecked, Value: delta("checked")},
			Sample{Metric: MetricGRRemoteApplied, Value: delta("applied")},
			Sample{Metric: MetricGRLocalRollback, Value: delta("rollback")},
		)
	}
	if r.hasFC {
		t := delta("fc_time_us") / 1e6
		avg := 0.0
		if _, seen := prev["fc_time_us"]; seen {
			if d := r.at.Sub(prevAt).Seconds(); d > 0 {
				avg = t / d
			}
		}
		out = append(out,
			Sample{Metric: MetricGRFCThrottleCount, Value: delta("fc_count")},
			Sample{Metric: MetricGRFCThrottleTime, Value: t},
			Sample{Metric: MetricGRFCThrottleActive, Value: r.fcActive},
			Sample{Metric: MetricGRFCThrottledSessions, Value: avg},
		)
	}
	if (!r.hasFC || g.Infer) && r.hasStats && gn.fc != nil {
		inferred := 0.0
		if cert, appl, ok := g.writerThresholds(gn); gn.fc.mode == "QUOTA" && ok && (r.certQueue > cert || r.applQueue > appl) {
			inferred = 1
		}
		out = append(out, Sample{Metric: MetricGRFCThrottleInferred, Value: inferred})
	}
	return out, nil
}

// writerThresholds returns the lowest certifier and applier thresholds among the writers
// whose flow-control mode is QUOTA (see gr_fc_throttle_inferred), and false when writers'
// settings are known but none is in QUOTA mode (no writer throttles). Without any writer's
// settings, member gn's own. g.mu must be held.
func (g *Group) writerThresholds(gn *groupNode) (cert, appl float64, ok bool) {
	known := false
	for _, w := range g.nodes {
		if !w.writer || w.fc == nil {
			continue
		}
		known = true
		if w.fc.mode != "QUOTA" {
			continue
		}
		if !ok {
			cert, appl, ok = w.fc.certifier, w.fc.applier, true
			continue
		}
		cert, appl = min(cert, w.fc.certifier), min(appl, w.fc.applier)
	}
	if !known {
		return gn.fc.certifier, gn.fc.applier, true
	}
	return cert, appl, ok
}

// groupSummary sums the group sampler's samples per member (nil when there are none).
func groupSummary(nodes []Node, samples []Sample) []schema.GroupMemberSummary {
	byNode := map[string]*schema.GroupMemberSummary{}
	majority := map[string]bool{}
	add := func(p **float64, v float64) {
		if *p == nil {
			*p = new(float64)
		}
		**p += v
	}
	for _, sm := range samples {
		if !strings.HasPrefix(sm.Metric, "gr_") {
			continue
		}
		g := byNode[sm.Node]
		if g == nil {
			g = &schema.GroupMemberSummary{Node: sm.Node}
			byNode[sm.Node] = g
		}
		switch sm.Metric {
		case MetricGRMajorityState:
			g.LastState, majority[sm.Node] = sm.Value, true
		case MetricGRMajorityRole:
			g.LastRole = sm.Value
		case MetricGRMemberState:
			if !majority[sm.Node] {
				g.LastState = sm.Value
			}
		case MetricGRMemberRole:
			if !majority[sm.Node] {
				g.LastRole = sm.Value
			}
		case MetricGRMemberChanges:
			g.Changes = sm.Value
		case MetricGRCertifierQueue:
			g.CertifierQueueMax = max(g.CertifierQueueMax, sm.Value)
		case MetricGRApplierQueue:
			g.ApplierQueueMax = max(g.ApplierQueueMax, sm.Value)
		case MetricGRConflicts:
			g.Conflicts += sm.Value
		case MetricGRLocalRollback:
			g.LocalRollbacks += sm.Value
		case MetricGRChecked:
			g.Checked += sm.Value
		case MetricGRRemoteApplied:
			g.RemoteApplied += sm.Value
		case MetricGRFCThrottleCount:
			add(&g.ThrottledTrx, sm.Value)
		case MetricGRFCThrottleTime:
			add(&g.ThrottleTimeS, sm.Value)
		case MetricGRFCThrottleInferred:
			add(&g.InferredThrottleTicks, sm.Value)
		}
	}
	var out []schema.GroupMemberSummary
	for _, n := range nodes {
		if g := byNode[n.Name]; g != nil {
			out = append(out, *g)
		}
	}
	return out
}

// Markdown is the report.md section of a Group Replication run ("" without group
// samples): each member's state, role, queues, conflicts and flow control.
func (*Group) Markdown(s *schema.Summary) string {
	gs := s.Group
	if len(gs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Group Replication\n\n")
	b.WriteString("| member | state | role | changes | certifier queue max | applier queue max | conflicts | local rollbacks | remote applied | throttled trx | throttle time s | inferred throttle ticks |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	roles := map[float64]string{0: "-", 1: "PRIMARY", 2: "SECONDARY"}
	for _, g := range gs {
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %s |\n", g.Node, MemberStates[g.LastState], roles[g.LastRole], g.Changes,
			g.CertifierQueueMax, g.ApplierQueueMax, g.Conflicts, g.LocalRollbacks, g.RemoteApplied,
			optText(g.ThrottledTrx, "%.0f"), optText(g.ThrottleTimeS, "%.3f"), optText(g.InferredThrottleTicks, "%.0f"))
	}
	b.WriteString("\nstate and role = at the end, as the members that see a majority ONLINE report them (a member cut off in a minority calls itself ONLINE); ")
	b.WriteString("conflicts = transactions that failed certification (every member counts all of them); local rollbacks = this member's own transactions rolled back by certification; throttled = flow control held this member's commits (Gr_flow_control_throttle_*, MySQL 9.7+; throttle time is summed over transactions); inferred = samples in which the member's queues exceeded the flow-control thresholds (where the component is absent). n/a = not measured here.\n")
	return b.String()
}

// Summarize sets s.Group from the group samples in in, per member in the run's node
// order (nil without group samples).
func (*Group) Summarize(in SummaryInput, s *schema.Summary) error {
	s.Group = groupSummary(in.Nodes, in.Samples)
	return nil
}

// SectionOrder: the group section comes after semi-sync's, before the knob settings.
func (*Group) SectionOrder() int { return 20 }

// MemberStates are gr_member_state's and gr_majority_state's codes as shown.
var MemberStates = map[float64]string{0: "OFFLINE", 1: "ONLINE", 2: "RECOVERING", 3: "UNREACHABLE", 4: "ERROR", 5: "not in the group"}
