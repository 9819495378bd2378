package netem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
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

// Kernel applies impairments with kernel qdiscs: in each endpoint's namespace, on the
// interface holding the endpoint's address, an htb root (1:) whose unclassified traffic
// passes unshaped, and for every impaired directed link i->j a class 1:(j+1) with a
// netem leaf (NetemAttrs) selected by a u32 filter on destination address j. netem acts
// on egress, so link i->j is impaired on i's side: one-way, as the Spec says. Needs root
// and sch_netem (see KernelAvailable). Always Close.
type Kernel struct {
	eps     []Endpoint
	touched []bool // a root qdisc of ours may exist in eps[i]'s namespace
	// leaf builds the per-link leaf qdisc; netemLeaf except in tests on kernels
	// without sch_netem, which check the htb/class/filter structure with another leaf.
	leaf func(netlink.QdiscAttrs, Impairment) (netlink.Qdisc, error)
}

func netemLeaf(a netlink.QdiscAttrs, imp Impairment) (netlink.Qdisc, error) {
	attrs, err := NetemAttrs(imp)
	if err != nil {
		return nil, err
	}
	return netlink.NewNetem(a, attrs), nil
}

// NewKernel applies spec to eps with kernel qdiscs. On error nothing is left behind.
func NewKernel(eps []Endpoint, spec *Spec) (*Kernel, error) {
	return newKernel(eps, spec, netemLeaf)
}

func newKernel(eps []Endpoint, spec *Spec, leaf func(netlink.QdiscAttrs, Impairment) (netlink.Qdisc, error)) (*Kernel, error) {
	k := &Kernel{eps: eps, touched: make([]bool, len(eps)), leaf: leaf}
	if err := k.Update(spec); err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

// Update replaces every endpoint's qdiscs with those for spec (nil: none). On error the
// qdiscs are in an unknown state: Close (or another Update) cleans them.
func (k *Kernel) Update(spec *Spec) error {
	idx := map[string]int{}
	for i, e := range k.eps {
		idx[e.Name] = i
	}
	if spec != nil {
		for l := range spec.Links {
			if _, ok := idx[l.From]; !ok {
				return fmt.Errorf("link %s: node %s has no endpoint", l, l.From)
			}
			if _, ok := idx[l.To]; !ok {
				return fmt.Errorf("link %s: node %s has no endpoint", l, l.To)
			}
		}
	}
	for i := range k.eps {
		if err := k.apply(i, spec); err != nil {
			return fmt.Errorf("endpoint %s: %w", k.eps[i].Name, err)
		}
	}
	return nil
}

func (k *Kernel) handle(i int) (*netlink.Handle, netlink.Link, error) {
	e := k.eps[i]
	ns, err := netns.GetFromName(e.Netns)
	if err != nil {
		return nil, nil, fmt.Errorf("open namespace %s: %w", e.Netns, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, nil, fmt.Errorf("netlink in %s: %w", e.Netns, err)
	}
	addrs, err := h.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("addresses in %s: %w", e.Netns, err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && ip == e.Addr {
			l, err := h.LinkByIndex(a.LinkIndex)
			if err != nil {
				h.Close()
				return nil, nil, err
			}
			return h, l, nil
		}
	}
	h.Close()
	return nil, nil, fmt.Errorf("no interface in %s holds %v", e.Netns, e.Addr)
}

func (k *Kernel) apply(i int, spec *Spec) error {
	h, l, err := k.handle(i)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := clearRoot(h, l); err != nil {
		return fmt.Errorf("clear qdiscs on %s: %w", l.Attrs().Name, err)
	}
	k.touched[i] = false
	var links []int
	for j := range k.eps {
		if j != i && spec != nil && !spec.Get(k.eps[i].Name, k.eps[j].Name).IsZero() {
			links = append(links, j)
		}
	}
	if len(links) == 0 {
		return nil
	}
	idx := l.Attrs().Index
	k.touched[i] = true
	root := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	if err := h.QdiscAdd(root); err != nil {
		return fmt.Errorf("htb root on %s: %w", l.Attrs().Name, err)
	}
	for _, j := range links {
		to := k.eps[j]
		imp := spec.Get(k.eps[i].Name, to.Name)
		classID := netlink.MakeHandle(1, uint16(j+1))
		cls := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: idx, Parent: netlink.MakeHandle(1, 0), Handle: classID},
			netlink.HtbClassAttrs{Rate: 1 << 31, Ceil: 1 << 31}) // ~17 Gbit/s: shaping is netem's job
		if err := h.ClassAdd(cls); err != nil {
			return fmt.Errorf("htb class for %s->%s: %w", k.eps[i].Name, to.Name, err)
		}
		leaf, err := k.leaf(netlink.QdiscAttrs{LinkIndex: idx, Parent: classID, Handle: netlink.MakeHandle(uint16(j+10), 0)}, imp)
		if err != nil {
			return fmt.Errorf("link %s->%s: %w", k.eps[i].Name, to.Name, err)
		}
		if err := h.QdiscAdd(leaf); err != nil {
			return fmt.Errorf("netem for %s->%s (%v): %w", k.eps[i].Name, to.Name, imp, err)
		}
		dst := to.Addr.As4()
		f := &netlink.U32{
			FilterAttrs: netlink.FilterAttrs{LinkIndex: idx, Parent: netlink.MakeHandle(1, 0), Priority: 1, Protocol: unix.ETH_P_IP},
			ClassId:     classID,
			Sel: &netlink.TcU32Sel{Flags: nl.TC_U32_TERMINAL, Keys: []netlink.TcU32Key{
				{Mask: 0xffffffff, Val: binary.BigEndian.Uint32(dst[:]), Off: 16}, // IPv4 destination
			}},
		}
		if err := h.FilterAdd(f); err != nil {
			return fmt.Errorf("u32 filter for %s->%s: %w", k.eps[i].Name, to.Name, err)
		}
	}
	return nil
}

// clearRoot removes the link's root qdisc (and with it classes, filters and leaves);
// a link without one is fine.
func clearRoot(h *netlink.Handle, l netlink.Link) error {
	qs, err := h.QdiscList(l)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT && q.Type() == "htb" {
			return h.QdiscDel(q)
		}
	}
	return nil
}

// ClearKernel removes habench's root qdisc (htb) from every endpoint's interface, whoever
// applied it: `netem clear` after a crash, from the state file. Endpoints without one are
// fine; a missing namespace is an error.
func ClearKernel(eps []Endpoint) error {
	k := &Kernel{eps: eps, touched: make([]bool, len(eps))}
	for i := range k.touched {
		k.touched[i] = true
	}
	return k.Close()
}

// Close removes the qdiscs NewKernel or Update added. It is safe to call more than once.
func (k *Kernel) Close() error {
	var errs []error
	for i, t := range k.touched {
		if !t {
			continue
		}
		h, l, err := k.handle(i)
		if err == nil {
			err = clearRoot(h, l)
			h.Close()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("endpoint %s: %w", k.eps[i].Name, err))
			continue
		}
		k.touched[i] = false
	}
	return errors.Join(errs...)
}
