package netem

import (
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

func TestNetemAttrs(t *testing.T) {
	cases := []struct {
		in   Impairment
		want netlink.NetemQdiscAttrs
	}{
		{Impairment{}, netlink.NetemQdiscAttrs{Limit: 1000}},
		{Impairment{Delay: 600 * time.Microsecond}, netlink.NetemQdiscAttrs{Latency: 600, Limit: 1000}},
		{Impairment{Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Distribution: DistUniform},
			netlink.NetemQdiscAttrs{Latency: 5000, Jitter: 1000, Limit: 1000}},
		{Impairment{Delay: 1500 * time.Nanosecond}, netlink.NetemQdiscAttrs{Latency: 2, Limit: 1000}},
		{Impairment{Loss: 0.01}, netlink.NetemQdiscAttrs{Loss: 1, Limit: 1000}},
		{Impairment{Loss: 0.2, Partition: true}, netlink.NetemQdiscAttrs{Loss: 100, Limit: 1000}},
		{Impairment{Rate: 1250000}, netlink.NetemQdiscAttrs{Rate64: 1250000, Limit: 1000}},
	}
	for _, c := range cases {
		got, err := NetemAttrs(c.in)
		if err != nil || got != c.want {
			t.Errorf("NetemAttrs(%v) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []Impairment{
		{Loss: 2},
		{Jitter: time.Millisecond, Distribution: DistNormal},
		{Delay: -time.Microsecond},
	} {
		if _, err := NetemAttrs(bad); err == nil {
			t.Errorf("NetemAttrs(%+v): want an error", bad)
		}
	}
}

// TestKernelNetemQdisc attaches the converted attributes to a real netem qdisc and reads
// them back; it needs root and a kernel with sch_netem.
func TestKernelNetemQdisc(t *testing.T) {
	if err := KernelAvailable(); err != nil {
		t.Skipf("kernel netem unusable here: %v", err)
	}
	t.Skip("kernel apply backend not written yet (issue 4); conversion covered by TestNetemAttrs")
}
