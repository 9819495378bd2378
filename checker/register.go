package checker

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/habench/habench/history"
)

// RegisterOptions configure the read-write register workload.
type RegisterOptions struct {
	// Keys is how many registers (rows) the transactions share, 1..1000 (default 4).
	Keys int
	// Threads is how many sessions run transactions, 1..1024 (default 4); session i
	// runs on Nodes[i % len(Nodes)].
	Threads int
	// Time is how long the run lasts (default 10 s).
	Time time.Duration
	// Locking is "" (a plain SELECT, consistent read) or "for-update"
	// (SELECT ... FOR UPDATE, a locking read).
	Locking string
	// Isolation is the sessions' transaction isolation level: "" (the server's
	// default), "READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ" or
	// "SERIALIZABLE" (spaces or dashes).
	Isolation string
	// Table is the register table, in the connections' database (default
	// "habench_register").
	Table string
	// TxnTimeout bounds one transaction (default 30 s); past it the transaction is
	// abandoned (fail, or unknown when COMMIT was sent).
	TxnTimeout time.Duration
	// Rate caps the transactions the sessions start together, per second (0: as fast as
	// they go): what the checker may take from a benchmark beside it.
	Rate float64
	// Follow, when set, names the node that takes writes now (a group's new primary, a
	// promoted replica): a session whose connection was lost, or whose node refused a
	// write as read-only (mysqlerr.ReadOnly), reconnects to the node Follow names. An
	// error from it (no writer named yet) keeps the session where it was.
	Follow Follow
}

// Node is one server the register sessions run on: its label and a pool on the
// database holding the register table.
type Node struct {
	Name string
	DB   *sql.DB
}

var isolations = map[string]string{
	"READ-UNCOMMITTED": "READ UNCOMMITTED", "READ-COMMITTED": "READ COMMITTED",
	"REPEATABLE-READ": "REPEATABLE READ", "SERIALIZABLE": "SERIALIZABLE",
}

// Validate checks o (after its defaults) and returns one error naming the field and value.
func (o RegisterOptions) Validate() error {
	_, err := o.withDefaults()
	return err
}

// WithDefaults returns o with its defaults filled in (o must be valid).
func (o RegisterOptions) WithDefaults() RegisterOptions {
	d, _ := o.withDefaults()
	return d
}

// withDefaults validates o and fills its defaults; an error names the field and value.
func (o RegisterOptions) withDefaults() (RegisterOptions, error) {
	if o.Keys == 0 {
		o.Keys = 4
	}
	if o.Threads == 0 {
		o.Threads = 4
	}
	if o.Time == 0 {
		o.Time = 10 * time.Second
	}
	if o.Table == "" {
		o.Table = "habench_register"
	}
	if o.TxnTimeout == 0 {
		o.TxnTimeout = 30 * time.Second
	}
	switch {
	case o.Keys < 1 || o.Keys > 1000:
		return o, fmt.Errorf("register keys %d: want 1..1000", o.Keys)
	case o.Threads < 1 || o.Threads > 1024:
		return o, fmt.Errorf("register threads %d: want 1..1024", o.Threads)
	case o.Time < 0:
		return o, fmt.Errorf("register time %s: want a positive duration", o.Time)
	case !(o.Rate >= 0 && o.Rate <= 1e6): // NaN too
		return o, fmt.Errorf("register rate %g: want 0 (no cap) to 1000000 transactions per second", o.Rate)
	case o.Locking != "" && o.Locking != "for-update":
		return o, fmt.Errorf("register locking %q: want \"\" or \"for-update\"", o.Locking)
	case strings.ContainsAny(o.Table, "`\x00"):
		return o, fmt.Errorf("register table %q: want a name without backticks", o.Table)
	}
	if o.Isolation != "" {
		lvl := strings.ToUpper(strings.ReplaceAll(o.Isolation, " ", "-"))
		if _, ok := isolations[lvl]; !ok {
			return o, fmt.Errorf("register isolation %q: want READ-UNCOMMITTED, READ-COMMITTED, REPEATABLE-READ or SERIALIZABLE", o.Isolation)
		}
		o.Isolation = lvl
	}
	return o, nil
}

// PrepareRegister (re)creates the register table on db: keys 1..Keys, each with
// value 0 (the initial version).
func PrepareRegister(ctx context.Context, db *sql.DB, o RegisterOptions) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return prepareTable(ctx, db, "register", o.Table, "k INT NOT NULL PRIMARY KEY, v BIGINT NOT NULL", o.Keys, func(int) int64 { return 0 })
}

// prepareTable (re)creates table on db with columns cols and, for rows > 0, the rows
// (k, value(k)) for k in 1..rows, in one INSERT. Errors name the workload and statement.
func prepareTable(ctx context.Context, db *sql.DB, workload, table, cols string, rows int, value func(k int) int64) error {
	t := "`" + table + "`"
	stmts := []string{"DROP TABLE IF EXISTS " + t, "CREATE TABLE " + t + " (" + cols + ") ENGINE=InnoDB"}
	if rows > 0 {
		vals := make([]string, rows)
		for i := range vals {
			vals[i] = fmt.Sprintf("(%d, %d)", i+1, value(i+1))
		}
		stmts = append(stmts, "INSERT INTO "+t+" (k, v) VALUES "+strings.Join(vals, ", "))
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s prepare: %s: %w", workload, strings.SplitN(s, " (", 2)[0], err)
		}
	}
	return nil
}

// RunRegister runs the register workload on nodes for o.Time (or until ctx ends) and
// returns its history. Each transaction picks a key at random, reads its value
// (SELECT v, FOR UPDATE with Locking "for-update"), writes a new value unique to that
// key (so a read identifies the write it saw) and commits: the read-then-write shape
// where a lost update (P4) shows. A transaction that fails is rolled back and recorded
// as failed; one whose COMMIT got no answer (the connection died) as unknown, after
// which the session reconnects under a new process number. The error is for bad
// options or a session that could not connect or set its isolation level.
func RunRegister(ctx context.Context, nodes []Node, o RegisterOptions) (*history.History, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, errors.New("register: no nodes")
	}
	r := &registerRun{o: o, next: make([]atomic.Int64, o.Keys+1)}
	r.read = fmt.Sprintf("SELECT v FROM `%s` WHERE k = ?", o.Table)
	if o.Locking == "for-update" {
		r.read += " FOR UPDATE"
	}
	r.write = fmt.Sprintf("UPDATE `%s` SET v = ? WHERE k = ?", o.Table)
	s := &sessions{nodes: nodes, threads: o.Threads, isolation: o.Isolation, timeout: o.TxnTimeout, rate: o.Rate, txn: r.txn, follow: o.Follow}
	return s.run(ctx, o.Time)
}

// registerRun is one RunRegister call's shared state.
type registerRun struct {
	o           RegisterOptions
	next        []atomic.Int64 // last value written per key (values are unique per key)
	read, write string
}

// txn runs one read-then-write transaction.
func (r *registerRun) txn(t *tx, rng *rand.Rand) {
	key := int64(1 + rng.IntN(r.o.Keys))
	val := r.next[key].Add(1)
	t.op.Value = []history.Mop{{F: "r", Key: key}, history.W(key, val)}
	if !t.exec("BEGIN") {
		return
	}
	var v int64
	if !t.scan(r.read, []any{key}, &v) {
		return
	}
	t.op.Value[0].Value = &v
	if t.exec(r.write, val, key) {
		t.commit()
	}
}
