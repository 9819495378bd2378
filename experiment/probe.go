package experiment

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
)

// ProbeTable is the probe writer's table, in the benchmark database.
const ProbeTable = "habench_probe"

// probe is the probe writer: one connection that commits one numbered row every
// interval on the current writer, re-reading who the writer is from the cluster's state
// (a promote, a group's election) every interval and after every error, the way an
// application follows its writer.
type probe struct {
	sb       *cluster.Sandbox
	name     string // cluster
	schema   string
	interval time.Duration

	mu      sync.Mutex
	acked   map[int64]bool
	failed  map[int64]bool
	writers []string
}

// startProbe creates the probe table on c's writer (empty) and returns the probe; run it
// with run.
func startProbe(ctx context.Context, sb *cluster.Sandbox, c *cluster.Cluster, schema string, interval time.Duration) (*probe, error) {
	p := &probe{sb: sb, name: c.Name, schema: schema, interval: interval, acked: map[int64]bool{}, failed: map[int64]bool{}}
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
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := db.ExecContext(qctx, "INSERT INTO "+p.table()+" (seq, node) VALUES (?, ?)", seq, cur)
			cancel()
			p.mu.Lock()
			if err == nil {
				p.acked[seq] = true
			} else if ctx.Err() == nil {
				p.failed[seq] = true
			}
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// check compares the acknowledged commits with the rows on the current writer.
func (p *probe) check(ctx context.Context) *ProbeSummary {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &ProbeSummary{IntervalS: p.interval.Seconds(), Acknowledged: int64(len(p.acked)), Failed: int64(len(p.failed)), Writers: p.writers}
	name, db, err := p.writer(ctx)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer db.Close()
	s.CheckedOn = name
	rows, err := db.QueryContext(ctx, "SELECT seq FROM "+p.table())
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer rows.Close()
	present := map[int64]bool{}
	for rows.Next() {
		var q int64
		if rows.Scan(&q) == nil {
			present[q] = true
		}
	}
	var lost []int64
	for q := range p.acked {
		if !present[q] {
			lost = append(lost, q)
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	s.LostAcknowledged = int64(len(lost))
	s.Lost = lost[:min(len(lost), 20)]
	for q := range p.failed {
		if present[q] {
			s.UnacknowledgedPresent++
		}
	}
	return s
}

// probeWarning is the run's WARNING when acknowledged commits were lost or the check
// could not be made ("" otherwise).
func probeWarning(s *ProbeSummary) string {
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
