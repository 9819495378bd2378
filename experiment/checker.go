package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/habench/habench/checker"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/history"
	"github.com/habench/habench/results"
	"github.com/habench/habench/topology"
)

// CheckerSpec is a checker workload run beside the benchmark (a scenario's `checker:`
// section, Bench.Checker): its own table and sessions on the cluster's writer, every
// operation recorded in the run's history (history.jsonl, history.edn) and checked after
// the run (summary.json "checks", report.md "Anomalies").
type CheckerSpec struct {
	// Workload is the checker workload: "register" (read-then-write transactions on a
	// few keys; checks: lost updates, P4).
	Workload string `yaml:"workload"`
	// Threads (default 2) and Keys (default 4) size it; Locking "" or "for-update" and
	// Isolation (READ-COMMITTED, REPEATABLE-READ, SERIALIZABLE ...; default the server's)
	// are the register's reads and sessions.
	Threads   int    `yaml:"threads"`
	Keys      int    `yaml:"keys"`
	Locking   string `yaml:"locking"`
	Isolation string `yaml:"isolation"`
}

// options returns the register options of s.
func (s *CheckerSpec) options() checker.RegisterOptions {
	th := s.Threads
	if th == 0 {
		th = 2
	}
	return checker.RegisterOptions{Keys: s.Keys, Threads: th, Locking: s.Locking, Isolation: s.Isolation}
}

// Validate checks s: a known workload and valid options, as a *topology.FieldError on
// checker.<key>.
func (s *CheckerSpec) Validate() error {
	if s.Workload != "register" {
		return &topology.FieldError{Field: "checker.workload", Value: s.Workload, Reason: "want register"}
	}
	for _, f := range []struct {
		field, value string
		o            checker.RegisterOptions
	}{
		{"checker.threads", fmt.Sprint(s.Threads), checker.RegisterOptions{Threads: s.Threads}},
		{"checker.keys", fmt.Sprint(s.Keys), checker.RegisterOptions{Keys: s.Keys}},
		{"checker.locking", s.Locking, checker.RegisterOptions{Locking: s.Locking}},
		{"checker.isolation", s.Isolation, checker.RegisterOptions{Isolation: s.Isolation}},
	} {
		if err := f.o.Validate(); err != nil {
			_, reason, _ := strings.Cut(err.Error(), ": ")
			return &topology.FieldError{Field: f.field, Value: f.value, Reason: reason}
		}
	}
	return nil
}

// checkerRun is a checker workload in progress during a run.
type checkerRun struct {
	spec *CheckerSpec
	o    checker.RegisterOptions
	node string
	db   *sql.DB
	done chan struct{}
	stop context.CancelFunc
	h    *history.History
	err  error
}

// startChecker creates the register table on c's writer in database schema and starts
// the sessions, which run until ctx ends or close is called; finish checks their history.
func startChecker(ctx context.Context, c *cluster.Cluster, schema string, spec *CheckerSpec) (*checkerRun, error) {
	n := c.Writer()
	cfg, err := mysql.ParseDSN(c.AdminDSN(n))
	if err != nil {
		return nil, fmt.Errorf("checker on %s: %w", n.Name, err)
	}
	cfg.DBName = schema
	cfg.InterpolateParams = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("checker on %s: %w", n.Name, err)
	}
	r := &checkerRun{spec: spec, o: spec.options().WithDefaults(), node: n.Name, db: sql.OpenDB(conn), done: make(chan struct{})}
	r.o.Time = 24 * time.Hour // until ctx ends with the workload
	if err := checker.PrepareRegister(ctx, r.db, r.o); err != nil {
		r.db.Close()
		return nil, fmt.Errorf("checker on %s: %w", n.Name, err)
	}
	ctx, r.stop = context.WithCancel(ctx)
	go func() {
		defer close(r.done)
		r.h, r.err = checker.RunRegister(ctx, []checker.Node{{Name: n.Name, DB: r.db}}, r.o)
	}()
	return r, nil
}

