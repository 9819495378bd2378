package checker

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/history"
	"github.com/habench/habench/internal/testserver"
)

// TestRegisterKnownAnswers is issue 20's acceptance 1 on one real MariaDB: read-then-
// write register transactions at REPEATABLE READ lose updates (the checker names the
// transactions), and the same workload with SELECT ... FOR UPDATE, or at SERIALIZABLE,
// loses none. Each run must commit enough transactions for its answer to mean something.
func TestRegisterKnownAnswers(t *testing.T) {
	s := testserver.StartMariaDB(t)
	testserver.Exec(t, s.Open(t, ""), "CREATE DATABASE ck")
	db := s.Open(t, "ck")
	db.SetMaxOpenConns(16)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cases := []struct {
		name, locking, isolation string
		wantLost                 bool
	}{
		{"repeatable-read", "", "REPEATABLE-READ", true},
		{"for-update", "for-update", "REPEATABLE-READ", false},
		{"serializable", "", "SERIALIZABLE", false},
	}
	for _, c := range cases {
		o := RegisterOptions{Keys: 2, Threads: 4, Time: 3 * time.Second, Locking: c.locking, Isolation: c.isolation}
		if err := PrepareRegister(ctx, db, o); err != nil {
			t.Fatal(err)
		}
		h, err := RunRegister(ctx, []Node{{Name: "n1", DB: db}}, o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ops := h.Ops()
		v := CheckRegister(ops)
		t.Logf("%s: %d ops, %d ok, %d failed, %d unknown; %d anomalies, %d lost updates",
			c.name, v.Ops, v.OK, v.Failed, v.Unknown, len(v.Anomalies), v.LostUpdates)
		if v.OK < 50 {
			t.Fatalf("%s: only %d committed transactions: too few for a verdict", c.name, v.OK)
		}
		if c.wantLost {
			if v.Valid || v.LostUpdates == 0 {
				t.Fatalf("%s: no lost update found in %d committed read-then-writes, want some", c.name, v.OK)
			}
			a := v.Anomalies[0]
			t.Logf("first anomaly: %s", a.Explanation)
			if len(a.Ops) < 2 || !strings.Contains(a.Explanation, "T") {
				t.Errorf("anomaly %+v does not name its transactions", a)
			}
			checkFinalValues(t, ctx, db, o, ops)
			continue
		}
		if !v.Valid {
			t.Fatalf("%s: %d anomalies, want none; first: %s", c.name, len(v.Anomalies), v.Anomalies[0].Explanation)
		}
		checkFinalValues(t, ctx, db, o, ops)
	}
}

// checkFinalValues cross-checks the history with the table: each key's value after the
// run is the write of a transaction recorded as ok or unknown (or 0 when none wrote it).
func checkFinalValues(t *testing.T, ctx context.Context, db *sql.DB, o RegisterOptions, ops []history.Op) {
	t.Helper()
	writer := map[[2]int64]history.Outcome{}
	for _, op := range ops {
		for _, m := range op.Value {
			if m.F == "w" {
				writer[[2]int64{m.Key, *m.Value}] = op.Outcome
			}
		}
	}
	for k := 1; k <= o.Keys; k++ {
		var v int64
		if err := db.QueryRowContext(ctx, "SELECT v FROM habench_register WHERE k = ?", k).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v == 0 {
			continue
		}
		if out := writer[[2]int64{int64(k), v}]; out != history.OK && out != history.Unknown {
			t.Errorf("key %d holds %d, written by an operation recorded as %q", k, v, out)
		}
	}
}
