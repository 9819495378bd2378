// Package netem impairs the links between a sandbox's nodes: delay, jitter, loss, rate and
// partitions. Impairments are one-way per
// directed link (see Impairment). Two backends: kernel netem qdiscs (conversion in
// kernel.go) and, where the kernel has no sch_netem, the userspace link (userspace.go).
package netem

import (
	"errors"
	"fmt"
	"os"

	"github.com/habench/habench/nsutil"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// KernelAvailable reports whether a netem qdisc can be attached here: it creates a
// throwaway network namespace, adds netem to its loopback through netlink, and removes
// both. nil means usable; the error says why not (not root, or no sch_netem in the kernel).
func KernelAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: netem qdiscs need CAP_NET_ADMIN")
	}
	ns, err := nsutil.New("")
	if err != nil {
		return fmt.Errorf("create probe namespace: %w", err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return err
	}
	q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		netlink.NetemQdiscAttrs{Latency: 1000})
	if err := h.QdiscAdd(q); err != nil {
		return fmt.Errorf("kernel has no usable sch_netem (adding a netem qdisc failed: %v); the userspace link is needed", err)
	}
	return nil
}

// Residue lists what habench's impairments left in endpoint e's namespace: the userspace
// link's TUN device (TunName), /32 routes (the link's per-peer routes), and htb or netem
// qdiscs on any interface (the kernel backend's). Empty when nothing is applied. Error:
// the namespace cannot be opened.
func Residue(e Endpoint) ([]string, error) {
	ns, err := netns.GetFromName(e.Netns)
	if err != nil {
		return nil, fmt.Errorf("open namespace %s: %w", e.Netns, err)
	}
	h, err := netlink.NewHandleAt(ns)
	ns.Close()
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", e.Netns, err)
	}
	defer h.Close()
	var left []string
	if l, err := h.LinkByName(TunName); err == nil {
		left = append(left, "device "+l.Attrs().Name)
	}
	routes, _ := h.RouteList(nil, netlink.FAMILY_V4)
	for _, r := range routes {
		if r.Dst != nil && r.Dst.IP.To4() != nil {
			if ones, _ := r.Dst.Mask.Size(); ones == 32 {
				left = append(left, "route "+r.Dst.String())
			}
		}
	}
	links, _ := h.LinkList()
	for _, l := range links {
		qs, _ := h.QdiscList(l)
		for _, q := range qs {
			if q.Type() == "htb" || q.Type() == "netem" {
				left = append(left, fmt.Sprintf("qdisc %s on %s", q.Type(), l.Attrs().Name))
			}
		}
	}
	return left, nil
}
