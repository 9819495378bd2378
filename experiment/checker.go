package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/habench/habench/checker"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/history"
	"github.com/habench/habench/report"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// checkerRun is a checker workload in progress during a run.
type checkerRun struct {
	spec    *scenario.CheckerSpec
	node    string // the nodes' names, "n1,n2,n3"
	follows bool   // the sessions follow the writer
	keys    int
	dbsMu   sync.Mutex // dbs grows while sessions follow the writer
	dbs     []*sql.DB
	check   func([]history.Op) checker.Verdict
	done    chan struct{}
	stop    context.CancelFunc
	h       *history.History
	err     error
}

// checkerNodes opens a pool on database schema for every writable node of c (every
// node of a Galera cluster or a multi-primary group; the writer otherwise).
func checkerNodes(c *cluster.Cluster, schema string) ([]checker.Node, error) {
	var out []checker.Node
	for _, n := range c.Nodes {
		if !n.Role.Writable() && n != c.Writer() {
			continue
		}
		cn, err := checkerNode(c, n, schema)
		if err != nil {
			return out, err
		}
		out = append(out, cn)
	}
	return out, nil
}

// checkerReadNodes opens a pool on database schema for each of c's nodes called names
// (checker.read_nodes); a name c lacks is a *topology.FieldError on checker.read_nodes.
func checkerReadNodes(c *cluster.Cluster, schema string, names []string) ([]checker.Node, error) {
	var out []checker.Node
	for _, name := range names {
		n := c.Node(name)
		if n == nil {
			return out, &topology.FieldError{Field: "checker.read_nodes", Value: name, Reason: "no such node in " + c.Name}
		}
		cn, err := checkerNode(c, n, schema)
		if err != nil {
			return out, err
		}
		out = append(out, cn)
	}
	return out, nil
}

// checkerNode opens a pool on database schema of node n of c.
func checkerNode(c *cluster.Cluster, n *cluster.Node, schema string) (checker.Node, error) {
	cfg, err := mysql.ParseDSN(c.AdminDSN(n))
	if err != nil {
		return checker.Node{}, fmt.Errorf("checker on %s: %w", n.Name, err)
	}
	cfg.DBName = schema
	cfg.InterpolateParams = true
	cfg.Logger = quietDriver{} // a killed connection is an outcome in the history, not a log line
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return checker.Node{}, fmt.Errorf("checker on %s: %w", n.Name, err)
	}
	return checker.Node{Name: n.Name, DB: sql.OpenDB(conn)}, nil
}

// startChecker creates the checker's table (on the first writable node, in database
// schema) and starts the sessions, round-robin on every writable node of c, which run
// until ctx ends or close is called; finish checks their history. The read-only
// transactions go to c's nodes called readNames (none: as the others). With follow (the
// workload's Target.Follow: writer auto) the sessions follow the writer as the
// workload's workers do.
func startChecker(ctx context.Context, c *cluster.Cluster, schema string, spec *scenario.CheckerSpec, readNames []string, follow func(context.Context) (workload.Endpoint, error)) (*checkerRun, error) {
	nodes, err := checkerNodes(c, schema)
	r := &checkerRun{spec: spec, done: make(chan struct{})}
	var names []string
	for _, n := range nodes {
		r.dbs = append(r.dbs, n.DB)
		names = append(names, n.Name)
	}
	r.node = strings.Join(names, ",")
	var readers []checker.Node
	if err == nil {
		readers, err = checkerReadNodes(c, schema, readNames)
		for _, n := range readers {
			r.dbs = append(r.dbs, n.DB)
		}
	}
	if err != nil {
		r.closeDBs()
		return nil, err
	}
	var fw checker.Follow
	if follow != nil {
		fw = r.follow(c, schema, nodes, follow)
		r.follows = true
	}
	var run func(context.Context) (*history.History, error)
	switch spec.Workload {
	case "list-append":
		o := spec.ListAppendOptions()
		o.Time, o.ReadNodes, o.Follow = 24*time.Hour, readers, fw
		err = checker.PrepareListAppend(ctx, nodes[0].DB, o)
		r.keys = spec.RegisterOptions().Keys
		run = func(ctx context.Context) (*history.History, error) { return checker.RunListAppend(ctx, nodes, o) }
		r.check = checker.CheckListAppend
		if spec.Realtime {
			r.check = checker.CheckListAppendRealtime
		}
	case "bank":
		o := spec.BankOptions()
		o.Time, o.ReadNodes, o.Follow = 24*time.Hour, readers, fw // until ctx ends with the workload
		err = checker.PrepareBank(ctx, nodes[0].DB, o)
		r.keys = spec.BankAccounts()
		run = func(ctx context.Context) (*history.History, error) { return checker.RunBank(ctx, nodes, o) }
		r.check = func(ops []history.Op) checker.Verdict { return checker.CheckBank(ops, r.keys, o.Total()) }
	default:
		o := spec.RegisterOptions()
		o.Time, o.Follow = 24*time.Hour, fw
		err = checker.PrepareRegister(ctx, nodes[0].DB, o)
		r.keys = o.Keys
		run = func(ctx context.Context) (*history.History, error) { return checker.RunRegister(ctx, nodes, o) }
		r.check = checker.CheckRegister
	}
	if err != nil {
		r.closeDBs()
		return nil, fmt.Errorf("checker on %s: %w", nodes[0].Name, err)
	}
	ctx, r.stop = context.WithCancel(ctx)
	go func() {
		defer close(r.done)
		r.h, r.err = run(ctx)
	}()
	return r, nil
}

