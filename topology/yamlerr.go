package topology

import (
	"regexp"
	"strings"
)

var (
	yamlUnknownKey = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlBadType    = regexp.MustCompile("cannot unmarshal !!(\\w+) `([^`]*)` into (\\S+)")
	yamlBadNode    = regexp.MustCompile(`cannot unmarshal !!(seq|map) into (\S+)`)
)

// yamlWant says in user terms what a Go type decoded from YAML wants.
func yamlWant(goType string) string {
	want := map[string]string{"time.Duration": "a duration like 10s", "int": "a whole number", "string": "a single value",
		"bool": "true or false", "float64": "a number", "map[string]string": "a mapping of name: value",
		"topology.Installation": "a mapping with kind and path", "topology.Spec": "a topology (a mapping with name, kind, nodes, flavor, ...)",
		"topology.Kind": "a kind (" + kindList() + ")", "topology.Flavor": "a flavor (" + FlavorList() + ")"}[goType]
	if want == "" {
		want = "a " + strings.TrimPrefix(goType, "topology.")
	}
	return want
}

// YAMLError rewrites a go.yaml.in/yaml/v3 decoding error into user terms: one line, the
// line number kept, "unknown key \"flavour\"" instead of Go type names, "want a duration
// like 10s" instead of "cannot unmarshal !!int into time.Duration".
func YAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	msg = yamlUnknownKey.ReplaceAllString(msg, `unknown key "$1"`)
	msg = yamlBadNode.ReplaceAllStringFunc(msg, func(m string) string {
		p := yamlBadNode.FindStringSubmatch(m)
		got := map[string]string{"seq": "a list", "map": "a mapping"}[p[1]]
		return got + ": want " + yamlWant(p[2])
	})
	return yamlBadType.ReplaceAllStringFunc(msg, func(m string) string {
		p := yamlBadType.FindStringSubmatch(m)
		return "value " + p[2] + ": want " + yamlWant(p[3])
	})
}
