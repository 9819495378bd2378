//go:build linux

package workload

import (
	"bytes"
	"context"
	"errors"
	"github.com/habench/habench/internal/testenv/prereq"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		prereq.Missing(t, "no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// fdCountSettles waits up to 2 s for the fd count to come back to want (the
// echo servers close their ends asynchronously) and returns the last count.
func fdCountSettles(t *testing.T, want int) int {
	t.Helper()
	n := fdCount(t)
	for i := 0; i < 100 && n != want; i++ {
		time.Sleep(20 * time.Millisecond)
		n = fdCount(t)
	}
	return n
}

// echoServer accepts on l and echoes every connection until l closes.
func echoServer(t *testing.T, l net.Listener) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				// A plain loop: io.Copy would splice through pipes that
				// the runtime keeps cached, which the fd counts would see.
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
}

func TestBlockConn(t *testing.T) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, tl)
	ul, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, ul)
	s := newSession(Target{})
	for _, a := range []net.Addr{tl.Addr(), ul.Addr()} {
		t.Run(a.Network(), func(t *testing.T) {
			before := fdCount(t)
			c, err := s.dial(context.Background(), a.Network(), a.String())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := c.(*blockConn); !ok {
				t.Fatalf("dial returned %T, want *blockConn", c)
			}
			if c.RemoteAddr().String() != a.String() {
				t.Errorf("remote addr %v, want %v", c.RemoteAddr(), a)
			}
			// A write larger than the socket buffers, read back in full.
			msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
			go c.Write(msg)
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("echo: %v (equal %v)", err, bytes.Equal(got, msg))
			}

			// A past read deadline fails at once; a near one times out; the zero time clears.
			c.SetReadDeadline(time.Now().Add(-time.Second))
			var ne net.Error
			if _, err := c.Read(got); !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("read after past deadline: %v, want a timeout", err)
			}
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := c.Read(got); !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("read with 50 ms deadline: %v, want a timeout", err)
			}
			c.SetReadDeadline(time.Time{})

			// Close from another goroutine fails a blocked Read at once.
			time.AfterFunc(100*time.Millisecond, func() { c.Close() })
			start := time.Now()
			_, err = c.Read(got)
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("blocked read after Close: %v, want net.ErrClosed", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("blocked read returned %v after Close", d)
			}
			if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Errorf("write after Close: %v", err)
			}
			if err := c.Close(); err == nil {
				t.Errorf("second Close: nil error")
			}
			if after := fdCountSettles(t, before); after != before {
				t.Errorf("%d fds before, %d after", before, after)
			}
		})
	}
}

// A conn that is not a socket is handed back unchanged.
func TestBlockingKeepsOtherConns(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if c := blocking(a); c != a {
		t.Errorf("blocking(pipe) = %T, want the pipe unchanged", c)
	}
}

// Goroutines closing while others read and write: no race, no fd leak.
func TestBlockConnCloseRace(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, l)
	s := newSession(Target{})
	before := fdCount(t)
	for i := 0; i < 50; i++ {
		c, err := s.dial(context.Background(), "tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		// One goroutine reads (Read is for one goroutine at a time), two
		// write, two close.
		var wg sync.WaitGroup
		for j := 0; j < 3; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 64)
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
					if j > 0 {
						continue
					}
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
		time.Sleep(time.Millisecond)
		wg.Add(2)
		go func() { defer wg.Done(); c.Close() }()
		go func() { defer wg.Done(); c.Close() }()
		wg.Wait()
	}
	if after := fdCountSettles(t, before); after != before {
		t.Errorf("%d fds before, %d after", before, after)
	}
}

// GOMAXPROCS follows the open blockConns: one P each plus procsSpare while
// they are few, the default beyond procsPerCPU per default P and once all
// are closed. With GOMAXPROCS set in the environment, procs leaves it alone
// (checked here) and the rest is checked in a child test process without it.
func TestBlockConnProcs(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		blockConnProcsFixed(t)
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, l)
	s := newSession(Target{})
	def := runtime.GOMAXPROCS(0)
	var conns []net.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	defer closeAll()
	for i := 1; i <= procsPerCPU*def+1; i++ {
		c, err := s.dial(context.Background(), "tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		want := max(def, i+procsSpare)
		if i > procsPerCPU*def {
			want = def
		}
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Fatalf("%d open conns: GOMAXPROCS %d, want %d", i, got, want)
		}
	}
	closeAll()
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Errorf("all closed: GOMAXPROCS %d, want the default %d", got, def)
	}
}

// blockConnProcsFixed: GOMAXPROCS set in the environment stays as set while blockConns
// open, and TestBlockConnProcs passes in a child process without the variable.
func blockConnProcsFixed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, l)
	s := newSession(Target{})
	set := runtime.GOMAXPROCS(0)
	for i := 1; i <= procsSpare+2; i++ {
		c, err := s.dial(context.Background(), "tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := runtime.GOMAXPROCS(0); got != set {
			t.Fatalf("GOMAXPROCS=%s in the environment, %d open conns: GOMAXPROCS %d, want it left at %d", os.Getenv("GOMAXPROCS"), i, got, set)
		}
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			env = append(env, e)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBlockConnProcs$", "-test.count=1", "-test.v")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestBlockConnProcs")) {
		t.Errorf("TestBlockConnProcs without GOMAXPROCS in the environment: %v\n%s", err, out)
	}
}

// The driver's stale-connection check reads through SyscallConn: on a live
// idle connection it must see EAGAIN at once (not block), on a connection
// the server closed, EOF; and the socket stays blocking afterwards.
func TestBlockConnLivenessCheck(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := newSession(Target{}).dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := <-accepted
	peek := func() (int, error) {
		rc, err := c.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), make([]byte, 1))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return n, rerr
	}
	if n, err := peek(); n != -1 || err != syscall.EAGAIN {
		t.Errorf("peek at a live idle conn: %d, %v; want EAGAIN", n, err)
	}
	srv.Close()
	time.Sleep(50 * time.Millisecond)
	if n, err := peek(); n != 0 || err != nil {
		t.Errorf("peek at a conn the peer closed: %d, %v; want 0 (EOF)", n, err)
	}
	fl, err := unix.FcntlInt(uintptr(c.(*blockConn).fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("after the check: flags %#x, %v; want a blocking socket", fl, err)
	}
}
