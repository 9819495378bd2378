package checker

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/habench/habench/history"
)

// TestListAppendOnServer: the list-append workload on one real MariaDB. At
// SERIALIZABLE its checked history has no anomaly; at REPEATABLE READ it is checked
// and its verdict logged (Jepsen found G-single and G2-item there; not asserted). Each
// run must commit enough appends and reads for a verdict, and the table after the run
// must agree with the history: every list holds only appends of ok or unknown
// operations, and every ok append of the run is in its list.
func TestListAppendOnServer(t *testing.T) {
	db, ctx := checkerServer(t)
	for _, iso := range []string{"SERIALIZABLE", "REPEATABLE-READ"} {
		o := ListAppendOptions{Keys: 3, MaxAppends: 32, Threads: 4, Time: 3 * time.Second, Isolation: iso}
		if err := PrepareListAppend(ctx, db, o); err != nil {
			t.Fatal(err)
		}
		h, err := RunListAppend(ctx, []Node{{Name: "n1", DB: db}}, o)
		if err != nil {
			t.Fatalf("%s: %v", iso, err)
		}
		ops := h.Ops()
		v := CheckListAppend(ops)
		types := map[string]int{}
		for _, a := range v.Anomalies {
			types[a.Type]++
		}
		t.Logf("%s: %d ops, %d ok, %d failed, %d unknown; anomalies %v", iso, v.Ops, v.OK, v.Failed, v.Unknown, types)
		if v.OK < 50 {
			t.Fatalf("%s: only %d committed transactions: too few for a verdict", iso, v.OK)
		}
		if iso == "SERIALIZABLE" && !v.Valid {
			t.Fatalf("%s: %d anomalies, want none; first: %s", iso, len(v.Anomalies), v.Anomalies[0].Explanation)
		}
		checkFinalLists(t, ctx, db, ops)
	}
}

// checkFinalLists cross-checks the history with habench_list after the run: each
// list holds only appends of ok or unknown operations, each ok append is in its list.
func checkFinalLists(t *testing.T, ctx context.Context, db *sql.DB, ops []history.Op) {
	t.Helper()
	appender := map[[2]int64]history.Outcome{}
	for _, op := range ops {
		for _, m := range op.Value {
			if m.F == "append" {
				appender[[2]int64{m.Key, *m.Value}] = op.Outcome
			}
		}
	}
	rows, err := db.QueryContext(ctx, "SELECT k, v FROM habench_list")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	inTable := map[[2]int64]bool{}
	for rows.Next() {
		var k int64
		var v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		l, err := parseList(v)
		if err != nil {
			t.Fatalf("key %d: %v", k, err)
		}
		for _, x := range l {
			inTable[[2]int64{k, x}] = true
			if out := appender[[2]int64{k, x}]; out != history.OK && out != history.Unknown {
				t.Errorf("key %d holds %d, appended by an operation recorded as %q", k, x, out)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for e, out := range appender {
		if out == history.OK && !inTable[e] {
			t.Errorf("key %d lacks %d, appended by an ok operation", e[0], e[1])
		}
	}
}
