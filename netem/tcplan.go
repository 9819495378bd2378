package netem

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TCMajor is the major handle of every qdisc habench creates with tc on a user's host
// ("4862:", "Hb" in ASCII): its root htb is 4862:, the classes 4862:X and the leaves
// 49XX:. Clear deletes a root qdisc only when it carries this handle (the kernel refuses
// `tc qdisc del dev D root handle 4862:` for any other root), so it can never remove a
// qdisc of the host's own.
const TCMajor = 0x4862

// tcLeafBase is the major of leaf qdiscs: 0x4900 + peer index.
const tcLeafBase = 0x4900

// tcUnshaped is the htb rate of classes that only carry a netem leaf (shaping is netem's
// job there): 2^31 bytes/s, as the sandbox backend uses.
const tcUnshaped = uint64(1) << 31

// TCPeer is one impaired directed link as seen on the sending host: the egress towards
// peer Name, whose addresses (IPv4 and/or IPv6) the filters match, on interface Dev (the
// one `ip route get ADDR` names on the sender).
type TCPeer struct {
	Name  string
	Index int // the peer's position in the cluster (0-based): class 4862:(Index+1)
	Addrs []netip.Addr
	Dev   string
	Imp   Impairment
}

// TCPlan is the tc commands for one host: Apply (in order) creates habench's root htb on
// each of Devs with one class per impaired peer, a netem leaf where delay, jitter or loss
// are asked for, a rate in the class where a rate is, a `pfifo limit 0` leaf (it drops
// every packet) for a partition, and u32 filters on the peer's addresses. Only built-in
// or common modules are needed (sch_htb, cls_u32, and sch_netem for netem leaves; no tc
// actions). Clear removes exactly those roots (with their classes, filters and leaves).
type TCPlan struct {
	Devs  []string
	Apply [][]string
	Clear [][]string
	// NeedNetem: some leaf is netem (sch_netem needed).
	NeedNetem bool
}

// NeedsNetem reports whether imp needs a netem qdisc (delay, jitter or loss); a rate
// alone is an htb class rate and a partition a leaf that drops everything.
func NeedsNetem(imp Impairment) bool {
	return !imp.Partition && (imp.Delay > 0 || imp.Jitter > 0 || imp.Loss > 0)
}

// PlanTC returns the plan for one host's impaired egress links. Pure. Errors: a peer
// without an address or interface, an invalid impairment, two peers with one index, a
// jitter distribution tc does not know.
func PlanTC(peers []TCPeer) (TCPlan, error) {
	var p TCPlan
	byDev := map[string][]TCPeer{}
	seen := map[int]bool{}
	for _, pe := range peers {
		if pe.Imp.IsZero() {
			continue
		}
		if err := pe.Imp.Validate(); err != nil {
			return p, fmt.Errorf("link to %s: %w", pe.Name, err)
		}
		if len(pe.Addrs) == 0 {
			return p, fmt.Errorf("link to %s: no address to match", pe.Name)
		}
		if pe.Dev == "" {
			return p, fmt.Errorf("link to %s: no interface routes to it", pe.Name)
		}
		if pe.Index < 0 || pe.Index > 0xfe || seen[pe.Index] {
			return p, fmt.Errorf("link to %s: index %d: want a distinct 0 to 254", pe.Name, pe.Index)
		}
		seen[pe.Index] = true
		byDev[pe.Dev] = append(byDev[pe.Dev], pe)
	}
	for dev := range byDev {
		p.Devs = append(p.Devs, dev)
	}
	slices.Sort(p.Devs)
	root := fmt.Sprintf("%x:", TCMajor)
	for _, dev := range p.Devs {
		ps := byDev[dev]
		slices.SortFunc(ps, func(a, b TCPeer) int { return a.Index - b.Index })
		// htb without a default class: unclassified traffic (everything but the
		// impaired peers) leaves unshaped.
		p.Apply = append(p.Apply, []string{"tc", "qdisc", "add", "dev", dev, "root", "handle", root, "htb"})
		for _, pe := range ps {
			classid := fmt.Sprintf("%x:%x", TCMajor, pe.Index+1)
			leafHandle := fmt.Sprintf("%x:", tcLeafBase+pe.Index)
			rate := tcUnshaped
			if pe.Imp.Rate > 0 && !pe.Imp.Partition {
				rate = pe.Imp.Rate
			}
			bits := strconv.FormatUint(rate*8, 10) + "bit"
			// quantum: bytes a class sends per round; explicit, since htb's default
			// (rate/10) is out of range at high rates.
			p.Apply = append(p.Apply, []string{"tc", "class", "add", "dev", dev, "parent", root, "classid", classid, "htb", "rate", bits, "ceil", bits, "quantum", "60000"})
			switch {
			case pe.Imp.Partition:
				p.Apply = append(p.Apply, []string{"tc", "qdisc", "add", "dev", dev, "parent", classid, "handle", leafHandle, "pfifo", "limit", "0"})
			case NeedsNetem(pe.Imp):
				p.NeedNetem = true
				leaf, err := netemArgs(pe.Imp)
				if err != nil {
					return TCPlan{}, fmt.Errorf("link to %s: %w", pe.Name, err)
				}
				p.Apply = append(p.Apply, append([]string{"tc", "qdisc", "add", "dev", dev, "parent", classid, "handle", leafHandle}, leaf...))
			}
			action := []string{"flowid", classid}
			for _, a := range pe.Addrs {
				proto, prio, match := "ipv6", "2", []string{"match", "ip6", "dst", a.String() + "/128"}
				if a = a.Unmap(); a.Is4() {
					proto, prio, match = "ip", "1", []string{"match", "ip", "dst", a.String() + "/32"}
				}
				f := []string{"tc", "filter", "add", "dev", dev, "parent", root, "protocol", proto, "prio", prio, "u32"}
				f = append(append(f, match...), action...)
				p.Apply = append(p.Apply, f)
			}
		}
		p.Clear = append(p.Clear, ClearTC(dev))
	}
	return p, nil
}

