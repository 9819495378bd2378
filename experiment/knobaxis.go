package experiment

// The runtime knob axis of sweeps (knob.NAME) goes through ApplyKnobs. Until the knobs
// package is merged, SetGlobalKnobs does it: SET GLOBAL on every node, then @@GLOBAL read
// back. The integrator points ApplyKnobs at the knobs package; nothing else depends on it.

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

// KnobApplier sets runtime server variables on every node of c and returns the values
// read back afterwards: variable -> node -> value as the server reports it (@@GLOBAL).
// Error: a node unreachable, a variable unknown or read-only (the server's message).
type KnobApplier func(ctx context.Context, c *cluster.Cluster, settings []Setting) (map[string]map[string]string, error)

// ApplyKnobs is how sweeps apply knob axes (SetGlobalKnobs until the knobs package is merged).
var ApplyKnobs KnobApplier = SetGlobalKnobs

// SetGlobalKnobs runs `SET GLOBAL name = value` for each setting on every node of c over
// the admin socket, then reads every variable back with `SELECT @@GLOBAL.name`. Values
// are sent as numbers when numeric (sizes like 128M converted to bytes), as keywords for
// ON/OFF/TRUE/FALSE/DEFAULT, else as quoted strings. Error names the node, the variable
// and the server's message.
func SetGlobalKnobs(ctx context.Context, c *cluster.Cluster, settings []Setting) (map[string]map[string]string, error) {
	for _, n := range c.Nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			return nil, err
		}
		for _, s := range settings {
			if !knobNameRE.MatchString(s.Name) {
				db.Close()
				return nil, fmt.Errorf("knob %q: not a server variable name", s.Name)
			}
			qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := db.ExecContext(qctx, "SET GLOBAL "+s.Name+" = "+SQLValue(s.Value))
			cancel()
			if err != nil {
				db.Close()
				return nil, fmt.Errorf("node %s: SET GLOBAL %s = %s: %w", n.Name, s.Name, SQLValue(s.Value), err)
			}
		}
		db.Close()
	}
	var names []string
	for _, s := range settings {
		names = append(names, s.Name)
	}
	return ReadGlobals(ctx, c, names)
}

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
			if !knobNameRE.MatchString(v) {
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
	numberRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	sizeRE   = regexp.MustCompile(`^([0-9]+)([KMGTkmgt])$`)
)

// SQLValue renders a variable value for SET GLOBAL: numbers as they are, sizes (128M)
// in bytes, ON/OFF/TRUE/FALSE/DEFAULT as keywords, anything else as a quoted string.
func SQLValue(v string) string {
	if numberRE.MatchString(v) {
		return v
	}
	if b, ok := sizeBytes(v); ok {
		return strconv.FormatInt(b, 10)
	}
	switch strings.ToUpper(v) {
	case "ON", "OFF", "TRUE", "FALSE", "DEFAULT":
		return strings.ToUpper(v)
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

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
