package experiment

import (
	"fmt"
	"slices"

	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// multiWriterIgnore extends the ignore list for a run that writes on more than one node of a
// Group Replication cluster (3101, 1180: certification failures) or of a Galera cluster
// (1047, 1180: a node out of the Primary component, a conflict at commit), when the list is
// sysbench's default: with several writers these are the expected outcome of concurrent
// writes and membership changes, and sysbench's default would end the run at the first one.
// It returns the note to print and record, or "" when nothing changed (one writer, another
// kind, or an ignore list the user chose). Error codes stay counted per node in
// summary.json, and a node that cannot commit for MinOutage or longer is reported as an
// outage.
func multiWriterIgnore(kind topology.Kind, writers int, o *workload.Options) string {
	if writers < 2 || o.IgnoreAllErrors || !slices.Equal(o.IgnoreErrors, workload.DefaultIgnoreErrors) {
		return ""
	}
	def := topology.KindOf(kind)
	if def.ConflictErrors == nil {
		return ""
	}
	codes, what := def.ConflictErrors(topology.Spec{Kind: kind})
	o.IgnoreErrors = append(slices.Clone(o.IgnoreErrors), codes...)
	return fmt.Sprintf("writes on %d %s: %s are retried and counted like deadlocks; --mysql-ignore-errors is now %s (give another list to change that)",
		writers, writersWord(def), what, joinCodes(o.IgnoreErrors))
}

// writersWord is "group members", "Galera nodes", or "nodes" for other kinds.
func writersWord(def *topology.KindDef) string {
	switch {
	case def.Kind.Is(topology.Group):
		return "group members"
	case def.Kind.Is(topology.Galera):
		return "Galera nodes"
	}
	return def.MemberWord + "s"
}

func joinCodes(codes []uint16) string {
	s := ""
	for i, c := range codes {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(c)
	}
	return s
}
