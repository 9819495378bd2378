package workload

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// insertBatch is the number of rows per multi-row INSERT in Prepare.
const insertBatch = 1000

// lockedWriter serialises whole lines from parallel loaders.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	if l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}

// CreateTableSQL returns the CREATE TABLE statement of table n for o (sysbench's
// schema: id, k, c CHAR(120), pad CHAR(60), PRIMARY KEY (id)).
func CreateTableSQL(n int, o Options) string {
	idDef := "INTEGER NOT NULL AUTO_INCREMENT"
	if !o.AutoInc {
		idDef = "INTEGER NOT NULL"
	}
	return fmt.Sprintf("CREATE TABLE sbtest%d(id %s, k INTEGER DEFAULT '0' NOT NULL, "+
		"c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE=%s",
		n, idDef, o.MysqlEngine)
}

func (w *oltp) Prepare(ctx context.Context, t Target, o Options, out io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	rows := o.TableSize
	if w.spec.name == "oltp_insert" && !o.AutoInc {
		// Like sysbench: oltp_insert without auto-inc inserts ids from a unique
		// random sequence, which could collide with preloaded ids.
		rows = 0
	}
	s := newSession(t)
	defer s.close()
	ep := t.Endpoints[0]

	root, err := s.open(ep, "", false)
	if err != nil {
		return err
	}
	_, err = root.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(t.DB))
	root.Close()
	if err != nil {
		return fmt.Errorf("prepare on %s: CREATE DATABASE %s: %w", ep.Label(), t.DB, err)
	}

	db, err := s.open(ep, t.DB, false)
	if err != nil {
		return err
	}
	defer db.Close()
	par := min(o.Threads, o.Tables)
	db.SetMaxOpenConns(par)
	db.SetMaxIdleConns(par)
	lw := &lockedWriter{w: out}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	useLoad := rows > 0 && localInfile(ctx, db)
	if rows > 0 && !useLoad {
		lw.printf("NOTE: local_infile is OFF on %s: loading with multi-row INSERTs (LOAD DATA LOCAL, with local_infile=ON, is about twice as fast)\n", ep.Label())
	}
	seed := seedOf(&o)
	var (
		errOnce  sync.Once
		firstErr error
	)
	var wg sync.WaitGroup
	for th := 0; th < par; th++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newRandGen(&o, seed, uint64(th)+0x9e3779b97f4a7c15)
			for n := th + 1; n <= o.Tables; n += par {
				if err := createTable(ctx, db, n, rows, &o, g, lw, useLoad); err != nil {
					// The first failure is the cause; the others are its cancellation.
					errOnce.Do(func() { firstErr = fmt.Errorf("prepare on %s: %w", ep.Label(), err) })
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if note := idSpaceNote(ctx, db, rows); note != "" {
		lw.printf("NOTE: %s\n", note)
	}
	return nil
}

// idSpaceNote says, when the server steps auto-increment values (auto_increment_increment
// > 1, as Galera's wsrep_auto_increment_control sets it to the cluster size), that Prepare
// wrote explicit ids 1..rows anyway, so the id space the run addresses is dense; "" when the
// increment is 1, no rows were loaded, or it cannot be read.
func idSpaceNote(ctx context.Context, db *sql.DB, rows int) string {
	var inc int
	if rows == 0 || db.QueryRowContext(ctx, "SELECT @@auto_increment_increment").Scan(&inc) != nil || inc <= 1 {
		return ""
	}
	return fmt.Sprintf("auto_increment_increment is %d on this server (Galera steps it by the cluster size); "+
		"prepare inserted explicit ids 1..%d, so the id space is dense (sysbench itself needs --auto_inc=off here)", inc, rows)
}

func createTable(ctx context.Context, db *sql.DB, n, rows int, o *Options, g *randGen, lw *lockedWriter, useLoad bool) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	lw.printf("Creating table 'sbtest%d'...\n", n)
	if _, err := conn.ExecContext(ctx, CreateTableSQL(n, *o)); err != nil {
		return fmt.Errorf("creating table sbtest%d: %w", n, err)
	}
	if rows > 0 {
		lw.printf("Inserting %d records into 'sbtest%d'\n", rows, n)
	}
	if err := loadRows(ctx, conn, n, rows, o, g, useLoad); err != nil {
		return err
	}
	if o.CreateSecondary {
		lw.printf("Creating a secondary index on 'sbtest%d'...\n", n)
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE INDEX k_%d ON sbtest%d(k)", n, n)); err != nil {
			return fmt.Errorf("creating index k_%d: %w", n, err)
		}
	}
	return nil
}

func (w *oltp) Cleanup(ctx context.Context, t Target, o Options, out io.Writer) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if o.Tables < 1 {
		return fmt.Errorf("--tables %q: want an integer >= 1", strconv.Itoa(o.Tables))
	}
	s := newSession(t)
	defer s.close()
	ep := t.Endpoints[0]
	db, err := s.open(ep, t.DB, false)
	if err != nil {
		return err
	}
	defer db.Close()
	lw := &lockedWriter{w: out}
	for n := 1; n <= o.Tables; n++ {
		lw.printf("Dropping table 'sbtest%d'...\n", n)
		if _, err := db.ExecContext(ctx, fmt.Sprintf("DROP TABLE IF EXISTS sbtest%d", n)); err != nil {
			return fmt.Errorf("cleanup on %s: dropping sbtest%d: %w", ep.Label(), n, err)
		}
	}
	return nil
}

