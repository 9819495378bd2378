package netem

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TunName is the TUN device the userspace link creates in every node's namespace.
const TunName = "hbnetem0"

// queueLimitPackets is how many packets one directed link holds queued (delayed, or
// waiting for a rate limit) before it drops new ones, like netem's default qdisc limit of
// 1000 packets; for a rate-limited link the backlog is also capped at 1000 full-size
// (1500-byte) packets' worth of time at that rate.
const queueLimitPackets = 1000

// ethernetHeader is added to each IP packet's length when it is charged against a rate
// limit: a TUN device sees bare IP packets, while netem on a veth counts the Ethernet
// frame (skb->len including the 14-byte header), and the two backends should agree.
const ethernetHeader = 14

// Endpoint is one node as the userspace link sees it.
type Endpoint struct {
	Name  string     // the node's name, as in Spec
	Netns string     // its named network namespace (bound at /run/netns/NAME)
	Addr  netip.Addr // its IPv4 address inside that namespace
}

// LinkStats counts the packets of one directed link since the link was created.
type LinkStats struct {
	Forwarded uint64 // written to the destination node
	// Dropped counts packets lost on purpose (Loss, Partition), to a full queue
	// (queueLimitPackets, or a full rate-limit backlog) or to a failed write to the
	// destination's TUN device.
	Dropped uint64
}

// Userspace is the link emulator for kernels without sch_netem. In each endpoint's
// namespace it creates TUN device hbnetem0 and routes every OTHER endpoint's address
// (/32) through it with the endpoint's own address as source, so node-to-node IPv4 goes
// through this process while traffic to anything else (clients on the bridge) is
// untouched. Delays are one-way per directed link. Create with NewUserspace, change
// impairments with Update, always Close.
//
// One OS thread moves all packets: a goroutine locked to it for its whole life (the
// thread exits with it), named hbnetem (/proc/PID/task/TID/comm), with a 1 ns timer slack
// and, where permitted, SCHED_FIFO at a low priority (see Realtime), so that on a busy
// machine it does not wait behind the workload for a CPU. It sleeps in ppoll on all TUN
// devices at once, so a packet is picked up by the thread the kernel wakes, without a
// detour through the Go netpoller, and is timestamped as it is read: its delay runs from
// there. It is then written to its destination at once (no delay) or queued. For the
// head of the queue the thread sleeps until a margin before the due time, learnt from how
// late its own wake-ups have been, then spins on the clock (within a CPU budget), still
// polling the devices. One thread rather than one per device: a thread blocked in a
// system call keeps its Go P until the runtime's monitor takes it back, and with
// GOMAXPROCS 2 a few such threads can leave the rest of the process without a P for
// milliseconds.
type Userspace struct {
	eps  []Endpoint
	byIP map[[4]byte]int
	fds  []int // TUN devices, O_NONBLOCK; closed only after the link thread exited
	// out, when set, sends a packet to endpoint to instead of writing it to that
	// endpoint's TUN device (the host link agent: one TUN, packets leave on a raw socket).
	out   func(to int, pkt []byte) error
	table atomic.Pointer[linkTable]
	stats []linkCounters // [from*n+to]

	late lateness // how late packets were written, against their due time

	errMu sync.Mutex
	err   error // first failure to read a device; that node's packets are no longer forwarded

	wakeFd    int // eventfd waking the link thread (Close)
	stop      atomic.Bool
	rtWant    bool        // try SCHED_FIFO
	rt        atomic.Bool // the link thread runs SCHED_FIFO
	ready     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// Owned by the link thread.
	epoch time.Time     // origin of the nanosecond times (monotonic clock)
	pfd   []unix.PollFd // the TUN devices, then wakeFd
	buf   []byte
	q     packetQueue
	seq   uint64
	free  [][]byte   // recycled packet buffers (pktBufSize)
	busy  []int64    // [from*n+to]: when that rate-limited link is free again
	inq   []int      // [from*n+to]: packets of that link in q queued under the current table
	seen  *linkTable // the table inq counts for; an Update starts the counts afresh
	gen   uint64     // incremented with every new table seen
	rr    int        // the device readReady starts with
}

type linkCounters struct{ fwd, drop atomic.Uint64 }

type linkTable struct{ imp []Impairment } // [from*n+to]

type packet struct {
	due      int64 // ns since Userspace.epoch
	seq      uint64
	gen      uint64 // Userspace.gen when queued
	from, to int
	b        []byte
}

// packetQueue is a min-heap on (due, seq), typed so that push and pop do not allocate.
type packetQueue []packet

func (h packetQueue) less(i, j int) bool {
	if h[i].due == h[j].due {
		return h[i].seq < h[j].seq
	}
	return h[i].due < h[j].due
}

