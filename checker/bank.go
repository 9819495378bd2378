package checker

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/habench/habench/history"
)

// BankOptions configure the bank workload.
type BankOptions struct {
	// Accounts is how many accounts (rows) there are, 2..100 (default 5), each starting
	// with Balance (default 100): the total the bank check expects is their product.
	Accounts int
	Balance  int64
	// Threads is how many sessions run transactions, 1..1024 (default 4).
	Threads int
	// Time is how long the run lasts (default 10 s).
	Time time.Duration
	// Locking ("" or "for-update") and Isolation are as in RegisterOptions.
	Locking   string
	Isolation string
	// Table is the accounts table (default "habench_bank"); TxnTimeout bounds one
	// transaction (default 30 s).
	Table      string
	TxnTimeout time.Duration
	// ReadNodes, when given, run the transactions that read every balance instead of
	// the nodes: session i's on ReadNodes[i % len(ReadNodes)].
	ReadNodes []Node
	// Rate caps the transactions per second of all sessions together (0: no cap), as
	// RegisterOptions.Rate.
	Rate float64
	// Follow is as in RegisterOptions.
	Follow Follow
}

// withDefaults validates o and fills its defaults; an error names the field and value.
func (o BankOptions) withDefaults() (BankOptions, error) {
	if o.Accounts == 0 {
		o.Accounts = 5
	}
	if o.Balance == 0 {
		o.Balance = 100
	}
	if o.Table == "" {
		o.Table = "habench_bank"
	}
	r, err := RegisterOptions{Keys: 1, Threads: o.Threads, Time: o.Time, Locking: o.Locking, Isolation: o.Isolation,
		Table: o.Table, TxnTimeout: o.TxnTimeout, Rate: o.Rate}.withDefaults()
	if err != nil {
		return o, fmt.Errorf("bank%s", strings.TrimPrefix(err.Error(), "register"))
	}
	o.Threads, o.Time, o.Isolation, o.TxnTimeout, o.Rate = r.Threads, r.Time, r.Isolation, r.TxnTimeout, r.Rate
	switch {
	case o.Accounts < 2 || o.Accounts > 100:
		return o, fmt.Errorf("bank accounts %d: want 2..100", o.Accounts)
	case o.Balance < 1 || o.Balance > 1e12:
		return o, fmt.Errorf("bank balance %d: want 1..1000000000000", o.Balance)
	}
	return o, nil
}

// Validate checks o (after its defaults) and returns one error naming the field and value.
func (o BankOptions) Validate() error {
	_, err := o.withDefaults()
	return err
}

// Total is the sum of all balances the bank check expects (o must be valid).
func (o BankOptions) Total() int64 {
	d, _ := o.withDefaults()
	return int64(d.Accounts) * d.Balance
}

// PrepareBank (re)creates the accounts table on db: accounts 1..Accounts with Balance.
func PrepareBank(ctx context.Context, db *sql.DB, o BankOptions) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	return prepareTable(ctx, db, "bank", o.Table, "k INT NOT NULL PRIMARY KEY, v BIGINT NOT NULL", o.Accounts, func(int) int64 { return o.Balance })
}

// RunBank runs the bank workload on nodes for o.Time (or until ctx ends) and returns its
// history. Half the transactions read every balance (SELECT k, v ... ORDER BY k); the
// others transfer 1..5 between two accounts the way an application that reads and then
// writes does: read both balances (lower account first; FOR UPDATE with Locking
// "for-update"), and when the source has enough, write both new balances as values.
// Keys are accounts, values balances (writes are not unique: the history is for
// CheckBank, not for Elle's rw-register).
func RunBank(ctx context.Context, nodes []Node, o BankOptions) (*history.History, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &bankRun{o: o}
	b.read = fmt.Sprintf("SELECT v FROM `%s` WHERE k = ?", o.Table)
	if o.Locking == "for-update" {
		b.read += " FOR UPDATE"
	}
	b.readAll = fmt.Sprintf("SELECT k, v FROM `%s` ORDER BY k", o.Table)
	b.write = fmt.Sprintf("UPDATE `%s` SET v = ? WHERE k = ?", o.Table)
	s := &sessions{nodes: nodes, threads: o.Threads, isolation: o.Isolation, timeout: o.TxnTimeout, rate: o.Rate, txn: b.txn, readNodes: o.ReadNodes, follow: o.Follow}
	return s.run(ctx, o.Time)
}

