package topology

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// KnobSetting is one runtime knob a user asks for: a server variable (or a Galera provider
// option such as gcs.fc_limit, or one of habench's knob names, see package knob) set to
// Value on Nodes, or on every node when Nodes is empty.
//
// Written as "[NODES:]NAME=VALUE" on the command line (`--set n2,n3:sync_binlog=0`) and as
// a `knobs:` mapping in topology and scenario files (`"n2:sync_binlog": 0`). Names are
// lower-cased and dashes become underscores (as in option files); values are kept as given.
type KnobSetting struct {
	Nodes []string `json:"nodes,omitempty"`
	Name  string   `json:"name"`
	Value string   `json:"value"`
}

var (
	knobNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$`)
	knobNodeRE = regexp.MustCompile(`^n[1-9][0-9]*$`)
)

// String renders the setting as ParseKnob reads it ("n2:sync_binlog=0").
func (k KnobSetting) String() string {
	v := k.Value
	if v == "" {
		v = "''"
	}
	s := k.Name + "=" + v
	if len(k.Nodes) > 0 {
		s = strings.Join(k.Nodes, ",") + ":" + s
	}
	return s
}

// AppliesTo reports whether the setting is for node (every node when Nodes is empty).
func (k KnobSetting) AppliesTo(node string) bool {
	return len(k.Nodes) == 0 || slices.Contains(k.Nodes, node)
}

// ParseKnob reads "[NODES:]NAME=VALUE": NODES a comma list of node names (n1, n2, ...),
// NAME a variable name ("sync_binlog", "innodb-buffer-pool-size", "gcs.fc_limit"), VALUE
// anything on one line (an empty value is written as two single quotes). Errors are *FieldError with
// field "--set" naming the whole argument.
func ParseKnob(s string) (KnobSetting, error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return KnobSetting{}, &FieldError{"--set", s, "want NAME=VALUE or NODES:NAME=VALUE (e.g. sync_binlog=0, n2:wsrep_slave_threads=4)"}
	}
	k, err := ParseKnobEntry(key, value)
	if err != nil {
		var fe *FieldError
		if ok := asFieldError(err, &fe); ok {
			return k, &FieldError{"--set", s, fe.Reason}
		}
		return k, err
	}
	return k, nil
}

// ParseKnobEntry reads one `knobs:` mapping entry: key "[NODES:]NAME", value VALUE. Errors
// are *FieldError with field "knobs.KEY".
func ParseKnobEntry(key, value string) (KnobSetting, error) {
	field := "knobs." + key
	var k KnobSetting
	name := key
	if nodes, n, ok := strings.Cut(key, ":"); ok {
		name = n
		for _, node := range strings.Split(nodes, ",") {
			node = strings.TrimSpace(node)
			if !knobNodeRE.MatchString(node) {
				return k, &FieldError{field, value, fmt.Sprintf("node %q: want node names n1, n2, ... before the colon", node)}
			}
			if slices.Contains(k.Nodes, node) {
				return k, &FieldError{field, value, fmt.Sprintf("node %s given twice", node)}
			}
			k.Nodes = append(k.Nodes, node)
		}
	}
	k.Name = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "-", "_"))
	if !knobNameRE.MatchString(k.Name) {
		return k, &FieldError{field, value, fmt.Sprintf("%q is not a variable name (letters, digits, _ and, for provider options, dots)", name)}
	}
	k.Value = strings.TrimSpace(value)
	if len(k.Value) >= 2 && (k.Value[0] == '\'' && k.Value[len(k.Value)-1] == '\'' || k.Value[0] == '"' && k.Value[len(k.Value)-1] == '"') {
		k.Value = k.Value[1 : len(k.Value)-1]
	} else if k.Value == "" {
		return k, &FieldError{field, value, "empty value (write '' for an empty string)"}
	}
	if strings.ContainsAny(k.Value, "\n\r\x00") {
		return k, &FieldError{field, value, "a value must be one line"}
	}
	return k, nil
}

// KnobsFromMap parses a `knobs:` mapping into settings sorted by key (map order is random,
// application order must not be).
func KnobsFromMap(m map[string]string) ([]KnobSetting, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []KnobSetting
	for _, k := range keys {
		s, err := ParseKnobEntry(k, m[k])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, CheckKnobs(out)
}

// reservedKnobs are Group Replication variables habench sets on every member: changing
// them at runtime (or, read only, through an option file and a restart) would change the
// group's identity or addresses, or bootstrap a second group on a restart.
var reservedKnobs = map[string]string{
	"group_replication_group_name":                       "the group's identity",
	"group_replication_local_address":                    "the member's group address",
	"group_replication_group_seeds":                      "the members' group addresses",
	"group_replication_start_on_boot":                    "habench starts Group Replication itself after a restart",
	"group_replication_bootstrap_group":                  "a restart with it ON would bootstrap a second group",
	"group_replication_single_primary_mode":              "use the group_replication_mode knob (single-primary or multi-primary)",
	"group_replication_enforce_update_everywhere_checks": "use the group_replication_mode knob (single-primary or multi-primary)",
}

// ReservedKnob says why a variable may not be a knob ("" when it may): the server options a
// sandbox sets for identity, addresses, paths and GTIDs (as for options:), and the Group
// Replication variables habench sets on every member. Setting them for a run would break
// the topology habench measures (a changed server_id or port, another group name), and on
// an existing cluster they are not habench's to change.
func ReservedKnob(name string) string {
	name = strings.TrimPrefix(strings.ReplaceAll(strings.ToLower(name), "-", "_"), "loose_")
	if reservedOptions[name] {
		return "set by habench for every node (addresses, paths, identity, GTIDs); not a knob"
	}
	if why, ok := reservedKnobs[name]; ok {
		return "set by habench for every group member (" + why + "); not a knob"
	}
	return ""
}

// CheckKnobs refuses a reserved variable (ReservedKnob) and the same knob given twice for
// the same scope: twice for every node, or twice for one node. (A setting for every node
// plus one for a named node is fine: the named node's wins there.)
func CheckKnobs(ks []KnobSetting) error {
	seen := map[string]KnobSetting{}
	for _, k := range ks {
		if why := ReservedKnob(k.Name); why != "" {
			return &FieldError{"knob", k.String(), why}
		}
		scopes := k.Nodes
		if len(scopes) == 0 {
			scopes = []string{"*"}
		}
		for _, sc := range scopes {
			key := sc + "\x00" + k.Name
			if prev, ok := seen[key]; ok {
				return &FieldError{"knob", k.String(), fmt.Sprintf("%s is already set by %s", k.Name, prev.String())}
			}
			seen[key] = k
		}
	}
	return nil
}

// ParseShownProviderOptions splits a wsrep_provider_options string ("base_port = 4567;
// gcs.fc_limit = 16; ...", as the server shows it, or "gcs.fc_limit=16;gcs.fc_factor=0.5"
// as a user writes it) into its options, in order, with spaces trimmed. Empty parts are
// skipped; a part without "=" is an error. Lenient, unlike ParseProviderOptions (for what a
// user writes): values may be empty or contain spaces, as the server shows some.
func ParseShownProviderOptions(s string) ([]ProviderOption, error) {
	var out []ProviderOption
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("wsrep_provider_options: %q has no '='", part)
		}
		out = append(out, ProviderOption{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return out, nil
}

// ProviderOptionValue returns key's value in a wsrep_provider_options string and whether
// it is there.
func ProviderOptionValue(s, key string) (string, bool) {
	opts, err := ParseShownProviderOptions(s)
	if err != nil {
		return "", false
	}
	for _, o := range opts {
		if o.Key == key {
			return o.Value, true
		}
	}
	return "", false
}

// MergeProviderOptionString returns current with the keys of changes replaced (in place; later
// repeats of such a key, which would win, dropped) or
// appended (in the order given), rendered "k1=v1;k2=v2" (no spaces): what an option file's
// wsrep_provider_options line must hold so that only those keys change, since the option
// file line, unlike SET GLOBAL, replaces the whole set. Error if current cannot be parsed.
func MergeProviderOptionString(current string, changes []ProviderOption) (string, error) {
	opts, err := ParseShownProviderOptions(current)
	if err != nil {
		return "", err
	}
	for _, c := range changes {
		i := slices.IndexFunc(opts, func(o ProviderOption) bool { return o.Key == c.Key })
		if i >= 0 {
			opts[i].Value = c.Value
			// A key given twice in current: the later one would win over the change.
			opts = slices.Concat(opts[:i+1], slices.DeleteFunc(slices.Clone(opts[i+1:]), func(o ProviderOption) bool { return o.Key == c.Key }))
		} else {
			opts = append(opts, c)
		}
	}
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = o.Key + "=" + o.Value
	}
	return strings.Join(parts, ";"), nil
}

func asFieldError(err error, fe **FieldError) bool {
	e, ok := err.(*FieldError)
	if ok {
		*fe = e
	}
	return ok
}