// follow is the sessions' checker.Follow: the node the workload's follow names, its pool
// on schema opened on first use (nodes: the pools open already) and closed with r.
func (r *checkerRun) follow(c *cluster.Cluster, schema string, nodes []checker.Node, follow func(context.Context) (workload.Endpoint, error)) checker.Follow {
	pools := map[string]checker.Node{}
	for _, n := range nodes {
		pools[n.Name] = n
	}
	return func(ctx context.Context) (checker.Node, error) {
		ep, err := follow(ctx)
		if err != nil {
			return checker.Node{}, err
		}
		r.dbsMu.Lock()
		defer r.dbsMu.Unlock()
		if n, ok := pools[ep.Name]; ok {
			return n, nil
		}
		cn := c.Node(ep.Name)
		if cn == nil {
			return checker.Node{}, fmt.Errorf("checker: the writer %s is not a node of %s", ep.Name, c.Name)
		}
		n, err := checkerNode(c, cn, schema)
		if err != nil {
			return n, err
		}
		pools[ep.Name] = n
		r.dbs = append(r.dbs, n.DB)
		return n, nil
	}
}

// quietDriver discards the driver's log lines ("unexpected EOF").
type quietDriver struct{}

func (quietDriver) Print(...any) {}

// close stops the sessions, waits for them and closes the pool (the run's cleanup).
func (r *checkerRun) close() {
	r.stop()
	<-r.done
	r.closeDBs()
}

func (r *checkerRun) closeDBs() {
	r.dbsMu.Lock()
	defer r.dbsMu.Unlock()
	for _, db := range r.dbs {
		db.Close()
	}
}

// finish waits for the sessions (ended with the workload), checks the history and writes history.jsonl and
// history.edn into dir ("" for none); a file that cannot be written is the error.
func (r *checkerRun) finish(dir string) (*schema.ChecksSummary, error) {
	<-r.done
	o := r.spec.RegisterOptions()
	s := &schema.ChecksSummary{Workload: r.spec.Workload, Node: r.node, FollowsWriter: r.follows, Threads: o.Threads, Keys: r.keys,
		Locking: o.Locking, Isolation: o.Isolation, History: schema.HistoryFile}
	if r.err != nil {
		s.Error = r.err.Error()
	}
	if r.h == nil {
		return s, nil
	}
	ops := r.h.Ops()
	v := r.check(ops)
	s.Ops, s.OK, s.Failed, s.Unknown = v.Ops, v.OK, v.Failed, v.Unknown
	s.Valid, s.AnomalyCount, s.LostUpdates = v.Valid && r.err == nil, len(v.Anomalies), v.LostUpdates
	for i, a := range v.Anomalies {
		if s.AnomalyTypes == nil {
			s.AnomalyTypes = map[string]int{}
		}
		s.AnomalyTypes[a.Type]++
		if i >= 20 {
			continue
		}
		as := schema.AnomalySummary{Type: a.Type, Key: a.Key, Version: a.Version, Explanation: a.Explanation}
		for _, op := range a.Ops {
			as.Ops = append(as.Ops, op.Index)
		}
		s.Anomalies = append(s.Anomalies, as)
	}
	if dir == "" {
		return s, nil
	}
	if err := history.WriteFile(filepath.Join(dir, schema.HistoryFile), ops, history.WriteJSONL); err != nil {
		return s, err
	}
	return s, history.WriteFile(filepath.Join(dir, schema.HistoryEDNFile), ops, history.WriteEDN)
}

// anomalyChecks finishes the run's checker workload (when it has one): sum.Checks, the history
// files, the verdict line and a warning when anomalies were found.
func (st *runState) anomalyChecks(sum *schema.Summary) error {
	if st.checker == nil {
		return nil
	}
	dir := ""
	if st.res != nil {
		dir = st.res.Dir
	}
	cs, err := st.checker.finish(dir)
	sum.Checks = cs
	if err != nil {
		return err
	}
	if cs.AnomalyCount > 0 || cs.Error != "" {
		st.warn(report.AnomaliesLine(cs), "anomalies found or not checked", "count", cs.AnomalyCount)
	} else {
		st.printf("%s\n", report.AnomaliesLine(cs))
	}
	return nil
}

// strictVerdict is the scenario run's error when its checker is strict and a cell found
// anomalies or checked nothing (nil otherwise): the checker's error, an invalid verdict,
// no operation that committed, or a finished cell without the checker's result, e.g.
// "checker register (strict): failed in 2 of 3 cells (c001: 503 anomalies; c002: checked
// nothing: no operation committed; summary.json checks of each cell)".
func strictVerdict(spec *scenario.CheckerSpec, cells []schema.CellRecord) error {
	if spec == nil || !spec.Strict {
		return nil
	}
	var bad []string
	for _, c := range cells {
		if why := strictCellFailure(c); why != "" {
			bad = append(bad, fmt.Sprintf("c%03d: %s", c.Index, why))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("checker %s (strict): failed in %d of %d cells (%s; summary.json checks of each cell)",
		spec.Workload, len(bad), len(cells), strings.Join(bad, "; "))
}

// strictCellFailure says why cell c fails a strict checker ("" when it passes).
func strictCellFailure(c schema.CellRecord) string {
	switch {
	case c.Anomalies != nil && *c.Anomalies > 0:
		return fmt.Sprintf("%d anomalies", *c.Anomalies)
	case c.CheckerError != "":
		return "checked nothing: " + c.CheckerError
	case c.CheckerValid != nil && !*c.CheckerValid:
		return "checked nothing: the verdict is not valid"
	case c.CheckerOK != nil && *c.CheckerOK == 0:
		return "checked nothing: no operation committed"
	case c.Status == schema.StatusDone && c.Anomalies == nil:
		return "checked nothing: no checker result"
	}
	return ""
}
