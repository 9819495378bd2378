package cluster

import (
	"path/filepath"
	"testing"
)

// ServerProcess sees a restart another process recorded in the state file after this
// Cluster was loaded.
func TestServerProcessRereadsState(t *testing.T) {
	c := &Cluster{Name: "hmx", Nodes: []*Node{{Name: "n1", PID: 10, StartTicks: 100}}, path: filepath.Join(t.TempDir(), "state.json")}
	if err := c.save(); err != nil {
		t.Fatal(err)
	}
	other, err := loadState(c.path) // "habench fault restart n1" in another process
	if err != nil {
		t.Fatal(err)
	}
	other.Nodes[0].PID, other.Nodes[0].StartTicks = 20, 200
	if err := other.save(); err != nil {
		t.Fatal(err)
	}
	if pid, ticks, err := c.ServerProcess("n1"); err != nil || pid != 20 || ticks != 200 || c.Nodes[0].PID != 10 {
		t.Errorf("ServerProcess = %d, %d, %v (in memory %d), want 20, 200 from the file", pid, ticks, err, c.Nodes[0].PID)
	}
	if _, _, err := c.ServerProcess("n9"); err == nil {
		t.Error("unknown node: no error")
	}
	mem := &Cluster{Name: "hmy", Nodes: []*Node{{Name: "n1", PID: 7}}}
	if pid, _, err := mem.ServerProcess("n1"); err != nil || pid != 7 {
		t.Errorf("unsaved cluster: %d, %v", pid, err)
	}
}
