// Package netem impairs the links between a sandbox's nodes: delay, jitter, loss, rate and
// partitions. Impairments are one-way per
// directed link (see Impairment). Two backends: kernel netem qdiscs (conversion in
// kernel.go) and, where the kernel has no sch_netem, the userspace link (userspace.go).
package netem

import (
	"errors"
	"fmt"
	"os"

	"github.com/habench/habench/internal/nsutil"
	"github.com/vishvananda/netlink"
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
