package workload

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

// TestPrepareLoadDataMatchesInserts: prepare loads with LOAD DATA LOCAL INFILE where the
// server allows it, and falls back to multi-row INSERTs with a NOTE where local_infile is
// OFF; for one seed both give the same rows (CHECKSUM TABLE) and every id 1..N, over more
// than one LOAD DATA chunk.
func TestPrepareLoadDataMatchesInserts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server test")
	}
	s := testserver.StartMariaDB(t)
	admin := s.Open(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	rw := mustLookup(t, "oltp_read_write")
	o := DefaultOptions()
	o.Tables, o.TableSize, o.Threads, o.RandSeed = 2, loadChunk+1234, 2, 42
	o.RandType = RandSpecial

	checksums := func(db string) []int64 {
		var sums []int64
		for _, tb := range []string{"sbtest1", "sbtest2"} {
			var name string
			var sum, cnt, maxID int64
			if err := admin.QueryRowContext(ctx, "CHECKSUM TABLE "+db+"."+tb).Scan(&name, &sum); err != nil {
				t.Fatal(err)
			}
			if err := admin.QueryRowContext(ctx, "SELECT COUNT(*), MAX(id) FROM "+db+"."+tb).Scan(&cnt, &maxID); err != nil {
				t.Fatal(err)
			}
			if cnt != int64(o.TableSize) || maxID != int64(o.TableSize) {
				t.Errorf("%s.%s: %d rows, max id %d; want %d", db, tb, cnt, maxID, o.TableSize)
			}
			sums = append(sums, sum)
		}
		return sums
	}

	var out bytes.Buffer
	loadTg := serverTarget(s, "viaload")
	if err := rw.Prepare(ctx, loadTg, o, &out); err != nil {
		t.Fatalf("prepare with LOAD DATA: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "NOTE") {
		t.Errorf("local_infile is ON, yet prepare printed a NOTE:\n%s", out.String())
	}
	viaLoad := checksums("viaload")

	testserver.Exec(t, admin, "SET GLOBAL local_infile=0")
	out.Reset()
	if err := rw.Prepare(ctx, serverTarget(s, "viainsert"), o, &out); err != nil {
		t.Fatalf("prepare with INSERTs: %v\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), "NOTE: local_infile is OFF on n1"); n != 1 {
		t.Errorf("want one NOTE about local_infile, got %d:\n%s", n, out.String())
	}
	viaInsert := checksums("viainsert")
	for i := range viaLoad {
		if viaLoad[i] != viaInsert[i] {
			t.Errorf("sbtest%d: CHECKSUM %d by LOAD DATA, %d by INSERTs: the rows differ", i+1, viaLoad[i], viaInsert[i])
		}
	}
}
