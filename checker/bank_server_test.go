package checker

import (
	"testing"
	"time"
)

// TestBankKnownAnswers on one real MariaDB: transfers that read both balances and write
// the new values at REPEATABLE READ change the bank's total (committed reads of all
// accounts that do not sum to it); with SELECT ... FOR UPDATE every read sums to it.
func TestBankKnownAnswers(t *testing.T) {
	db, ctx := checkerServer(t)
	for _, c := range []struct {
		locking string
		wantBad bool
	}{{"", true}, {"for-update", false}} {
		o := BankOptions{Accounts: 4, Threads: 4, Time: 3 * time.Second, Locking: c.locking, Isolation: "REPEATABLE-READ"}
		if err := PrepareBank(ctx, db, o); err != nil {
			t.Fatal(err)
		}
		h, err := RunBank(ctx, []Node{{Name: "n1", DB: db}}, o)
		if err != nil {
			t.Fatalf("locking %q: %v", c.locking, err)
		}
		v := CheckBank(h.Ops(), o.Accounts, o.Total())
		t.Logf("locking %q: %d ops, %d ok, %d failed, %d unknown; %d anomalies", c.locking, v.Ops, v.OK, v.Failed, v.Unknown, len(v.Anomalies))
		if v.OK < 50 {
			t.Fatalf("locking %q: only %d committed transactions", c.locking, v.OK)
		}
		var sum int64
		if err := db.QueryRowContext(ctx, "SELECT SUM(v) FROM habench_bank").Scan(&sum); err != nil {
			t.Fatal(err)
		}
		if c.wantBad {
			if v.Valid {
				t.Fatalf("plain reads at REPEATABLE READ: every read summed to %d, want wrong totals", o.Total())
			}
			t.Logf("first anomaly: %s; total after the run %d", v.Anomalies[0].Explanation, sum)
			continue
		}
		if !v.Valid {
			t.Fatalf("FOR UPDATE: %d anomalies, first: %s", len(v.Anomalies), v.Anomalies[0].Explanation)
		}
		if sum != o.Total() {
			t.Fatalf("FOR UPDATE: the table sums to %d after the run, want %d", sum, o.Total())
		}
	}
}
