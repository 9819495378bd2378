package experiment

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// TestSnapshotSuspect (review 31): a cell from a snapshot that fails on a storage error
// (a table file corrupt in a way its size does not show: 1877, as the review's trial saw)
// names the snapshot and how to remove it, on this machine and on hosts; a lost
// connection, or a cell not from a snapshot, keeps its error as it was.
func TestSnapshotSuspect(t *testing.T) {
	snap := &cluster.Snapshot{Name: "mariadb-10.11.19-d7feae1e"}
	corrupt := fmt.Errorf("cell: %w", &workload.StatementError{Workload: "oltp_read_write", Endpoint: "n1", Statement: "SELECT c FROM sbtest1 WHERE id=?", Code: 1877,
		Err: &mysql.MySQLError{Number: 1877, Message: "Table sbtest.sbtest1 is corrupted"}})
	got := snapshotSuspect(corrupt, snap, topology.Spec{}).Error()
	want := corrupt.Error() + " (data from snapshot mariadb-10.11.19-d7feae1e: it may be damaged in a way its file list does not show; remove it with `habench snapshot rm mariadb-10.11.19-d7feae1e`"
	if !strings.HasPrefix(got, want) {
		t.Errorf("storage error from a snapshot:\n got %s\nwant %s...", got, want)
	}
	if err := snapshotSuspect(corrupt, snap, topology.Spec{}); !errors.Is(err, corrupt) {
		t.Errorf("the cell's error is not kept in %v", err)
	}
	hosts := topology.Spec{Provider: topology.ProviderHosts, HostsSpec: topology.HostsSpec{Hosts: []string{"db1", "db2"}}}
	if got := snapshotSuspect(corrupt, snap, hosts).Error(); !strings.Contains(got, "`habench snapshot rm mariadb-10.11.19-d7feae1e --hosts db1,db2") {
		t.Errorf("storage error from a snapshot on hosts: %s", got)
	}
	lost := &workload.StatementError{Code: 2013, Err: &mysql.MySQLError{Number: 2013, Message: "lost"}}
	if got := snapshotSuspect(lost, snap, topology.Spec{}); got != error(lost) {
		t.Errorf("a lost connection: %v, want the error as it was", got)
	}
	if got := snapshotSuspect(corrupt, nil, topology.Spec{}); got != corrupt {
		t.Errorf("not from a snapshot: %v, want the error as it was", got)
	}
}
