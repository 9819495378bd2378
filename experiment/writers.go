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
// with two writers on a hot spot (see README, Group Replication).
var GroupConflictErrors = []uint16{3101, 1180}

// multiWriterIgnore extends the ignore list for a run that writes on more than one member of
// a Group Replication cluster, when the list is sysbench's default: certification failures
// there are the expected outcome of concurrent writes (as 1213 is on Galera, which the default
// already ignores), and sysbench's default would end the run at the first one. It returns the
// note to print and record, or "" when nothing changed (one writer, another kind, or an
// ignore list the user chose). Error codes stay counted per node in summary.json.
func multiWriterIgnore(kind topology.Kind, writers int, o *workload.Options) string {
	if kind != topology.Group || writers < 2 || o.IgnoreAllErrors || !slices.Equal(o.IgnoreErrors, workload.DefaultIgnoreErrors) {
		return ""
	}
	o.IgnoreErrors = append(slices.Clone(o.IgnoreErrors), GroupConflictErrors...)
	return fmt.Sprintf("writes on %d group members: certification failures (3101, 1180) are retried and counted like deadlocks; --mysql-ignore-errors is now %s (give another list to change that)",
		writers, joinCodes(o.IgnoreErrors))
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
