package proxy

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/topology"
)

// CheckConfig is the health-check server's configuration: the JSON file package cluster
// writes (mode 0600: it holds a password) into the proxy's directory and `habench
// proxy-check FILE` serves.
type CheckConfig struct {
	// Kind is the topology's kind (its rules: Galera, Group Replication, or a source and
	// replicas); Mode its group mode (topology.GroupMultiPrimary or single-primary).
	Kind topology.Kind `json:"kind"`
	Mode string        `json:"mode,omitempty"`
	// Nodes are the servers in the write endpoint's order (HAProxyConfig.Backends).
	Nodes []Backend `json:"nodes"`
	// User and Password are the account the checks log in with (the benchmark user).
	User     string `json:"user"`
	Password string `json:"password"`
	// Listen is the server's address ("127.0.0.1:PORT", HAProxyConfig.Check).
	Listen string `json:"listen"`
	// CheckInterval is HAProxy's interval; a check's connect and read timeouts are
	// CheckTimeout(CheckInterval). JSON: nanoseconds.
	CheckInterval time.Duration `json:"check_interval"`
}

// CheckTimeout is the time one server's check may take (its connect, read and write
// timeouts, and its queries together) for a check interval: the interval, at least
// 500 ms (a loaded machine's server may take a few hundred ms to answer, and a check that
// times out counts as failed) and at most 2 s. HAProxy waits 3 times that for an answer
// (HAProxyText's timeout check): a check may read the writer and then the node.
func CheckTimeout(interval time.Duration) time.Duration {
	return min(max(interval, 500*time.Millisecond), 2*time.Second)
}

// state is what a check reads from one server; each rule reads what it judges.
type state struct {
	// Galera: wsrep_local_state (4: Synced), wsrep_cluster_status ("Primary").
	WsrepState    int
	ClusterStatus string
	// Group Replication, in the node's own view: its MEMBER_STATE and MEMBER_ROLE
	// ("" when it is not a member), the members ONLINE and all members listed.
	MemberState, MemberRole string
	Online, Members         int
	// read_only and super_read_only (false where the server has none).
	ReadOnly, SuperReadOnly bool
	// Replica: the server has a replication channel; SQLRunning: its SQL thread runs.
	Replica, SQLRunning bool
}

// rule is how the servers of one kind are judged: read reads a server's state, writer
// and reader say whether a server in that state may take writes (reads), and why, in one
// line.
type rule struct {
	kind   topology.Kind // "": every kind no other rule takes (source and replicas)
	read   func(ctx context.Context, db *sql.DB) (state, error)
	writer func(s state, mode string) (bool, string)
	reader func(s state, mode string) (bool, string)
}

// rules are matched in order with topology.Kind.Is; the last takes every other kind.
var rules = []rule{
	{kind: topology.Galera, read: readGalera, writer: galeraOK, reader: galeraOK},
	{kind: topology.Group, read: readGroup, writer: groupWriter, reader: groupReader},
	{kind: "", read: readReplication, writer: replicationWriter, reader: replicationReader},
}

// ruleOf is kind k's rule.
func ruleOf(k topology.Kind) rule {
	for _, r := range rules {
		if r.kind == "" || k.Is(r.kind) {
			return r
		}
	}
	return rules[len(rules)-1]
}

// galeraOK: Synced (wsrep_local_state 4) in a Primary component, and writable.
func galeraOK(s state, _ string) (bool, string) {
	switch {
	case s.WsrepState != 4:
		return false, fmt.Sprintf("wsrep_local_state %d, not 4 (Synced)", s.WsrepState)
	case s.ClusterStatus != "Primary":
		return false, fmt.Sprintf("wsrep_cluster_status %s, not Primary", s.ClusterStatus)
	case s.ReadOnly:
		return false, "read_only is on"
	}
	return true, "Synced, Primary"
}

// groupMember: ONLINE in a view where a majority of the members are ONLINE.
func groupMember(s state) (bool, string) {
	switch {
	case s.MemberState == "":
		return false, "not a member of a group"
	case s.MemberState != "ONLINE":
		return false, "member " + s.MemberState
	case 2*s.Online <= s.Members:
		return false, fmt.Sprintf("ONLINE without a majority: %d of %d members ONLINE in its view", s.Online, s.Members)
	}
	return true, fmt.Sprintf("ONLINE, %d of %d members ONLINE", s.Online, s.Members)
}

