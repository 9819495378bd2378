package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// large-transaction: one transaction of many rows on a node (the writer, as `writer`)
// while the workload goes on, as a batch job or a careless UPDATE would: an INSERT ...
// SELECT of `rows` generated rows into a table of its own, or an UPDATE of a whole table.
// The server's refusal (Group Replication's group_replication_transaction_size_limit,
// Galera's wsrep_max_ws_size or wsrep_max_ws_rows) is the transaction's outcome
// (schema.FaultRecord.Outcome), not a failure of the action. A lasting action: the run reports
// the workload and the cluster while it ran (faultDuring).
func init() {
	RegisterFaultAction(FaultAction{
		FaultSpec: scenario.FaultSpec{
			Name:  "large-transaction",
			Order: 100,
			Help: "one transaction of many rows on the node while the workload runs: INSERT ... SELECT of\n" +
				"rows=N generated rows (~200 bytes each) into table=DB.T (made if missing), or an UPDATE of\n" +
				"every row of table=DB.T; its outcome (ok or the server's error) and duration are recorded",
			Past: "sent a large transaction to",
			CheckArgs: func(args scenario.FaultArgs) (string, string) {
				if _, ok := args["rows"]; ok && args["statement"] == "update" {
					return "rows", "rows is for statement=insert-select; statement=update changes every row of the table"
				}
				return "", ""
			},
			Params: []scenario.FaultParam{
				{Name: "rows", Help: "rows the INSERT ... SELECT adds (default 200000; statement=insert-select only)", Check: func(v string) string {
					if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 1 || n > 1e9 {
						return "a whole number of rows from 1 to 1000000000, e.g. 200000"
					}
					return ""
				}},
				{Name: "statement", Help: "insert-select (default) or update (UPDATE of every row of the table: k = k + 1)", Check: func(v string) string {
					if v != "insert-select" && v != "update" {
						return "insert-select or update"
					}
					return ""
				}},
				{Name: "table", Help: "DB.TABLE it writes (default sbtest.habench_large_trx for insert-select, sbtest.sbtest1 for update)", Check: func(v string) string {
					if !tableRE.MatchString(v) {
						return "DB.TABLE, letters, digits and _ only, e.g. sbtest.sbtest1"
					}
					return ""
				}},
			},
			Lasting: true,
		},
		Inject: injectLargeTrx,
	})
}

var tableRE = regexp.MustCompile(`^[A-Za-z0-9_]+\.[A-Za-z0-9_]+$`)

// largeTrxSQL returns the statements of a large transaction: setup (run before it, not
// timed: the insert's table) and the transaction's one statement.
func largeTrxSQL(args scenario.FaultArgs) (table string, setup []string, stmt string) {
	shape := args["statement"]
	if shape == "update" {
		table = cmp.Or(args["table"], "sbtest.sbtest1")
		return table, []string{useDB(table)}, fmt.Sprintf("UPDATE %s SET k = k + 1", quoteTable(table))
	}
	table = cmp.Or(args["table"], "sbtest.habench_large_trx")
	rows, err := strconv.ParseInt(args["rows"], 10, 64)
	if err != nil {
		rows = 200000
	}
	db, _, _ := strings.Cut(table, ".")
	setup = []string{"CREATE DATABASE IF NOT EXISTS `" + db + "`", useDB(table), fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "+
		"k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '') ENGINE=InnoDB", quoteTable(table))}
	digits := max(1, int(math.Ceil(math.Log10(float64(rows)))))
	var from []string
	for i := range digits {
		from = append(from, fmt.Sprintf("(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 "+
			"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) d%d", i))
	}
	stmt = fmt.Sprintf("INSERT INTO %s (k, c, pad) SELECT FLOOR(RAND() * %d), RPAD(CONCAT(RAND(), RAND(), RAND(), RAND(), RAND()), 120, 'x'), "+
		"RPAD(CONCAT(RAND(), RAND()), 60, 'y') FROM %s LIMIT %d", quoteTable(table), rows, strings.Join(from, " CROSS JOIN "), rows)
	return table, setup, stmt
}

// useDB makes table's database the session's (the generated rows' derived tables need one).
func useDB(table string) string {
	db, _, _ := strings.Cut(table, ".")
	return "USE `" + db + "`"
}

func quoteTable(t string) string {
	db, tb, _ := strings.Cut(t, ".")
	return "`" + db + "`.`" + tb + "`"
}

// injectLargeTrx runs the large transaction on n as root (autocommit: one statement, one
// transaction) and records its outcome and rows in rec. A MySQL error from the statement
// (a refusal at commit, a conflict, a deadlock) is the outcome, "error CODE: message",
// with a nil error; only a failure to reach the server or to create the table is the
// action's error.
func injectLargeTrx(ctx context.Context, _ *Injector, c *cluster.Cluster, n *cluster.Node, args scenario.FaultArgs, rec *schema.FaultRecord) (string, error) {
	table, setup, stmt := largeTrxSQL(args)
	db, err := c.OpenAdmin(n)
	if err != nil {
		return "", err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", n.Name, err)
	}
	defer conn.Close()
	for _, q := range setup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("prepare %s on %s (%s): %w", table, n.Name, q, err)
		}
	}
	from := time.Now()
	res, err := conn.ExecContext(ctx, stmt)
	took := time.Since(from).Seconds()
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me):
		rec.Outcome = fmt.Sprintf("error %d: %s", me.Number, me.Message)
		return fmt.Sprintf("%s on %s refused after %.2f s: %s", shapeOf(args), table, took, rec.Outcome), nil
	case err != nil:
		return "", fmt.Errorf("%s on %s after %.2f s: %w", shapeOf(args), table, took, err)
	}
	rec.Outcome = "ok"
	rec.Rows, _ = res.RowsAffected()
	return fmt.Sprintf("%s of %d rows on %s committed in %.2f s", shapeOf(args), rec.Rows, table, took), nil
}

func shapeOf(args scenario.FaultArgs) string { return cmp.Or(args["statement"], "insert-select") }
