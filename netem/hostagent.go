package netem

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// BackendHostAgent is the backend of impairments applied on a user's hosts by the
// userspace link agent (`habench link-agent` started over SSH on each host), for hosts
// whose kernel lacks sch_netem.
const BackendHostAgent = "userspace agent on hosts"

// AgentConfig is one line of JSON the link agent reads on its standard input. The first
// line sets it up: Self is the host's own IPv4 address (the source of the routed
// packets), Tun the TUN device to create (at most 15 bytes), Links every peer address
// with the one-way impairment from this host to it (an empty Impairment: none). Later
// lines carry Links only and replace the impairments; the set of peers is fixed by the
// first line. The agent answers each line with "ok" or "error: ..." on standard output.
type AgentConfig struct {
	Self  string      `json:"self,omitempty"`
	Tun   string      `json:"tun,omitempty"`
	Links []AgentLink `json:"links"`
}

// AgentLink is the impairment of the directed link from the agent's host to Peer.
type AgentLink struct {
	Peer string     `json:"peer"`
	Imp  Impairment `json:"imp"`
}

// agentLink is the running agent: its TUN, raw sockets per outgoing interface, link.
type agentLink struct {
	u     *Userspace
	socks map[int]int // interface index -> raw socket bound to it
	out   []int       // endpoint index -> raw socket (0: self)
	dst   []unix.SockaddrInet4
	names []string // endpoint names: the addresses, self first
}

// RunAgent is the link agent: it reads AgentConfig lines from in, sets up the TUN device
// and routes on the first, updates the impairments on the next ones, and removes the TUN
// (and with it its routes) when in ends (its ssh session died or the controller closed
// it) or a line is invalid at setup. Packets from this host to a peer are routed (/32,
// source Self) into the TUN, delayed by the userspace link thread, and sent out of the
// interface the peer was reached through before, on a raw IP socket (IP_HDRINCL)
// bound to that interface (SO_BINDTODEVICE), so the route through the TUN is not
// matched again. Traffic to any other address (the SSH connection that runs the agent,
// clients) is untouched. Errors: setup failures (root, /dev/net/tun, routes, strict
// rp_filter on the outgoing interface).
func RunAgent(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	if !sc.Scan() {
		return errors.New("link agent: no configuration on stdin")
	}
	var cfg AgentConfig
	if err := json.Unmarshal(sc.Bytes(), &cfg); err != nil {
		return fmt.Errorf("link agent: configuration: %w", err)
	}
	a, err := startAgent(cfg)
	if err != nil {
		fmt.Fprintf(out, "error: %v\n", err)
		return err
	}
	defer a.close()
	fmt.Fprintln(out, "ok")
	for sc.Scan() {
		var c AgentConfig
		err := json.Unmarshal(sc.Bytes(), &c)
		if err == nil {
			err = a.u.Update(a.spec(c.Links))
		}
		if err != nil {
			fmt.Fprintf(out, "error: %v\n", err)
			continue
		}
		fmt.Fprintln(out, "ok")
	}
	return nil
}

// spec turns links into a Spec over the agent's endpoint names (the addresses).
func (a *agentLink) spec(links []AgentLink) *Spec {
	s := &Spec{Links: map[Link]Impairment{}}
	for _, l := range links {
		s.Links[Link{From: a.names[0], To: l.Peer}] = l.Imp
	}
	return s
}

