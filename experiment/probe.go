package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/checker"
	"github.com/habench/habench/cluster"
	"github.com/habench/habench/history"
	"github.com/habench/habench/schema"
)

// ProbeTable is the probe writer's table, in the benchmark database.
const ProbeTable = "habench_probe"

// probe is the probe writer: one connection that commits one numbered row every
// interval on the current writer, re-reading who the writer is from the cluster's state
// (a promote, a group's election) every interval and after every error, the way an
// application follows its writer.
type probe struct {
	sb       *cluster.Store
	name     string // cluster
	schema   string
	interval time.Duration

	h       *history.History // every commit an append of its seq to probeKey; the final read a read
	mu      sync.Mutex
	writers []string
}

// probeKey is the one key of the probe's history: its table.
const probeKey = 1

// startProbe creates the probe table on c's writer (empty) and returns the probe; run it
// with run.
func startProbe(ctx context.Context, sb *cluster.Store, c *cluster.Cluster, schema string, interval time.Duration) (*probe, error) {
	p := &probe{sb: sb, name: c.Name, schema: schema, interval: interval, h: history.New()}
	db, err := c.OpenAdmin(c.Writer())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for _, q := range []string{"DROP TABLE IF EXISTS " + p.table(),
		"CREATE TABLE " + p.table() + " (seq BIGINT NOT NULL PRIMARY KEY, node VARCHAR(64) NOT NULL, at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("probe writer on %s: %w", c.Writer().Name, err)
		}
	}
	return p, nil
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

// run commits rows until ctx ends.
func (p *probe) run(ctx context.Context) {
	var seq int64
	var db *sql.DB
	cur := ""
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for ctx.Err() == nil {
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

// commit inserts row seq on node's db and records it as an append of seq in the history:
// ok, fail or unknown (checker.OutcomeOf); fail too when no connection could be had
// (refused, no route, timed out: the INSERT was never sent, so it cannot have committed);
// not recorded when ctx ended first (the run stopped the probe, as before the history:
// neither acknowledged nor failed).
func (p *probe) commit(ctx context.Context, db *sql.DB, node string, seq int64) {
	op := history.Op{Node: node, Start: p.h.Since(time.Now()), Value: []history.Mop{history.Append(probeKey, seq)}}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	conn, err := db.Conn(qctx)
	outcome := history.Fail // nothing sent
	if err == nil {
		_, err = conn.ExecContext(qctx, "INSERT INTO "+p.table()+" (seq, node) VALUES (?, ?)", seq, node)
		outcome = checker.OutcomeOf(err)
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

// check reads the rows on the current writer (the history's final read) and counts the
// acknowledged commits missing there with checker.FinalReadLoss.
func (p *probe) check(ctx context.Context) *schema.ProbeSummary {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &schema.ProbeSummary{IntervalS: p.interval.Seconds(), Writers: p.writers}
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
			if !slices.ContainsFunc(op.Value, func(m history.Mop) bool { return m.F == "append" }) {
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