// ClearTC is the command that removes habench's root qdisc from dev and nothing else: the
// kernel refuses it unless the root's handle is TCMajor.
func ClearTC(dev string) []string {
	return []string{"tc", "qdisc", "del", "dev", dev, "root", "handle", fmt.Sprintf("%x:", TCMajor)}
}

// netemArgs renders imp's delay, jitter, distribution and loss as tc netem arguments:
// "netem delay 5000us 1000us distribution normal loss 0.1% limit 1000". Times in whole
// microseconds, loss in percent with up to 4 decimals.
func netemArgs(imp Impairment) ([]string, error) {
	us := func(d time.Duration) string {
		return strconv.FormatInt(int64(math.Round(float64(d)/float64(time.Microsecond))), 10) + "us"
	}
	a := []string{"netem", "delay", us(imp.Delay)}
	if imp.Jitter > 0 {
		a = append(a, us(imp.Jitter))
		switch imp.Distribution {
		case "", DistUniform:
		case DistNormal:
			a = append(a, "distribution", "normal")
		default:
			return nil, fmt.Errorf("distribution %q: tc knows uniform and normal", imp.Distribution)
		}
	}
	if imp.Loss > 0 {
		a = append(a, "loss", strconv.FormatFloat(imp.Loss*100, 'f', -1, 64)+"%")
	}
	return append(a, "limit", strconv.Itoa(netemDefaultLimit)), nil
}

// TCQdisc is one entry of `tc -j qdisc show`.
type TCQdisc struct {
	Kind   string `json:"kind"`
	Handle string `json:"handle"`
	Dev    string `json:"dev"`
	Root   bool   `json:"root"`
	Parent string `json:"parent"`
}

// ParseTCQdiscs reads `tc -j qdisc show [dev D]`.
func ParseTCQdiscs(b []byte) ([]TCQdisc, error) {
	var qs []TCQdisc
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(b, &qs); err != nil {
		return nil, fmt.Errorf("tc -j qdisc show: %w", err)
	}
	return qs, nil
}

// RootConflict says why habench cannot put its root qdisc on dev given the device's
// qdiscs qs ("" when it can): a root qdisc of the host's own (a handle other than 0:, the
// kernel's default) would have to be replaced, and habench never replaces or alters a
// qdisc it did not create. habench's own root (TCMajor) is no conflict: it is replaced.
func RootConflict(dev string, qs []TCQdisc) string {
	for _, q := range qs {
		if q.Root && (q.Dev == "" || q.Dev == dev) && q.Handle != "0:" && q.Handle != fmt.Sprintf("%x:", TCMajor) {
			return fmt.Sprintf("dev %s has a root qdisc of its own (%s %s): habench does not replace or alter qdiscs it did not create (remove it, or impair on hosts without one)", dev, q.Kind, q.Handle)
		}
	}
	return ""
}

// OursOn reports whether qs (of dev) has habench's root qdisc.
func OursOn(dev string, qs []TCQdisc) bool {
	for _, q := range qs {
		if q.Root && (q.Dev == "" || q.Dev == dev) && q.Handle == fmt.Sprintf("%x:", TCMajor) && q.Kind == "htb" {
			return true
		}
	}
	return false
}
