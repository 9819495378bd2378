package workload

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testserver"
)

type histBucket struct {
	ms    float64
	count int64
}

var reHistLine = regexp.MustCompile(`^( {0,11}\d+\.\d{3}) \|(\**) *(?: (\d+))$`)

// parseHistogram parses a --histogram block the way a script reading sysbench 1.0.20's
// would: the title, the column header, one line per bucket ("%12.3f |%-40s %d"), a
// line holding one space. It fails the test on any other line inside the block.
func parseHistogram(t *testing.T, text string) []histBucket {
	t.Helper()
	lines := strings.Split(text, "\n")
	start := -1
	for i, l := range lines {
		if l == "Latency histogram (values are in milliseconds)" {
			start = i
			break
		}
	}
	if start < 0 || start+1 >= len(lines) || lines[start+1] != "       value  ------------- distribution ------------- count" {
		t.Fatalf("no histogram title and column header:\n%s", text)
	}
	var out []histBucket
	var maxc int64
	var bars []int
	for _, l := range lines[start+2:] {
		if l == " " {
			break
		}
		m := reHistLine.FindStringSubmatch(l)
		if m == nil || len(l) < 12+2+40 || l[12:14] != " |" {
			t.Fatalf("histogram line %q: not sysbench's %%12.3f |%%-40s %%d", l)
		}
		ms, _ := strconv.ParseFloat(strings.TrimSpace(m[1]), 64)
		n, _ := strconv.ParseInt(m[3], 10, 64)
		if len(out) > 0 && ms < out[len(out)-1].ms {
			t.Errorf("histogram values not ascending: %v after %v", ms, out[len(out)-1].ms)
		}
		out = append(out, histBucket{ms, n})
		bars = append(bars, len(m[2]))
		maxc = max(maxc, n)
	}
	for i, b := range out {
		if want := int(float64(b.count)*40/float64(maxc) + 0.5); bars[i] != want {
			t.Errorf("bucket %v count %d: bar of %d stars, want %d", b.ms, b.count, bars[i], want)
		}
	}
	return out
}

func histTotal(bs []histBucket) int64 {
	var n int64
	for _, b := range bs {
		n += b.count
	}
	return n
}

func countRows(t *testing.T, db *sql.DB, table string) int64 {
	t.Helper()
	var n, maxID sql.NullInt64
	if err := db.QueryRow("SELECT COUNT(*), MAX(id) FROM sbtest."+table).Scan(&n, &maxID); err != nil {
		t.Fatal(err)
	}
	if n.Int64 != maxID.Int64 {
		t.Errorf("%s: %d rows, max id %d: want ids 1..n", table, n.Int64, maxID.Int64)
	}
	return n.Int64
}

