package netem

import (
	"fmt"
	"math"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EnvUserspaceRT set to 0 keeps the userspace link's thread in the normal scheduling class
// (no SCHED_FIFO attempt): for comparisons, or where a real-time thread is unwanted.
const EnvUserspaceRT = "HABENCH_NETEM_RT"

// linkPrio is the SCHED_FIFO priority (1-99) of the link thread when permitted: low, but
// above every normal thread.
const linkPrio = 10

// Realtime reports whether the link's thread runs SCHED_FIFO. False where that is not
// permitted (not root, no real-time runtime for the cgroup) or disabled with
// HABENCH_NETEM_RT=0: the link works the same, with more scheduling delay on a busy
// machine.
func (u *Userspace) Realtime() bool { return u.rt.Load() }

// schedParam is struct sched_param.
type schedParam struct{ priority int32 }

const (
	schedOther       = 0
	schedFIFO        = 1
	schedResetOnFork = 0x40000000 // threads this one creates start as SCHED_OTHER
)

// setupThread prepares the calling OS thread, which must stay locked to its goroutine
// until that exits: its name, a 1 ns timer slack (a sleep ends when asked, not up to
// 50 us later), and SCHED_FIFO if wanted and permitted. The returned function puts the
// thread back as it was; call it before the goroutine exits. (Go ends a locked thread
// with its goroutine, except the main thread, which it parks forever instead.)
func (u *Userspace) setupThread() (restore func()) {
	var oldName [16]byte
	syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_GET_NAME, uintptr(unsafe.Pointer(&oldName[0])), 0)
	oldSlack, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_GET_TIMERSLACK, 0, 0)
	name := []byte("hbnetem\x00")
	syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0)
	syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 1, 0)
	tid := uintptr(unix.Gettid())
	if u.rtWant {
		sp := &schedParam{priority: linkPrio}
		_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, tid, schedFIFO|schedResetOnFork, uintptr(unsafe.Pointer(sp)))
		u.rt.Store(e == 0)
	}
	return func() {
		if u.rt.Load() {
			sp := &schedParam{}
			syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, tid, schedOther, uintptr(unsafe.Pointer(sp)))
		}
		syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_TIMERSLACK, oldSlack, 0)
		syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_NAME, uintptr(unsafe.Pointer(&oldName[0])), 0)
	}
}

// now is the link thread's clock: nanoseconds since u.epoch, monotonic.
func (u *Userspace) now() int64 { return int64(time.Since(u.epoch)) }

const (
	// readBatch is how many packets the thread reads from one device before it turns to
	// the other devices and the queue.
	readBatch = 64
	// pktBufSize is the size of the recycled packet buffers (TUN MTU 1500, and some).
	pktBufSize = 2048
)

// Delivery timing. The thread sleeps until a margin before the head packet is due, then
// spins on the clock. A sleep ends late by a few microseconds when the CPU was busy and by
// 50-300 us when the (virtual) CPU had gone idle, and a thread that first needs a Go P
// back can be later still. So the margin is learnt, per time to the due time
// (wakeBuckets): a running estimate of the 90th percentile of how late the thread's own
// wake-ups were, plus spinPad. Spinning is bounded: at most maxSpin at a time and at most spinShare of one
// CPU over time (a token bucket of spinBurst; a real-time thread must not spin
// unbounded). Without budget the thread sleeps to the due time and is late by its wake-up.
const (
	spinPad   = 5 * time.Microsecond
	spinPoll  = 5 * time.Microsecond // how often a spin polls the devices
	maxSpin   = 400 * time.Microsecond
	spinShare = 0.15
	spinBurst = 2 * time.Millisecond
)

// wakeBuckets are the upper bounds of the times to the due time that share an estimate.
var wakeBuckets = [...]time.Duration{50 * time.Microsecond, 200 * time.Microsecond, 800 * time.Microsecond, 3200 * time.Microsecond, math.MaxInt64}

// wakeEstimator tracks, per bucket of time to the due time, the 90th percentile of how
// late a sleep ended: up 9 steps on a sample above the estimate, down 1 below it.
type wakeEstimator struct{ est [len(wakeBuckets)]int64 }

func newWakeEstimator() *wakeEstimator {
	w := &wakeEstimator{}
	for i := range w.est {
		w.est[i] = int64(20*time.Microsecond) << i // a start, learnt within tens of wake-ups
	}
	return w
}

func wakeBucket(wait int64) int {
	for i, b := range wakeBuckets {
		if wait < int64(b) {
			return i
		}
	}
	return len(wakeBuckets) - 1
}

// margin is how long before a due time wait ns away the thread should wake up.
func (w *wakeEstimator) margin(wait int64) int64 {
	return min(w.est[wakeBucket(wait)]+int64(spinPad), int64(maxSpin))
}

