package sampler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/topology"
)

// mysqlLike reports whether the node follows Oracle MySQL (MySQL and the flavors built on
// it: Percona Server, PXC; topology.Flavor.MySQLLike).
func mysqlLike(c topology.Capabilities) bool { return c.Flavor.MySQLLike() }

// MySQL/MariaDB server error numbers the samplers treat specially.
const (
	erBadDB       = 1049 // ER_BAD_DB_ERROR: unknown database
	erNoSuchTable = 1146 // ER_NO_SUCH_TABLE
)

// isServerError reports whether err is a server error with one of the given numbers.
func isServerError(err error, numbers ...uint16) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	for _, n := range numbers {
		if me.Number == n {
			return true
		}
	}
	return false
}

// globalStatus runs SHOW GLOBAL STATUS LIKE pattern and returns name -> value.
func globalStatus(ctx context.Context, db *sql.DB, pattern string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE "+quote(pattern))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// scanRows reads every row of a result set with unknown columns as column -> value maps
// (NULL becomes a missing key) and returns the column names too.
func scanRows(rows *sql.Rows) ([]string, []map[string]string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		m := make(map[string]string, len(cols))
		for i, c := range cols {
			if vals[i].Valid {
				m[c] = vals[i].String
			}
		}
		out = append(out, m)
	}
	return cols, out, rows.Err()
}

// parseFloat parses a status value; error names the variable.
func parseFloat(name, v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, fmt.Errorf("%s = %q: not a number", name, v)
	}
	return f, nil
}

// onOff maps "ON"/"Yes"/"1" (any case) to 1 and anything else to 0.
func onOff(v string) float64 {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "ON", "YES", "1", "TRUE":
		return 1
	}
	return 0
}

// quote renders s as a single-quoted SQL string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
