package netem

import (
	"container/heap"
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
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TunName is the TUN device the userspace link creates in every node's namespace.
const TunName = "hbnetem0"

// queueLimitPackets is the backlog a rate-limited link holds before it drops, in packets
// of the link's MTU (netem's default limit is 1000 packets too).
const queueLimitPackets = 1000

// Endpoint is one node as the userspace link sees it.
type Endpoint struct {
	Name  string     // the node's name, as in Spec
	Netns string     // its named network namespace (bound at /run/netns/NAME)
	Addr  netip.Addr // its IPv4 address inside that namespace
}

// LinkStats counts the packets of one directed link since the link was created.
type LinkStats struct {
	Forwarded uint64 // written to the destination node
	Dropped   uint64 // lost by Loss, Partition or a full rate-limit backlog
}

// Userspace is the link emulator for kernels without sch_netem. In each endpoint's
// namespace it creates TUN device hbnetem0 and routes every OTHER endpoint's address
// (/32) through it with the endpoint's own address as source, so node-to-node IPv4 goes
// through this process while traffic to anything else (clients on the bridge) is
// untouched. One reader goroutine per TUN applies the impairment of the directed link and
// queues the packet; one dedicated OS thread (timer slack 1 ns, ppoll) writes it to the
// destination's TUN when due. Delays are one-way per directed link. Create with
// NewUserspace, change impairments with Update, always Close.
type Userspace struct {
	eps   []Endpoint
	byIP  map[[4]byte]int
	tuns  []*os.File
	table atomic.Pointer[linkTable]
	stats []linkCounters // [from*n+to]

	mu  sync.Mutex
	q   packetHeap
	seq uint64

	late lateness // how late packets were written, against their due time

	errMu sync.Mutex
	err   error // first reader failure; that node's packets are no longer forwarded

	efd       int // eventfd waking the delivery thread
	stop      atomic.Bool
	readers   sync.WaitGroup
	delivDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

type linkCounters struct{ fwd, drop atomic.Uint64 }

type linkTable struct{ imp []Impairment } // [from*n+to]

type packet struct {
	due      time.Time
	seq      uint64
	from, to int
	b        []byte
}

type packetHeap []packet

func (h packetHeap) Len() int { return len(h) }
func (h packetHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h packetHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *packetHeap) Push(x any)   { *h = append(*h, x.(packet)) }
func (h *packetHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = packet{}
	*h = old[:len(old)-1]
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
// existing namespace. On error nothing is left behind.
func NewUserspace(eps []Endpoint, spec *Spec) (*Userspace, error) {
	if err := UserspaceAvailable(); err != nil {
		return nil, err
	}
	u := &Userspace{
		eps:       eps,
		byIP:      map[[4]byte]int{},
		stats:     make([]linkCounters, len(eps)*len(eps)),
		efd:       -1,
		delivDone: make(chan struct{}),
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
	u.efd = efd
	for i := range eps {
		f, err := u.attach(i)
		if err != nil {
			u.closeTuns()
			unix.Close(efd)
			return nil, err
		}
		u.tuns = append(u.tuns, f)
	}
	go u.deliver()
	for i := range eps {
		u.readers.Add(1)
		go u.read(i)
	}
	return u, nil
}

// attach creates the TUN device in endpoint i's namespace, brings it up with
// rp_filter 0, and routes the other endpoints' addresses through it.
func (u *Userspace) attach(i int) (*os.File, error) {
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
		return nil, fmt.Errorf("endpoint %s: %w", e.Name, err)
	}
	f := os.NewFile(uintptr(fd), TunName+"@"+e.Netns)
	if err := u.route(i); err != nil {
		f.Close()
		return nil, fmt.Errorf("endpoint %s: %w", e.Name, err)
	}
	return f, nil
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

// read forwards the packets node i sends to other nodes.
func (u *Userspace) read(i int) {
	defer u.readers.Done()
	n := len(u.eps)
	busy := make([]time.Time, n) // when each outgoing rate-limited link is free again
	buf := make([]byte, 65536)
	for {
		m, err := u.tuns[i].Read(buf)
		if err != nil {
			if !u.stop.Load() && !errors.Is(err, os.ErrClosed) {
				u.fail(fmt.Errorf("read %s in %s: %w", TunName, u.eps[i].Netns, err))
			}
			return
		}
		pkt := buf[:m]
		if m < 20 || pkt[0]>>4 != 4 {
			continue // not IPv4
		}
		j, ok := u.byIP[[4]byte(pkt[16:20])]
		if !ok || j == i {
			continue
		}
		c := &u.stats[i*n+j]
		imp := u.table.Load().imp[i*n+j]
		if imp.Partition || (imp.Loss > 0 && rand.Float64() < imp.Loss) {
			c.drop.Add(1)
			continue
		}
		now := time.Now()
		due := now
		if imp.Rate > 0 {
			start := busy[j]
			if start.Before(now) {
				start = now
			}
			limit := time.Duration(float64(queueLimitPackets*1500) / float64(imp.Rate) * float64(time.Second))
			if start.Sub(now) > limit {
				c.drop.Add(1)
				continue
			}
			busy[j] = start.Add(time.Duration(float64(m) / float64(imp.Rate) * float64(time.Second)))
			due = busy[j]
		}
		due = due.Add(sampleDelay(imp))
		if !due.After(now) {
			if _, err := u.tuns[j].Write(pkt); err == nil {
				c.fwd.Add(1)
			}
			continue
		}
		u.push(packet{due: due, from: i, to: j, b: append([]byte(nil), pkt...)})
	}
}

func (u *Userspace) push(p packet) {
	u.mu.Lock()
	u.seq++
	p.seq = u.seq
	heap.Push(&u.q, p)
	head := u.q[0].seq == p.seq
	u.mu.Unlock()
	if head {
		u.wake()
	}
}

func (u *Userspace) wake() {
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	unix.Write(u.efd, one)
}

// spinWindow is how close to a packet's due time the delivery thread stops sleeping and
// spins: on this 2-core VM a ppoll/nanosleep wake-up is 20-100 us late (more for longer
// sleeps), so it wakes early (wakeEarly) and spins the rest, at most spinWindow per wake.
const spinWindow = 40 * time.Microsecond

// wakeEarly is how much before the due time a sleep of d should end: measured wake-up
// lateness grows with the sleep (about 35 us at 0.6 ms, 90 us at 5 ms), plus spinWindow.
func wakeEarly(d time.Duration) time.Duration {
	e := spinWindow + 30*time.Microsecond + d/50
	if e > 300*time.Microsecond {
		e = 300 * time.Microsecond
	}
	if e > d {
		e = d
	}
	return e
}

// deliver runs on its own OS thread with a 1 ns timer slack and writes due packets.
func (u *Userspace) deliver() {
	defer close(u.delivDone)
	runtime.LockOSThread() // no Unlock: the slack setting dies with the thread
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	n := len(u.eps)
	pfd := []unix.PollFd{{Fd: int32(u.efd), Events: unix.POLLIN}}
	var drain [8]byte
	for !u.stop.Load() {
		wait := time.Duration(-1)
		u.mu.Lock()
		for len(u.q) > 0 {
			d := time.Until(u.q[0].due)
			if d > spinWindow {
				wait = d - wakeEarly(d)
				break
			}
			if d > 0 { // spin the last microseconds, unlocked: a sleep would overshoot them
				due := u.q[0].due
				u.mu.Unlock()
				for time.Until(due) > 0 {
				}
				u.mu.Lock()
				continue
			}
			p := heap.Pop(&u.q).(packet)
			u.mu.Unlock()
			if _, err := u.tuns[p.to].Write(p.b); err == nil {
				u.stats[p.from*n+p.to].fwd.Add(1)
				u.late.record(-d)
			}
			u.mu.Lock()
		}
		u.mu.Unlock()
		var ts *unix.Timespec
		if wait >= 0 {
			t := unix.NsecToTimespec(int64(wait))
			ts = &t
		}
		if k, _ := unix.Ppoll(pfd, ts, nil); k > 0 {
			unix.Read(u.efd, drain[:])
		}
	}
}

// Close stops forwarding and removes the TUN devices (which takes their routes with
// them). Queued packets are dropped. It is safe to call more than once.
func (u *Userspace) Close() error {
	u.closeOnce.Do(func() {
		u.stop.Store(true)
		u.wake()
		<-u.delivDone
		u.closeErr = u.closeTuns()
		u.readers.Wait()
		unix.Close(u.efd)
		u.mu.Lock()
		u.q = nil
		u.mu.Unlock()
	})
	return u.closeErr
}

func (u *Userspace) closeTuns() error {
	var errs []error
	for _, f := range u.tuns {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
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