// observe records that a sleep toward a due time wait ns away ended late ns late.
func (w *wakeEstimator) observe(wait, late int64) {
	e := &w.est[wakeBucket(wait)]
	step := max(*e/64, int64(250*time.Nanosecond))
	if late > *e {
		*e = min(*e+9*step, int64(maxSpin))
	} else {
		*e = max(*e-step, 0)
	}
}

// spinBudget is a token bucket of spinning time, in ns.
type spinBudget struct{ tokens, last int64 }

func (b *spinBudget) refill(now int64) int64 {
	b.tokens = min(b.tokens+int64(float64(now-b.last)*spinShare), int64(spinBurst))
	b.last = now
	return b.tokens
}

// run is the link thread.
func (u *Userspace) run() {
	defer close(u.done)
	runtime.LockOSThread() // no Unlock: the thread exits with this goroutine
	restore := u.setupThread()
	defer restore()
	u.epoch = time.Now()
	close(u.ready)
	est := newWakeEstimator()
	budget := spinBudget{tokens: int64(spinBurst), last: u.now()}
	for !u.stop.Load() {
		u.deliverDue()
		if u.readReady() {
			continue // reading stopped early: deliver what is due, then read on
		}
		if len(u.q) == 0 {
			u.poll(-1)
			continue
		}
		now := u.now()
		wait := u.q[0].due - now
		if wait <= 0 {
			continue
		}
		m := max(min(est.margin(wait), budget.refill(now)), 0)
		if wait > m {
			timedOut, late := u.poll(wait - m)
			if !timedOut {
				continue // a packet arrived, or Close
			}
			est.observe(wait, late)
		}
		u.spin(&budget)
	}
}

// poll sleeps in ppoll on the devices and the wake eventfd for at most d ns (d < 0: no
// limit), leaving the devices' readiness in u.pfd. It reports whether the timeout expired
// with nothing to read and, if so, how much later than asked the thread woke (ns).
func (u *Userspace) poll(d int64) (timedOut bool, late int64) {
	var ts *unix.Timespec
	if d >= 0 {
		t := unix.NsecToTimespec(d)
		ts = &t
	}
	start := u.now()
	k, err := unix.Ppoll(u.pfd, ts, nil)
	switch {
	case err != nil:
		for i := range u.pfd {
			u.pfd[i].Revents = 0
		}
		if err != unix.EINTR {
			// Not expected; never retry at once in a loop at real-time priority.
			u.fail(fmt.Errorf("ppoll: %w", err))
			time.Sleep(10 * time.Millisecond)
		}
		return false, 0
	case k == 0:
		return d >= 0, u.now() - start - d
	}
	if w := &u.pfd[len(u.pfd)-1]; w.Revents != 0 {
		var b [8]byte
		unix.Read(u.wakeFd, b[:])
		w.Revents = 0
	}
	return false, 0
}

// spin waits on the clock until the head of the queue is due, at most maxSpin, and polls
// the devices every spinPoll meanwhile, so that a packet arriving now is stamped now.
func (u *Userspace) spin(b *spinBudget) {
	t0 := u.now()
	t, polled := t0, t0
	for len(u.q) > 0 && t < u.q[0].due && t-t0 < int64(maxSpin) && !u.stop.Load() {
		if t-polled >= int64(spinPoll) {
			if k, _ := unix.Ppoll(u.pfd[:len(u.fds)], &unix.Timespec{}, nil); k > 0 {
				u.readReady()
			}
			polled = u.now()
		}
		t = u.now()
	}
	b.refill(t)
	b.tokens -= t - t0
}

// readReady reads the devices the last poll found readable and reports whether one of
// them may hold more: it stops at readBatch packets per device, and as soon as the head
// of the queue is due.
func (u *Userspace) readReady() (more bool) {
	// Round robin: a device that never drains must not always be read first.
	nd := len(u.fds)
	first := u.rr
	u.rr = (u.rr + 1) % max(nd, 1)
	for k := range nd {
		i := (first + k) % nd
		ev := u.pfd[i].Revents
		if ev == 0 {
			continue
		}
		u.pfd[i].Revents = 0
		k, full, err := u.pull(i)
		if err == nil && k == 0 && ev&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			err = fmt.Errorf("poll events %#x", ev)
		}
		if err != nil {
			u.disable(i, err)
			continue
		}
		if full {
			u.pfd[i].Revents = unix.POLLIN
			more = true
		}
		if len(u.q) > 0 && u.q[0].due <= u.now() {
			return more
		}
	}
	return more
}

// disable stops reading node i's device after a failure (for instance the TUN deleted by
// someone else): its packets to other nodes are lost from now on, and Err reports it.
func (u *Userspace) disable(i int, err error) {
	if !u.stop.Load() {
		u.fail(fmt.Errorf("read %s in %s: %w", TunName, u.eps[i].Netns, err))
	}
	u.pfd[i].Fd = -1 // ppoll ignores it
	u.pfd[i].Revents = 0
}
