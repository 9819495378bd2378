package netem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/internal/nsutil"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// testNet builds k throwaway namespaces hbnt-<r>-<letter> with eth0 at 10.234.<x>.(10+i)/24
// on bridge hbnt<r> (a subnet nothing else here uses) and removes them in t.Cleanup, also
// when the test fails. It skips when not root.
func testNet(t testing.TB, k int) []Endpoint {
	t.Helper()
	if err := UserspaceAvailable(); err != nil {
		t.Skipf("userspace link unusable: %v", err)
	}
	r := fmt.Sprintf("%05d", rand.IntN(100000))
	x := 1 + rand.IntN(250)
	brName := "hbnt" + r
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: brName}}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatalf("bridge: %v", err)
	}
	var names []string
	t.Cleanup(func() {
		for i, n := range names {
			if l, err := netlink.LinkByName(fmt.Sprintf("hbnt%sv%d", r, i)); err == nil {
				netlink.LinkDel(l)
			}
			netns.DeleteNamed(n)
		}
		if l, err := netlink.LinkByName(brName); err == nil {
			netlink.LinkDel(l)
		}
	})
	if err := netlink.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}
	var eps []Endpoint
	for i := 0; i < k; i++ {
		name := fmt.Sprintf("hbnt-%s-%c", r, 'a'+i)
		ns, err := nsutil.New(name)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		veth := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("hbnt%sv%d", r, i), MasterIndex: br.Attrs().Index},
			PeerName:  fmt.Sprintf("hbnt%sp%d", r, i),
		}
		if err := netlink.LinkAdd(veth); err != nil {
			ns.Close()
			t.Fatal(err)
		}
		peer, err := netlink.LinkByName(veth.PeerName)
		if err == nil {
			err = netlink.LinkSetNsFd(peer, int(ns))
		}
		if err == nil {
			err = netlink.LinkSetUp(veth)
		}
		if err != nil {
			ns.Close()
			t.Fatal(err)
		}
		addr := netip.AddrFrom4([4]byte{10, 234, byte(x), byte(10 + i)})
		h, err := netlink.NewHandleAt(ns)
		ns.Close()
		if err != nil {
			t.Fatal(err)
		}
		p, err := h.LinkByName(veth.PeerName)
		if err == nil {
			err = h.LinkSetName(p, "eth0")
		}
		if err == nil {
			a, _ := netlink.ParseAddr(addr.String() + "/24")
			err = h.AddrAdd(p, a)
		}
		if err == nil {
			err = h.LinkSetUp(p)
		}
		if err == nil {
			var lo netlink.Link
			if lo, err = h.LinkByName("lo"); err == nil {
				err = h.LinkSetUp(lo)
			}
		}
		h.Close()
		if err != nil {
			t.Fatalf("namespace %s: %v", name, err)
		}
		eps = append(eps, Endpoint{Name: fmt.Sprintf("n%d", i+1), Netns: name, Addr: addr})
	}
	return eps
}

func names(eps []Endpoint) []string {
	var n []string
	for _, e := range eps {
		n = append(n, e.Name)
	}
	return n
}

func measure(t *testing.T, eps []Endpoint, spec *Spec, samples int) []LinkRTT {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := MeasureRTT(ctx, eps, spec, samples, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		t.Logf("%s: requested RTT %v, achieved median %v p99 %v min %v (%d ok, %d failed)",
			r.Link, r.Requested, r.Median, r.P99, r.Min, r.Samples, r.Failed)
	}
	return res
}

// tunState lists what the userspace link leaves in the namespaces: TUN devices and routes.
func tunState(t *testing.T, eps []Endpoint) []string {
	t.Helper()
	var left []string
	for _, e := range eps {
		ns, err := netns.GetFromName(e.Netns)
		if err != nil {
			t.Fatal(err)
		}
		h, err := netlink.NewHandleAt(ns)
		ns.Close()
		if err != nil {
			t.Fatal(err)
		}
		if l, err := h.LinkByName(TunName); err == nil {
			left = append(left, e.Netns+": link "+l.Attrs().Name)
		}
		routes, _ := h.RouteList(nil, netlink.FAMILY_V4)
		for _, r := range routes {
			if r.Dst != nil && r.Dst.IP.To4() != nil {
				if ones, _ := r.Dst.Mask.Size(); ones == 32 {
					left = append(left, e.Netns+": route "+r.Dst.String())
				}
			}
		}
		h.Close()
	}
	return left
}

