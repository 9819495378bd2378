//go:build linux

package workload

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// blockConn is a net.Conn over a socket in blocking mode whose Read and
// Write are plain read(2) and write(2) system calls, as in sysbench's
// libmysqlclient: a worker goroutine waiting for the server sleeps in the
// kernel like a C thread, instead of going through the netpoller (read,
// EAGAIN, park, epoll_pwait, wake another thread, reschedule). On a small
// machine shared with the server that scheduling was about half of the
// client's CPU per transaction.
//
// A system call that blocks keeps its OS thread; the Go scheduler hands the
// thread's P to other goroutines only when they need it (see procs),
// so a worker returns from read(2) onto its own P without a wakeup.
//
// Read is for one goroutine at a time, and so is Write (the driver's use:
// one statement at a time on a connection); Close and the deadlines may come
// from any goroutine. A Close while a Read or Write is blocked (connSlot.kill,
// the driver's context watcher) shuts the socket down (shutdown(2)
// SHUT_RDWR, which wakes a blocked read or write at once); the file
// descriptor is closed only when no Read or Write is using it, so that its
// number is never reused under a running system call.
//
// Deadlines: the driver sets them only with Config.ReadTimeout or
// WriteTimeout (habench sets neither). A deadline is applied as the
// socket's SO_RCVTIMEO or SO_SNDTIMEO, relative to when it was set (the
// driver sets it just before each read or write); a Write that makes
// progress in several write(2) calls may take up to that timeout per call.
// A deadline already in the past fails the next call with a timeout error.
// The zero time clears it.
type blockConn struct {
	fd    int
	net   string
	laddr net.Addr
	raddr net.Addr

	// state is users<<2 | fdClosed<<1 | closed: users counts the Read,
	// Write and Close calls using fd; the last one out after Close closes it.
	state atomic.Int64

	rExpired, wExpired atomic.Bool

	// lastYield is when Read last yielded the processor (see yield); only
	// the goroutine using the conn touches it.
	lastYield time.Duration

	// rbuf[rpos:rend] is data read from the socket and not yet returned.
	rbuf       []byte
	rpos, rend int
}

// rbufSize is the read buffer: one read(2) takes a whole result set of
// oltp_read_write's range selects (about 12 KB), where the driver's own
// 4 KB buffer would need three or four.
const rbufSize = 16 << 10

// yieldEvery is how often a goroutine that only ever blocks in read(2)
// yields its P (runtime.Gosched). The runtime's sysmon takes a goroutine
// that has not been rescheduled for 10 ms (forcePreemptNS) as a
// long-running one: if it is in a system call, sysmon takes its P and hands
// it off, and while it keeps retaking Ps it polls every 20 us instead of
// backing off to 10 ms, each poll a nanosleep and a context switch taken
// from the server (measured: 7 nanosleeps and 30 context switches per
// oltp_read_write transaction instead of 1 and 24). A Gosched wakes an idle
// thread (a futex and a context switch or two), so it should be rare: at
// 2 ms it cost more than it saved; 5 ms stays clear of sysmon's 10 ms
// with a read's wait added.
const yieldEvery = 5 * time.Millisecond

// epoch is the origin of lastYield (monotonic clock).
var epoch = time.Now()

const (
	bcClosed   = 1
	bcFdClosed = 2
	bcUser     = 4
)

// blocking returns c as a blockConn when c is a TCP or unix socket, and c
// unchanged otherwise (a userspace link's conn, for example) or when the
// socket cannot be taken over. On success c is closed: the blockConn owns a
// duplicate of its descriptor (same socket, same options: TCP_NODELAY and
// keep-alive as net.Dialer set them).
func blocking(c net.Conn) net.Conn {
	var network string
	switch c.(type) {
	case *net.TCPConn:
		network = "tcp"
	case *net.UnixConn:
		network = "unix"
	default:
		return c
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil || derr != nil {
		return c
	}
	if err := unix.SetNonblock(nfd, false); err != nil {
		unix.Close(nfd)
		return c
	}
	bc := &blockConn{fd: nfd, net: network, laddr: c.LocalAddr(), raddr: c.RemoteAddr()}
	procsAdd(1)
	// The descriptors share one open file: closing the Go conn (which also
	// removes it from the netpoller) leaves the socket to nfd.
	c.Close()
	return bc
}

// acquire registers a user of fd; false once the conn is closed.
func (c *blockConn) acquire() bool {
	if c.state.Add(bcUser)&bcClosed != 0 {
		c.release()
		return false
	}
	return true
}

// release ends a use of fd and closes fd when it was the last use after Close.
func (c *blockConn) release() {
	if c.state.Add(-bcUser) == bcClosed && c.state.CompareAndSwap(bcClosed, bcClosed|bcFdClosed) {
		unix.Close(c.fd)
		procsAdd(-1)
	}
}

func (c *blockConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: c.net, Source: c.laddr, Addr: c.raddr, Err: err}
}

