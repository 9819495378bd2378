package netem

import (
	"context"
	"fmt"
	"github.com/habench/habench/internal/testenv/prereq"
	"github.com/habench/habench/internal/testmachine"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/nsutil"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// testNet builds k throwaway namespaces hbnt-<r>-<letter> with eth0 at 10.234.<x>.(10+i)/24
// on bridge hbnt<r> (a subnet nothing else here uses) and removes them in t.Cleanup, also
// when the test fails. It skips when not root.
func testNet(t testing.TB, k int) []Endpoint {
	t.Helper()
	prereq.Root(t, "the test namespaces, bridge and veths need CAP_NET_ADMIN")
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

// tunState (also for the kernel backend) lists what the links left in the namespaces (Residue of every endpoint,
// prefixed with its namespace): TUN devices, /32 routes, htb or netem qdiscs.
func tunState(t *testing.T, eps []Endpoint) []string {
	t.Helper()
	var left []string
	for _, e := range eps {
		found, err := Residue(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			left = append(left, e.Netns+": "+f)
		}
	}
	return left
}

func TestUserspaceDelayLossPartition(t *testing.T) {
	testmachine.Alone(t) // it measures the link's round trips: nothing else may load the machine
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

// udpPair opens a UDP receiver on to's address and a sender from from's namespace.
func udpPair(t *testing.T, from, to Endpoint) (send *net.UDPConn, recv *net.UDPConn) {
	t.Helper()
	err := InNetns(to.Netns, func() error {
		var err error
		recv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: to.Addr.AsSlice()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Close() })
	err = InNetns(from.Netns, func() error {
		var err error
		send, err = net.DialUDP("udp4", &net.UDPAddr{IP: from.Addr.AsSlice()}, recv.LocalAddr().(*net.UDPAddr))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { send.Close() })
	return send, recv
}

func TestUserspaceLossFractionAndJitter(t *testing.T) {
	testmachine.Alone(t) // it measures loss and jitter: nothing else may load the machine
	eps := testNet(t, 2)
	spec, _ := NewSpec(names(eps))
	spec.SetLink("n1", "n2", Impairment{Loss: 0.3})
	spec.SetLink("n2", "n1", Impairment{Delay: 2 * time.Millisecond, Jitter: time.Millisecond})
	u, err := NewUserspace(eps, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })

	send, recv := udpPair(t, eps[0], eps[1])
	const n = 2000
	counted := make(chan int, 1)
	go func() {
		got := 0
		buf := make([]byte, 16)
		for {
			recv.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := recv.Read(buf); err != nil {
				counted <- got
				return
			}
			got++
		}
	}()
	for i := 0; i < n; i++ {
		if _, err := send.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(time.Millisecond) // stay below the receiver's socket buffer
		}
	}
	got := <-counted
	t.Logf("loss 30%% n1->n2: %d of %d datagrams arrived; stats %v", got, n, u.Stats())
	if frac := 1 - float64(got)/n; frac < 0.25 || frac > 0.35 {
		t.Errorf("loss 30%%: measured %.3f", frac)
	}

	// Uniform jitter 2ms±1ms one-way n2->n1 (n1->n2 no delay): handshake RTT in ~[1ms, 3ms]
	// plus overhead, and spread, not a constant.
	spec.SetLink("n1", "n2", Impairment{})
	if err := u.Update(spec); err != nil {
		t.Fatal(err)
	}
	r := measure(t, eps, spec, 60)[0]
	if r.Requested != 2*time.Millisecond || r.Samples != 60 {
		t.Fatalf("%+v", r)
	}
	if r.Min < 900*time.Microsecond || r.Median < 1500*time.Microsecond || r.Median > 3500*time.Microsecond || r.P99-r.Min < 800*time.Microsecond {
		t.Errorf("jitter 2ms±1ms: min %v median %v p99 %v; want min>=0.9ms, median 1.5-3.5ms, spread >= 0.8ms", r.Min, r.Median, r.P99)
	}
}

func TestUserspaceRate(t *testing.T) {
	testmachine.Alone(t) // it measures a rate: nothing else may load the machine
	eps := testNet(t, 2)
	spec, _ := NewSpec(names(eps))
	rate, _ := ParseRate("8mbit") // 1 000 000 B/s
	spec.SetLink("n1", "n2", Impairment{Rate: rate})
	u, err := NewUserspace(eps, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	const size = 1 << 20
	el, err := bulkTransfer(eps[0], eps[1], size, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	bps := float64(size) / el.Seconds()
	t.Logf("rate 8mbit (1e6 B/s) n1->n2: 1 MiB in %v = %.0f B/s; stats %v", el, bps, u.Stats())
	if bps < 0.7e6 || bps > 1.1e6 {
		t.Errorf("achieved %.0f B/s, want 0.7-1.1e6 (headers count against the rate)", bps)
	}
}

// TestUserspaceRateUpdate: a backlog built up at a slow rate must not make the link drop
// everything after an Update to a fast one (the backlog is capped at the new rate's).
func TestUserspaceRateUpdate(t *testing.T) {
	eps := testNet(t, 2)
	spec, _ := NewSpec(names(eps))
	slow, _ := ParseRate("80kbit") // 10 000 B/s: a 1.5 MB backlog would last 150 s
	spec.SetLink("n1", "n2", Impairment{Rate: slow})
	u, err := NewUserspace(eps, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	send, recv := udpPair(t, eps[0], eps[1])
	payload := make([]byte, 1000)
	for range 1500 { // ~1.5 MB: fills the slow link's backlog
		send.Write(payload)
	}
	fast, _ := ParseRate("1gbit")
	spec2, _ := NewSpec(names(eps))
	spec2.SetLink("n1", "n2", Impairment{Rate: fast})
	if err := u.Update(spec2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	// Drain what the slow link still lets through, then count fresh datagrams.
	recv.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	buf := make([]byte, 2048)
	for {
		if _, err := recv.Read(buf); err != nil {
			break
		}
	}
	marker := []byte("fresh")
	for range 50 {
		send.Write(marker)
		time.Sleep(time.Millisecond)
	}
	got := 0
	recv.SetReadDeadline(time.Now().Add(2 * time.Second))
	for got < 50 {
		n, err := recv.Read(buf)
		if err != nil {
			break
		}
		if string(buf[:n]) == "fresh" {
			got++
		}
	}
	if got < 45 {
		t.Errorf("after raising the rate, %d of 50 fresh datagrams arrived within 2 s; stats %v", got, u.Stats())
	}
}

// TestUserspaceCloseUnderTraffic closes the link while datagrams are queued and flowing:
// Close must return promptly, leave no TUN or route, and report no reader failure.
func TestUserspaceCloseUnderTraffic(t *testing.T) {
	eps := testNet(t, 2)
	goroutines := runtime.NumGoroutine()
	spec, _ := NewSpec(names(eps))
	spec.SetNode("n1", Impairment{Delay: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u, rtts, err := ApplyUserspace(ctx, eps, spec, 5, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	if len(rtts) != 2 || rtts[0].Requested != 5*time.Millisecond || rtts[0].Samples != 5 {
		t.Fatalf("measurements: %+v", rtts)
	}
	send, _ := udpPair(t, eps[0], eps[1])
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for {
			select {
			case <-stop:
				return
			default:
			}
			send.Write(make([]byte, 1000))
			time.Sleep(20 * time.Microsecond)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	took := time.Since(t0)
	close(stop)
	<-sent
	if took > time.Second {
		t.Errorf("Close under traffic took %v", took)
	}
	if err := u.Err(); err != nil {
		t.Errorf("reader failure reported after a clean Close: %v", err)
	}
	if left := tunState(t, eps); len(left) != 0 {
		t.Errorf("Close left %v", left)
	}
	send.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Errorf("%d goroutines after Close, %d before", g, goroutines)
	}
	t.Logf("Close under traffic took %v; stats %v", took, u.Stats())
}

// TestApplyChoosesBackend: Apply picks the kernel where sch_netem exists, else the
// userspace link, and returns requested-vs-achieved round trips.
func TestApplyChoosesBackend(t *testing.T) {
	testmachine.Alone(t) // it checks the round trips achieved
	eps := testNet(t, 2)
	spec, _ := NewSpec(names(eps))
	// 5 ms each way: the link's own overhead (up to 1.5 ms measured, runs O and N) stays
	// small beside it, and a delay applied twice (20 ms) is far outside the bound.
	spec.SetLink("n1", "n2", Impairment{Delay: 5 * time.Millisecond})
	spec.SetLink("n2", "n1", Impairment{Delay: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, name, rtts, err := Apply(ctx, eps, spec, 30, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	want := BackendUserspace
	if KernelAvailable() == nil {
		want = BackendKernel
	}
	if name != want {
		t.Errorf("backend %s, want %s", name, want)
	}
	for _, r := range rtts {
		t.Logf("%s (%s): requested RTT %v, achieved median %v p99 %v", r.Link, name, r.Requested, r.Median, r.P99)
		if r.Requested != 10*time.Millisecond || r.Median < 9900*time.Microsecond || r.Median > 12500*time.Microsecond {
			t.Errorf("%s: requested %v achieved median %v; want 10ms and 9.9-12.5ms", r.Link, r.Requested, r.Median)
		}
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
}

// bulkTransfer sends size bytes over TCP from a socket in from's namespace to a listener
// in to's namespace and returns the time from the first write until the receiver has read
// everything. Each side is bounded by limit.
func bulkTransfer(from, to Endpoint, size int, limit time.Duration) (time.Duration, error) {
	var ln net.Listener
	if err := InNetns(to.Netns, func() error {
		var err error
		ln, err = net.Listen("tcp4", net.JoinHostPort(to.Addr.String(), "0"))
		return err
	}); err != nil {
		return 0, err
	}
	defer ln.Close()
	done := make(chan time.Time, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- time.Time{}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(limit))
		io.Copy(io.Discard, c)
		done <- time.Now()
	}()
	var start time.Time
	err := InNetns(from.Netns, func() error {
		c, err := net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(limit))
		start = time.Now()
		_, err = c.Write(make([]byte, size))
		return err
	})
	if err != nil {
		return 0, err
	}
	end := <-done
	if end.IsZero() {
		return 0, fmt.Errorf("accept failed")
	}
	return end.Sub(start), nil
}

func TestPacketQueueOrder(t *testing.T) {
	var q packetQueue
	var seq uint64
	for range 2000 {
		seq++
		q.push(packet{due: int64(rand.IntN(50)), seq: seq})
		if rand.IntN(3) == 0 { // interleave pops with pushes
			q.pop()
		}
	}
	prev := packet{due: -1}
	for len(q) > 0 {
		p := q.pop()
		if p.due < prev.due || (p.due == prev.due && p.seq < prev.seq) {
			t.Fatalf("popped (due %d, seq %d) after (due %d, seq %d)", p.due, p.seq, prev.due, prev.seq)
		}
		prev = p
	}
}

func TestWakeEstimatorQuantile(t *testing.T) {
	w := newWakeEstimator()
	wait := int64(600 * time.Microsecond)
	// Wake-ups late by 10-110 us, uniformly: the 90th percentile is 100 us.
	var sum int64
	for i := range 6000 {
		w.observe(wait, int64(10*time.Microsecond)+rand.Int64N(int64(100*time.Microsecond)))
		if i >= 1000 {
			sum += w.est[wakeBucket(wait)]
		}
	}
	if e := time.Duration(sum / 5000); e < 90*time.Microsecond || e > 110*time.Microsecond {
		t.Errorf("estimate %v on average, want about 100us", e)
	}
	if m := time.Duration(w.margin(wait)); m > maxSpin {
		t.Errorf("margin %v above maxSpin", m)
	}
	// Huge lateness (a stalled machine) never makes the margin exceed maxSpin.
	for range 100 {
		w.observe(wait, int64(50*time.Millisecond))
	}
	if m := time.Duration(w.margin(wait)); m != maxSpin {
		t.Errorf("margin %v after stalls, want maxSpin %v", m, maxSpin)
	}
	// Other buckets are untouched.
	if w.est[wakeBucket(int64(5*time.Millisecond))] != newWakeEstimator().est[wakeBucket(int64(5*time.Millisecond))] {
		t.Error("a 5ms sample changed")
	}
}

func TestSpinBudgetBound(t *testing.T) {
	// A thread that would spin all the time gets at most spinShare of the time, after the
	// initial burst.
	b := spinBudget{tokens: int64(spinBurst)}
	var now, spun int64
	for now < int64(time.Second) {
		now += int64(10 * time.Microsecond) // sleeps
		allowed := max(b.refill(now), 0)
		s := min(allowed, int64(100*time.Microsecond))
		now += s
		b.refill(now)
		b.tokens -= s
		spun += s
	}
	if share := float64(spun-int64(spinBurst)) / float64(now); share > spinShare*1.01 {
		t.Errorf("spun %.3f of the time, budget %.2f", share, spinShare)
	}
}

// linkThread returns the tid and scheduling policy (from /proc/self/task/TID/stat) of the
// link thread, "" if there is none.
func linkThread(t *testing.T) (tid string, policy int) {
	t.Helper()
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, e := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/comm")
		if err != nil || strings.TrimSpace(string(b)) != "hbnetem" {
			continue
		}
		st, err := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// Fields after the ")" that ends comm; policy is field 41 of stat.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		p, _ := strconv.Atoi(f[41-3])
		return e.Name(), p
	}
	return "", 0
}

// TestUserspaceRealtime: the link's one thread is named, runs SCHED_FIFO exactly when
// Realtime says so (as root it should), not with HABENCH_NETEM_RT=0, and is gone after
// Close.
func TestUserspaceRealtime(t *testing.T) {
	eps := testNet(t, 2)
	for _, env := range []string{"", "0"} {
		t.Setenv(EnvUserspaceRT, env)
		u, err := NewUserspace(eps, nil)
		if err != nil {
			t.Fatal(err)
		}
		tid, policy := linkThread(t)
		t.Logf("%s=%q: link thread %s, policy %d, Realtime %v", EnvUserspaceRT, env, tid, policy, u.Realtime())
		if tid == "" {
			t.Fatal("no thread named hbnetem")
		}
		if u.Realtime() != (policy == schedFIFO) {
			t.Errorf("Realtime %v, thread policy %d", u.Realtime(), policy)
		}
		if env == "0" && u.Realtime() {
			t.Error("SCHED_FIFO despite HABENCH_NETEM_RT=0")
		}
		if env == "" && os.Geteuid() == 0 && !u.Realtime() {
			t.Log("root, yet no SCHED_FIFO (no real-time runtime for this cgroup?)")
		}
		if err := u.Close(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if tid, _ = linkThread(t); tid == "" {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if tid != "" {
			t.Errorf("link thread %s still there after Close", tid)
		}
	}
}

// TestUserspaceQueueLimit: a delay-only link holds at most queueLimitPackets packets, like
// netem's default limit; the rest are dropped and counted, and nothing is lost silently.
// The delay (2 s) leaves a busy machine 1 s to send the burst before the first packet
// leaves the queue; a send slower than that cannot show the limit and fails the test
// under HABENCH_REQUIRE_SERVERS=1.
func TestUserspaceQueueLimit(t *testing.T) {
	testmachine.Alone(t) // it times a burst against the delay: nothing else may load the machine
	eps := testNet(t, 2)
	spec, _ := NewSpec(names(eps))
	spec.SetLink("n1", "n2", Impairment{Delay: 2 * time.Second})
	u, err := NewUserspace(eps, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	send, _ := udpPair(t, eps[0], eps[1])
	const n = 1500
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := send.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(time.Millisecond) // let the link thread keep up with the TUN queue
		}
	}
	if el := time.Since(start); el > time.Second {
		prereq.Missing(t, "sending took %v (machine too busy): the queue drained while sending, the limit cannot be seen", el)
	}
	l := Link{From: "n1", To: "n2"}
	var st LinkStats
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		st = u.Stats()[l]
		if st.Forwarded+st.Dropped >= n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("2s delay, %d datagrams at once: %+v", n, st)
	if st.Forwarded+st.Dropped != n {
		t.Errorf("forwarded %d + dropped %d != %d sent: packets unaccounted for", st.Forwarded, st.Dropped, n)
	}
	if st.Forwarded > queueLimitPackets || st.Dropped < n-queueLimitPackets-50 {
		t.Errorf("forwarded %d, dropped %d; want at most %d queued, the rest dropped", st.Forwarded, st.Dropped, queueLimitPackets)
	}
}
