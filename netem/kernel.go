package netem

import (
	"fmt"
	"math"
	"time"

	"github.com/vishvananda/netlink"
)

// netemDefaultLimit is tc's default netem queue limit, in packets.
const netemDefaultLimit = 1000

// NetemAttrs converts one directed link's impairment to the attributes of a kernel netem
// qdisc: Latency and Jitter in microseconds (rounded to the nearest), Loss in percent
// (Partition is 100%), Rate64 in bytes per second, Limit 1000 packets. It is pure. The
// delay is one-way, exactly as netem applies it on the egress of the sending side.
// Errors: an invalid impairment, a delay or jitter beyond netlink's 32-bit microseconds,
// or Distribution "normal", which needs a distribution table netlink v1.3.1 cannot load
// (netem without a table jitters uniformly, which is what "uniform" means here).
func NetemAttrs(imp Impairment) (netlink.NetemQdiscAttrs, error) {
	if err := imp.Validate(); err != nil {
		return netlink.NetemQdiscAttrs{}, err
	}
	if imp.Jitter > 0 && imp.Distribution == DistNormal {
		return netlink.NetemQdiscAttrs{}, fmt.Errorf("distribution %q: the kernel backend supports only %q jitter", imp.Distribution, DistUniform)
	}
	us := func(field string, d time.Duration) (uint32, error) {
		v := math.Round(float64(d) / float64(time.Microsecond))
		if v > math.MaxUint32 {
			return 0, fmt.Errorf("%s %v: too large for netem", field, d)
		}
		return uint32(v), nil
	}
	lat, err := us("delay", imp.Delay)
	if err != nil {
		return netlink.NetemQdiscAttrs{}, err
	}
	jit, err := us("jitter", imp.Jitter)
	if err != nil {
		return netlink.NetemQdiscAttrs{}, err
	}
	a := netlink.NetemQdiscAttrs{
		Latency: lat,
		Jitter:  jit,
		Loss:    float32(imp.Loss * 100),
		Limit:   netemDefaultLimit,
		Rate64:  imp.Rate,
	}
	if imp.Partition {
		a.Loss = 100
	}
	return a, nil
}
