package netem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/habench/habench/host"
)

// BackendRemote is the backend of impairments applied with tc on a user's hosts over SSH.
const BackendRemote = "tc-ssh"

// RemoteEndpoint is a node whose host habench reaches through host.Host (over SSH for an
// existing cluster): Name as in Spec, Addr its server's host as the DSN gives it (an
// address or a name the other hosts resolve), Port its MySQL port (the round-trip probes
// time TCP handshakes to it).
type RemoteEndpoint struct {
	Name string
	Host host.Host
	Addr string
	Port int
}

// HostCheck is what a host offers for impairments: Problems lists, each as one short
// phrase, what stops tc from working there (no tc, no right to change qdiscs, no htb or
// u32); NoNetem says why delay, jitter and loss (sch_netem) cannot be applied ("" when
// they can).
type HostCheck struct {
	Problems []string
	NoNetem  string
	// NoTUN says why the userspace link agent cannot run there (no /dev/net/tun); "" when
	// it can: delay, jitter and loss then go to the agent where NoNetem is set.
	NoTUN string
}

// probeScript checks tc, the user's CAP_NET_ADMIN (bit 12 of CapEff) and, in a throwaway
// network namespace (unshare -n: nothing on the host changes), that an htb root with a
// class, a u32 filter and a pfifo leaf (rate limits, partitions) and a netem qdisc can be
// attached. One line per fact.
const probeScript = `export LC_ALL=C
if command -v tc >/dev/null 2>&1; then echo tc=ok; else echo tc=missing; fi
if [ -c /dev/net/tun ]; then echo tun=ok; else echo "tun=missing no /dev/net/tun"; fi
cap=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
if [ -n "$cap" ] && [ $(( (0x$cap >> 12) & 1 )) = 1 ]; then echo netadmin=ok; else echo "netadmin=missing uid $(id -u)"; fi
if command -v tc >/dev/null 2>&1 && command -v unshare >/dev/null 2>&1; then
  if out=$(unshare -n tc qdisc add dev lo root handle 1: netem delay 1ms 2>&1); then echo netem=ok; else echo "netem=missing $out"; fi
  if out=$(unshare -n sh -c 'tc qdisc add dev lo root handle 1: htb && tc class add dev lo parent 1: classid 1:2 htb rate 1mbit && tc qdisc add dev lo parent 1:2 handle 2: pfifo limit 0 && tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip dst 127.0.0.2/32 flowid 1:2' 2>&1); then echo htb=ok; else echo "htb=missing $out"; fi
elif grep -qw sch_netem /proc/modules 2>/dev/null || grep -qs /sch_netem.ko /lib/modules/$(uname -r)/modules.builtin || [ -n "$(find /lib/modules/$(uname -r) -name 'sch_netem.ko*' 2>/dev/null | head -n 1)" ]; then
  echo netem=ok
else
  echo "netem=missing no sch_netem module (and no unshare to test it)"
fi
`

// CheckHost probes h without changing anything on it (see probeScript). Error: the host
// cannot be reached or the probe cannot run at all.
func CheckHost(ctx context.Context, h host.Host) (HostCheck, error) {
	out, err := h.Run(ctx, "sh", "-c", probeScript)
	if err != nil {
		return HostCheck{}, err
	}
	var c HostCheck
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		v, why, _ := strings.Cut(v, " ")
		if v != "missing" {
			continue
		}
		switch k {
		case "tc":
			c.Problems = append(c.Problems, "no tc (install iproute2)")
		case "netadmin":
			c.Problems = append(c.Problems, fmt.Sprintf("the ssh user (%s) has no CAP_NET_ADMIN: it cannot change qdiscs (connect as root)", why))
		case "netem":
			c.NoNetem = "no sch_netem in the kernel (" + strings.TrimSuffix(strings.TrimPrefix(firstLineOf(why), "Error: "), ".") + ")"
		case "tun":
			c.NoTUN = "no TUN device (/dev/net/tun missing): the userspace link agent cannot run there"
		case "htb":
			c.Problems = append(c.Problems, "cannot attach an htb class with a u32 filter: "+firstLineOf(why))
		}
	}
	return c, nil
}

