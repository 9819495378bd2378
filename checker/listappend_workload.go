package checker

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/habench/habench/history"
)

// ListAppendOptions configure the list-append workload.
type ListAppendOptions struct {
	// Keys is how many keys are in use at once, 1..1000 (default 4); a key is retired
	// after MaxAppends appends (default 64, 1..10000) and replaced by a new one, so
	// reads stay short (as Elle's generators do).
	Keys       int
	MaxAppends int
	// MaxTxnLen is the most micro-operations (appends and reads, half and half) of one
	// transaction, 1..16 (default 4).
	MaxTxnLen int
	// Threads, Time, Isolation, TxnTimeout and Rate are as in RegisterOptions.
	Threads    int
	Time       time.Duration
	Isolation  string
	TxnTimeout time.Duration
	Rate       float64
	// Table is the lists' table, one row per key, its list a comma-separated TEXT
	// (default "habench_list").
	Table string
	// ReadNodes, when given, run the read-only transactions (reads only) instead of
	// the nodes: session i's on ReadNodes[i % len(ReadNodes)] (stale reads there show
	// as session anomalies).
	ReadNodes []Node
	// Follow is as in RegisterOptions.
	Follow Follow
}

// withDefaults validates o and fills its defaults; an error names the field and value.
func (o ListAppendOptions) withDefaults() (ListAppendOptions, error) {
	if o.Keys == 0 {
		o.Keys = 4
	}
	if o.MaxAppends == 0 {
		o.MaxAppends = 64
	}
	if o.MaxTxnLen == 0 {
		o.MaxTxnLen = 4
	}
	if o.Table == "" {
		o.Table = "habench_list"
	}
	r, err := RegisterOptions{Keys: o.Keys, Threads: o.Threads, Time: o.Time, Isolation: o.Isolation,
		Table: o.Table, TxnTimeout: o.TxnTimeout, Rate: o.Rate}.withDefaults()
	if err != nil {
		return o, fmt.Errorf("list-append%s", strings.TrimPrefix(err.Error(), "register"))
	}
	o.Threads, o.Time, o.Isolation, o.TxnTimeout, o.Rate = r.Threads, r.Time, r.Isolation, r.TxnTimeout, r.Rate
	switch {
	case o.MaxAppends < 1 || o.MaxAppends > 10000:
		return o, fmt.Errorf("list-append max appends %d: want 1..10000", o.MaxAppends)
	case o.MaxTxnLen < 1 || o.MaxTxnLen > 16:
		return o, fmt.Errorf("list-append max txn len %d: want 1..16", o.MaxTxnLen)
	}
	return o, nil
}

// Validate checks o (after its defaults) and returns one error naming the field and value.
func (o ListAppendOptions) Validate() error {
	_, err := o.withDefaults()
	return err
}

// PrepareListAppend (re)creates the list-append table on db, empty (every list empty).
func PrepareListAppend(ctx context.Context, db *sql.DB, o ListAppendOptions) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return prepareTable(ctx, db, "list-append", o.Table, "k BIGINT NOT NULL PRIMARY KEY, v TEXT NOT NULL", 0, nil)
}

// RunListAppend runs the list-append workload on nodes for o.Time (or until ctx ends)
// and returns its history, for CheckListAppend. Each transaction runs 1 to MaxTxnLen
// micro-operations on keys in use, each an append of a value unique to the run
// (INSERT ... ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', value)) or a read of the
// whole list (SELECT v, no row: the empty list), then commits. Outcomes, reconnection
// and process numbers are as in RunRegister; the error is for bad options or a session
// that could not connect or set its isolation level.
func RunListAppend(ctx context.Context, nodes []Node, o ListAppendOptions) (*history.History, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, errors.New("list-append: no nodes")
	}
	r := &listRun{o: o, appends: make([]atomic.Int64, o.Keys)}
	r.read = fmt.Sprintf("SELECT v FROM `%s` WHERE k = ?", o.Table)
	r.write = fmt.Sprintf("INSERT INTO `%s` (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', ?)", o.Table)
	s := &sessions{nodes: nodes, threads: o.Threads, isolation: o.Isolation, timeout: o.TxnTimeout, rate: o.Rate, txn: r.txn, readNodes: o.ReadNodes, follow: o.Follow}
	return s.run(ctx, o.Time)
}

// listRun is one RunListAppend call's shared state.
type listRun struct {
	o           ListAppendOptions
	appends     []atomic.Int64 // appends handed out per slot of the keys in use
	next        atomic.Int64   // last value appended (unique in the run)
	read, write string
}

// key returns the key in use in slot, for an append (counting it) or a read: slot
// s's keys are s+1, s+1+Keys, s+1+2*Keys ..., each for MaxAppends appends.
func (r *listRun) key(slot int, appending bool) int64 {
	n := r.appends[slot].Load()
	if appending {
		n = r.appends[slot].Add(1) - 1
	}
	return int64(slot) + 1 + int64(r.o.Keys)*(n/int64(r.o.MaxAppends))
}

// txn runs one transaction of appends and reads.
func (r *listRun) txn(t *tx, rng *rand.Rand) {
	n := 1 + rng.IntN(r.o.MaxTxnLen)
	appends, readOnly := make([]bool, n), true
	for i := range appends {
		appends[i] = rng.IntN(2) == 0
		readOnly = readOnly && !appends[i]
	}
	if readOnly && !t.onReadNode() {
		return
	}
	if !t.exec("BEGIN") {
		return
	}
	for i := 0; i < n; i++ {
		slot := rng.IntN(r.o.Keys)
		if appends[i] {
			key, val := r.key(slot, true), r.next.Add(1)
			t.op.Value = append(t.op.Value, history.Append(key, val))
			if !t.exec(r.write, key, strconv.FormatInt(val, 10), strconv.FormatInt(val, 10)) {
				return
			}
			continue
		}
		key := r.key(slot, false)
		t.op.Value = append(t.op.Value, history.Mop{F: "r", Key: key})
		l, ok := r.readList(t, key)
		if !ok {
			return
		}
		t.op.Value[len(t.op.Value)-1].List = l
	}
	t.commit()
}

// readList reads the list at key (empty when it has no row).
func (r *listRun) readList(t *tx, key int64) ([]int64, bool) {
	var s string
	err := t.c.QueryRowContext(t.ctx, r.read, key).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return []int64{}, true
	}
	if err != nil {
		return nil, t.fail(err)
	}
	l, err := parseList(s)
	if err != nil {
		return nil, t.fail(fmt.Errorf("list-append key %d: %w", key, err))
	}
	return l, true
}

// parseList parses a comma-separated list of integers ("" is empty).
func parseList(s string) ([]int64, error) {
	l := []int64{}
	if s == "" {
		return l, nil
	}
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("list %q: element %q is not an integer", s, f)
		}
		l = append(l, x)
	}
	return l, nil
}