func sbtestTables(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME LIKE 'sbtest%'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBulkInsert runs bulk_insert's prepare, run and cleanup against a real server,
// counts the rows, prints and parses --histogram, and checks interop with sysbench
// 1.0.20's bulk_insert both ways (and its --histogram through the same parser).
func TestBulkInsert(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-server tests skipped in -short mode")
	}
	needSysbench(t)
	s := testserver.StartMariaDB(t)
	admin := s.Open(t, "")
	tg := serverTarget(s, "sbtest")
	bi := mustLookup(t, "bulk_insert")
	o := DefaultOptions()
	o.Threads, o.Time = 2, 2*time.Second
	sb := func(ctx context.Context, extra ...string) string {
		a := []string{"bulk_insert", "--mysql-host=127.0.0.1", "--mysql-port=" + strconv.Itoa(s.Port),
			"--mysql-user=root", "--mysql-db=sbtest", "--threads=2"}
		return runSysbench(t, ctx, append(a, extra...)...)
	}

	t.Run("habench_prepare_run_then_sysbench_cleanup", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var out bytes.Buffer
		if err := bi.Prepare(ctx, tg, o, &out); err != nil {
			t.Fatal(err)
		}
		if want := "Creating table 'sbtest1'...\nCreating table 'sbtest2'...\n"; out.String() != want {
			t.Errorf("prepare printed %q, want %q", out.String(), want)
		}
		var ddl string
		if err := admin.QueryRow("SHOW CREATE TABLE sbtest.sbtest2").Scan(new(string), &ddl); err != nil {
			t.Fatal(err)
		}
		for _, col := range []string{"`id` int(11) NOT NULL", "`k` int(11) NOT NULL DEFAULT 0", "PRIMARY KEY (`id`)"} {
			if !strings.Contains(ddl, col) {
				t.Errorf("sbtest2 lacks %q:\n%s", col, ddl)
			}
		}
		ro := o
		ro.Histogram, ro.Percentile = true, 99
		res, err := bi.Run(ctx, tg, ro, nil)
		if err != nil {
			t.Fatal(err)
		}
		var sum bytes.Buffer
		PrintSummary(&sum, res, ro)
		text := sum.String()
		rows := countRows(t, admin, "sbtest1") + countRows(t, admin, "sbtest2")
		t.Logf("%d rows in %d INSERTs, %.0f rows/s\n%s", rows, res.Writes, res.TPS(), text[strings.Index(text, "SQL statistics:"):])
		if rows != res.Transactions || rows < 1000 {
			t.Errorf("%d rows in the tables, %d events: want one row per event (and >= 1000)", rows, res.Transactions)
		}
		// Multi-row INSERTs of up to 512 KiB: a row "(123456,123456)," is <= 16 bytes.
		if res.Writes < 2 || res.Writes > rows/100+2 || res.Reads != 0 {
			t.Errorf("%d writes, %d reads for %d rows: want multi-row INSERTs, one per thread at least", res.Writes, res.Reads, rows)
		}
		if got := histTotal(parseHistogram(t, text)); got != res.Transactions {
			t.Errorf("histogram counts %d events, the run %d", got, res.Transactions)
		}
		if !strings.Contains(text, " \nSQL statistics:\n") {
			t.Errorf("the histogram does not end with sysbench's single-space line before SQL statistics:\n%s", text)
		}
		out.Reset()
		out.WriteString(sb(ctx, "cleanup"))
		if !strings.Contains(out.String(), "Dropping table 'sbtest2'...") || sbtestTables(t, admin) != 0 {
			t.Errorf("sysbench cleanup left %d tables:\n%s", sbtestTables(t, admin), out.String())
		}
	})

	t.Run("sysbench_prepare_run_then_habench_run_cleanup", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		sb(ctx, "prepare")
		sout := sb(ctx, "--time=1", "--histogram", "run")
		// sysbench's own --histogram through the parser habench's output passes.
		p := parseOutput(t, sout)
		sres := resultFromSummary(t, p.summary)
		if got := histTotal(parseHistogram(t, sout)); got != sres.Transactions || got == 0 {
			t.Errorf("sysbench's histogram counts %d, its summary %d events", got, sres.Transactions)
		}
		before := countRows(t, admin, "sbtest1") + countRows(t, admin, "sbtest2")
		if before != sres.Transactions {
			t.Errorf("sysbench: %d rows for %d events", before, sres.Transactions)
		}
		// On tables that already hold ids 1..n, the first INSERT collides, as sysbench's would.
		ro := o
		ro.Time = time.Second
		_, err := bi.Run(ctx, tg, ro, nil)
		var se *StatementError
		if !errors.As(err, &se) || se.Code != 1062 {
			t.Errorf("habench run on filled tables: %v, want duplicate key 1062 (sysbench fails the same way)", err)
		} else if !regexp.MustCompile(`^INSERT INTO sbtest[12] VALUES\(1,1\),\.\.\. \(\d+ rows, \d+ bytes\)$`).MatchString(se.Statement) || len(err.Error()) > 400 {
			t.Errorf("the error quotes %d bytes of statement: %.300s", len(err.Error()), err)
		}
		// On sysbench's freshly prepared tables habench runs.
		sb(ctx, "cleanup")
		sb(ctx, "prepare")
		res, err := bi.Run(ctx, tg, ro, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rows := countRows(t, admin, "sbtest1") + countRows(t, admin, "sbtest2"); rows != res.Transactions || rows == 0 {
			t.Errorf("habench on sysbench's tables: %d rows, %d events", rows, res.Transactions)
		}
		var out bytes.Buffer
		if err := bi.Cleanup(ctx, tg, o, &out); err != nil {
			t.Fatal(err)
		}
		if want := "Dropping table 'sbtest1'...\nDropping table 'sbtest2'...\n"; out.String() != want || sbtestTables(t, admin) != 0 {
			t.Errorf("cleanup printed %q, left %d tables", out.String(), sbtestTables(t, admin))
		}
	})

	t.Run("histogram_needs_percentile", func(t *testing.T) {
		ro := o
		ro.Histogram, ro.Percentile = true, 0
		err := ro.Validate()
		if err == nil || !strings.Contains(err.Error(), "--histogram") {
			t.Errorf("Validate(--histogram --percentile 0) = %v, want it refused naming --histogram", err)
		}
	})
}