// close stops the sessions, waits for them and closes the pool (the run's cleanup).
func (r *checkerRun) close() {
	r.stop()
	<-r.done
	r.db.Close()
}

// finish waits for the sessions (ended with the workload), checks the history and writes history.jsonl and
// history.edn into dir ("" for none); a file that cannot be written is the error.
func (r *checkerRun) finish(dir string) (*results.ChecksSummary, error) {
	<-r.done
	s := &results.ChecksSummary{Workload: r.spec.Workload, Node: r.node, Threads: r.o.Threads, Keys: r.o.Keys,
		Locking: r.o.Locking, Isolation: r.o.Isolation, History: results.HistoryFile}
	if r.err != nil {
		s.Error = r.err.Error()
	}
	if r.h == nil {
		return s, nil
	}
	ops := r.h.Ops()
	v := checker.CheckRegister(ops)
	s.Ops, s.OK, s.Failed, s.Unknown = v.Ops, v.OK, v.Failed, v.Unknown
	s.Valid, s.AnomalyCount, s.LostUpdates = v.Valid && r.err == nil, len(v.Anomalies), v.LostUpdates
	for i, a := range v.Anomalies {
		if i == 20 {
			break
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

// AnomaliesLine is the one-line verdict of a checker workload, e.g. "Anomalies: none
// found (register, 1200 operations: 1180 ok, 20 failed, 0 unknown)" or "Anomalies: 31
// lost-update (P4) anomalies, 40 committed updates lost (register, ...)".
func AnomaliesLine(s *results.ChecksSummary) string {
	what := fmt.Sprintf("%s on %s, %d operations: %d ok, %d failed, %d unknown", s.Workload, s.Node, s.Ops, s.OK, s.Failed, s.Unknown)
	switch {
	case s.Error != "":
		return fmt.Sprintf("Anomalies: not checked: %s (%s)", s.Error, what)
	case s.AnomalyCount == 0:
		return fmt.Sprintf("Anomalies: none found (%s)", what)
	}
	return fmt.Sprintf("Anomalies: %d lost-update (P4) anomalies, %d committed updates lost (%s)", s.AnomalyCount, s.LostUpdates, what)
}

// anomaliesSection is report.md's "Anomalies" section: the verdict line and the
// explanations of the first anomalies.
func anomaliesSection(b *strings.Builder, s *results.ChecksSummary) {
	if s == nil {
		return
	}
	fmt.Fprintf(b, "\n## Anomalies\n\n%s.\n", AnomaliesLine(s))
	for _, a := range s.Anomalies {
		fmt.Fprintf(b, "\n- %s", a.Explanation)
	}
	if len(s.Anomalies) > 0 {
		b.WriteString("\n")
	}
	if s.AnomalyCount > len(s.Anomalies) {
		fmt.Fprintf(b, "\n(the first %d of %d; every operation is in %s, also as %s for Elle)\n", len(s.Anomalies), s.AnomalyCount, results.HistoryFile, results.HistoryEDNFile)
	}
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
		st.warn(AnomaliesLine(cs), "anomalies found or not checked", "count", cs.AnomalyCount)
	} else {
		st.printf("%s\n", AnomaliesLine(cs))
	}
	return nil
}

// PlanLine is the dry run's line for the checker, e.g. "checker register beside the
// workload, every cell: 2 threads on the writer, 4 keys, plain reads, isolation
// REPEATABLE-READ (history.jsonl, history.edn; checks: lost updates)".
func (s *CheckerSpec) PlanLine() string {
	o := s.options().WithDefaults()
	reads, iso := "plain reads", "the server's default isolation"
	if o.Locking == "for-update" {
		reads = "SELECT ... FOR UPDATE"
	}
	if o.Isolation != "" {
		iso = "isolation " + o.Isolation
	}
	return fmt.Sprintf("checker %s beside the workload, every cell: %d threads on the writer, %d keys, %s, %s (%s, %s; checks: lost updates)",
		s.Workload, o.Threads, o.Keys, reads, iso, results.HistoryFile, results.HistoryEDNFile)
}
