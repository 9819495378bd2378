package netem

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

func cmds(cs [][]string) []string {
	var out []string
	for _, c := range cs {
		out = append(out, strings.Join(c, " "))
	}
	return out
}

// TestPlanTC: the tc commands for one host, in detail: an htb root 4862: per interface,
// a class per impaired peer (its rate, or unshaped), a netem leaf only for delay, jitter or
// loss, u32 filters on every address of the peer (IPv4 prio 1, IPv6 prio 2), a pfifo
// limit 0 leaf (drops everything) for a partition; the clear command names habench's handle.
func TestPlanTC(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("fd00::2")
	p, err := PlanTC([]TCPeer{
		{Name: "n2", Index: 1, Addrs: []netip.Addr{v4, v6}, Dev: "eth0",
			Imp: Impairment{Delay: 5 * time.Millisecond, Jitter: 1500 * time.Microsecond, Distribution: DistNormal, Loss: 0.001}},
		{Name: "n3", Index: 2, Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.3")}, Dev: "eth0", Imp: Impairment{Rate: 1250000}},
		{Name: "n4", Index: 3, Addrs: []netip.Addr{netip.MustParseAddr("192.168.9.4"), netip.MustParseAddr("fd00:9::4")}, Dev: "eth1", Imp: Impairment{Partition: true, Delay: time.Millisecond}},
		{Name: "n5", Index: 4, Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.5")}, Dev: "eth0", Imp: Impairment{Delay: 600 * time.Microsecond, Rate: 125000}},
		{Name: "n6", Index: 5, Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.6")}, Dev: "eth0"}, // not impaired
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"tc qdisc add dev eth0 root handle 4862: htb",
		"tc class add dev eth0 parent 4862: classid 4862:2 htb rate 17179869184bit ceil 17179869184bit quantum 60000",
		"tc qdisc add dev eth0 parent 4862:2 handle 4901: netem delay 5000us 1500us distribution normal loss 0.1% limit 1000",
		"tc filter add dev eth0 parent 4862: protocol ip prio 1 u32 match ip dst 10.0.0.2/32 flowid 4862:2",
		"tc filter add dev eth0 parent 4862: protocol ipv6 prio 2 u32 match ip6 dst fd00::2/128 flowid 4862:2",
		"tc class add dev eth0 parent 4862: classid 4862:3 htb rate 10000000bit ceil 10000000bit quantum 60000",
		"tc filter add dev eth0 parent 4862: protocol ip prio 1 u32 match ip dst 10.0.0.3/32 flowid 4862:3",
		"tc class add dev eth0 parent 4862: classid 4862:5 htb rate 1000000bit ceil 1000000bit quantum 60000",
		"tc qdisc add dev eth0 parent 4862:5 handle 4904: netem delay 600us limit 1000",
		"tc filter add dev eth0 parent 4862: protocol ip prio 1 u32 match ip dst 10.0.0.5/32 flowid 4862:5",
		"tc qdisc add dev eth1 root handle 4862: htb",
		"tc class add dev eth1 parent 4862: classid 4862:4 htb rate 17179869184bit ceil 17179869184bit quantum 60000",
		"tc qdisc add dev eth1 parent 4862:4 handle 4903: pfifo limit 0",
		"tc filter add dev eth1 parent 4862: protocol ip prio 1 u32 match ip dst 192.168.9.4/32 flowid 4862:4",
		"tc filter add dev eth1 parent 4862: protocol ipv6 prio 2 u32 match ip6 dst fd00:9::4/128 flowid 4862:4",
	}
	if got := cmds(p.Apply); !reflect.DeepEqual(got, want) {
		t.Errorf("apply:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := cmds(p.Clear); !reflect.DeepEqual(got, []string{"tc qdisc del dev eth0 root handle 4862:", "tc qdisc del dev eth1 root handle 4862:"}) {
		t.Errorf("clear: %q", got)
	}
	if !reflect.DeepEqual(p.Devs, []string{"eth0", "eth1"}) || !p.NeedNetem {
		t.Errorf("devs %v netem %v", p.Devs, p.NeedNetem)
	}

	// Rate and partition: no netem needed (what a kernel without sch_netem can do).
	p, err = PlanTC([]TCPeer{{Name: "n2", Index: 1, Addrs: []netip.Addr{v4}, Dev: "eth0", Imp: Impairment{Partition: true}}})
	if err != nil || p.NeedNetem || len(p.Apply) != 4 {
		t.Errorf("partition: %v %v", cmds(p.Apply), err)
	}
	p, err = PlanTC([]TCPeer{{Name: "n2", Index: 1, Addrs: []netip.Addr{v4}, Dev: "eth0", Imp: Impairment{Rate: 125000}}})
	if err != nil || p.NeedNetem || len(p.Apply) != 3 {
		t.Errorf("rate only: %v %v", cmds(p.Apply), err)
	}
	// Nothing impaired: no command at all.
	if p, err := PlanTC([]TCPeer{{Name: "n2", Index: 1, Addrs: []netip.Addr{v4}, Dev: "eth0"}}); err != nil || len(p.Apply)+len(p.Clear)+len(p.Devs) != 0 {
		t.Errorf("nothing: %+v %v", p, err)
	}
	for _, c := range []struct {
		peers []TCPeer
		want  string
	}{
		{[]TCPeer{{Name: "n2", Index: 1, Dev: "eth0", Imp: Impairment{Delay: time.Millisecond}}}, "link to n2: no address"},
		{[]TCPeer{{Name: "n2", Index: 1, Addrs: []netip.Addr{v4}, Imp: Impairment{Delay: time.Millisecond}}}, "link to n2: no interface"},
		{[]TCPeer{{Name: "n2", Index: 1, Addrs: []netip.Addr{v4}, Dev: "eth0", Imp: Impairment{Delay: time.Millisecond}},
			{Name: "n3", Index: 1, Addrs: []netip.Addr{v4}, Dev: "eth0", Imp: Impairment{Delay: time.Millisecond}}}, "link to n3: index 1"},
		{[]TCPeer{{Name: "n2", Index: 1, Addrs: []netip.Addr{v4}, Dev: "eth0", Imp: Impairment{Loss: 2}}}, "link to n2"},
	} {
		if _, err := PlanTC(c.peers); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.peers, err, c.want)
		}
	}
}

func TestRootConflict(t *testing.T) {
	qs, err := ParseTCQdiscs([]byte(`[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}},
		{"kind":"clsact","handle":"ffff:","parent":"ffff:fff1","options":{}}]`))
	if err != nil || RootConflict("eth0", qs) != "" || OursOn("eth0", qs) {
		t.Errorf("default root + clsact: %v %q", err, RootConflict("eth0", qs))
	}
	qs, _ = ParseTCQdiscs([]byte(`[{"kind":"tbf","handle":"8001:","root":true,"options":{}}]`))
	if c := RootConflict("eth0", qs); !strings.Contains(c, "dev eth0 has a root qdisc of its own (tbf 8001:)") {
		t.Errorf("tbf root: %q", c)
	}
	qs, _ = ParseTCQdiscs([]byte(`[{"kind":"htb","handle":"4862:","root":true,"options":{}},{"kind":"netem","handle":"4901:","parent":"4862:2"}]`))
	if RootConflict("eth0", qs) != "" || !OursOn("eth0", qs) {
		t.Errorf("our root: conflict %q ours %v", RootConflict("eth0", qs), OursOn("eth0", qs))
	}
}