func (c *blockConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if c.rpos < c.rend {
		n := copy(b, c.rbuf[c.rpos:c.rend])
		c.rpos += n
		return n, nil
	}
	if len(b) < rbufSize {
		if c.rbuf == nil {
			c.rbuf = make([]byte, rbufSize)
		}
		n, err := c.read(c.rbuf)
		if n <= 0 {
			return n, err
		}
		c.rpos, c.rend = copy(b, c.rbuf[:n]), n
		return c.rpos, nil
	}
	return c.read(b)
}

func (c *blockConn) read(b []byte) (int, error) {
	if !c.acquire() {
		return 0, c.opErr("read", net.ErrClosed)
	}
	defer c.release()
	if now := time.Since(epoch); now-c.lastYield >= yieldEvery {
		c.lastYield = now
		runtime.Gosched()
	}
	if c.rExpired.Load() {
		return 0, c.opErr("read", os.ErrDeadlineExceeded)
	}
	for {
		n, err := syscall.Read(c.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		case err != nil:
			if c.state.Load()&bcClosed != 0 {
				return 0, c.opErr("read", net.ErrClosed)
			}
			return 0, c.opErr("read", os.NewSyscallError("read", err))
		case n == 0:
			if c.state.Load()&bcClosed != 0 {
				return 0, c.opErr("read", net.ErrClosed)
			}
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *blockConn) Write(b []byte) (int, error) {
	if !c.acquire() {
		return 0, c.opErr("write", net.ErrClosed)
	}
	defer c.release()
	if c.wExpired.Load() {
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	}
	done := 0
	for done < len(b) {
		n, err := syscall.Write(c.fd, b[done:])
		if n > 0 {
			done += n
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return done, c.opErr("write", os.ErrDeadlineExceeded)
		case err != nil:
			if c.state.Load()&bcClosed != 0 {
				return done, c.opErr("write", net.ErrClosed)
			}
			return done, c.opErr("write", os.NewSyscallError("write", err))
		case n == 0:
			return done, c.opErr("write", io.ErrUnexpectedEOF)
		}
	}
	return done, nil
}

// Close shuts the socket down, which fails a Read or Write blocked in
// another goroutine at once, and closes the descriptor when the last of
// them returns.
func (c *blockConn) Close() error {
	c.state.Add(bcUser) // fd stays open while Close uses it
	defer c.release()
	for {
		s := c.state.Load()
		if s&bcClosed != 0 {
			return c.opErr("close", net.ErrClosed)
		}
		if c.state.CompareAndSwap(s, s|bcClosed) {
			break
		}
	}
	unix.Shutdown(c.fd, unix.SHUT_RDWR)
	return nil
}

func (c *blockConn) LocalAddr() net.Addr  { return c.laddr }
func (c *blockConn) RemoteAddr() net.Addr { return c.raddr }

func (c *blockConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *blockConn) SetReadDeadline(t time.Time) error {
	return c.setTimeout(t, unix.SO_RCVTIMEO, &c.rExpired)
}

func (c *blockConn) SetWriteDeadline(t time.Time) error {
	return c.setTimeout(t, unix.SO_SNDTIMEO, &c.wExpired)
}

func (c *blockConn) setTimeout(t time.Time, opt int, expired *atomic.Bool) error {
	if !c.acquire() {
		return c.opErr("set deadline", net.ErrClosed)
	}
	defer c.release()
	var d time.Duration
	if !t.IsZero() {
		d = time.Until(t)
		if d <= 0 {
			expired.Store(true)
			return nil
		}
		d = max(d, time.Microsecond)
	}
	expired.Store(false)
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, opt, &tv); err != nil {
		return c.opErr("set deadline", os.NewSyscallError("setsockopt", err))
	}
	return nil
}

// procsSpare is how many Ps procsAdd keeps beyond one per open blockConn:
// for the run's coordinator, timers and the garbage collector.
const procsSpare = 2

// procsPerCPU bounds thread-per-worker: with more open blockConns than
// procsPerCPU per P of the default GOMAXPROCS, GOMAXPROCS stays the default.
const procsPerCPU = 4

// procs counts the open blockConns and, while there are at most
// procsPerCPU per default P, raises GOMAXPROCS to their count plus
// procsSpare (unless GOMAXPROCS was set in the environment).
//
// A goroutine blocked in read(2) keeps its P, and the scheduler leaves it
// there only while other Ps are idle; otherwise sysmon takes it within
// 20 us and hands it off, and the reader's return costs a wakeup. With one
// P per blocked reader and a couple spare, a worker returns from each read
// onto its own P with no other thread involved, as a C thread would:
// measured at 8 threads on 2 CPUs, 186 us of client CPU per
// oltp_read_write transaction with 10 Ps against 288 with 2. With many
// workers per CPU, a thread per worker costs a context switch per
// statement while a few Ps let the scheduler run several returning workers
// on a thread that is already awake: at 64 threads, 318 us with 4 Ps, 352
// with 2, 420 with 10 and 497 with 66 (sysbench: 517).
var procs struct {
	mu     sync.Mutex
	n      int // open blockConns
	raised bool
	fixed  bool // GOMAXPROCS set in the environment: leave it
	def    int  // the default GOMAXPROCS
	init   bool
}

func procsAdd(d int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if !procs.init {
		procs.init = true
		procs.fixed = os.Getenv("GOMAXPROCS") != ""
		procs.def = runtime.GOMAXPROCS(0)
	}
	procs.n += d
	if procs.fixed {
		return
	}
	perWorker := procs.n <= procsPerCPU*procs.def
	switch {
	case procs.n > 0 && perWorker && procs.n+procsSpare > runtime.GOMAXPROCS(0):
		runtime.GOMAXPROCS(procs.n + procsSpare)
		procs.raised = true
	case procs.raised && (procs.n == 0 || !perWorker):
		// Back to the runtime's default (and its automatic updates).
		runtime.SetDefaultGOMAXPROCS()
		procs.raised = false
	}
}

// SyscallConn gives the driver's stale-connection check (connCheck, on the
// first statement after a pooled connection is taken again) what it needs:
// a RawConn whose Read runs its function with the socket in non-blocking
// mode, so that a peek at a live idle connection sees EAGAIN instead of
// blocking.
func (c *blockConn) SyscallConn() (syscall.RawConn, error) { return rawBlockConn{c}, nil }

type rawBlockConn struct{ c *blockConn }

func (r rawBlockConn) Control(f func(fd uintptr)) error {
	if !r.c.acquire() {
		return r.c.opErr("raw-control", net.ErrClosed)
	}
	defer r.c.release()
	f(uintptr(r.c.fd))
	return nil
}

// Read and Write call f with the socket non-blocking until it returns
// true, waiting in poll(2) for the socket to be ready between calls.
func (r rawBlockConn) Read(f func(fd uintptr) bool) error { return r.io(f, unix.POLLIN, "raw-read") }

func (r rawBlockConn) Write(f func(fd uintptr) bool) error { return r.io(f, unix.POLLOUT, "raw-write") }

func (r rawBlockConn) io(f func(fd uintptr) bool, ev int16, op string) error {
	c := r.c
	if !c.acquire() {
		return c.opErr(op, net.ErrClosed)
	}
	defer c.release()
	if err := unix.SetNonblock(c.fd, true); err != nil {
		return c.opErr(op, os.NewSyscallError("fcntl", err))
	}
	defer unix.SetNonblock(c.fd, false)
	for !f(uintptr(c.fd)) {
		if c.state.Load()&bcClosed != 0 {
			return c.opErr(op, net.ErrClosed)
		}
		pfd := []unix.PollFd{{Fd: int32(c.fd), Events: ev}}
		if _, err := unix.Poll(pfd, -1); err != nil && err != unix.EINTR {
			return c.opErr(op, os.NewSyscallError("poll", err))
		}
	}
	return nil
}
