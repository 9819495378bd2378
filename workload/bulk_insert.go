package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// bulkPacketSize is sysbench's BULK_PACKET_SIZE: a multi-row INSERT is sent before it
// would grow past 512 KiB (counting the C string's terminating NUL, as sysbench does).
const bulkPacketSize = 512 * 1024

// BulkInsertTableSQL returns the CREATE TABLE of bulk_insert's table n (sysbench's
// bulk_insert.lua: no ENGINE clause, so the server's default engine).
func BulkInsertTableSQL(n int) string {
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS sbtest%d (id INTEGER NOT NULL, k INTEGER DEFAULT '0' NOT NULL, PRIMARY KEY (id))", n)
}

// bulkInsert is sysbench's bulk_insert: every thread appends rows (id, k) = (n, n),
// n = 1, 2, ..., to its own table sbtest<thread+1> in multi-row INSERTs of up to
// bulkPacketSize bytes. One event is one row; an INSERT is sent when the next row would
// not fit, and at the end of the run. --tables and --table-size play no part: the tables
// are sbtest1..--threads, created empty by prepare.
type bulkInsert struct{}

func init() { register(bulkInsert{}) }

// Name implements Workload.
func (bulkInsert) Name() string { return "bulk_insert" }

// Prepare implements Workload: it creates the database if missing and tables
// sbtest1..Threads (CREATE TABLE IF NOT EXISTS, as sysbench), printing
// "Creating table 'sbtestN'..." for each.
func (bulkInsert) Prepare(ctx context.Context, t Target, o Options, out io.Writer) error {
	return bulkTables(ctx, t, o, out, true)
}

// Cleanup implements Workload: it drops sbtest1..Threads, printing
// "Dropping table 'sbtestN'..." for each.
func (bulkInsert) Cleanup(ctx context.Context, t Target, o Options, out io.Writer) error {
	return bulkTables(ctx, t, o, out, false)
}

func bulkTables(ctx context.Context, t Target, o Options, out io.Writer, create bool) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	s := newSession(t)
	defer s.close()
	ep := t.Endpoints[0]
	if create {
		root, err := s.open(ep, "", false)
		if err != nil {
			return err
		}
		_, err = root.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(t.DB))
		root.Close()
		if err != nil {
			return fmt.Errorf("prepare on %s: CREATE DATABASE %s: %w", ep.Label(), t.DB, err)
		}
	}
	db, err := s.open(ep, t.DB, false)
	if err != nil {
		return err
	}
	defer db.Close()
	lw := &lockedWriter{w: out}
	for n := 1; n <= o.Threads; n++ {
		if create {
			lw.printf("Creating table 'sbtest%d'...\n", n)
			if _, err := db.ExecContext(ctx, BulkInsertTableSQL(n)); err != nil {
				return fmt.Errorf("prepare on %s: creating table sbtest%d: %w", ep.Label(), n, err)
			}
			continue
		}
		lw.printf("Dropping table 'sbtest%d'...\n", n)
		if _, err := db.ExecContext(ctx, fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", n)); err != nil {
			return fmt.Errorf("cleanup on %s: dropping sbtest%d: %w", ep.Label(), n, err)
		}
	}
	return nil
}

// Run implements Workload with the generic runner.
func (bulkInsert) Run(ctx context.Context, t Target, o Options, rep Reporter) (*Result, error) {
	return runEvents(ctx, t, o, rep, "bulk_insert", bulkSource{})
}

// bulkSource is bulk_insert's eventSource: no prepared statements (the INSERTs are
// built as text, as sysbench sends them).
type bulkSource struct{}

func (bulkSource) statements() []string { return nil }

// autocommits implements eventSource: every INSERT commits on its own, as in sysbench.
func (bulkSource) autocommits() bool { return true }

func (bulkSource) newEvents(id int) eventer {
	head := "INSERT INTO sbtest" + strconv.Itoa(id+1) + " VALUES"
	return &bulkEvents{head: head, buf: make([]byte, 0, bulkPacketSize)}
}

// bulkEvents is one worker's pending multi-row INSERT.
type bulkEvents struct {
	head string
	buf  []byte // head and the rows not sent yet
	rows int    // rows in buf
	next int64  // the last id appended
	row  []byte
}

// event appends the next row, first sending the pending INSERT when the row would not
// fit (sysbench's db_bulk_insert_next). A failed send keeps the rows, so a retry sends
// them again.
func (e *bulkEvents) event(c *Conn) error {
	e.row = append(e.row[:0], '(')
	e.row = strconv.AppendInt(e.row, e.next+1, 10)
	e.row = append(e.row, ',')
	e.row = strconv.AppendInt(e.row, e.next+1, 10)
	e.row = append(e.row, ')')
	sep := 0
	if e.rows > 0 {
		sep = 1
	}
	if e.rows > 0 && len(e.buf)+len(e.row)+1+sep > bulkPacketSize {
		if err := e.flush(c); err != nil {
			return err
		}
		sep = 0
	}
	if e.rows == 0 {
		e.buf = append(e.buf[:0], e.head...)
	}
	if sep > 0 {
		e.buf = append(e.buf, ',')
	}
	e.buf = append(e.buf, e.row...)
	e.rows++
	e.next++
	return nil
}

// flush sends the pending rows in one INSERT.
func (e *bulkEvents) flush(c *Conn) error {
	if e.rows == 0 {
		return nil
	}
	if err := c.Plain(string(e.buf)); err != nil {
		var se *StatementError
		if errors.As(err, &se) {
			// Not 512 KiB of values in an error line.
			first := e.next - int64(e.rows) + 1
			se.Statement = fmt.Sprintf("%s(%d,%d),... (%d rows, %d bytes)", e.head, first, first, e.rows, len(e.buf))
		}
		return err
	}
	e.rows = 0
	e.buf = e.buf[:0]
	return nil
}

// finish implements eventFinisher: the rows still pending are sent when the worker
// stops (sysbench's bulk_insert_done in thread_done).
func (e *bulkEvents) finish(c *Conn) error { return e.flush(c) }
