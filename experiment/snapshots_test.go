package experiment

import (
	"bytes"
	"strings"
	"testing"
)

const snapScenario = `name: snap
topologies:
  - {name: group3, kind: group, nodes: 3, flavor: mysql}
  - {name: async3, kind: async, nodes: 3, flavor: mysql}
  - {name: galera3, kind: galera, nodes: 3, flavor: mariadb}
  - {name: dr, kind: group-dr, nodes: 6, flavor: mysql}
workload:
  test: oltp_read_write
  options: {tables: 8, table-size: 1000000, time: 10}
`

// TestSnapshotEstimate: with snapshots, one prepare per installation and data shape (the
// first deployment of each flavor); the others copy; group-dr prepares as before.
func TestSnapshotEstimate(t *testing.T) {
	off, err := mustParse(t, snapScenario).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	s := mustParse(t, snapScenario+"snapshots: true\n")
	on, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	d := on.Deployments
	if d[0].SnapKey == "" || d[0].SnapKey != d[1].SnapKey || d[2].SnapKey == d[0].SnapKey || d[3].SnapKey != "" {
		t.Fatalf("keys %q %q %q %q", d[0].SnapKey, d[1].SnapKey, d[2].SnapKey, d[3].SnapKey)
	}
	if d[1].Prepare >= d[0].Prepare || d[1].Prepare >= off.Deployments[1].Prepare {
		t.Errorf("async3 copies the group's snapshot: %v, the group made it %v, without %v", d[1].Prepare, d[0].Prepare, off.Deployments[1].Prepare)
	}
	if d[3].Prepare != off.Deployments[3].Prepare {
		t.Errorf("group-dr: %v, want the prepare %v", d[3].Prepare, off.Deployments[3].Prepare)
	}
	_, depOn, _ := on.Estimate(nil)
	_, depOff, _ := off.Estimate(nil)
	if depOn >= depOff {
		t.Errorf("deploy+prepare with snapshots %v, without %v", depOn, depOff)
	}
	var b bytes.Buffer
	on.Print(&b, nil)
	if !strings.Contains(b.String(), "data from a snapshot ~") || !strings.Contains(b.String(), "snapshots: one prepare per installation") {
		t.Errorf("dry run does not say it:\n%s", b.String())
	}
}
