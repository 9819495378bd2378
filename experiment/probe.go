package experiment

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/checker"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/history"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// ProbeTable is the probe writer's table, in the benchmark database.
const ProbeTable = "habench_probe"

// probe is the probe writer: one connection that commits one numbered row every
// interval on the current writer, re-reading who the writer is from the cluster's state
// (a promote, a group's election) every interval and after every error, the way an
// application follows its writer; or, when the workload goes through the proxy, through
// the proxy's write endpoint as the application does (the proxy picks the node). Each
// commit reads @@server_id in its transaction: the history's node is the one that
// committed it.
type probe struct {
	sb       *cluster.Store
	name     string // cluster
	schema   string
	interval time.Duration
	// via is a pool of one connection to the proxy's write endpoint (nil: direct).
	via *sql.DB
	// ids are the nodes by server_id (those whose server_id no other node has).
	ids map[int]string

	h       *history.History // every commit an append of its seq to probeKey; the final read a read (its clock: h.Start())
	mu      sync.Mutex
	writers []string
}

// probeKey is the one key of the probe's history: its table.
const probeKey = 1

// startProbe creates the probe table on c's current writer (empty; cluster.CurrentWriter:
// with a proxy on Galera, the node its write endpoint uses) and returns the probe; run it
// with run. With via (not nil) the probe commits through that endpoint of c's proxy with
// t's credentials and dialer (the workload's), instead of on the writer it resolves.
func startProbe(ctx context.Context, sb *cluster.Store, c *cluster.Cluster, schema string, interval time.Duration, via *workload.Endpoint, t workload.Target) (*probe, error) {
	p := &probe{sb: sb, name: c.Name, schema: schema, interval: interval, ids: serverIDs(c), h: history.New()}
	name, db, err := p.writer(ctx)
	if err != nil {
		return nil, fmt.Errorf("probe writer: %w", err)
	}
	defer db.Close()
	for _, q := range []string{"DROP TABLE IF EXISTS " + p.table(),
		"CREATE TABLE " + p.table() + " (seq BIGINT NOT NULL PRIMARY KEY, node VARCHAR(64) NOT NULL, at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("probe writer on %s: %w", name, err)
		}
	}
	if via != nil {
		if p.via, err = openVia(*via, t, schema); err != nil {
			return nil, fmt.Errorf("probe writer through %s: %w", via.Label(), err)
		}
	}
	return p, nil
}

// serverIDs are c's nodes by server_id, leaving out a server_id two nodes share.
func serverIDs(c *cluster.Cluster) map[int]string {
	ids, dup := map[int]string{}, map[int]bool{}
	for _, n := range c.Nodes {
		if _, ok := ids[n.ServerID]; ok {
			dup[n.ServerID] = true
		}
		ids[n.ServerID] = n.Name
	}
	for id := range dup {
		delete(ids, id)
	}
	return ids
}

// nodeOf is the node whose server_id is id ("server_id N" when no single node has it).
func (p *probe) nodeOf(id int) string {
	if n, ok := p.ids[id]; ok {
		return n
	}
	return fmt.Sprintf("server_id %d", id)
}

// openVia is a pool of one connection to ep (viaConfig). Error: the driver's refusal of
// the configuration.
func openVia(ep workload.Endpoint, t workload.Target, db string) (*sql.DB, error) {
	conn, err := mysql.NewConnector(viaConfig(ep, t, db))
	if err != nil {
		return nil, err
	}
	pool := sql.OpenDB(conn)
	pool.SetMaxOpenConns(1)
	pool.SetMaxIdleConns(1)
	return pool, nil
}

// viaConfig is the driver's configuration of the probe's connection to ep: t's user,
// password and dialer (the guarded dialer without one), database db, connects bounded by
// the probe's 2 s, and its arguments interpolated into the statement's text (as the admin
// connections do), so a commit is four round trips, not a prepared statement's
// PREPARE, EXECUTE and CLOSE for its INSERT.
func viaConfig(ep workload.Endpoint, t workload.Target, db string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = t.User, t.Password, db
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	cfg.Timeout = 2 * time.Second
	cfg.InterpolateParams = true
	cfg.DialFunc = t.Dial
	if cfg.DialFunc == nil {
		cfg.DialFunc = func(ctx context.Context, _, addr string) (net.Conn, error) { return cluster.GuardedDial(ctx, addr) }
	}
	return cfg
}

