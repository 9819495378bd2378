package report

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// humanValue renders a value decoded from JSON (manifest extra, topology options) for a
// reader, never as Go prints it: a string as it is, a number without exponent or
// trailing zeros ("134217728", "0.5"), a map as "key=value, ..." sorted by key (a
// nested map in parentheses), a list comma-separated, a boolean as true or false, nothing as "n/a", an empty map or
// list as "none". Anything else is its JSON.
func humanValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "n/a"
	case string:
		return x
	case float64:
		return readableFloat(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		if len(x) == 0 {
			return "none"
		}
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			val := humanValue(x[k])
			if _, nested := x[k].(map[string]any); nested && len(x[k].(map[string]any)) > 0 {
				val = "(" + val + ")"
			}
			kv = append(kv, k+"="+val)
		}
		return strings.Join(kv, ", ")
	case map[string]string:
		if len(x) == 0 {
			return "none"
		}
		return kvList(x, ", ")
	case []any:
		if len(x) == 0 {
			return "none"
		}
		var out []string
		for _, e := range x {
			s := humanValue(e)
			if _, nested := e.(map[string]any); nested {
				s = "(" + s + ")"
			}
			out = append(out, s)
		}
		return strings.Join(out, ", ")
	case []string:
		if len(x) == 0 {
			return "none"
		}
		return strings.Join(x, ", ")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "n/a"
	}
	return string(b)
}

// kvList is m as "key=value" pairs sorted by key, joined by sep.
func kvList(m map[string]string, sep string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, k+"="+m[k])
	}
	return strings.Join(kv, sep)
}

// readableFloat is x for a reader: an integer as it is ("134217728"), else rounded to 3
// decimals (3 significant digits below 1) without trailing zeros: 503.75783107312054 is
// "503.758", 0.48437050400000015 "0.484", 0.25 "0.25".
func readableFloat(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	prec := 3
	if a := math.Abs(x); a < 1 && a > 0 {
		prec = min(9, 2-int(math.Floor(math.Log10(a))))
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