// HostsBackend is the backend of a run's delay, jitter or loss on hosts that checks
// describe (CheckHost, one per host, any order): BackendHostAgent when a host lacks
// sch_netem but has a TUN device (the agents then carry the whole spec on every host: one
// backend per run), else BackendRemote (tc over SSH; it refuses delay, jitter and loss
// on a host without sch_netem). Only a cluster habench deployed on the hosts can take the
// agents (their binary goes to the node directories): the caller checks that. Pure.
func HostsBackend(checks []HostCheck) string {
	for _, c := range checks {
		if c.NoNetem != "" && c.NoTUN == "" {
			return BackendHostAgent
		}
	}
	return BackendRemote
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// RemoteHostPlan is one host's share of a remote impairment: the plan and the peers it
// was made from.
type RemoteHostPlan struct {
	Node  string
	Host  host.Host
	Plan  TCPlan
	Peers []TCPeer
}

// PlanRemote resolves, on each endpoint's host, every impaired peer's addresses (the DSN
// address itself, or `getent ahosts NAME` there) and the interface that routes to each
// (`ip -j route get ADDR` there), and returns every host's plan. Nothing changes on any
// host. Errors name the node and the peer.
func PlanRemote(ctx context.Context, eps []RemoteEndpoint, spec *Spec) ([]RemoteHostPlan, error) {
	var out []RemoteHostPlan
	for i, from := range eps {
		if from.Host == nil {
			return nil, fmt.Errorf("node %s: no host access (register the cluster with --ssh)", from.Name)
		}
		hp := RemoteHostPlan{Node: from.Name, Host: from.Host}
		for j, to := range eps {
			imp := spec.Get(from.Name, to.Name)
			if i == j || imp.IsZero() {
				continue
			}
			addrs, err := resolveOn(ctx, from.Host, to.Addr)
			if err != nil {
				return nil, fmt.Errorf("node %s (%s): address of %s (%s): %w", from.Name, from.Host.Name(), to.Name, to.Addr, err)
			}
			for _, a := range addrs {
				dev, err := routeDev(ctx, from.Host, a)
				if err != nil {
					return nil, fmt.Errorf("node %s (%s): route to %s (%s): %w", from.Name, from.Host.Name(), to.Name, a, err)
				}
				// One peer entry per interface: a peer reached over two interfaces (IPv4 on
				// one, IPv6 on another) gets a class on each.
				k := slices.IndexFunc(hp.Peers, func(p TCPeer) bool { return p.Name == to.Name && p.Dev == dev })
				if k < 0 {
					hp.Peers = append(hp.Peers, TCPeer{Name: to.Name, Index: j, Dev: dev, Imp: imp})
					k = len(hp.Peers) - 1
				}
				hp.Peers[k].Addrs = append(hp.Peers[k].Addrs, a)
			}
		}
		plan, err := PlanTC(hp.Peers)
		if err != nil {
			return nil, fmt.Errorf("node %s (%s): %w", from.Name, from.Host.Name(), err)
		}
		hp.Plan = plan
		out = append(out, hp)
	}
	return out, nil
}

// resolveOn returns addr's addresses as host h resolves them (addr itself if it is one).
func resolveOn(ctx context.Context, h host.Host, addr string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(addr); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	out, err := h.Run(ctx, "getent", "ahosts", addr)
	if err != nil {
		return nil, fmt.Errorf("getent ahosts %s: %w", addr, err)
	}
	var as []netip.Addr
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if a, err := netip.ParseAddr(f[0]); err == nil && !slices.Contains(as, a.Unmap()) {
			as = append(as, a.Unmap())
		}
	}
	if len(as) == 0 {
		return nil, fmt.Errorf("getent ahosts %s: no address", addr)
	}
	return as, nil
}

