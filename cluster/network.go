package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/habench/habench/nsutil"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Network modes of a sandbox.
const (
	NetNamespaces = "netns"    // one network namespace per node on a private bridge (root only)
	NetLoopback   = "loopback" // every node on 127.0.0.1 with its own port
)

// Subnet is the address block sandboxes take /24s from: cluster i gets 10.233.i.0/24, the
// bridge .1, node k .(10+k). Addresses exist only inside namespaces habench creates.
const subnetPrefix = "10.233."

// NetNamespacesUsable says why one-namespace-per-node networking is not usable here ("" if it is).
func NetNamespacesUsable() string {
	if os.Geteuid() != 0 {
		return "not root: network namespaces need CAP_NET_ADMIN"
	}
	if _, err := os.Stat("/usr/bin/nsenter"); err != nil {
		return "nsenter missing (apt-get install util-linux)"
	}
	return ""
}

// bridgeName, vethName and netnsName derive interface names (<= 15 bytes) from the
// cluster name (<= 10 bytes) and node index.
func bridgeName(cluster string) string         { return "hb-" + cluster }
func vethName(cluster string, i int) string    { return fmt.Sprintf("hb%sn%d", cluster, i) }
func netnsName(cluster, node string) string    { return "hb-" + cluster + "-" + node }
func peerTmpName(cluster string, i int) string { return fmt.Sprintf("hp%sn%d", cluster, i) }

// setupBridge creates the cluster's bridge with address 10.233.<idx>.1/24 and brings it up.
func setupBridge(cluster string, idx int) error {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName(cluster)}}
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s: %w", br.Name, err)
	}
	addr, _ := netlink.ParseAddr(fmt.Sprintf("%s%d.1/24", subnetPrefix, idx))
	if err := netlink.AddrAdd(br, addr); err != nil {
		return fmt.Errorf("address bridge %s: %w", br.Name, err)
	}
	return netlink.LinkSetUp(br)
}

// nodeAddress returns 10.233.<idx>.<10+i>.
func nodeAddress(idx, i int) string { return fmt.Sprintf("%s%d.%d", subnetPrefix, idx, 10+i) }

// createNetns creates the named namespace without leaving the calling thread in it.
func createNetns(name string) error {
	ns, err := nsutil.New(name)
	if err != nil {
		return err
	}
	return ns.Close()
}

// setupNode creates node i's namespace, a veth pair with one end on the bridge and the
// other as eth0 inside the namespace at addr/24, and brings lo and eth0 up.
func setupNode(cluster, node string, i int, addr string) error {
	nsName := netnsName(cluster, node)
	if err := createNetns(nsName); err != nil {
		return err
	}
	ns, err := netns.GetFromName(nsName)
	if err != nil {
		return err
	}
	defer ns.Close()
	br, err := netlink.LinkByName(bridgeName(cluster))
	if err != nil {
		return fmt.Errorf("bridge %s: %w", bridgeName(cluster), err)
	}
	veth := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: vethName(cluster, i), MasterIndex: br.Attrs().Index},
		PeerName:  peerTmpName(cluster, i),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s: %w", veth.Name, err)
	}
	peer, err := netlink.LinkByName(veth.PeerName)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetNsFd(peer, int(ns)); err != nil {
		return fmt.Errorf("move %s into %s: %w", veth.PeerName, nsName, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return err
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	p, err := h.LinkByName(veth.PeerName)
	if err != nil {
		return err
	}
	if err := h.LinkSetName(p, "eth0"); err != nil {
		return err
	}
	a, _ := netlink.ParseAddr(addr + "/24")
	if err := h.AddrAdd(p, a); err != nil {
		return err
	}
	if err := h.LinkSetUp(p); err != nil {
		return err
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	return h.LinkSetUp(lo)
}

// teardownNetwork removes the cluster's namespaces, veths and bridge; missing ones are
// fine. With onlyOrphans, a namespace in which any process still runs is left alone, and
// so is the bridge while any interface is attached to it.
func teardownNetwork(cluster string, nodes []string, onlyOrphans bool) error {
	var errs []error
	for i, n := range nodes {
		name := netnsName(cluster, n)
		_, statErr := os.Stat(filepath.Join("/run/netns", name))
		if onlyOrphans && statErr == nil && netnsInUse(name) {
			continue
		}
		if l, err := netlink.LinkByName(vethName(cluster, i+1)); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, err)
			}
		}
		if statErr == nil {
			if err := netns.DeleteNamed(name); err != nil {
				errs = append(errs, fmt.Errorf("delete namespace %s: %w", name, err))
			}
		}
	}
	if l, err := netlink.LinkByName(bridgeName(cluster)); err == nil {
		if onlyOrphans && bridgeHasPorts(l) {
			return errors.Join(errs...)
		}
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// netnsInUse reports whether any process runs in the named network namespace.
func netnsInUse(name string) bool {
	var want syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", name), &want); err != nil {
		return false
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name(), "ns", "net"), &st) == nil && st.Ino == want.Ino && st.Dev == want.Dev {
			return true
		}
	}
	return false
}

