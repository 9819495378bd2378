package host_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/habench/habench/host"
	"github.com/habench/habench/internal/testhost"
	"github.com/habench/habench/internal/testmachine"
)

var tricky = []string{"printf", `%s|`, "A=b", "a b", "it's", `"q"`, "$HOME", "x;y", "`id`", "", "*", "\\n", "é"}

// TestQuote: the quoted line, run by a POSIX shell, gives the command exactly argv.
func TestQuote(t *testing.T) {
	out, err := exec.Command("sh", "-c", host.Quote(tricky)).Output()
	if want := strings.Join(tricky[2:], "|") + "|"; err != nil || string(out) != want {
		t.Errorf("sh -c %s: %q %v, want %q", host.Quote(tricky), out, err, want)
	}
	if q := host.Quote([]string{"tc", "qdisc", "show", "dev", "eth0"}); q != "tc qdisc show dev eth0" {
		t.Errorf("plain words quoted: %s", q)
	}
	// A first word with '=' would be an assignment to the shell, not the command.
	if out, err := exec.Command("sh", "-c", host.Quote([]string{"X=1", "true"})).CombinedOutput(); err == nil {
		t.Errorf("X=1 ran as an assignment: %s", out)
	}
}

// sshConns counts established TCP connections from this namespace to addr:22.
func sshConns(t *testing.T, addr string) int {
	out, err := exec.Command("ss", "-Htn", "state", "established", "dst", addr+":22").Output()
	if err != nil {
		t.Fatal(err)
	}
	return len(strings.Fields(strings.TrimSpace(string(out)))) / 4
}

