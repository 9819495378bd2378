package topology

import (
	"regexp"
	"strings"
)

var (
	yamlUnknownKey = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlBadType    = regexp.MustCompile("cannot unmarshal !!(\\w+) `([^`]*)` into (\\S+)")
)

// YAMLError rewrites a go.yaml.in/yaml/v3 decoding error into user terms: one line, the
// line number kept, "unknown key \"flavour\"" instead of Go type names, "want a duration
// like 10s" instead of "cannot unmarshal !!int into time.Duration".
func YAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	msg = yamlUnknownKey.ReplaceAllString(msg, `unknown key "$1"`)
	return yamlBadType.ReplaceAllStringFunc(msg, func(m string) string {
		p := yamlBadType.FindStringSubmatch(m)
		want := map[string]string{"time.Duration": "a duration like 10s", "int": "a whole number", "string": "a string",
			"bool": "true or false", "float64": "a number"}[p[3]]
		if want == "" {
			want = "a " + strings.TrimPrefix(p[3], "topology.")
		}
		return "value " + p[2] + ": want " + want
	})
}
