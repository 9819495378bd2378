package experiment

import (
	"fmt"

	"maps"
	"slices"
	"strings"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/schema"
)

// optionMismatches compares the server options a topology asked for at deploy time
// (topology.Spec.Options, written to every node's option file) with the values each node
// reports (schema.NodeInfo.Variables, read back before the run). A server may run with another
// value than the option file's without failing to start: MariaDB clamps an out-of-range
// innodb_flush_log_at_trx_commit=7 to 3, sizes are rounded to a chunk. It returns one
// warning per option whose value differs on some node, naming the nodes and the value in
// effect; options the server does not show as a variable (plugin options not loaded,
// provider options) are not checked.
func optionMismatches(opts map[string]string, nodes []schema.NodeInfo) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		name := VariableName(k)
		want := opts[k]
		var diff []string
		for _, n := range nodes {
			got, ok := n.Variables[name]
			if !ok || SameValue(strings.Trim(want, `"'`), got) {
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

// requestedOptions are the server options a sandbox's nodes were deployed with on request:
// habench's own (cluster.SandboxServerOptions), overridden by the topology's options:
// with the same variable name. A cluster habench did not deploy (an existing cluster)
// has its topology's only.
func requestedOptions(c *cluster.Cluster) map[string]string {
	out := map[string]string{}
	if c.Deployed() {
		for _, o := range cluster.SandboxServerOptions {
			out[o.Name] = o.Value
		}
	}
	for k, v := range c.Spec.Options {
		for _, o := range cluster.SandboxServerOptions {
			if VariableName(k) == VariableName(o.Name) {
				delete(out, o.Name)
			}
		}
		out[k] = v
	}
	return out
}