func (p *probe) table() string { return "`" + p.schema + "`." + ProbeTable }

// writer returns the current writer's name and an admin pool to it.
func (p *probe) writer(ctx context.Context) (string, *sql.DB, error) {
	c, err := p.sb.Load(p.name)
	if err != nil {
		return "", nil, err
	}
	n, err := c.CurrentWriter(ctx, cluster.WriterAlias)
	if err != nil {
		return "", nil, err
	}
	db, err := c.OpenAdmin(n)
	return n.Name, db, err
}

// run commits rows until ctx ends: through the proxy on its one connection (opened
// again after an error), or on the writer it resolves every interval.
func (p *probe) run(ctx context.Context) {
	var seq int64
	var db *sql.DB
	cur := ""
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	if p.via != nil {
		db, cur = p.via, topology.ProxyName
	}
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		if p.via == nil { // through the proxy the node is the proxy's choice
			if name, ndb, err := p.writer(ctx); err == nil && name != cur {
				if db != nil {
					db.Close()
				}
				db, cur = ndb, name
				p.mu.Lock()
				p.writers = append(p.writers, name)
				p.mu.Unlock()
			} else if ndb != nil {
				ndb.Close()
			}
		}
		if db != nil {
			seq++
			p.commit(ctx, db, cur, seq)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// commit inserts row seq through db (node: where it goes, the proxy's name through the
// proxy) in a transaction that reads @@server_id first, and records it as an append of
// seq in the history, its node the one that answered: ok, fail or unknown. Fail when no
// connection could be had (refused, no route, timed out) or anything before the COMMIT
// failed (nothing committed: the server rolls back a transaction whose connection is
// gone); the COMMIT's error by checker.OutcomeOf (unknown when the connection died).
// Not recorded when ctx ended first (the run stopped the probe, as before the history:
// neither acknowledged nor failed). After an error the connection is dropped: the next
// commit opens another (through the proxy: to the node it sends to then).
func (p *probe) commit(ctx context.Context, db *sql.DB, node string, seq int64) {
	op := history.Op{Node: node, Start: p.h.Since(time.Now()), Value: []history.Mop{history.Append(probeKey, seq)}}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	conn, err := db.Conn(qctx)
	outcome := history.Fail // nothing sent
	if err == nil {
		var who string
		who, outcome, err = p.insert(qctx, conn, seq)
		if who != "" {
			op.Node = who
		}
		if err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn }) // the pool drops it
		}
		conn.Close()
	}
	cancel()
	op.End, op.Outcome = p.h.Since(time.Now()), outcome
	if err != nil && ctx.Err() != nil {
		return
	}
	if err != nil {
		op.Error = err.Error()
	}
	p.h.Add(op)
}

// insert runs seq's transaction on conn: the node that answers (by @@server_id; "" when
// it did not), the outcome and the error.
func (p *probe) insert(ctx context.Context, conn *sql.Conn, seq int64) (string, history.Outcome, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return "", history.Fail, err
	}
	var id int
	if err := tx.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
		tx.Rollback()
		return "", history.Fail, err
	}
	node := p.nodeOf(id)
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+p.table()+" (seq, node) VALUES (?, ?)", seq, node); err != nil {
		tx.Rollback()
		return node, history.Fail, err
	}
	err = tx.Commit()
	return node, checker.OutcomeOf(err), err
}