// bridgeHasPorts reports whether any link is enslaved to bridge br.
func bridgeHasPorts(br netlink.Link) bool {
	links, _ := netlink.LinkList()
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			return true
		}
	}
	return false
}

func vethRE(cluster string) *regexp.Regexp {
	return regexp.MustCompile("^hb" + regexp.QuoteMeta(cluster) + "n[0-9]+$")
}

// leftoverNetwork lists namespaces and links of cluster that still exist.
func leftoverNetwork(cluster string) []string {
	var left []string
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "hb-"+cluster+"-") {
			left = append(left, "netns "+e.Name())
		}
	}
	links, _ := netlink.LinkList()
	for _, l := range links {
		n := l.Attrs().Name
		if n == bridgeName(cluster) || vethRE(cluster).MatchString(n) {
			left = append(left, "link "+n)
		}
	}
	return left
}

// NetworkGuardEnv names the test harness's network guard: with NetworkGuardEnv=1 (set by
// `make test`, the Makefile's bench targets and so .ci/run) habench connects only to
// 127.0.0.0/8, ::1 and addresses on this machine's own network namespaces (see
// CheckDestination), and resolves no names, so that a mistake in a test cannot send a
// packet off this machine. Without it habench connects wherever the user says.
const NetworkGuardEnv = "HABENCH_TEST_NETWORK_GUARD"

// NetworkGuard reports whether the test harness's network guard is on (NetworkGuardEnv=1).
func NetworkGuard() bool { return os.Getenv(NetworkGuardEnv) == "1" }

// CheckDestination says whether habench may connect to host (an IP address, a name, or
// "localhost"). Without the network guard (NetworkGuard) it allows everything: nil.
// Under the guard it allows only "localhost", loopback addresses (127.0.0.0/8, ::1) and
// addresses the kernel routes without a gateway through a veth, or through a bridge whose
// ports are all veths: namespaces on this machine (habench's sandboxes, or ones a test
// built). A name is refused without a lookup, since resolving it would itself send a DNS
// query to a resolver that need not be local. Errors name the host and why.
func CheckDestination(host string) error {
	if !NetworkGuard() || host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return fmt.Errorf("destination %q: not an IP address (under %s=1 habench resolves no names)", host, NetworkGuardEnv)
	}
	if ip.IsLoopback() {
		return nil
	}
	if err := localNamespaceRoute(ip); err != nil {
		return fmt.Errorf("destination %s: %v; refusing to connect under %s=1 (the test harness's network guard: only loopback and namespaces on this machine)", ip, err, NetworkGuardEnv)
	}
	return nil
}

// localNamespaceRoute returns nil when the kernel routes ip without a gateway through a
// veth, or a bridge all of whose ports are veths; otherwise an error saying where it goes.
func localNamespaceRoute(ip net.IP) error {
	routes, err := netlink.RouteGet(ip)
	if err != nil || len(routes) == 0 {
		return fmt.Errorf("no route: %v", err)
	}
	l, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return err
	}
	name := l.Attrs().Name
	if routes[0].Gw != nil {
		return fmt.Errorf("routed via gateway %s on %s", routes[0].Gw, name)
	}
	switch l.Type() {
	case "veth":
		return nil
	case "bridge":
		links, _ := netlink.LinkList()
		for _, p := range links {
			if p.Attrs().MasterIndex == l.Attrs().Index && p.Type() != "veth" {
				return fmt.Errorf("routed via bridge %s, which has port %s (%s), not only veths", name, p.Attrs().Name, p.Type())
			}
		}
		return nil
	}
	return fmt.Errorf("routed via %s (%s), not a veth or bridge to a namespace on this machine", name, l.Type())
}

// onSandboxBridge reports whether ip is routed without a gateway through one of habench's
// own bridges (hb-*): the sandbox subnet allocator's "this /24 is taken" test.
func onSandboxBridge(ip net.IP) bool {
	routes, err := netlink.RouteGet(ip)
	if err != nil || len(routes) == 0 || routes[0].Gw != nil {
		return false
	}
	l, err := netlink.LinkByIndex(routes[0].LinkIndex)
	return err == nil && strings.HasPrefix(l.Attrs().Name, "hb-")
}

// GuardedNet is the go-sql-driver network name whose dialer applies CheckDestination
// before every TCP connect (a no-op without the network guard). Use it in every DSN
// habench makes.
const GuardedNet = "habench-guarded"

var registerOnce sync.Once

// RegisterGuardedDialer registers GuardedNet with go-sql-driver (idempotent).
func RegisterGuardedDialer() {
	registerOnce.Do(func() {
		mysql.RegisterDialContext(GuardedNet, GuardedDial)
	})
}

// GuardedDial dials TCP addr ("host:port", host an IP address, a name or "localhost",
// which is dialled as 127.0.0.1 without a lookup) after CheckDestination, with a 10 s
// connect timeout, keep-alives and TCP_NODELAY. Errors: the guard's refusal or the dial's.
func GuardedDial(ctx context.Context, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host == "localhost" {
		addr = net.JoinHostPort("127.0.0.1", port) // no lookup at all
	}
	if err := CheckDestination(host); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return c, nil
}

// portFree reports whether host:port can be bound now (loopback mode's "port in use" check).
func portFree(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
