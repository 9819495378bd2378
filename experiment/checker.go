package experiment

import (
	"context"
	"database/sql"
	"errors"
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
	"github.com/habench/habench/results"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// CheckerSpec is a checker workload run beside the benchmark (a scenario's `checker:`
// section, Bench.Checker): its own table and sessions on the cluster's writable nodes, every
// operation recorded in the run's history (history.jsonl, history.edn) and checked after
// the run (summary.json "checks", report.md "Anomalies").
type CheckerSpec struct {
	// Workload is the checker workload: "register" (read-then-write transactions on a
	// few keys; check: lost updates, P4) or "bank" (transfers and reads of every
	// balance; check: the total never changes, no negative balance) or "list-append"
	// (transactions of appends and reads of lists; checks: CheckListAppend's, Elle's).
	Workload string `yaml:"workload"`
	// Threads (default 2) and Keys (registers or lists in use, default 4; bank accounts, default 5) size
	// it; Locking "" or "for-update" and Isolation (READ-COMMITTED, REPEATABLE-READ,
	// SERIALIZABLE ...; default the server's) are its reads and sessions.
	Threads   int    `yaml:"threads"`
	Keys      int    `yaml:"keys"`
	Locking   string `yaml:"locking"`
	Isolation string `yaml:"isolation"`
	// Strict makes anomalies fail the scenario run (exit 1, after every cell ran and
	// its results were written); without it they are warnings.
	Strict bool `yaml:"strict"`
	// Rate caps its transactions per second, all its sessions together (0: as fast as they
	// go): a bound on what the checker takes from the benchmark beside it.
	Rate float64 `yaml:"rate"`
	// Realtime (list-append only) checks strict serializability: a transaction
	// acknowledged before another began must precede it, so stale reads across sessions
	// and nodes are anomalies too (checker.CheckListAppendRealtime: G-single-realtime ...).
	Realtime bool `yaml:"realtime"`
	// ReadNodes (node names, or a mapping of topology name to node names) run the
	// read-only transactions (list-append's reads-only transactions, bank's reads of
	// every balance), session i's on the i-th mod len; writes stay on the writable
	// nodes. Each operation records its node; stale reads there show as read-your-writes
	// and monotonic-read anomalies (list-append). Not for register (no read-only
	// transactions).
	ReadNodes CheckerReadNodes `yaml:"read_nodes"`
}

// register and bank return the options of s for each workload, defaults filled in.
func (s *CheckerSpec) register() checker.RegisterOptions {
	th := s.Threads
	if th == 0 {
		th = 2
	}
	return checker.RegisterOptions{Keys: s.Keys, Threads: th, Locking: s.Locking, Isolation: s.Isolation, Rate: s.Rate}.WithDefaults()
}

func (s *CheckerSpec) listAppend() checker.ListAppendOptions {
	r := s.register()
	return checker.ListAppendOptions{Keys: s.Keys, Threads: r.Threads, Isolation: r.Isolation, Rate: r.Rate}
}

func (s *CheckerSpec) bank() checker.BankOptions {
	r := s.register()
	return checker.BankOptions{Accounts: s.Keys, Threads: r.Threads, Locking: r.Locking, Isolation: r.Isolation, Rate: r.Rate}
}

// bankAccounts is the bank's account count (Keys, default 5).
func (s *CheckerSpec) bankAccounts() int {
	if s.Keys == 0 {
		return 5
	}
	return s.Keys
}

// Validate checks s: a known workload and valid options, as a *topology.FieldError on
// checker.<key>.
func (s *CheckerSpec) Validate() error {
	if s.Workload != "register" && s.Workload != "bank" && s.Workload != "list-append" {
		return &topology.FieldError{Field: "checker.workload", Value: s.Workload, Reason: "want register, bank or list-append"}
	}
	if s.Realtime && s.Workload != "list-append" {
		return &topology.FieldError{Field: "checker.realtime", Value: "true", Reason: "only the list-append checker has a realtime order check"}
	}
	keys := checker.RegisterOptions{Keys: s.Keys}.Validate()
	if s.Workload == "bank" {
		keys = checker.BankOptions{Accounts: s.Keys}.Validate()
	}
	for _, f := range []struct {
		field, value string
		err          error
	}{
		{"checker.threads", fmt.Sprint(s.Threads), checker.RegisterOptions{Threads: s.Threads}.Validate()},
		{"checker.keys", fmt.Sprint(s.Keys), keys},
		{"checker.locking", s.Locking, checker.RegisterOptions{Locking: s.Locking}.Validate()},
		{"checker.isolation", s.Isolation, checker.RegisterOptions{Isolation: s.Isolation}.Validate()},
		{"checker.rate", fmt.Sprint(s.Rate), checker.RegisterOptions{Rate: s.Rate}.Validate()},
		{"checker.read_nodes", s.Workload, s.readNodesFit()},
	} {
		if f.err != nil {
			_, reason, _ := strings.Cut(f.err.Error(), ": ")
			return &topology.FieldError{Field: f.field, Value: f.value, Reason: reason}
		}
	}
	return nil
}

// readNodesFit is an error ("register: reason") when s has read nodes and its workload has
// no read-only transactions (register).
func (s *CheckerSpec) readNodesFit() error {
	if s.Workload == "register" && (len(s.ReadNodes.All) > 0 || len(s.ReadNodes.ByTopology) > 0) {
		return errors.New("register: the register workload has no read-only transactions (want bank or list-append)")
	}
	return nil
}

// checkerRun is a checker workload in progress during a run.
type checkerRun struct {
	spec    *CheckerSpec
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
func startChecker(ctx context.Context, c *cluster.Cluster, schema string, spec *CheckerSpec, readNames []string, follow func(context.Context) (workload.Endpoint, error)) (*checkerRun, error) {
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
		o := spec.listAppend()
		o.Time, o.ReadNodes, o.Follow = 24*time.Hour, readers, fw
		err = checker.PrepareListAppend(ctx, nodes[0].DB, o)
		r.keys = spec.register().Keys
		run = func(ctx context.Context) (*history.History, error) { return checker.RunListAppend(ctx, nodes, o) }
		r.check = checker.CheckListAppend
		if spec.Realtime {
			r.check = checker.CheckListAppendRealtime
		}
	case "bank":
		o := spec.bank()
		o.Time, o.ReadNodes, o.Follow = 24*time.Hour, readers, fw // until ctx ends with the workload
		err = checker.PrepareBank(ctx, nodes[0].DB, o)
		r.keys = spec.bankAccounts()
		run = func(ctx context.Context) (*history.History, error) { return checker.RunBank(ctx, nodes, o) }
		r.check = func(ops []history.Op) checker.Verdict { return checker.CheckBank(ops, r.keys, o.Total()) }
	default:
		o := spec.register()
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
func (r *checkerRun) finish(dir string) (*results.ChecksSummary, error) {
	<-r.done
	o := r.spec.register()
	s := &results.ChecksSummary{Workload: r.spec.Workload, Node: r.node, FollowsWriter: r.follows, Threads: o.Threads, Keys: r.keys,
		Locking: o.Locking, Isolation: o.Isolation, History: results.HistoryFile}
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
		as := results.AnomalySummary{Type: a.Type, Key: a.Key, Version: a.Version, Explanation: a.Explanation}
		for _, op := range a.Ops {
			as.Ops = append(as.Ops, op.Index)
		}
		s.Anomalies = append(s.Anomalies, as)
	}
	if dir == "" {
		return s, nil
	}
	if err := history.WriteFile(filepath.Join(dir, results.HistoryFile), ops, history.WriteJSONL); err != nil {
		return s, err
	}
	return s, history.WriteFile(filepath.Join(dir, results.HistoryEDNFile), ops, history.WriteEDN)
}

// anomalyChecks finishes the run's checker workload (when it has one): sum.Checks, the history
// files, the verdict line and a warning when anomalies were found.
func (st *runState) anomalyChecks(sum *Summary) error {
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

// PlanLine is the dry run's line for the checker, e.g. "checker register beside the
// workload, every cell: 2 threads on the writable nodes, 4 keys, plain reads, isolation
// REPEATABLE-READ (history.jsonl, history.edn; checks: lost updates)".
func (s *CheckerSpec) PlanLine() string {
	o := s.register()
	keys, checks := fmt.Sprintf("%d keys", o.Keys), "lost updates"
	switch s.Workload {
	case "bank":
		keys, checks = fmt.Sprintf("%d accounts", s.bankAccounts()), "the bank total, negative balances"
	case "list-append":
		keys, checks = fmt.Sprintf("%d lists", o.Keys), "G0, G1a, G1b, G1c, G-single, G2-item, lost appends, session guarantees"
	}
	reads, iso := "plain reads", "the server's default isolation"
	if o.Locking == "for-update" {
		reads = "SELECT ... FOR UPDATE"
	}
	if o.Isolation != "" {
		iso = "isolation " + o.Isolation
	}
	return fmt.Sprintf("checker %s beside the workload, every cell: %d threads on the writable nodes, %s, %s, %s (%s, %s; checks: %s)",
		s.Workload, o.Threads, keys, reads, iso, results.HistoryFile, results.HistoryEDNFile, checks)
}

// strictVerdict is the scenario run's error when its checker is strict and a cell found
// anomalies or checked nothing (nil otherwise): the checker's error, an invalid verdict,
// no operation that committed, or a finished cell without the checker's result, e.g.
// "checker register (strict): failed in 2 of 3 cells (c001: 503 anomalies; c002: checked
// nothing: no operation committed; summary.json checks of each cell)".
func strictVerdict(spec *CheckerSpec, cells []CellRecord) error {
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
func strictCellFailure(c CellRecord) string {
	switch {
	case c.Anomalies != nil && *c.Anomalies > 0:
		return fmt.Sprintf("%d anomalies", *c.Anomalies)
	case c.CheckerError != "":
		return "checked nothing: " + c.CheckerError
	case c.CheckerValid != nil && !*c.CheckerValid:
		return "checked nothing: the verdict is not valid"
	case c.CheckerOK != nil && *c.CheckerOK == 0:
		return "checked nothing: no operation committed"
	case c.Status == StatusDone && c.Anomalies == nil:
		return "checked nothing: no checker result"
	}
	return ""
}