// TestSSHHost: commands and files on a namespace reached through its sshd, with the lab's
// ssh_config (-F) and with user, identity and options instead; one connection per host
// for many commands; a refused key and an unreachable host are *host.ConnError naming
// the host; a failing command is an *host.ExitError with its code and stderr.
func TestSSHHost(t *testing.T) {
	testmachine.Alone(t) // it times reads over the reused session: nothing else may load the machine
	lab := testhost.New(t, 1, testhost.Options{SSH: true})
	h := lab.Hosts[0]
	t.Cleanup(host.CloseAll)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	viaConfig := &host.SSH{Dest: h.Name, Config: lab.SSHConfig}
	for i := 0; i < 5; i++ {
		out, err := viaConfig.Run(ctx, tricky...)
		if want := strings.Join(tricky[2:], "|") + "|"; err != nil || string(out) != want {
			t.Fatalf("run %d: %q %v, want %q\nsshd log:\n%s", i, out, err, want, lab.SSHLog(h))
		}
	}
	if n := sshConns(t, h.Addr); n != 1 {
		t.Errorf("%d connections to %s:22 after 5 commands, want 1 (the master)", n, h.Addr)
	}
	b, err := viaConfig.ReadFile(ctx, "/proc/net/dev")
	if err != nil || !strings.Contains(string(b), "eth0:") {
		t.Errorf("ReadFile /proc/net/dev in the namespace: %v\n%s", err, b)
	}
	// ReadFile keeps a shell open: reads cost no new ssh client; any bytes survive.
	var all []byte
	for i := 0; i < 256; i++ {
		all = append(all, byte(i))
	}
	all = append(all, "\n<rc 0:0000000000000000001>\nend"...)
	bin := filepath.Join(t.TempDir(), "it's binary")
	if err := os.WriteFile(bin, all, 0o600); err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for i := 0; i < 20; i++ {
		t0 := time.Now()
		b, err := viaConfig.ReadFile(ctx, bin)
		took = append(took, time.Since(t0))
		if err != nil || !bytes.Equal(b, all) {
			t.Fatalf("ReadFile of 256 bytes and a fake trailer: %q %v", b, err)
		}
	}
	slices.Sort(took)
	t.Logf("ReadFile over SSH: median %v, max %v (20 reads)", took[10], took[19])
	if took[10] > 50*time.Millisecond {
		t.Errorf("ReadFile median %v: the shell session is not reused", took[10])
	}
	_, err = viaConfig.ReadFile(ctx, "/nonexistent/file")
	var nf *host.ExitError
	if !errors.As(err, &nf) || !strings.Contains(nf.Stderr, "No such file") {
		t.Errorf("missing file: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Microsecond)
	_, err = viaConfig.ReadFile(short, "/proc/stat")
	cancelShort()
	if err == nil {
		t.Errorf("ReadFile with an expired context: no error")
	}
	if b, err := viaConfig.ReadFile(ctx, "/proc/stat"); err != nil || !strings.HasPrefix(string(b), "cpu ") {
		t.Errorf("ReadFile after an interrupted read: %v %.20q", err, b)
	}
	_, err = viaConfig.Run(ctx, "sh", "-c", "echo oops >&2; exit 3")
	var ee *host.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(ee.Stderr, "oops") || !strings.Contains(err.Error(), "ssh "+h.Name) {
		t.Errorf("exit 3: %v", err)
	}

	direct := &host.SSH{Dest: h.Addr, User: "root", Port: 22, Identity: lab.Key,
		Options: []string{"UserKnownHostsFile=" + lab.KnownHosts, "StrictHostKeyChecking=yes", "IdentitiesOnly=yes"}}
	if out, err := direct.Run(ctx, "id", "-u"); err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("user/port/identity: %q %v", out, err)
	}
	if direct.Name() != "ssh root@"+h.Addr+":22" {
		t.Errorf("Name %q", direct.Name())
	}

	host.CloseAll()
	time.Sleep(200 * time.Millisecond)
	if n := sshConns(t, h.Addr); n != 0 {
		t.Errorf("%d connections to %s:22 after CloseAll, want 0", n, h.Addr)
	}

	// A master of the same destination would carry any later command: refused keys are
	// checked with none left.
	other := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	refused := &host.SSH{Dest: h.Addr, User: "root", Identity: other,
		Options: []string{"UserKnownHostsFile=" + lab.KnownHosts, "IdentitiesOnly=yes"}}
	_, err = refused.Run(ctx, "true")
	var ce *host.ConnError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Permission denied") || !strings.Contains(err.Error(), h.Addr) {
		t.Errorf("refused key: %v", err)
	}
	gone := &host.SSH{Dest: lab.Addr(99), User: "root", Identity: lab.Key, ConnectTimeout: 2 * time.Second,
		Options: []string{"UserKnownHostsFile=" + lab.KnownHosts}}
	t0 := time.Now()
	_, err = gone.Run(ctx, "true")
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), lab.Addr(99)) || time.Since(t0) > 10*time.Second {
		t.Errorf("unreachable host: %v after %v", err, time.Since(t0))
	}
	sharedMasters(t, ctx, lab, h)
}

// sharedMasters: with host.ControlDirEnv, a master outlives its process's CloseAll and
// carries the next process's commands (one connection for both), and the socket a
// killed master left does not turn the next master into a plain connection.
func sharedMasters(t *testing.T, ctx context.Context, lab *testhost.Lab, h *testhost.Host) {
	host.CloseAll() // this process's own directory, made by the refused and unreachable runs
	dir := filepath.Join(t.TempDir(), "cm")
	t.Setenv(host.ControlDirEnv, dir)
	master := func() int { // the running master's pid, 0 when none answers
		socks, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
		if len(socks) != 1 {
			return 0
		}
		out, _ := exec.Command("ssh", "-F", lab.SSHConfig, "-o", "ControlPath="+socks[0], "-O", "check", h.Name).CombinedOutput()
		var pid int
		if _, after, ok := strings.Cut(string(out), "(pid="); ok {
			fmt.Sscanf(after, "%d", &pid)
		}
		return pid
	}
	run := func(what string) {
		t.Helper()
		s := &host.SSH{Dest: h.Name, Config: lab.SSHConfig}
		if out, err := s.Run(ctx, "id", "-u"); err != nil || strings.TrimSpace(string(out)) != "0" {
			t.Fatalf("%s: %q %v\nsshd log:\n%s", what, out, err, lab.SSHLog(h))
		}
		host.CloseAll()
	}
	run("first process")
	pid := master()
	run("second process")
	if n := sshConns(t, h.Addr); pid == 0 || master() != pid || n != 1 {
		t.Errorf("after two processes' commands and CloseAlls: master pid %d, then %d, %d connections; want the first's master, 1 connection", pid, master(), n)
	}
	if pid != 0 {
		syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 50 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	run("after the master was killed")
	if n := sshConns(t, h.Addr); master() == 0 || n != 1 {
		t.Errorf("after a killed master: no master answers, or %d connections, want one master and 1 connection", n)
	}
	s := &host.SSH{Dest: h.Name, Config: lab.SSHConfig}
	s.Close() // ends the master: Close still does with ControlDirEnv set
}

// TestExitErrorOneLine: a failing script is named by its first line, not all of it.
func TestExitErrorOneLine(t *testing.T) {
	_, err := host.Local{}.Run(context.Background(), "sh", "-c", "echo first >&2\necho second >&2\nexit 4")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "sh -c echo first >&2...: exit status 4: first") {
		t.Errorf("%q", err)
	}
}

