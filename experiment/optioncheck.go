package experiment

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// optionMismatches compares the server options a topology asked for at deploy time
// (topology.Spec.Options, written to every node's option file) with the values each node
// reports (NodeInfo.Variables, read back before the run). A server may run with another
// value than the option file's without failing to start: MariaDB clamps an out-of-range
// innodb_flush_log_at_trx_commit=7 to 3, sizes are rounded to a chunk. It returns one
// warning per option whose value differs on some node, naming the nodes and the value in
// effect; options the server does not show as a variable (plugin options not loaded,
// provider options) are not checked.
func optionMismatches(opts map[string]string, nodes []NodeInfo) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		name := strings.TrimPrefix(strings.ToLower(strings.ReplaceAll(k, "-", "_")), "loose_")
		want := opts[k]
		var diff []string
		for _, n := range nodes {
			got, ok := n.Variables[name]
			if !ok || sameSetting(want, got) {
				continue
			}
			diff = append(diff, fmt.Sprintf("%s runs with %q", n.Name, got))
		}
		if len(diff) > 0 {
			out = append(out, fmt.Sprintf("option %s=%s was requested at deploy, but %s: the results are for the value in effect", k, want, strings.Join(diff, ", ")))
		}
	}
	return out
}

// sameSetting reports whether an option-file value and a value read back mean the same:
// equal ignoring case and quotes, ON/OFF against 1/0, or the same size with K/M/G suffixes.
func sameSetting(want, got string) bool {
	w := strings.ToUpper(strings.Trim(strings.TrimSpace(want), `"'`))
	g := strings.ToUpper(strings.TrimSpace(got))
	if w == g {
		return true
	}
	bools := map[string]string{"ON": "1", "TRUE": "1", "YES": "1", "OFF": "0", "FALSE": "0", "NO": "0"}
	if b, ok := bools[w]; ok {
		w = b
	}
	if b, ok := bools[g]; ok {
		g = b
	}
	if w == g {
		return true
	}
	wn, ok1 := sizeValue(w)
	gn, ok2 := sizeValue(g)
	return ok1 && ok2 && wn == gn
}

// sizeValue parses a number with an optional K, M, G or T suffix (powers of 1024).
func sizeValue(s string) (float64, bool) {
	mult := 1.0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			mult, s = 1<<10, s[:n-1]
		case 'M':
			mult, s = 1<<20, s[:n-1]
		case 'G':
			mult, s = 1<<30, s[:n-1]
		case 'T':
			mult, s = 1<<40, s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * mult, err == nil
}