func (h *packetQueue) push(p packet) {
	*h = append(*h, p)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *packetQueue) pop() packet {
	q := *h
	p := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = packet{}
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q.less(l, m) {
			m = l
		}
		if r < len(q) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return p
}

// UserspaceAvailable reports whether the userspace link can run here: nil, or why not
// (not root, or no usable /dev/net/tun).
func UserspaceAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: TUN devices and routes in node namespaces need CAP_NET_ADMIN")
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/net/tun: %w", err)
	}
	unix.Close(fd)
	return nil
}

// InNetns runs fn on a fresh OS thread that has entered the named network namespace and
// returns its error. Sockets fn opens stay in that namespace after it returns. The thread
// is never handed back to the Go scheduler: it exits with its goroutine, so no other
// goroutine ever runs in the wrong namespace.
func InNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no Unlock: the thread dies with this goroutine
		ns, err := netns.GetFromName(name)
		if err != nil {
			errc <- fmt.Errorf("open namespace %s: %w", name, err)
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("enter namespace %s: %w", name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// NewUserspace creates the TUN devices and routes for eps and starts forwarding with the
// impairments of spec (nil: none). Every endpoint needs a distinct IPv4 address and an
// existing namespace. On error nothing is left behind. The link thread is running (and
// Realtime tells its scheduling) when it returns.
func NewUserspace(eps []Endpoint, spec *Spec) (*Userspace, error) {
	if err := UserspaceAvailable(); err != nil {
		return nil, err
	}
	u, err := newUserspace(eps, spec)
	if err != nil {
		return nil, err
	}
	for i := range eps {
		fd, err := u.attach(i)
		if err != nil {
			u.closeFds()
			return nil, err
		}
		u.fds = append(u.fds, fd)
	}
	u.start()
	return u, nil
}

// newUserspace checks eps, applies spec and opens the wake eventfd; no device yet.
func newUserspace(eps []Endpoint, spec *Spec) (*Userspace, error) {
	n := len(eps)
	u := &Userspace{
		eps:    eps,
		byIP:   map[[4]byte]int{},
		stats:  make([]linkCounters, n*n),
		wakeFd: -1,
		rtWant: os.Getenv(EnvUserspaceRT) != "0",
		ready:  make(chan struct{}),
		done:   make(chan struct{}),
		buf:    make([]byte, 65536),
		busy:   make([]int64, n*n),
		inq:    make([]int, n*n),
	}
	for i, e := range eps {
		if !e.Addr.Is4() {
			return nil, fmt.Errorf("endpoint %s: address %v is not IPv4", e.Name, e.Addr)
		}
		if _, dup := u.byIP[e.Addr.As4()]; dup {
			return nil, fmt.Errorf("endpoint %s: address %v used twice", e.Name, e.Addr)
		}
		u.byIP[e.Addr.As4()] = i
	}
	if err := u.Update(spec); err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	u.wakeFd = efd
	return u, nil
}

// start polls u.fds and the eventfd and runs the link thread until Close.
func (u *Userspace) start() {
	for _, fd := range u.fds {
		u.pfd = append(u.pfd, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	u.pfd = append(u.pfd, unix.PollFd{Fd: int32(u.wakeFd), Events: unix.POLLIN})
	go u.run()
	<-u.ready
}

// NewUserspaceOut runs the link thread on one TUN device tunFd (O_NONBLOCK, owned from
// now on: Close closes it) that carries the packets of eps[0]: each packet read from it
// whose destination is another endpoint gets that directed link's impairment of spec
// and is then handed to out(to, packet) instead of a device. The host link agent uses
// it (one TUN on a host, packets leave through a raw socket). Errors: as NewUserspace.
func NewUserspaceOut(eps []Endpoint, spec *Spec, tunFd int, out func(to int, pkt []byte) error) (*Userspace, error) {
	u, err := newUserspace(eps, spec)
	if err != nil {
		return nil, err
	}
	u.out = out
	u.fds = []int{tunFd}
	u.start()
	return u, nil
}

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

// attach creates the TUN device in endpoint i's namespace, brings it up with
// rp_filter 0, and routes the other endpoints' addresses through it. It returns the
// device's file descriptor (O_NONBLOCK).
func (u *Userspace) attach(i int) (int, error) {
	e := u.eps[i]
	var fd = -1
	err := InNetns(e.Netns, func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(TunName)
		if err != nil {
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			return fmt.Errorf("create TUN %s: %w", TunName, err)
		}
		// /proc/sys/net is the namespace of the thread that opens it. The reverse path of
		// a delivered packet is this TUN already; rp_filter 0 only removes a surprise.
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+TunName+"/rp_filter", []byte("0"), 0); err != nil {
			return fmt.Errorf("rp_filter on %s: %w", TunName, err)
		}
		// No IPv6 on the TUN: its router solicitations would only be dropped.
		_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+TunName+"/disable_ipv6", []byte("1"), 0)
		return nil
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("endpoint %s: %w", e.Name, err)
	}
	if err := u.route(i); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("endpoint %s: %w", e.Name, err)
	}
	return fd, nil
}

func (u *Userspace) route(i int) error {
	e := u.eps[i]
	ns, err := netns.GetFromName(e.Netns)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", e.Netns, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", e.Netns, err)
	}
	defer h.Close()
	tun, err := h.LinkByName(TunName)
	if err != nil {
		return fmt.Errorf("find %s: %w", TunName, err)
	}
	if err := h.LinkSetUp(tun); err != nil {
		return fmt.Errorf("bring %s up: %w", TunName, err)
	}
	src := e.Addr.AsSlice()
	for j, o := range u.eps {
		if j == i {
			continue
		}
		r := &netlink.Route{
			LinkIndex: tun.Attrs().Index,
			Dst:       netlinkIPNet(o.Addr),
			Src:       src,
			Scope:     netlink.SCOPE_LINK,
		}
		if err := h.RouteAdd(r); err != nil {
			return fmt.Errorf("route %v via %s src %v: %w", o.Addr, TunName, e.Addr, err)
		}
	}
	return nil
}