type bankRun struct {
	o                    BankOptions
	read, readAll, write string
}

func (b *bankRun) txn(t *tx, rng *rand.Rand) {
	readAll := rng.IntN(2) == 0
	if readAll && !t.onReadNode() {
		return
	}
	if !t.exec("BEGIN") {
		return
	}
	if readAll {
		var k, v int64
		if t.query(b.readAll, []any{&k, &v}, func() { t.op.Value = append(t.op.Value, history.R(k, v)) }) {
			t.commit()
		}
		return
	}
	from := int64(1 + rng.IntN(b.o.Accounts))
	to := int64(1 + rng.IntN(b.o.Accounts-1))
	if to >= from {
		to++
	}
	amount := int64(1 + rng.IntN(5))
	lo, hi := min(from, to), max(from, to)
	bal := map[int64]int64{}
	for _, k := range []int64{lo, hi} {
		var v int64
		if !t.scan(b.read, []any{k}, &v) {
			return
		}
		bal[k] = v
		t.op.Value = append(t.op.Value, history.R(k, v))
	}
	if bal[from] >= amount {
		for _, w := range [][2]int64{{from, bal[from] - amount}, {to, bal[to] + amount}} {
			t.op.Value = append(t.op.Value, history.W(w[0], w[1]))
			if !t.exec(b.write, w[1], w[0]) {
				return
			}
		}
	}
	t.commit()
}

// CheckBank checks a bank history: every committed read of all accounts sums to total
// (anomaly "wrong-total", Version the sum read) and no committed read sees a negative
// balance ("negative-balance", Key the account, Version the balance). Failed and
// unknown-outcome operations are not checked (their reads are not known to be
// consistent).
func CheckBank(ops []history.Op, accounts int, total int64) Verdict {
	v := Verdict{Workload: "bank", Ops: len(ops), Anomalies: []Anomaly{}}
	for _, op := range ops {
		switch op.Outcome {
		case history.OK:
			v.OK++
		case history.Fail:
			v.Failed++
			continue
		default:
			v.Unknown++
			continue
		}
		seen, sum, writes := map[int64]bool{}, int64(0), false
		var bal []string
		for _, m := range op.Value {
			if m.F == "w" {
				writes = true
			}
			if m.F != "r" || m.Value == nil || seen[m.Key] {
				continue
			}
			seen[m.Key], sum = true, sum+*m.Value
			bal = append(bal, fmt.Sprintf("%d: %d", m.Key, *m.Value))
			if *m.Value < 0 {
				v.Anomalies = append(v.Anomalies, Anomaly{Type: "negative-balance", Key: m.Key, Version: *m.Value, Ops: []history.Op{op},
					Explanation: fmt.Sprintf("negative balance: T%d (process %d on %s) read account %d at %d", op.Index, op.Process, op.Node, m.Key, *m.Value)})
			}
		}
		if !writes && len(seen) == accounts && sum != total {
			v.Anomalies = append(v.Anomalies, Anomaly{Type: "wrong-total", Version: sum, Ops: []history.Op{op},
				Explanation: fmt.Sprintf("bank total changed: T%d (process %d on %s) read every balance {%s}, summing to %d, not %d",
					op.Index, op.Process, op.Node, strings.Join(bal, ", "), sum, total)})
		}
	}
	v.Valid = len(v.Anomalies) == 0
	return v
}