// check reads the rows on the current writer (the history's final read) and counts the
// acknowledged commits missing there with checker.FinalReadLoss.
func (p *probe) check(ctx context.Context) *schema.ProbeSummary {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &schema.ProbeSummary{IntervalS: p.interval.Seconds(), Writers: p.writers}
	if p.via != nil {
		s.Via, s.Writers = scenario.ViaProxy, acceptedBy(p.h.Ops())
	}
	p.count(s, p.h.Ops())
	name, db, err := p.writer(ctx)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer db.Close()
	s.CheckedOn = name
	read := history.Op{Node: name, Start: p.h.Since(time.Now()), Outcome: history.OK}
	present, err := p.rows(ctx, db)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	read.End, read.Value = p.h.Since(time.Now()), []history.Mop{history.RL(probeKey, present...)}
	p.h.Add(read)
	if err := p.count(s, p.h.Ops()); err != nil {
		s.Error = err.Error()
	}
	return s
}

// ops are the probe's history so far.
func (p *probe) ops() []history.Op {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.h.Ops()
}

// acceptedBy are the nodes that acknowledged the commits of ops, in order, each again
// after another.
func acceptedBy(ops []history.Op) []string {
	var out []string
	for _, op := range ops {
		if op.Outcome == history.OK && isCommit(op) && (len(out) == 0 || out[len(out)-1] != op.Node) {
			out = append(out, op.Node)
		}
	}
	return out
}

// isCommit says whether op is one of the probe's commits (not its final read).
func isCommit(op history.Op) bool {
	return slices.ContainsFunc(op.Value, func(m history.Mop) bool { return m.F == "append" })
}

// writeHistory writes the probe's history into dir (schema.ProbeHistoryFile) and names
// it in s; the error is the file that could not be written.
func (p *probe) writeHistory(dir string, s *schema.ProbeSummary) error {
	p.mu.Lock()
	ops := p.h.Ops()
	p.mu.Unlock()
	if err := history.WriteFile(filepath.Join(dir, schema.ProbeHistoryFile), ops, history.WriteJSONL); err != nil {
		return err
	}
	s.History = schema.ProbeHistoryFile
	return nil
}

// rows returns the seq of every row of the probe table on db, ascending.
func (p *probe) rows(ctx context.Context, db *sql.DB) ([]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT seq FROM "+p.table()+" ORDER BY seq")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var present []int64
	for rows.Next() {
		var q int64
		if err := rows.Scan(&q); err != nil {
			return nil, err
		}
		present = append(present, q)
	}
	return present, rows.Err()
}

// count fills s's figures from the probe's history ops (checker.FinalReadLoss): without
// a final read yet only the commits by outcome (and the error, not filled in s).
func (p *probe) count(s *schema.ProbeSummary, ops []history.Op) error {
	l, err := checker.FinalReadLoss(ops, probeKey)
	if err != nil {
		s.Acknowledged, s.Failed, s.Unknown = 0, 0, 0
		for _, op := range ops {
			if !isCommit(op) {
				continue // the final read is not a commit
			}
			switch op.Outcome {
			case history.OK:
				s.Acknowledged++
			case history.Fail:
				s.Failed++
			default:
				s.Unknown++
			}
		}
		return err
	}
	s.Acknowledged, s.Failed, s.Unknown = int64(l.Acknowledged), int64(l.Failed), int64(l.Unknown)
	s.LostAcknowledged = int64(len(l.LostAcknowledged))
	s.Lost = l.LostAcknowledged[:min(len(l.LostAcknowledged), 20)]
	s.UnacknowledgedPresent = int64(l.FailedPresent + l.UnknownPresent)
	return nil
}

// probeWarning is the run's WARNING when acknowledged commits were lost or the check
// could not be made ("" otherwise).
func probeWarning(s *schema.ProbeSummary) string {
	switch {
	case s == nil:
		return ""
	case s.Error != "":
		return "probe writer: lost acknowledged commits not checked: " + s.Error
	case s.LostAcknowledged > 0:
		first := make([]string, len(s.Lost))
		for i, n := range s.Lost {
			first[i] = strconv.FormatInt(n, 10)
		}
		return fmt.Sprintf("probe writer: %d of %d acknowledged commits are missing on the writer %s after the run (lost acknowledged commits; first: %s)",
			s.LostAcknowledged, s.Acknowledged, s.CheckedOn, strings.Join(first, ", "))
	}
	return ""
}