// groupWriter: an ONLINE member with a majority that is PRIMARY (in multi-primary mode
// every such member).
func groupWriter(s state, mode string) (bool, string) {
	ok, why := groupMember(s)
	if !ok {
		return false, why
	}
	if mode != topology.GroupMultiPrimary && s.MemberRole != "PRIMARY" {
		return false, "member " + s.MemberRole + ", not PRIMARY"
	}
	return true, "PRIMARY, " + why
}

// groupReader: an ONLINE member with a majority.
func groupReader(s state, _ string) (bool, string) { return groupMember(s) }

// replicationWriter: read_only and super_read_only off.
func replicationWriter(s state, _ string) (bool, string) {
	switch {
	case s.SuperReadOnly:
		return false, "super_read_only is on"
	case s.ReadOnly:
		return false, "read_only is on"
	}
	return true, "writable"
}

// replicationReader: a replica whose SQL thread runs.
func replicationReader(s state, _ string) (bool, string) {
	switch {
	case !s.Replica:
		return false, "not a replica"
	case !s.SQLRunning:
		return false, "replica SQL thread not running"
	}
	return true, "replica SQL thread running"
}

// readGalera reads wsrep_local_state, wsrep_cluster_status and read_only.
func readGalera(ctx context.Context, db *sql.DB) (state, error) {
	var s state
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state', 'wsrep_cluster_status')")
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return s, err
		}
		if strings.EqualFold(k, "wsrep_local_state") {
			fmt.Sscan(v, &s.WsrepState)
		} else {
			s.ClusterStatus = v
		}
	}
	if err := rows.Err(); err != nil {
		return s, err
	}
	return s, readOnly(ctx, db, &s)
}

// readGroup reads the node's own view of the group and read_only.
func readGroup(ctx context.Context, db *sql.DB) (state, error) {
	var s state
	rows, err := db.QueryContext(ctx, "SELECT MEMBER_ID = @@server_uuid, MEMBER_STATE, MEMBER_ROLE FROM performance_schema.replication_group_members")
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var own bool
		var st, role sql.NullString
		if err := rows.Scan(&own, &st, &role); err != nil {
			return s, err
		}
		s.Members++
		if st.String == "ONLINE" {
			s.Online++
		}
		if own {
			s.MemberState, s.MemberRole = st.String, role.String
		}
	}
	if err := rows.Err(); err != nil {
		return s, err
	}
	return s, readOnly(ctx, db, &s)
}

// readReplication reads read_only, super_read_only and the replica's SQL thread.
func readReplication(ctx context.Context, db *sql.DB) (state, error) {
	var s state
	if err := readOnly(ctx, db, &s); err != nil {
		return s, err
	}
	rows, err := db.QueryContext(ctx, "SHOW REPLICA STATUS")
	if err != nil {
		rows, err = db.QueryContext(ctx, "SHOW SLAVE STATUS") // before MariaDB 10.5 and MySQL 8.0.22
	}
	if err != nil {
		return s, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return s, err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return s, err
		}
		s.Replica = true
		for i, c := range cols {
			if c == "Replica_SQL_Running" || c == "Slave_SQL_Running" {
				s.SQLRunning = string(vals[i]) == "Yes"
			}
		}
	}
	return s, rows.Err()
}

// readOnly sets s.ReadOnly and s.SuperReadOnly (MariaDB has no super_read_only).
func readOnly(ctx context.Context, db *sql.DB, s *state) error {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only')")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		on := strings.EqualFold(v, "ON") || v == "1"
		if strings.EqualFold(k, "read_only") {
			s.ReadOnly = on
		} else {
			s.SuperReadOnly = on
		}
	}
	return rows.Err()
}

// Checker answers HAProxy's health checks for one cluster (an http.Handler): GET
// /write/NODE and /read/NODE, 200 or 503 with a one-line reason, 404 for a node it does
// not know. It keeps one writer at a time: the first node in CheckConfig.Nodes' order
// that passes its kind's writer rule becomes the writer and stays it while it passes, so
// a node that comes back does not take the writes from the one that took over. A reader
// passes the reader rule and is not the writer, nor the last writer while no other node
// has taken over (a writer whose check failed once does not become a reader for it).
// Every request reads the servers anew.
type Checker struct {
	cfg     CheckConfig
	rule    rule
	timeout time.Duration
	dbs     map[string]*sql.DB

	mu     sync.Mutex
	writer string // the last node chosen as the writer ("" before the first)
}