func TestUserspaceDelayLossPartition(t *testing.T) {
	eps := testNet(t, 3)
	goroutines := runtime.NumGoroutine()
	spec, err := NewSpec(names(eps))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	if err := spec.SetLink("n1", "n2", Impairment{Delay: ms}); err != nil {
		t.Fatal(err)
	}
	if err := spec.SetLink("n2", "n1", Impairment{Delay: ms}); err != nil {
		t.Fatal(err)
	}
	if err := spec.SetLink("n1", "n3", Impairment{Partition: true}); err != nil {
		t.Fatal(err)
	}
	if err := spec.SetLink("n3", "n2", Impairment{Loss: 1}); err != nil {
		t.Fatal(err)
	}
	u, err := NewUserspace(eps, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	if left := tunState(t, eps); len(left) != 3*3 {
		t.Errorf("want one TUN and two /32 routes per namespace, got %v", left)
	}
	res := measure(t, eps, spec, 40)
	byLink := map[Link]LinkRTT{}
	for _, r := range res {
		byLink[r.Link] = r
	}
	for _, l := range []Link{{"n1", "n2"}, {"n2", "n1"}} {
		r := byLink[l]
		if r.Requested != 2*ms {
			t.Errorf("%s requested %v, want 2ms (1ms one-way each way)", l, r.Requested)
		}
		if r.Samples < 35 || r.Median < 1800*time.Microsecond || r.Median > 3500*time.Microsecond {
			t.Errorf("%s: median RTT %v over %d samples, want 1.8-3.5ms", l, r.Median, r.Samples)
		}
	}
	// Partition n1->n3 and 100% loss n3->n2 block both directions of those pairs' handshakes.
	for _, l := range []Link{{"n1", "n3"}, {"n3", "n1"}, {"n3", "n2"}, {"n2", "n3"}} {
		if r := byLink[l]; r.Samples != 0 || r.Failed != blockedAfter {
			t.Errorf("%s: %d handshakes completed, %d failed; want blocked", l, r.Samples, r.Failed)
		}
	}
	st := u.Stats()
	if st[Link{"n1", "n3"}].Dropped == 0 || st[Link{"n1", "n2"}].Forwarded == 0 {
		t.Errorf("stats: %v", st)
	}
	// Update to no impairment: everything connects, quickly.
	if err := u.Update(nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range measure(t, eps, nil, 20) {
		if r.Samples != 20 || r.Median > 1500*time.Microsecond {
			t.Errorf("%s after clearing: %d ok, median %v; want 20 under 1.5ms", r.Link, r.Samples, r.Median)
		}
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if left := tunState(t, eps); len(left) != 0 {
		t.Errorf("Close left %v", left)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", g, goroutines, buf[:runtime.Stack(buf, true)])
	}
}

func TestUserspaceErrorsLeaveNothing(t *testing.T) {
	eps := testNet(t, 2)
	bad := append([]Endpoint(nil), eps...)
	bad = append(bad, Endpoint{Name: "n9", Netns: "hbnt-missing-" + eps[0].Netns, Addr: netip.MustParseAddr("10.234.0.99")})
	if _, err := NewUserspace(bad, nil); err == nil || !strings.Contains(err.Error(), "n9") {
		t.Errorf("missing namespace: %v", err)
	}
	if left := tunState(t, eps); len(left) != 0 {
		t.Errorf("failed NewUserspace left %v", left)
	}
	spec, _ := NewSpec([]string{"n1", "other"})
	spec.SetLink("n1", "other", Impairment{Delay: time.Millisecond})
	if _, err := NewUserspace(eps, spec); err == nil || !strings.Contains(err.Error(), "n1->other") {
		t.Errorf("unknown spec node: %v", err)
	}
	if _, err := os.Stat("/run/netns/" + eps[0].Netns); err != nil {
		t.Errorf("namespace gone: %v", err)
	}
}