// routeDev returns the interface h routes a through.
func routeDev(ctx context.Context, h host.Host, a netip.Addr) (string, error) {
	out, err := h.Run(ctx, "ip", "-j", "route", "get", a.String())
	if err != nil {
		return "", err
	}
	var rs []struct {
		Dev string `json:"dev"`
	}
	if err := json.Unmarshal(out, &rs); err != nil || len(rs) == 0 || rs[0].Dev == "" {
		return "", fmt.Errorf("ip -j route get %s: unreadable answer %q", a, strings.TrimSpace(string(out)))
	}
	return rs[0].Dev, nil
}

// CheckPlans refuses, before anything changes on any host, what cannot be applied
// faithfully: a host whose tc, rights, htb/u32 or sch_netem (for delay, jitter, loss) is
// missing, and an interface with a root qdisc of the host's own
// (RootConflict). One error per problem, each naming the node and the host.
func CheckPlans(ctx context.Context, plans []RemoteHostPlan) error {
	var errs []error
	for _, hp := range plans {
		if len(hp.Plan.Devs) == 0 {
			continue
		}
		name := fmt.Sprintf("node %s (%s)", hp.Node, hp.Host.Name())
		c, err := CheckHost(ctx, hp.Host)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		for _, p := range c.Problems {
			errs = append(errs, fmt.Errorf("%s: %s", name, p))
		}
		if hp.Plan.NeedNetem && c.NoNetem != "" {
			errs = append(errs, fmt.Errorf("%s: %s; delay, jitter and loss need it (rate limits and partitions do not)", name, c.NoNetem))
		}
		if len(c.Problems) > 0 {
			continue
		}
		for _, dev := range hp.Plan.Devs {
			out, err := hp.Host.Run(ctx, "tc", "-j", "qdisc", "show", "dev", dev)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			qs, err := ParseTCQdiscs(out)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			if why := RootConflict(dev, qs); why != "" {
				errs = append(errs, fmt.Errorf("%s: %s", name, why))
			}
		}
	}
	return errors.Join(errs...)
}

// ApplyPlans runs every host's Apply commands, host after host. On error the caller
// clears (ClearRemote) what the record names: the caller records every host's Devs
// before calling, so a crash in between leaves clear a record too.
func ApplyPlans(ctx context.Context, plans []RemoteHostPlan) error {
	for _, hp := range plans {
		for _, c := range hp.Plan.Apply {
			if _, err := hp.Host.Run(ctx, c...); err != nil {
				return fmt.Errorf("node %s (%s): %w", hp.Node, hp.Host.Name(), err)
			}
		}
	}
	return nil
}