// NewChecker returns a Checker for cfg (no connection is made yet). Error: a config
// without nodes, a node without a name or address.
func NewChecker(cfg CheckConfig) (*Checker, error) {
	if len(cfg.Nodes) == 0 {
		return nil, fmt.Errorf("proxy check config: no nodes")
	}
	c := &Checker{cfg: cfg, rule: ruleOf(cfg.Kind), timeout: CheckTimeout(cfg.CheckInterval), dbs: map[string]*sql.DB{}}
	for _, n := range cfg.Nodes {
		if n.Name == "" || n.Host == "" || n.Port == 0 {
			return nil, fmt.Errorf("proxy check config: node %q at %q port %d: want a name, a host and a port", n.Name, n.Host, n.Port)
		}
		mc := mysql.NewConfig()
		mc.User, mc.Passwd, mc.Net, mc.Addr = cfg.User, cfg.Password, "tcp", n.Addr()
		mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = c.timeout, c.timeout, c.timeout
		db, err := sql.Open("mysql", mc.FormatDSN())
		if err != nil {
			c.Close()
			return nil, err
		}
		db.SetMaxOpenConns(4)
		db.SetMaxIdleConns(2)
		db.SetConnMaxLifetime(time.Minute)
		c.dbs[n.Name] = db
	}
	return c, nil
}

// Close closes the connections.
func (c *Checker) Close() error {
	for _, db := range c.dbs {
		db.Close()
	}
	return nil
}

// judge reads node's state and applies f (the writer or the reader rule).
func (c *Checker) judge(ctx context.Context, node string, f func(state, string) (bool, string)) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := c.rule.read(ctx, c.dbs[node])
	if err != nil {
		return false, strings.ReplaceAll(err.Error(), "\n", " ")
	}
	return f(s, c.cfg.Mode)
}

// Writer returns the writer now (see Checker) and why it is, or "" and why there is none.
func (c *Checker) Writer(ctx context.Context) (string, string) {
	w, why, _ := c.writerNow(ctx)
	return w, why
}

// writerNow is Writer, and the last node chosen as the writer (the writer, or one that
// failed with no other to take over).
func (c *Checker) writerNow(ctx context.Context) (string, string, string) {
	c.mu.Lock()
	prev := c.writer
	c.mu.Unlock()
	var whys []string
	if prev != "" {
		ok, why := c.judge(ctx, prev, c.rule.writer)
		if ok {
			return prev, why, prev
		}
		whys = append(whys, prev+": "+why)
	}
	for _, n := range c.cfg.Nodes {
		if n.Name == prev {
			continue
		}
		ok, why := c.judge(ctx, n.Name, c.rule.writer)
		if !ok {
			whys = append(whys, n.Name+": "+why)
			continue
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.writer != prev {
			return c.writer, "chosen by a concurrent check", c.writer // another check chose first
		}
		c.writer = n.Name
		return n.Name, why, n.Name
	}
	return "", "no writer: " + strings.Join(whys, "; "), prev
}

// ServeHTTP answers GET /write/NODE and /read/NODE.
func (c *Checker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "GET /write/NODE or /read/NODE", http.StatusMethodNotAllowed)
		return
	}
	role, node, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if (role != "write" && role != "read") || !slices.ContainsFunc(c.cfg.Nodes, func(b Backend) bool { return b.Name == node }) {
		http.Error(w, fmt.Sprintf("no check %s: want /write/NODE or /read/NODE, NODE one of %s", r.URL.Path, c.names()), http.StatusNotFound)
		return
	}
	ok, why := c.check(r.Context(), role, node)
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "%s %s: %s\n", node, role, why)
}

// check is one check of node for role "write" or "read": whether it passes and why.
func (c *Checker) check(ctx context.Context, role, node string) (bool, string) {
	// The choice of a writer goes on when HAProxy stops waiting.
	writer, why, last := c.writerNow(context.WithoutCancel(ctx))
	if role == "write" {
		if writer == node {
			return true, "the writer: " + why
		}
		if writer == "" {
			return false, why
		}
		return false, "not the writer (" + writer + " is)"
	}
	if node == last { // the writer, or the last one while no other node took over
		if writer == node {
			return false, "the writer, not a reader"
		}
		return false, "the writer until its check failed, and no other node took over"
	}
	return c.judge(ctx, node, c.rule.reader)
}

// names lists the configured nodes, comma-separated.
func (c *Checker) names() string {
	var out []string
	for _, n := range c.cfg.Nodes {
		out = append(out, n.Name)
	}
	return strings.Join(out, ", ")
}