// Update replaces the impairments atomically; packets already queued keep their delay.
// spec nil means no impairment. Errors: a spec node that is not an endpoint, or an
// invalid impairment.
func (u *Userspace) Update(spec *Spec) error {
	n := len(u.eps)
	t := &linkTable{imp: make([]Impairment, n*n)}
	if spec != nil {
		idx := map[string]int{}
		for i, e := range u.eps {
			idx[e.Name] = i
		}
		for l, imp := range spec.Links {
			a, ok1 := idx[l.From]
			b, ok2 := idx[l.To]
			if !ok1 || !ok2 {
				return fmt.Errorf("link %s: node not attached to the userspace link", l)
			}
			if err := imp.Validate(); err != nil {
				return fmt.Errorf("link %s: %w", l, err)
			}
			t.imp[a*n+b] = imp
		}
	}
	u.table.Store(t)
	return nil
}

// Stats returns the packet counters of every directed link that saw traffic.
func (u *Userspace) Stats() map[Link]LinkStats {
	n := len(u.eps)
	out := map[Link]LinkStats{}
	for i := range u.eps {
		for j := range u.eps {
			c := &u.stats[i*n+j]
			s := LinkStats{Forwarded: c.fwd.Load(), Dropped: c.drop.Load()}
			if s != (LinkStats{}) {
				out[Link{u.eps[i].Name, u.eps[j].Name}] = s
			}
		}
	}
	return out
}

// sampleDelay draws one packet's one-way delay.
func sampleDelay(imp Impairment) time.Duration {
	if imp.Jitter == 0 {
		return imp.Delay
	}
	var d float64
	if imp.Distribution == DistNormal {
		d = float64(imp.Delay) + rand.NormFloat64()*float64(imp.Jitter)
	} else {
		d = float64(imp.Delay) + (rand.Float64()*2-1)*float64(imp.Jitter)
	}
	return time.Duration(math.Max(d, 0))
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

// pull reads node i's device and forwards or queues each packet, timestamped right after
// its read, until the device is empty (full false) or it has read readBatch packets or
// the head of the queue is due (full true: there may be more). k is how many it read.
func (u *Userspace) pull(i int) (k int, full bool, err error) {
	for k < readBatch {
		m, err := unix.Read(u.fds[i], u.buf)
		now := u.now()
		switch err {
		case nil:
		case unix.EAGAIN:
			return k, false, nil
		case unix.EINTR:
			continue
		default:
			return k, false, err
		}
		k++
		u.ingest(i, u.buf[:m], now)
		if len(u.q) > 0 && u.q[0].due <= now {
			break
		}
	}
	return k, true, nil
}

// ingest applies the impairment of the directed link a packet from node i goes over:
// drop it, write it to its destination now, or queue it with its due time. now is when
// the packet was read.
func (u *Userspace) ingest(i int, pkt []byte, now int64) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return // not IPv4
	}
	j, ok := u.byIP[[4]byte(pkt[16:20])]
	if !ok || j == i {
		return
	}
	n := len(u.eps)
	c := &u.stats[i*n+j]
	tbl := u.table.Load()
	if tbl != u.seen {
		// After an Update, packets queued under the old impairments keep their due
		// times but no longer count against the new limits (as the rate backlog is capped).
		u.seen, u.gen = tbl, u.gen+1
		clear(u.inq)
	}
	imp := tbl.imp[i*n+j]
	if imp.Partition || (imp.Loss > 0 && rand.Float64() < imp.Loss) {
		c.drop.Add(1)
		return
	}
	if u.inq[i*n+j] >= queueLimitPackets {
		c.drop.Add(1)
		return
	}
	due := now
	if imp.Rate > 0 {
		busy := &u.busy[i*n+j]
		limit := int64(float64(queueLimitPackets*1500) / float64(imp.Rate) * 1e9)
		// A backlog left by a slower rate before an Update must not drop everything at
		// the new rate: it is capped at what the current rate can hold.
		*busy = min(*busy, now+limit)
		start := max(*busy, now)
		if start-now >= limit {
			c.drop.Add(1)
			return
		}
		*busy = start + int64(float64(len(pkt)+ethernetHeader)/float64(imp.Rate)*1e9)
		due = *busy
	}
	due += int64(sampleDelay(imp))
	if due <= now {
		if u.write(j, pkt) == nil {
			c.fwd.Add(1)
		} else {
			c.drop.Add(1)
		}
		return
	}
	var b []byte
	switch {
	case len(pkt) > pktBufSize:
		b = make([]byte, len(pkt))
	case len(u.free) > 0:
		b = u.free[len(u.free)-1]
		u.free = u.free[:len(u.free)-1]
	default:
		b = make([]byte, pktBufSize)
	}
	u.seq++
	u.inq[i*n+j]++
	u.q.push(packet{due: due, seq: u.seq, gen: u.gen, from: i, to: j, b: b[:copy(b[:cap(b)], pkt)]})
}