// TestReadRequest: the request a ReadFile shell runs, run here by sh, gives back the file
// byte for byte (NUL, no final newline, a trailer of another request inside) and cat's
// status through parseReadReply (and a missing file cat's message and 1); a reply to
// another request, or cut short, is refused.
func TestReadRequest(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a 'file'")
	content := "x\x00y\n<rc 5:n0>\n<rc 0:n1>"
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		body string
		rc   int
	}{{p, content, 0}, {p + ".missing", "No such file", 1}} {
		out, err := exec.Command("sh", "-c", host.ReadRequestForTest(c.path, "n1")).Output()
		if err != nil {
			t.Fatal(err)
		}
		body, rc, err := host.ParseReadReplyForTest(out, "n1")
		if err != nil || rc != c.rc || (c.rc == 0 && string(body) != c.body) || !strings.Contains(string(body), c.body) {
			t.Errorf("%s: %q %d %v", c.path, body, rc, err)
		}
		if _, _, err := host.ParseReadReplyForTest(out, "n2"); err == nil {
			t.Errorf("%s: a reply taken for another request's", c.path)
		}
		if _, _, err := host.ParseReadReplyForTest(out[:len(out)-1], "n1"); err == nil {
			t.Errorf("%s: a reply without its last byte taken as whole", c.path)
		}
	}
}

// TestSSHInputNotInArgv: RunInput's content goes to ssh's standard input (ssh without
// -n), never into ssh's arguments; Run keeps -n.
func TestSSHInputNotInArgv(t *testing.T) {
	s := &host.SSH{Dest: "db1"}
	cmd, err := s.Command(context.Background(), []byte("s3cret-pw"), []string{"sh", "-c", `cat > "$1"`, "sh", "/x"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(cmd.Args, "-n") || cmd.Stdin == nil || strings.Contains(strings.Join(cmd.Args, " "), "s3cret") {
		t.Errorf("RunInput command %q (stdin set: %v): want no -n, stdin set, no content", cmd.Args, cmd.Stdin != nil)
	}
	cmd, err = s.Command(context.Background(), nil, []string{"true"})
	if err != nil || !slices.Contains(cmd.Args, "-n") || cmd.Stdin != nil {
		t.Errorf("Run command %q %v: want -n and no stdin", cmd.Args, err)
	}
}

// TestControlDirRecreated: the ControlPath directory removed from under the process (a
// /tmp cleaner, a lab's cleanup) is made again on the next use, so new masters can bind
// their sockets; without it ssh fails with "unix_listener: cannot bind to path".
func TestControlDirRecreated(t *testing.T) {
	d1, err := host.ControlDirForTest()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(d1); err != nil {
		t.Fatal(err)
	}
	d2, err := host.ControlDirForTest()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.CloseAll)
	if fi, err := os.Stat(d2); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("control directory after removal: %s %v %v, want a new 0700 directory", d2, fi, err)
	}
}
