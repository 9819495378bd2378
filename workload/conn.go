package workload

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
)

// driverConn is what the workers need of the driver's connection.
type driverConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
}

// driverStmt is what the workers need of a server-side prepared statement.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// qctx is the context statements run with: not cancellable. A non-cancellable context
// spares the driver's per-statement context watcher and database/sql's per-Rows
// goroutine; cancellation instead closes the socket (connSlot.kill), which fails a
// blocked statement at once.
var qctx = context.Background()

// Conn is one worker's connection as a workload's events see it. Statements are named
// by their index in the workload's statement list (eventSource.statements): in ps mode
// each non-empty one is prepared once per connection (COM_STMT_PREPARE) and executed
// with COM_STMT_EXECUTE; otherwise it is sent over the text protocol with client-side
// interpolation. Every statement is counted the sysbench way: one that returns rows is
// a read, one that changes rows a write, anything else (BEGIN, COMMIT, a DML that
// changed nothing) other. A Conn is used by its own worker goroutine only.
type Conn struct {
	dc       driverConn
	ps       bool
	texts    []string
	stmts    []driverStmt
	dest     [][]driver.Value
	nv       [8]driver.NamedValue
	ev       counts // statement counts of the current attempt
	workload string
	label    string
	// rd, when set, is the worker's read connection (Target.ReadEndpoints): Read runs
	// there, counted in ev.rdQueries as well as ev.reads.
	rd *Conn
}

// prepare prepares every non-empty statement text on dc (ps mode only).
func (c *Conn) prepare(ctx context.Context) error {
	if !c.ps {
		return nil
	}
	if c.stmts == nil {
		c.stmts = make([]driverStmt, len(c.texts))
	}
	for i, text := range c.texts {
		if text == "" {
			continue
		}
		st, err := c.dc.PrepareContext(ctx, text)
		if err != nil {
			return &StatementError{Workload: c.workload, Endpoint: c.label,
				Statement: "PREPARE " + text, Code: codeOf(err), Err: err}
		}
		ds, ok := st.(driverStmt)
		if !ok {
			st.Close()
			return fmt.Errorf("driver statement %T lacks context methods", st)
		}
		c.stmts[i] = ds
	}
	return nil
}

// closeStmts closes the prepared statements (the connection is going away).
func (c *Conn) closeStmts() {
	for i, st := range c.stmts {
		if st != nil {
			st.Close()
			c.stmts[i] = nil
		}
	}
}

// args fills the connection's reusable argument slice.
func (c *Conn) args(vals []driver.Value) []driver.NamedValue {
	for i, v := range vals {
		c.nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return c.nv[:len(vals)]
}

func (c *Conn) stmtErr(i int, err error) error {
	return &StatementError{Workload: c.workload, Endpoint: c.label,
		Statement: c.texts[i], Code: codeOf(err), Err: err}
}

// Read runs statement i, which returns rows, with vals (at most 8) and drains the rows:
// a read. The error is a *StatementError.
func (c *Conn) Read(i int, vals ...driver.Value) error {
	if c.rd != nil {
		if err := c.rd.drain(i, vals); err != nil {
			return err
		}
		c.ev.reads++
		c.ev.rdQueries++
		return nil
	}
	if err := c.drain(i, vals); err != nil {
		return err
	}
	c.ev.reads++
	return nil
}

// drain runs statement i with vals and reads every row, counting nothing.
func (c *Conn) drain(i int, vals []driver.Value) error {
	var rows driver.Rows
	var err error
	if c.ps {
		rows, err = c.stmts[i].QueryContext(qctx, c.args(vals))
	} else {
		rows, err = c.dc.QueryContext(qctx, c.texts[i], c.args(vals))
	}
	if err != nil {
		return c.stmtErr(i, err)
	}
	if c.dest == nil {
		c.dest = make([][]driver.Value, len(c.texts))
	}
	dest := c.dest[i]
	if dest == nil {
		dest = make([]driver.Value, len(rows.Columns()))
		c.dest[i] = dest
	}
	for {
		if err = rows.Next(dest); err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return c.stmtErr(i, err)
	}
	return nil
}

// Write runs DML statement i with vals (at most 8): a write when it changed rows, else
// other. The error is a *StatementError.
func (c *Conn) Write(i int, vals ...driver.Value) error {
	var res driver.Result
	var err error
	if c.ps {
		res, err = c.stmts[i].ExecContext(qctx, c.args(vals))
	} else {
		res, err = c.dc.ExecContext(qctx, c.texts[i], c.args(vals))
	}
	if err != nil {
		return c.stmtErr(i, err)
	}
	c.countExec(res)
	return nil
}

func (c *Conn) countExec(res driver.Result) {
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		c.ev.writes++
	} else {
		c.ev.others++
	}
}

// Plain runs q, a statement without parameters, over the text protocol (BEGIN, COMMIT,
// a statement built by the workload): a write when it changed rows, else other. The
// error is a *StatementError.
func (c *Conn) Plain(q string) error {
	res, err := c.dc.ExecContext(qctx, q, nil)
	if err != nil {
		return &StatementError{Workload: c.workload, Endpoint: c.label, Statement: q, Code: codeOf(err), Err: err}
	}
	c.countExec(res)
	return nil
}
