package experiment

// Read-back of the sweep's option axes (server options written to the option file).
// Knob axes go through package knob (Bench.Knobs), which reads them back itself.

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
)

// ReadGlobals reads `@@GLOBAL.name` of each variable on every node: variable -> node ->
// value (NULL as ""). Names may be written as in an option file (dashes, loose- prefix):
// they are read as the variable. Error names the node and the variable.
func ReadGlobals(ctx context.Context, c *cluster.Cluster, names []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			return out, err
		}
		for _, name := range names {
			v := VariableName(name)
			if !variableRE.MatchString(v) {
				db.Close()
				return out, fmt.Errorf("%q: not a server variable name", name)
			}
			var val sql.NullString
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := db.QueryRowContext(qctx, "SELECT @@GLOBAL."+v).Scan(&val)
			cancel()
			if err != nil {
				db.Close()
				return out, fmt.Errorf("node %s: read back @@GLOBAL.%s: %w", n.Name, v, err)
			}
			if out[name] == nil {
				out[name] = map[string]string{}
			}
			out[name][n.Name] = val.String
		}
		db.Close()
	}
	return out, nil
}

// VariableName is the server variable an option-file name sets: dashes to underscores,
// without the loose_ prefix.
func VariableName(option string) string {
	return strings.TrimPrefix(strings.ReplaceAll(strings.ToLower(option), "-", "_"), "loose_")
}

var (
	sizeRE     = regexp.MustCompile(`^([0-9]+)([KMGTkmgt])$`)
	variableRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

func sizeBytes(v string) (int64, bool) {
	m := sizeRE.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"k": 10, "m": 20, "g": 30, "t": 40}[strings.ToLower(m[2])]
	return n << shift, true
}

// SameValue reports whether a value read back from a server is the value requested:
// equal ignoring case, equal as numbers (sizes in bytes), or ON/TRUE = 1 and OFF/FALSE = 0.
func SameValue(requested, got string) bool {
	norm := func(s string) string {
		switch strings.ToUpper(s) {
		case "ON", "TRUE", "YES":
			return "1"
		case "OFF", "FALSE", "NO":
			return "0"
		}
		if b, ok := sizeBytes(s); ok {
			return strconv.FormatInt(b, 10)
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return strings.ToLower(s)
	}
	return norm(requested) == norm(got)
}