// startAgent creates the TUN, the raw sockets and the routes, and starts the link.
func startAgent(cfg AgentConfig) (*agentLink, error) {
	self, err := netip.ParseAddr(cfg.Self)
	if err != nil || !self.Is4() {
		return nil, fmt.Errorf("self %q: want an IPv4 address", cfg.Self)
	}
	if cfg.Tun == "" || len(cfg.Tun) > 15 {
		return nil, fmt.Errorf("tun %q: want a device name of 1 to 15 bytes", cfg.Tun)
	}
	if err := UserspaceAvailable(); err != nil {
		return nil, err
	}
	a := &agentLink{socks: map[int]int{}, names: []string{self.String()}, out: []int{0}, dst: []unix.SockaddrInet4{{}}}
	eps := []Endpoint{{Name: self.String(), Addr: self}}
	// The SSH connection that runs the agent must not go through it.
	client, _, _ := strings.Cut(os.Getenv("SSH_CONNECTION"), " ")
	for _, l := range cfg.Links {
		p, err := netip.ParseAddr(l.Peer)
		if err != nil || !p.Is4() {
			a.closeSocks()
			return nil, fmt.Errorf("peer %q: want an IPv4 address", l.Peer)
		}
		if p.String() == client {
			a.closeSocks()
			return nil, fmt.Errorf("peer %v: the address habench connects from over SSH; its connection would be delayed too", p)
		}
		fd, err := a.sockFor(p)
		if err != nil {
			a.closeSocks()
			return nil, err
		}
		eps = append(eps, Endpoint{Name: p.String(), Addr: p})
		a.names = append(a.names, p.String())
		a.out = append(a.out, fd)
		a.dst = append(a.dst, unix.SockaddrInet4{Addr: p.As4()})
	}
	tun, err := openTun(cfg.Tun)
	if err != nil {
		a.closeSocks()
		return nil, err
	}
	send := func(to int, pkt []byte) error { return unix.Sendto(a.out[to], pkt, 0, &a.dst[to]) }
	u, err := NewUserspaceOut(eps, nil, tun, send)
	if err != nil {
		unix.Close(tun)
		a.closeSocks()
		return nil, err
	}
	a.u = u
	if err := u.Update(a.spec(cfg.Links)); err != nil {
		a.close()
		return nil, err
	}
	if err := routeAgent(cfg.Tun, self, eps[1:]); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// sockFor returns the raw socket bound to the interface p is routed through now (before
// the agent's routes), opening it on first use. Error: no route, or a strict rp_filter
// on that interface (the replies from p would be dropped: their reverse path is the TUN).
func (a *agentLink) sockFor(p netip.Addr) (int, error) {
	rs, err := netlink.RouteGet(p.AsSlice())
	if err != nil || len(rs) == 0 {
		return -1, fmt.Errorf("peer %v: no route: %v", p, err)
	}
	idx := rs[0].LinkIndex
	if fd, ok := a.socks[idx]; ok {
		return fd, nil
	}
	l, err := netlink.LinkByIndex(idx)
	if err != nil {
		return -1, fmt.Errorf("peer %v: interface %d: %w", p, idx, err)
	}
	dev := l.Attrs().Name
	if rpStrict(dev) {
		return -1, fmt.Errorf("peer %v: interface %s has a strict rp_filter (net.ipv4.conf.{all,%s}.rp_filter = 1): replies would be dropped; set it to 2 (loose) on the host", p, dev, dev)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return -1, fmt.Errorf("raw socket: %w", err)
	}
	if err := unix.BindToDevice(fd, dev); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("raw socket: bind to %s: %w", dev, err)
	}
	a.socks[idx] = fd
	return fd, nil
}

// rpStrict reports whether reverse-path filtering on dev is strict (max of all and dev is 1).
func rpStrict(dev string) bool {
	v := func(n string) string {
		b, _ := os.ReadFile("/proc/sys/net/ipv4/conf/" + n + "/rp_filter")
		return strings.TrimSpace(string(b))
	}
	all, d := v("all"), v(dev)
	return (all == "1" || d == "1") && all != "2" && d != "2"
}

// openTun creates TUN device name (not persistent: it goes with the process) and brings
// it up without IPv6 and with rp_filter 0.
func openTun(name string) (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err == nil {
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("create TUN %s: %w", name, err)
	}
	_ = os.WriteFile("/proc/sys/net/ipv4/conf/"+name+"/rp_filter", []byte("0"), 0)
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
	return fd, nil
}

// routeAgent brings tun up and routes each peer (/32) through it with source self.
func routeAgent(tun string, self netip.Addr, peers []Endpoint) error {
	l, err := netlink.LinkByName(tun)
	if err != nil {
		return fmt.Errorf("find %s: %w", tun, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("bring %s up: %w", tun, err)
	}
	for _, p := range peers {
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: netlinkIPNet(p.Addr), Src: self.AsSlice(), Scope: netlink.SCOPE_LINK}
		if err := netlink.RouteAdd(r); err != nil {
			return fmt.Errorf("route %v via %s src %v: %w", p.Addr, tun, self, err)
		}
	}
	return nil
}

func (a *agentLink) closeSocks() {
	for _, fd := range a.socks {
		unix.Close(fd)
	}
	a.socks = nil
}

// close stops the link and closes the TUN (which removes it and its routes).
func (a *agentLink) close() {
	if a.u != nil {
		a.u.Close()
	}
	a.closeSocks()
}
