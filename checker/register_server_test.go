package checker

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
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
	db, ctx := checkerServer(t)
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

// TestRegisterSurvivesKilledConnections: the server kills the register's connections
// (KILL CONNECTION) every 100 ms: the sessions record those transactions as failed or
// unknown, reconnect and go on (a new process number after an unknown outcome), and
// with FOR UPDATE the history still has no lost update.
func TestRegisterSurvivesKilledConnections(t *testing.T) {
	t.Parallel()
	s := testserver.StartMariaDB(t)
	testserver.Exec(t, s.Open(t, ""), "CREATE DATABASE ck")
	db := s.Open(t, "ck")
	admin := s.Open(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := RegisterOptions{Keys: 2, Threads: 3, Time: 3 * time.Second, Locking: "for-update"}
	if err := PrepareRegister(ctx, db, o); err != nil {
		t.Fatal(err)
	}
	killed := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var id int64
			if admin.QueryRowContext(ctx, "SELECT id FROM information_schema.processlist WHERE db = 'ck' AND id <> CONNECTION_ID() ORDER BY RAND() LIMIT 1").Scan(&id) == nil {
				if _, err := admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err == nil {
					killed++
				}
			}
		}
	}()
	h, err := RunRegister(ctx, []Node{{Name: "n1", DB: db}}, o)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	ops := h.Ops()
	v := CheckRegister(ops)
	t.Logf("%d connections killed; %d ops, %d ok, %d failed, %d unknown; %d anomalies", killed, v.Ops, v.OK, v.Failed, v.Unknown, len(v.Anomalies))
	if killed < 10 || v.Failed+v.Unknown == 0 {
		t.Fatalf("%d kills, %d failed and %d unknown operations: want kills seen as failures", killed, v.Failed, v.Unknown)
	}
	if !v.Valid {
		t.Fatalf("FOR UPDATE with killed connections: %s", v.Anomalies[0].Explanation)
	}
	// A session goes on after a failure: after its last failure before the run's last
	// 500 ms (a reconnection waits 100 ms, and the run ends at o.Time) it commits again.
	cutoff := int64(o.Time - 500*time.Millisecond)
	last := map[int]int64{} // session -> End of its last failed op before cutoff (ns from the start)
	for _, op := range ops {
		if op.Outcome == history.Unknown && op.Process >= o.Threads*100 {
			t.Errorf("process %d: renumbered too often", op.Process)
		}
		if op.Outcome != history.OK && op.End <= cutoff {
			last[op.Session] = max(last[op.Session], op.End)
		}
	}
	if len(last) == 0 {
		t.Errorf("no failure before the run's last 500 ms: nothing shows that sessions go on")
	}
	for sess, end := range last {
		if !slices.ContainsFunc(ops, func(op history.Op) bool { return op.Session == sess && op.Start > end && op.Outcome == history.OK }) {
			t.Errorf("session %d committed nothing after its failure at %d ns", sess, end)
		}
	}
	checkFinalValues(t, ctx, db, o, ops)
}

// TestRateCapsTransactions: with Rate 25, four register sessions on one real MariaDB start
// about 25 transactions per second together (at most 2 s x 25 + the first), not as many
// as they can.
func TestRateCapsTransactions(t *testing.T) {
	db, ctx := checkerServer(t)
	o := RegisterOptions{Keys: 2, Threads: 4, Time: 2 * time.Second, Rate: 25}
	if err := PrepareRegister(ctx, db, o); err != nil {
		t.Fatal(err)
	}
	h, err := RunRegister(ctx, []Node{{Name: "n1", DB: db}}, o)
	if err != nil {
		t.Fatal(err)
	}
	n := len(h.Ops())
	t.Logf("rate 25/s for 2 s: %d transactions", n)
	if n > 51 || n < 25 {
		t.Errorf("%d transactions in 2 s at rate 25, want 25..51", n)
	}
	if err := (RegisterOptions{Rate: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "register rate -1") {
		t.Errorf("rate -1: %v, want an error naming the rate", err)
	}
}
