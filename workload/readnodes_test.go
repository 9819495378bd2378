package workload

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// TestReadNodes: with a read endpoint, the read-only statements go there and the
// writes stay on the writer (server counters say so), and every event that changed a
// row is read back on the read node. A read node that never sees the writer's commits
// (a second server that does not replicate) makes every check stale; the writer itself
// as the read node makes none stale.
func TestReadNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server test")
	}
	w := testserver.StartMariaDB(t)
	rd := testserver.StartMariaDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rw := mustLookup(t, "oltp_read_write")
	o := runOpts(2, 0)
	o.RandSeed = 7
	// The same tables and rows on both: the reads find rows, only the commits differ.
	for _, s := range []*testserver.Server{w, rd} {
		if err := rw.Prepare(ctx, serverTarget(s, "sbtest"), o, nil); err != nil {
			t.Fatal(err)
		}
	}
	wdb, rdb := w.Open(t, ""), rd.Open(t, "")
	for _, mode := range []string{PSAuto, PSDisable} {
		t.Run("stale/"+mode, func(t *testing.T) {
			tg := serverTarget(w, "sbtest")
			tg.ReadEndpoints = []Endpoint{{Name: "r1", Host: rd.Host, Port: rd.Port}}
			// One worker: with two, the other may change the row between a commit and
			// its check, which then proves nothing (neither equal nor stale: 1 of 3346
			// checks in a CI run), and every check must be stale here.
			ro := runOpts(1, 2*time.Second)
			ro.PSMode = mode
			wb, rb := testserver.ComCounters(t, wdb), testserver.ComCounters(t, rdb)
			res, err := rw.Run(ctx, tg, ro, nil)
			if err != nil {
				t.Fatal(err)
			}
			wa, ra := testserver.ComCounters(t, wdb), testserver.ComCounters(t, rdb)
			r1 := res.PerEndpoint["r1"]
			if res.Transactions == 0 || r1.ReadChecks < res.Transactions {
				t.Fatalf("transactions %d, read-your-writes checks on r1 %d: want a check per transaction", res.Transactions, r1.ReadChecks)
			}
			if r1.StaleReads != r1.ReadChecks {
				t.Errorf("r1 never sees the writer's commits, yet only %d of %d checks were stale", r1.StaleReads, r1.ReadChecks)
			}
			if r1.Queries != 14*res.Transactions {
				t.Errorf("r1 served %d reads, want 14 per transaction (%d)", r1.Queries, 14*res.Transactions)
			}
			if res.Reads != 14*res.Transactions {
				t.Errorf("result reads %d, want 14 per transaction: the checks are not part of the mix", res.Reads)
			}
			// Writes only on the writer, selects mostly on the read node: the writer sees
			// only the checks' re-reads (one per stale check).
			if n := delta(rb, ra, "Com_update", "Com_delete", "Com_insert"); n != 0 {
				t.Errorf("the read node ran %d writes", n)
			}
			if n := delta(wb, wa, "Com_update"); n < 2*res.Transactions {
				t.Errorf("the writer ran %d updates for %d transactions", n, res.Transactions)
			}
			sel := "Com_select"
			if mode == PSAuto {
				sel = "Com_stmt_execute"
			}
			if got, want := delta(rb, ra, sel), 15*res.Transactions; got < want {
				t.Errorf("read node %s = %d, want >= %d (14 reads + 1 check per transaction)", sel, got, want)
			}
			var out bytes.Buffer
			PrintSummary(&out, res, ro)
			if !strings.Contains(out.String(), "    r1: reads ") || !strings.Contains(out.String(), "(100.00%)") {
				t.Errorf("summary lacks the read-node line:\n%s", out.String())
			}
		})
	}
	t.Run("fresh", func(t *testing.T) {
		tg := serverTarget(w, "sbtest")
		tg.ReadEndpoints = []Endpoint{{Name: "self", Host: w.Host, Port: w.Port}}
		res, err := rw.Run(ctx, tg, runOpts(2, 2*time.Second), nil)
		if err != nil {
			t.Fatal(err)
		}
		self := res.PerEndpoint["self"]
		if self.ReadChecks == 0 || self.StaleReads != 0 {
			t.Errorf("reading back on the writer itself: %d checks, %d stale; want checks and none stale", self.ReadChecks, self.StaleReads)
		}
	})
}
