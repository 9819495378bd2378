package experiment

import (
	"fmt"
	"slices"

	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// GroupConflictErrors are the errors a multi-primary Group Replication member returns to a
// client whose transaction failed certification: 3101 ER_TRANSACTION_ROLLBACK_DURING_COMMIT
// (most), and 1180 ER_ERROR_DURING_COMMIT (a lock deadlock at commit). Measured on MySQL 9.7.4
// with two writers on a hot spot (see docs/topologies.md, Group Replication).
var GroupConflictErrors = []uint16{3101, 1180}

// GaleraMultiWriterErrors are the errors a Galera node returns to writers while the
// cluster reconfigures or a write conflicts at commit: 1047 ER_UNKNOWN_COM_ERROR ("WSREP has
// not yet prepared node for application use": the node is not in the Primary component)
// and 1180 ER_ERROR_DURING_COMMIT. Conflicts that abort a transaction before commit are
// 1213, which sysbench's default ignores already.
var GaleraMultiWriterErrors = []uint16{1047, 1180}

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
	switch kind {
	case topology.Group:
		o.IgnoreErrors = append(slices.Clone(o.IgnoreErrors), GroupConflictErrors...)
		return fmt.Sprintf("writes on %d group members: certification failures (3101, 1180) are retried and counted like deadlocks; --mysql-ignore-errors is now %s (give another list to change that)",
			writers, joinCodes(o.IgnoreErrors))
	case topology.Galera:
		o.IgnoreErrors = append(slices.Clone(o.IgnoreErrors), GaleraMultiWriterErrors...)
		return fmt.Sprintf("writes on %d Galera nodes: a node outside the Primary component (1047) and conflicts at commit (1180) are retried and counted like deadlocks; --mysql-ignore-errors is now %s (give another list to change that)",
			writers, joinCodes(o.IgnoreErrors))
	}
	return ""
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
