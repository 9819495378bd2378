package cluster

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testhost"
)

// TestHostNodePrimitives: over SSH to a lab host, a node's record is written before its
// directory, a process started in it is found by its start ticks and under its
// directory, a directory habench did not create is reported by the probe, and
// destroyHostNode removes exactly what the record lists (the parent that existed stays).
func TestHostNodePrimitives(t *testing.T) {
	t.Parallel()
	lab := testhost.New(t, 1, testhost.Options{SSH: true})
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
	if pids, err := hostProcessesUnder(ctx, h, l.nodeDir(), ""); err != nil || len(pids) != 1 || pids[0] != pid {
		t.Errorf("processes under the node dir: %v %v, want [%d]", pids, err, pid)
	}
	if p2, _ := probeHost(ctx, h, l); !p2.NodeDir || !p2.Record {
		t.Errorf("probe after create: %+v", p2)
	}
	// habench's own program copied to the member's directory (copySelf; /bin/true stands
	// for it, it runs with --help): recorded, the same bytes, not copied again when there.
	if err := checkSelfCopy(ctx, h, "/bin/true", "proxy", "haproxy"); err != nil {
		t.Errorf("checkSelfCopy to a host of this machine's architecture: %v", err)
	}
	if err := checkSelfCopy(ctx, h, "/nonexistent/habench", "proxy", "haproxy"); err == nil || !strings.Contains(err.Error(), "/nonexistent/habench") {
		t.Errorf("checkSelfCopy of a binary not there: %v", err)
	}
	cp, err := copySelf(ctx, h, l, "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile("/bin/true")
	got, _ := os.ReadFile(cp)
	fi1, _ := os.Stat(cp)
	if rec, err := readHostRecord(ctx, h, l); err != nil || !slices.Equal(rec.Copies, []string{cp}) || cp != l.nodeDir()+"/habench" || !bytes.Equal(got, src) {
		t.Errorf("copy %s: record %+v %v; same bytes %v", cp, rec, err, bytes.Equal(got, src))
	}
	time.Sleep(20 * time.Millisecond)
	if cp2, err := copySelf(ctx, h, l, "/bin/true"); err != nil || cp2 != cp {
		t.Errorf("second copy: %s %v", cp2, err)
	} else if fi2, _ := os.Stat(cp); !fi2.ModTime().Equal(fi1.ModTime()) {
		t.Errorf("the same binary was copied again (%v, then %v)", fi1.ModTime(), fi2.ModTime())
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
		t.Errorf("%s left behind (the copy %s: %v)", l.HostDir, cp, fileExists(cp))
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

// TestHostParsers: listening ports from /proc/net/tcp text (LISTEN rows only, IPv4 and
// IPv6), and start ticks from /proc/PID/stat (a comm with spaces and parentheses; a
// zombie is not alive).
func TestHostParsers(t *testing.T) {
	procNet := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0B12A8C6:5B0A 0112A8C6:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0`
	got := listeningPorts(procNet)
	if len(got) != 2 || !got[3306] || !got[22] || got[23306] {
		t.Errorf("listeningPorts: %v, want 3306 and 22", got)
	}
	stat := "4242 (my (odd) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 30 0 987654 1000 10\n"
	if ticks, alive := parseStatTicks([]byte(stat)); !alive || ticks != 987654 {
		t.Errorf("parseStatTicks: %d %v, want 987654 true", ticks, alive)
	}
	if _, alive := parseStatTicks([]byte(strings.Replace(stat, ") S ", ") Z ", 1))); alive {
		t.Error("a zombie is alive")
	}
	if _, alive := parseStatTicks([]byte("garbage")); alive {
		t.Error("garbage is alive")
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestSelfArchMismatch: a host runs habench's copy only when its `uname -sm` is the
// binary's system and architecture.
func TestSelfArchMismatch(t *testing.T) {
	for _, c := range []struct {
		goos, goarch, uname string
		ok                  bool
	}{
		{"linux", "amd64", "Linux x86_64\n", true},
		{"linux", "arm64", "Linux aarch64", true},
		{"linux", "arm", "Linux armv7l", true},
		{"linux", "amd64", "Linux aarch64\n", false},
		{"linux", "arm64", "Linux x86_64", false},
		{"linux", "amd64", "FreeBSD amd64", false},
		{"linux", "amd64", "", false},
	} {
		why := selfArchMismatch(c.goos, c.goarch, c.uname)
		if (why == "") != c.ok {
			t.Errorf("%s/%s on %q: %q, want ok %v", c.goos, c.goarch, c.uname, why, c.ok)
		}
	}
	if why := selfArchMismatch("linux", "amd64", "Linux aarch64"); why != "the host is Linux aarch64, this habench is linux/amd64" {
		t.Errorf("refusal text %q", why)
	}
}

// hostProcessExited says a process ended only when the host says so: this test's own
// process with its start ticks is running, with other ticks it is another process, a
// child that was waited for is gone; a host that cannot be read (an SSH host on a closed
// port of 127.0.0.1) says nothing, and a start goes on asking.
func TestHostProcessExited(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	local := host.Local{}
	self := os.Getpid()
	ticks, alive := procStartTicks(self)
	if !alive {
		t.Fatal("no start ticks for this process")
	}
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	unreachable := &host.SSH{Dest: "127.0.0.1", Port: 1, User: "nobody", Config: os.DevNull, ConnectTimeout: 2 * time.Second}
	defer unreachable.Close()
	for _, c := range []struct {
		name  string
		h     host.Host
		pid   int
		ticks uint64
		want  bool
	}{
		{"this process", local, self, ticks, false},
		{"this process, any start", local, self, 0, false},
		{"another start at this PID", local, self, ticks + 1, true},
		{"a child waited for", local, child.Process.Pid, 0, true},
		{"no PID", local, 0, 0, true},
		{"a host that cannot be reached", unreachable, self, ticks, false},
	} {
		if got := hostProcessExited(ctx, c.h, c.pid, c.ticks); got != c.want {
			t.Errorf("%s: exited %v, want %v", c.name, got, c.want)
		}
	}
}