// seedOf returns the base seed: RandSeed, or the current time when it is 0.
func seedOf(o *Options) uint64 {
	if o.RandSeed != 0 {
		return uint64(o.RandSeed)
	}
	return uint64(time.Now().UnixNano())
}

// loadChunk is the number of rows per LOAD DATA statement: one transaction each, small
// enough (about 10 MB) for a Group Replication member's transaction size limit (150 MB by
// default) and a Galera write set, large enough that the per-statement cost vanishes.
const loadChunk = 50000

// loadRows fills sbtestN with ids 1..rows: by LOAD DATA LOCAL INFILE from rows generated
// on the fly when useLoad (the server parses tab-separated values instead of SQL, about
// twice as fast as multi-row INSERTs), else by multi-row INSERTs of insertBatch rows. The
// rows are the same either way for a given seed.
func loadRows(ctx context.Context, conn *sql.Conn, n, rows int, o *Options, g *randGen, useLoad bool) error {
	if !useLoad {
		return insertRows(ctx, conn, n, 1, rows, o, g)
	}
	for start := 1; start <= rows; start += loadChunk {
		end := min(start+loadChunk-1, rows)
		if err := loadData(ctx, conn, n, start, end, o, g); err != nil {
			return fmt.Errorf("loading rows %d..%d into sbtest%d: %w", start, end, n, err)
		}
	}
	return nil
}

// localInfile reports whether the server allows LOAD DATA LOCAL INFILE (@@local_infile;
// MySQL 8.0+ defaults to OFF, MariaDB to ON); an unreadable variable counts as allowed.
func localInfile(ctx context.Context, db *sql.DB) bool {
	var on sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@local_infile").Scan(&on); err != nil {
		return true
	}
	return on.String != "0" && on.String != "OFF"
}

var loadSeq atomic.Int64

// loadData loads rows start..end into sbtestN with one LOAD DATA LOCAL INFILE statement
// whose file is a go-sql-driver reader handler registered under a name unique to the call.
func loadData(ctx context.Context, conn *sql.Conn, n, start, end int, o *Options, g *randGen) error {
	name := fmt.Sprintf("habench-prepare-%d-%d", os.Getpid(), loadSeq.Add(1))
	rr := &rowReader{next: start, end: end, g: g, o: o}
	mysql.RegisterReaderHandler(name, func() io.Reader { return rr })
	defer mysql.DeregisterReaderHandler(name)
	_, err := conn.ExecContext(ctx, fmt.Sprintf("LOAD DATA LOCAL INFILE 'Reader::%s' INTO TABLE sbtest%d "+
		"FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n' (id, k, c, pad)", name, n))
	return err
}

// rowReader generates rows start..end as tab-separated lines "id\tk\tc\tpad\n", one at a
// time as the driver reads (no whole chunk in memory).
type rowReader struct {
	next, end  int
	g          *randGen
	o          *Options
	buf        []byte
	off        int
	cbuf, pbuf []byte
}

func (r *rowReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.off == len(r.buf) {
			if r.next > r.end {
				break
			}
			r.cbuf = r.g.fillString(r.cbuf, cTemplate)
			r.pbuf = r.g.fillString(r.pbuf, padTemplate)
			b := strconv.AppendInt(r.buf[:0], int64(r.next), 10)
			b = append(b, '\t')
			b = strconv.AppendUint(b, uint64(r.g.def(1, uint32(r.o.TableSize))), 10)
			b = append(b, '\t')
			b = append(b, r.cbuf...)
			b = append(b, '\t')
			b = append(b, r.pbuf...)
			b = append(b, '\n')
			r.buf, r.off = b, 0
			r.next++
		}
		c := copy(p[n:], r.buf[r.off:])
		r.off += c
		n += c
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// insertRows fills ids start..rows of sbtestN with multi-row INSERTs of insertBatch rows.
func insertRows(ctx context.Context, conn *sql.Conn, n, start, rows int, o *Options, g *randGen) error {
	head := fmt.Sprintf("INSERT INTO sbtest%d (id, k, c, pad) VALUES ", n)
	buf := make([]byte, 0, len(head)+insertBatch*200)
	var cbuf, pbuf []byte
	for ; start <= rows; start += insertBatch {
		end := min(start+insertBatch-1, rows)
		buf = append(buf[:0], head...)
		for id := start; id <= end; id++ {
			if id > start {
				buf = append(buf, ',')
			}
			cbuf = g.fillString(cbuf, cTemplate)
			pbuf = g.fillString(pbuf, padTemplate)
			buf = append(buf, '(')
			buf = strconv.AppendInt(buf, int64(id), 10)
			buf = append(buf, ',')
			buf = strconv.AppendUint(buf, uint64(g.def(1, uint32(o.TableSize))), 10)
			buf = append(buf, ",'"...)
			buf = append(buf, cbuf...)
			buf = append(buf, "','"...)
			buf = append(buf, pbuf...)
			buf = append(buf, "')"...)
		}
		if _, err := conn.ExecContext(ctx, string(buf)); err != nil {
			return fmt.Errorf("inserting rows %d..%d into sbtest%d: %w", start, end, n, err)
		}
	}
	return nil
}
