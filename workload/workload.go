package workload

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Workload is one sysbench OLTP test (modelled on go-tpc's Workloader).
type Workload interface {
	// Name is the sysbench test name, e.g. "oltp_read_write".
	Name() string
	// Prepare creates the database if missing and tables sbtest1..Tables on
	// Endpoints[0], loads ids 1..TableSize with explicit ids in multi-row
	// INSERTs (using up to Threads connections, one table per connection at a
	// time) and creates index k_N after the load, printing sysbench's progress
	// lines to out ("Creating table 'sbtest1'...", "Inserting 10000 records into
	// 'sbtest1'", "Creating a secondary index on 'sbtest1'...").
	Prepare(ctx context.Context, t Target, o Options, out io.Writer) error
	// Run executes events on Threads workers (worker i on Endpoints[i % n])
	// until Time, Events or ctx ends the run, calls r.Interval every
	// ReportInterval (when both are set) and returns the statistics of the
	// measured part (after Warmup). When ctx ends the run early it returns the
	// partial Result and ctx.Err(); on a fatal statement error it returns the
	// partial Result and a *StatementError.
	Run(ctx context.Context, t Target, o Options, r Reporter) (*Result, error)
	// Cleanup drops sbtest1..Tables on Endpoints[0], printing
	// "Dropping table 'sbtestN'..." for each.
	Cleanup(ctx context.Context, t Target, o Options, out io.Writer) error
}

// groupKind is one statement group of sysbench's oltp_common.lua. Each group
// picks its table once (uniformly in 1..Tables) and runs its statements on it.
type groupKind uint8

const (
	gPointSelects groupKind = iota
	gSimpleRanges
	gSumRanges
	gOrderRanges
	gDistinctRanges
	gIndexUpdates
	gNonIndexUpdates
	gDeleteInserts
	gInsert // oltp_insert: one text-protocol INSERT
	gDelete // oltp_delete: one DELETE
)

type group struct {
	kind groupKind
	n    int
}

// stmtKind indexes the statements that are prepared per table.
type stmtKind uint8

const (
	stPointSelect stmtKind = iota
	stSimpleRange
	stSumRange
	stOrderRange
	stDistinctRange
	stIndexUpdate
	stNonIndexUpdate
	stDelete
	stInsert
	numStmtKinds
)

// stmtTemplates are sysbench 1.0.20's statement texts (%d is the table number).
var stmtTemplates = [numStmtKinds]string{
	stPointSelect:    "SELECT c FROM sbtest%d WHERE id=?",
	stSimpleRange:    "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ?",
	stSumRange:       "SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN ? AND ?",
	stOrderRange:     "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c",
	stDistinctRange:  "SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c",
	stIndexUpdate:    "UPDATE sbtest%d SET k=k+1 WHERE id=?",
	stNonIndexUpdate: "UPDATE sbtest%d SET c=? WHERE id=?",
	stDelete:         "DELETE FROM sbtest%d WHERE id=?",
	stInsert:         "INSERT INTO sbtest%d (id, k, c, pad) VALUES (?, ?, ?, ?)",
}

var stmtIsRead = [numStmtKinds]bool{true, true, true, true, true, false, false, false, false}

// groupStmts lists the prepared statements a group executes, in order.
func groupStmts(k groupKind) []stmtKind {
	switch k {
	case gPointSelects:
		return []stmtKind{stPointSelect}
	case gSimpleRanges:
		return []stmtKind{stSimpleRange}
	case gSumRanges:
		return []stmtKind{stSumRange}
	case gOrderRanges:
		return []stmtKind{stOrderRange}
	case gDistinctRanges:
		return []stmtKind{stDistinctRange}
	case gIndexUpdates:
		return []stmtKind{stIndexUpdate}
	case gNonIndexUpdates:
		return []stmtKind{stNonIndexUpdate}
	case gDeleteInserts:
		return []stmtKind{stDelete, stInsert}
	case gDelete:
		return []stmtKind{stDelete}
	}
	return nil
}

// spec describes one oltp_* test.
type spec struct {
	name string
	// trx: the event is wrapped in BEGIN/COMMIT unless SkipTrx.
	trx bool
	// deck returns the event's statement groups for o.
	deck func(o *Options) []group
}

func rangeGroups(o *Options) []group {
	if !o.RangeSelects {
		return nil
	}
	return []group{{gSimpleRanges, o.SimpleRanges}, {gSumRanges, o.SumRanges},
		{gOrderRanges, o.OrderRanges}, {gDistinctRanges, o.DistinctRanges}}
}

func writeGroups(o *Options) []group {
	return []group{{gIndexUpdates, o.IndexUpdates}, {gNonIndexUpdates, o.NonIndexUpdates},
		{gDeleteInserts, o.DeleteInserts}}
}

var specs = []spec{
	{name: "oltp_read_write", trx: true, deck: func(o *Options) []group {
		d := []group{{gPointSelects, o.PointSelects}}
		d = append(d, rangeGroups(o)...)
		return append(d, writeGroups(o)...)
	}},
	{name: "oltp_read_only", trx: true, deck: func(o *Options) []group {
		return append([]group{{gPointSelects, o.PointSelects}}, rangeGroups(o)...)
	}},
	{name: "oltp_write_only", trx: true, deck: writeGroups},
	{name: "oltp_point_select", deck: func(*Options) []group { return []group{{gPointSelects, 1}} }},
	{name: "oltp_update_index", deck: func(o *Options) []group { return []group{{gIndexUpdates, o.IndexUpdates}} }},
	{name: "oltp_update_non_index", deck: func(o *Options) []group { return []group{{gNonIndexUpdates, o.NonIndexUpdates}} }},
	{name: "oltp_insert", deck: func(*Options) []group { return []group{{gInsert, 1}} }},
	{name: "oltp_delete", deck: func(*Options) []group { return []group{{gDelete, 1}} }},
}

// Names returns the known workload names in a stable order.
func Names() []string {
	n := make([]string, len(specs))
	for i, s := range specs {
		n[i] = s.name
	}
	return n
}

// Lookup returns the workload called name (a sysbench test name such as
// "oltp_read_write"); the error lists the known names.
func Lookup(name string) (Workload, error) {
	for i := range specs {
		if specs[i].name == name {
			return &oltp{spec: &specs[i]}, nil
		}
	}
	return nil, fmt.Errorf("unknown workload %q: known workloads are %s", name, strings.Join(Names(), ", "))
}

// oltp implements Workload for every spec.
type oltp struct{ spec *spec }

func (w *oltp) Name() string { return w.spec.name }

// usesTrx reports whether events are wrapped in BEGIN/COMMIT.
func (s *spec) usesTrx(o *Options) bool { return s.trx && !o.SkipTrx }

// stmtKinds returns the statements to prepare per table, in a stable order.
func (s *spec) stmtKinds(o *Options) []stmtKind {
	var ks []stmtKind
	for _, g := range s.deck(o) {
		if g.n <= 0 {
			continue
		}
		for _, k := range groupStmts(g.kind) {
			if !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	return ks
}

// Mix is the statement sequence of one event on table 1 and how sysbench
// counts it, assuming every write statement changes at least one row
// (sysbench counts a DML that changes no row as "other").
type Mix struct {
	// Reads, Writes and Others are the counts per event (BEGIN and COMMIT are others).
	Reads, Writes, Others int
	// Statements are the statement texts in execution order.
	Statements []string
}

// StatementMix returns the per-event statement mix of workload name under o.
func StatementMix(name string, o Options) (Mix, error) {
	var s *spec
	for i := range specs {
		if specs[i].name == name {
			s = &specs[i]
		}
	}
	if s == nil {
		_, err := Lookup(name)
		return Mix{}, err
	}
	var m Mix
	if s.usesTrx(&o) {
		m.Statements = append(m.Statements, "BEGIN")
		m.Others++
	}
	for _, g := range s.deck(&o) {
		for i := 0; i < g.n; i++ {
			if g.kind == gInsert {
				m.Statements = append(m.Statements, "INSERT INTO sbtest1 (id, k, c, pad) VALUES (...)")
				m.Writes++
				continue
			}
			for _, k := range groupStmts(g.kind) {
				m.Statements = append(m.Statements, fmt.Sprintf(stmtTemplates[k], 1))
				if stmtIsRead[k] {
					m.Reads++
				} else {
					m.Writes++
				}
			}
		}
	}
	if s.usesTrx(&o) {
		m.Statements = append(m.Statements, "COMMIT")
		m.Others++
	}
	return m, nil
}
