package workload

import (
	"context"
	"fmt"
	"slices"
	"strconv"
)

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

func init() {
	for i := range specs {
		register(&oltp{spec: &specs[i]})
	}
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

// Run implements Workload: the generic runner with the spec's statement deck.
func (w *oltp) Run(ctx context.Context, t Target, o Options, rep Reporter) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	seed := seedOf(&o)
	src := &oltpSource{
		spec: w.spec, o: &o, seed: seed,
		trx:    w.spec.usesTrx(&o),
		deck:   w.spec.deck(&o),
		unique: newUniqueSeq(uint32(seed), uint32(seed>>32)),
	}
	kinds := w.spec.stmtKinds(&o)
	if len(t.ReadEndpoints) > 0 {
		// Read-your-writes checks read rows back with the point SELECT.
		src.checkRYW = true
		if !slices.Contains(kinds, stPointSelect) {
			kinds = append(kinds, stPointSelect)
		}
	}
	src.texts = make([]string, o.Tables*int(numStmtKinds))
	for _, k := range kinds {
		for tb := 0; tb < o.Tables; tb++ {
			src.texts[src.stmt(tb, k)] = fmt.Sprintf(stmtTemplates[k], tb+1)
		}
	}
	return runEvents(ctx, t, o, rep, w.spec.name, src)
}

// oltpSource is the eventSource of one oltp_* run: statement i = table*numStmtKinds+kind.
type oltpSource struct {
	spec   *spec
	o      *Options
	seed   uint64
	trx    bool
	deck   []group
	texts  []string
	unique *uniqueSeq // oltp_insert's ids without auto-inc, shared by the workers
	// checkRYW: read nodes are in use; each event that set a row's c reads it back there.
	checkRYW bool
}

// readStatements implements readSource: the SELECTs of statements().
func (s *oltpSource) readStatements() []string {
	rd := make([]string, len(s.texts))
	for i, text := range s.texts {
		if stmtIsRead[i%int(numStmtKinds)] {
			rd[i] = text
		}
	}
	return rd
}

func (s *oltpSource) stmt(tb int, k stmtKind) int { return tb*int(numStmtKinds) + int(k) }

func (s *oltpSource) statements() []string { return s.texts }

// autocommits implements eventSource: without BEGIN/COMMIT (oltp_insert, oltp_update_*,
// oltp_delete, oltp_point_select, --skip-trx).
func (s *oltpSource) autocommits() bool { return !s.trx }

func (s *oltpSource) newEvents(id int) eventer {
	return &oltpEvents{s: s, g: newRandGen(s.o, s.seed, uint64(id)+1)}
}

// oltpEvents is one worker's event state.
type oltpEvents struct {
	s          *oltpSource
	g          *randGen
	cbuf, pbuf []byte
	q          []byte
	// The row whose c this event set last (for the read-your-writes check): statement
	// index of its table's point SELECT, its id and the value.
	rywStmt int
	rywID   int64
	rywC    []byte
}

// wrote remembers that this event set sbtest(tb+1).c = c for id.
func (e *oltpEvents) wrote(tb int, id int64, c []byte) {
	if e.s.checkRYW {
		e.rywStmt, e.rywID, e.rywC = e.s.stmt(tb, stPointSelect), id, append(e.rywC[:0], c...)
	}
}

// table picks a table index (0-based) uniformly, like sysbench's get_table_num.
func (e *oltpEvents) table() int { return int(e.g.uniform(1, uint32(e.s.o.Tables))) - 1 }

// rowID picks a row id with the configured distribution (sysbench's get_id).
func (e *oltpEvents) rowID() int64 { return int64(e.g.def(1, uint32(e.s.o.TableSize))) }

// event runs one transaction of the workload's deck (sysbench's oltp_common.lua).
func (e *oltpEvents) event(c *Conn) error {
	e.rywID = 0
	if err := e.statements(c); err != nil {
		return err
	}
	if e.rywID != 0 {
		return c.checkReadYourWrite(e.rywStmt, e.rywID, e.rywC)
	}
	return nil
}

func (e *oltpEvents) statements(c *Conn) error {
	s := e.s
	if s.trx {
		if err := c.Plain("BEGIN"); err != nil {
			return err
		}
	}
	rs := int64(s.o.RangeSize)
	for _, gr := range s.deck {
		if gr.n <= 0 {
			continue
		}
		switch gr.kind {
		case gPointSelects:
			st := s.stmt(e.table(), stPointSelect)
			for i := 0; i < gr.n; i++ {
				if err := c.Read(st, e.rowID()); err != nil {
					return err
				}
			}
		case gSimpleRanges, gSumRanges, gOrderRanges, gDistinctRanges:
			st := s.stmt(e.table(), groupStmts(gr.kind)[0])
			for i := 0; i < gr.n; i++ {
				id := e.rowID()
				if err := c.Read(st, id, id+rs-1); err != nil {
					return err
				}
			}
		case gIndexUpdates:
			st := s.stmt(e.table(), stIndexUpdate)
			for i := 0; i < gr.n; i++ {
				if err := c.Write(st, e.rowID()); err != nil {
					return err
				}
			}
		case gNonIndexUpdates:
			tb := e.table()
			st := s.stmt(tb, stNonIndexUpdate)
			for i := 0; i < gr.n; i++ {
				e.cbuf = e.g.fillString(e.cbuf, cTemplate)
				id := e.rowID()
				if err := c.Write(st, string(e.cbuf), id); err != nil {
					return err
				}
				e.wrote(tb, id, e.cbuf)
			}
		case gDeleteInserts:
			tb := e.table()
			del, ins := s.stmt(tb, stDelete), s.stmt(tb, stInsert)
			for i := 0; i < gr.n; i++ {
				id, k := e.rowID(), e.rowID()
				e.cbuf = e.g.fillString(e.cbuf, cTemplate)
				e.pbuf = e.g.fillString(e.pbuf, padTemplate)
				if err := c.Write(del, id); err != nil {
					return err
				}
				if err := c.Write(ins, id, k, string(e.cbuf), string(e.pbuf)); err != nil {
					return err
				}
				e.wrote(tb, id, e.cbuf)
			}
		case gDelete:
			if err := c.Write(s.stmt(e.table(), stDelete), e.rowID()); err != nil {
				return err
			}
		case gInsert:
			if err := e.insertText(c); err != nil {
				return err
			}
		}
	}
	if s.trx {
		return c.Plain("COMMIT")
	}
	return nil
}

// insertText is oltp_insert's event: one INSERT over the text protocol with id 0
// (auto-increment) or, without auto-inc, an id from a unique random sequence mapped to
// the signed INT range.
func (e *oltpEvents) insertText(c *Conn) error {
	o := e.s.o
	tb := e.table()
	k := e.rowID()
	var id int64
	if !o.AutoInc {
		id = int64(e.s.unique.next()) - 2147483648
	}
	e.cbuf = e.g.fillString(e.cbuf, cTemplate)
	e.pbuf = e.g.fillString(e.pbuf, padTemplate)
	q := e.q[:0]
	q = append(q, "INSERT INTO sbtest"...)
	q = strconv.AppendInt(q, int64(tb+1), 10)
	q = append(q, " (id, k, c, pad) VALUES ("...)
	q = strconv.AppendInt(q, id, 10)
	q = append(q, ", "...)
	q = strconv.AppendInt(q, k, 10)
	q = append(q, ", '"...)
	q = append(q, e.cbuf...)
	q = append(q, "', '"...)
	q = append(q, e.pbuf...)
	q = append(q, "')"...)
	e.q = q
	return c.Plain(string(q))
}