// write hands pkt to endpoint j: its TUN device, or the output seam (out) when set.
func (u *Userspace) write(j int, pkt []byte) error {
	if u.out != nil {
		return u.out(j, pkt)
	}
	_, err := unix.Write(u.fds[j], pkt)
	return err
}

// deliverDue writes every queued packet that is due.
func (u *Userspace) deliverDue() {
	n := len(u.eps)
	for len(u.q) > 0 {
		now := u.now()
		if u.q[0].due > now {
			return
		}
		p := u.q.pop()
		if p.gen == u.gen {
			u.inq[p.from*n+p.to]--
		}
		if u.write(p.to, p.b) == nil {
			u.stats[p.from*n+p.to].fwd.Add(1)
			u.late.record(time.Duration(now - p.due))
		} else {
			u.stats[p.from*n+p.to].drop.Add(1)
		}
		if cap(p.b) == pktBufSize && len(u.free) < queueLimitPackets {
			u.free = append(u.free, p.b)
		}
	}
}

// Close stops forwarding and removes the TUN devices (which takes their routes with
// them). Queued packets are dropped. It is safe to call more than once.
func (u *Userspace) Close() error {
	u.closeOnce.Do(func() {
		u.stop.Store(true)
		one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
		unix.Write(u.wakeFd, one)
		<-u.done
		u.closeErr = u.closeFds()
		u.q, u.free = nil, nil
	})
	return u.closeErr
}

// closeFds closes the TUN devices (which deletes them: they are not persistent) and the
// eventfd. The link thread must not be running.
func (u *Userspace) closeFds() error {
	var errs []error
	for i, fd := range u.fds {
		if err := unix.Close(fd); err != nil {
			errs = append(errs, fmt.Errorf("close %s in %s: %w", TunName, u.eps[i].Netns, err))
		}
	}
	u.fds = nil
	if u.wakeFd >= 0 {
		unix.Close(u.wakeFd)
		u.wakeFd = -1
	}
	return errors.Join(errs...)
}

func netlinkIPNet(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}

// lateness accumulates how late delayed packets were delivered.
type lateness struct {
	sum, count, max atomic.Int64 // nanoseconds, packets, nanoseconds
}

func (l *lateness) record(d time.Duration) {
	l.sum.Add(int64(d))
	l.count.Add(1)
	for {
		m := l.max.Load()
		if int64(d) <= m || l.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Lateness returns the mean and maximum time by which delayed packets were delivered
// after their due time (the scheduling error of the delivery thread), and how many
// delayed packets that covers. Packets forwarded without delay are not counted.
func (u *Userspace) Lateness() (mean, max time.Duration, packets int64) {
	c := u.late.count.Load()
	if c == 0 {
		return 0, 0, 0
	}
	return time.Duration(u.late.sum.Load() / c), time.Duration(u.late.max.Load()), c
}

func (u *Userspace) fail(err error) {
	u.errMu.Lock()
	defer u.errMu.Unlock()
	if u.err == nil {
		u.err = err
	}
}

// Err returns the first failure of a reader (for instance a TUN device deleted by someone
// else), after which that node's outgoing packets to other nodes are lost; nil if none.
func (u *Userspace) Err() error {
	u.errMu.Lock()
	defer u.errMu.Unlock()
	return u.err
}
