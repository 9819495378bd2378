package workload

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
)

// Read nodes (Target.ReadEndpoints): each worker has a second connection, to a read
// endpoint, that serves the read-only statements of its events, while writes, BEGIN and
// COMMIT stay on its writer connection, the way an application with read/write splitting
// sends its SELECTs to replicas. After every event that changed a row's c, the worker
// reads that row back on its read node (read-your-writes): a read that does not return
// the value the worker just committed, while the writer still has it, is a stale read.
// The counts are per read endpoint, in EndpointStats.ReadChecks and StaleReads: what
// group_replication_consistency and wsrep_sync_wait cost (latency, TPS) and buy (no
// stale reads).

// readSource is implemented by event sources whose read-only statements can go to read
// endpoints: readStatements is statements() with every statement that is not a
// read-only SELECT blanked ("").
type readSource interface {
	readStatements() []string
}

// readSide is a worker's read connection.
type readSide struct {
	ep    Endpoint
	label string
	db    *sql.DB
	slot  *connSlot
	conn  *sql.Conn
}

// connectRead opens the worker's read connection and prepares its read statements.
func (w *worker) connectRead(ctx context.Context) error {
	rs := w.rd
	conn, err := rs.db.Conn(context.WithValue(ctx, slotKey{}, rs.slot))
	if err != nil {
		return fmt.Errorf("connecting to read node %s: %w", rs.label, err)
	}
	rs.conn = conn
	return conn.Raw(func(dci any) error {
		dc, ok := dci.(driverConn)
		if !ok {
			return fmt.Errorf("driver connection %T lacks context methods", dci)
		}
		w.c.rd.dc = dc
		return w.c.rd.prepare(ctx)
	})
}

func (w *worker) closeRead() {
	if w.rd == nil || w.rd.conn == nil {
		return
	}
	w.rd.conn.Raw(func(any) error {
		w.c.rd.closeStmts()
		return nil
	})
	w.rd.conn.Close()
	w.rd.conn, w.c.rd.dc = nil, nil
}

// firstValue runs read statement i with vals on c and returns a copy of the first
// column of the first row (nil when there is no row), draining the rest.
func (c *Conn) firstValue(i int, vals ...driver.Value) ([]byte, error) {
	var rows driver.Rows
	var err error
	if c.ps {
		rows, err = c.stmts[i].QueryContext(qctx, c.args(vals))
	} else {
		rows, err = c.dc.QueryContext(qctx, c.texts[i], c.args(vals))
	}
	if err != nil {
		return nil, c.stmtErr(i, err)
	}
	dest := make([]driver.Value, len(rows.Columns()))
	var first []byte
	got := false
	for {
		if err = rows.Next(dest); err != nil {
			break
		}
		if !got {
			got = true
			switch v := dest[0].(type) {
			case []byte:
				first = append([]byte{}, v...)
			case string:
				first = []byte(v)
			}
		}
	}
	if err == io.EOF {
		err = nil
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, c.stmtErr(i, err)
	}
	return first, nil
}

// checkReadYourWrite reads column c of the row statement i (a point SELECT) returns for
// id on the read node and compares it with want, the value this worker committed: a
// mismatch while the writer still returns want is a stale read. A worker without a read
// node does nothing.
func (c *Conn) checkReadYourWrite(i int, id int64, want []byte) error {
	if c.rd == nil {
		return nil
	}
	got, err := c.rd.firstValue(i, id)
	if err != nil {
		return err
	}
	c.ev.rdChecks++
	if bytes.Equal(got, want) {
		return nil
	}
	// Another worker may have changed the row since: only a writer that still has our
	// value proves the read node is behind.
	onWriter, err := c.firstValue(i, id)
	if err != nil {
		return err
	}
	if bytes.Equal(onWriter, want) {
		c.ev.rdStale++
	}
	return nil
}