// ClearRemote removes habench's root qdisc from each of devs on h where it is there (a
// root with handle TCMajor; ClearTC), and touches nothing else: a device without one, or
// one that is gone, is fine. Error: the host cannot be reached, or a delete failed.
func ClearRemote(ctx context.Context, h host.Host, devs []string) error {
	var errs []error
	for _, dev := range devs {
		out, err := h.Run(ctx, "tc", "-j", "qdisc", "show", "dev", dev)
		var ee *host.ExitError
		if errors.As(err, &ee) && strings.Contains(ee.Stderr, "Cannot find device") {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		qs, err := ParseTCQdiscs(out)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !OursOn(dev, qs) {
			continue
		}
		if _, err := h.Run(ctx, ClearTC(dev)...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoteResidue lists the devices of h that carry habench's root qdisc ("qdisc htb 4862:
// on eth0"); empty after ClearRemote.
func RemoteResidue(ctx context.Context, h host.Host) ([]string, error) {
	out, err := h.Run(ctx, "tc", "-j", "qdisc", "show")
	if err != nil {
		return nil, err
	}
	qs, err := ParseTCQdiscs(out)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, q := range qs {
		if OursOn(q.Dev, []TCQdisc{q}) {
			left = append(left, fmt.Sprintf("qdisc htb %s on %s", q.Handle, q.Dev))
		}
	}
	return left, nil
}

// measureScript times n TCP handshakes to $1:$2 with bash's /dev/tcp (no tool to install):
// one line per try, the handshake in microseconds or "x" when it failed. Each try is
// bounded by bash's own connect; the caller bounds the whole script.
const measureScript = `export LC_ALL=C
p=$1; port=$2; n=$3
for k in $(seq 1 "$n"); do
  s=$EPOCHREALTIME
  if exec 3<>"/dev/tcp/$p/$port"; then
    e=$EPOCHREALTIME; exec 3>&-
    echo $(( ${e/./} - ${s/./} ))
  else
    echo x
  fi
done 2>/dev/null
`

// probeCutScript tries $3 handshakes to $1:$2, each at most $4 seconds (timeout(1)), and
// prints one "x" or "ok" per try: proof that a cut link is cut.
const probeCutScript = `export LC_ALL=C
for k in $(seq 1 "$3"); do
  if timeout "$4" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; then echo ok; else echo x; fi
done
`

// MeasureRemote measures the achieved round trip of every directed pair of eps from the
// sending node's host: TCP handshakes to the peer's MySQL port timed by bash on the host
// (see measureScript), as many as probePlan says for the pair; a cut pair gets 3 tries of
// at most 1 s. Requested comes from spec (nil: none). Errors: a host that cannot run the
// probe, ctx ending.
func MeasureRemote(ctx context.Context, eps []RemoteEndpoint, spec *Spec, samples int, timeout time.Duration) ([]LinkRTT, error) {
	if len(eps) < 2 {
		return nil, errors.New("fewer than two endpoints: no link to measure")
	}
	var out []LinkRTT
	for _, a := range eps {
		if a.Host == nil {
			return nil, fmt.Errorf("node %s: no host access", a.Name)
		}
		for _, b := range eps {
			if a.Name == b.Name {
				continue
			}
			r := LinkRTT{Link: Link{a.Name, b.Name}}
			if spec != nil {
				r.Requested = spec.RequestedRTT(a.Name, b.Name)
			}
			n, to := probePlan(spec, a.Name, b.Name, samples, timeout)
			port := strconv.Itoa(b.Port)
			if spec.Cut(a.Name, b.Name) {
				res, err := a.Host.Run(ctx, "bash", "-c", probeCutScript, "probe", b.Addr, port, strconv.Itoa(n), "1")
				if err != nil {
					return out, fmt.Errorf("measure %s on %s: %w", r.Link, a.Host.Name(), err)
				}
				for _, l := range strings.Fields(string(res)) {
					if l == "ok" {
						r.Samples++
					} else {
						r.Failed++
					}
				}
				out = append(out, r)
				continue
			}
			// The whole series is bounded by n tries of `to` each, plus slack.
			sctx, cancel := context.WithTimeout(ctx, time.Duration(n)*to+10*time.Second)
			res, err := a.Host.Run(sctx, "bash", "-c", measureScript, "measure", b.Addr, port, strconv.Itoa(n))
			cancel()
			if err != nil {
				return out, fmt.Errorf("measure %s on %s: %w", r.Link, a.Host.Name(), err)
			}
			var rtts []time.Duration
			for _, l := range strings.Fields(string(res)) {
				us, err := strconv.ParseInt(l, 10, 64)
				if err != nil || us < 0 {
					r.Failed++
					continue
				}
				rtts = append(rtts, time.Duration(us)*time.Microsecond)
			}
			if len(rtts) > 0 {
				slices.Sort(rtts)
				r.Samples = len(rtts)
				r.Min = rtts[0]
				r.Median = rtts[len(rtts)/2]
				r.P99 = rtts[min(len(rtts)-1, len(rtts)*99/100)]
			}
			out = append(out, r)
		}
	}
	return out, nil
}
