package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/testhost"
)

// TestHostNodePrimitives: over SSH to a lab host, a node's record is written before its
// directory, a process started in it is found by its start ticks and under its
// directory, a directory habench did not create is reported by the probe, and
// destroyHostNode removes exactly what the record lists (the parent that existed stays).
func TestHostNodePrimitives(t *testing.T) {
	lab := testhost.New(t, 1, testhost.Options{SSH: true, Subnet: 17})
	h := sshHostFor(nil, lab.Hosts[0].Name)
	h.Config = lab.SSHConfig
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := t.TempDir()
	l := hostLayout{HostDir: filepath.Join(base, "hb"), Cluster: "hhp1", Node: "n1"}
	p, err := probeHost(ctx, h, l)
	if err != nil {
		t.Fatal(err)
	}
	if p.HostDir || p.NodeDir || p.Record || !p.Listening[22] {
		t.Fatalf("probe of an empty host: %+v", p)
	}
	rec := &HostRecord{Cluster: "hhp1", Node: "n1", Port: 23306}
	if err := createNodeDir(ctx, h, l, p, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := readHostRecord(ctx, h, l); err != nil || strings.Join(got.Created, ",") != strings.Join([]string{l.HostDir, l.clusterDir(), l.nodeDir()}, ",") {
		t.Fatalf("record: %+v %v", got, err)
	}
	if err := hostWriteFile(ctx, h, l.nodeDir()+"/x", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	pid, ticks, _, err := startHostProcess(ctx, h, l.nodeDir(), nil, []string{"tail", "-f", l.nodeDir() + "/x"})
	if err != nil || !hostProcessOurs(ctx, h, pid, ticks) || hostProcessOurs(ctx, h, pid, ticks+1) {
		t.Fatalf("start: pid %d ticks %d %v", pid, ticks, err)
	}
	if pids, err := hostProcessesUnder(ctx, h, l.nodeDir()); err != nil || len(pids) != 1 || pids[0] != pid {
		t.Errorf("processes under the node dir: %v %v, want [%d]", pids, err, pid)
	}
	if p2, _ := probeHost(ctx, h, l); !p2.NodeDir || !p2.Record {
		t.Errorf("probe after create: %+v", p2)
	}
	parents, err := destroyHostNode(ctx, h, l, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	removeEmptyDirs(ctx, h, parents)
	if hostProcessOurs(ctx, h, pid, ticks) {
		t.Errorf("pid %d survived destroy", pid)
	}
	if _, err := os.Stat(l.HostDir); err == nil {
		t.Errorf("%s left behind", l.HostDir)
	}
	if _, err := os.Stat(base); err != nil {
		t.Errorf("the parent habench did not create is gone: %v", err)
	}
	// No record: the directory is not ours and stays.
	os.MkdirAll(l.nodeDir(), 0o755)
	if parents, err := destroyHostNode(ctx, h, l, 0, 0); err != nil || parents != nil {
		t.Errorf("destroy without a record: %v %v", parents, err)
	}
	if _, err := os.Stat(l.nodeDir()); err != nil {
		t.Errorf("a directory without a record was removed")
	}
}
