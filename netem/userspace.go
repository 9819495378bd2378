package netem

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

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
