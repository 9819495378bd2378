package links

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/schema"
)

// Endpoints returns the endpoints of a cluster whose links are in one network
// namespace per node on this machine (c.Links() is cluster.LinksNamespaces). Errors: the
// provider's refusal (*cluster.UnsupportedError: a loopback sandbox, whose nodes share
// 127.0.0.1, an existing cluster without ssh:), links reached otherwise (over SSH), or a
// node without an IPv4 host address in a namespace.
func Endpoints(c *cluster.Cluster) ([]netem.Endpoint, error) {
	if err := c.Refuse(cluster.OpLinks, ""); err != nil {
		return nil, err
	}
	if c.Links() != cluster.LinksNamespaces {
		return nil, fmt.Errorf("cluster %s: links are impaired over %q, not in network namespaces on this machine", c.Name, c.Links())
	}
	var eps []netem.Endpoint
	for _, n := range c.Members() {
		a, err := netip.ParseAddr(n.Host)
		if err != nil || !a.Is4() || n.Netns == "" {
			return nil, fmt.Errorf("cluster %s node %s: host %q netns %q: want an IPv4 address in a namespace", c.Name, n.Name, n.Host, n.Netns)
		}
		eps = append(eps, netem.Endpoint{Name: n.Name, Netns: n.Netns, Addr: a})
	}
	return eps, nil
}

// Uniform is a spec with the same one-way impairment on every directed link between
// the cluster's nodes.
func Uniform(c *cluster.Cluster, imp netem.Impairment) (*netem.Spec, error) {
	var names []string
	for _, n := range c.Members() {
		names = append(names, n.Name)
	}
	spec, err := netem.NewSpec(names)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := spec.SetNode(n, imp); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// round3 rounds to a microsecond when x is in milliseconds (no 2.2239999999999998 in JSON).
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// Apply measures the plain round trips, applies spec (in the nodes' namespaces
// kernel netem where available, else the userspace link; over SSH tc on the nodes' hosts,
// recorded before it is created, a crashed run's leftovers removed first), measures
// again, and reports requested against achieved. A pair whose added round trip is more
// than 10% (and 50 us) away from the request gets a warning. The returned backend must be
// closed by the caller (also after SIGINT: the SSH backend has its own time limit); on
// error nothing is left applied.
func Apply(ctx context.Context, c *cluster.Cluster, spec *netem.Spec) (netem.Backend, *schema.LinkImpairment, error) {
	la, err := linksOf(c)
	if err != nil {
		return nil, nil, err
	}
	if err := la.reach(ctx); err != nil {
		return nil, nil, err
	}
	if err := la.clearRun(); err != nil {
		return nil, nil, fmt.Errorf("clear a previous run's impairments: %w", err)
	}
	base, err := la.measure(ctx, nil, 10, 2*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("measure links before applying: %w", err)
	}
	b, name, rtts, err := la.applyRun(ctx, c, spec, 20, 3*time.Second)
	if err != nil {
		return nil, nil, err
	}
	rep := linkReport(name, spec, base, rtts)
	rep.AppliedBy = "run"
	if u, ok := b.(*netem.Userspace); ok {
		rep.LinkThread = schedName(u.Realtime())
	}
	rep.Applied = time.Now().UTC()
	return b, rep, nil
}

// linkReport puts requested and achieved round trips side by side (see Report) and
// warns about pairs more than 10% (and 50 us) away from the request, partitioned pairs
// that answered, and unpartitioned pairs that did not.
func linkReport(backend string, spec *netem.Spec, base, rtts []netem.LinkRTT) *schema.LinkImpairment {
	rep := &schema.LinkImpairment{Backend: backend, Links: map[string]string{}}
	for l, imp := range spec.Links {
		rep.Links[l.String()] = imp.String()
	}
	var uncompared []string
	rate, lossy := false, false
	baseBy := map[netem.Link]time.Duration{}
	for _, r := range base {
		baseBy[r.Link] = r.Median
	}
	for _, r := range rtts {
		lr := schema.LinkRTT{Link: r.Link.String(), BaseMs: ms(baseBy[r.Link]), RequestedMs: ms(r.Requested),
			AchievedMs: ms(r.Median), AchievedP99: ms(r.P99), Samples: r.Samples, FailedProbes: r.Failed,
			Partitioned: spec.Cut(r.Link.From, r.Link.To), Lossy: spec.Lossy(r.Link.From, r.Link.To)}
		lr.AddedMs = round3(lr.AchievedMs - lr.BaseMs)
		lr.RateLimited = spec != nil && !lr.Partitioned && (spec.Get(r.Link.From, r.Link.To).Rate > 0 || spec.Get(r.Link.To, r.Link.From).Rate > 0)
		switch {
		case lr.Partitioned:
			lr.RequestedMs, lr.AddedMs = 0, 0
			if r.Samples > 0 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: cut, but %d of %d probes got through", lr.Link, r.Samples, r.Samples+r.Failed))
			}
		case r.Samples == 0:
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: no probe got through (%d failed) although the link is not cut", lr.Link, r.Failed))
		case lr.Lossy, lr.RateLimited:
			// A lost SYN is retransmitted after 1 s, and a rate limit delays every packet
			// by its size over the rate: handshake times say nothing precise about the
			// delay here, so no comparison (Note says so once).
			uncompared = append(uncompared, lr.Link)
			rate, lossy = rate || lr.RateLimited, lossy || lr.Lossy
		case lr.RequestedMs == 0:
			// An unimpaired pair through the userspace link: only a gross overhead is news
			// (the base itself moves by tens of microseconds under load).
			if lr.AddedMs > 0.25 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: no delay requested, but the round trip grew by %.3f ms (median %.3f ms over a %.3f ms base)",
					lr.Link, lr.AddedMs, lr.AchievedMs, lr.BaseMs))
			}
		default:
			if diff := math.Abs(lr.AddedMs - lr.RequestedMs); diff > 0.05 && diff > 0.1*lr.RequestedMs {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: requested round trip +%.3f ms, achieved +%.3f ms (median %.3f ms over a %.3f ms base)",
					lr.Link, lr.RequestedMs, lr.AddedMs, lr.AchievedMs, lr.BaseMs))
			}
		}
		rep.RTT = append(rep.RTT, lr)
	}
	sort.Slice(rep.RTT, func(i, j int) bool { return rep.RTT[i].Link < rep.RTT[j].Link })
	sort.Strings(rep.Warnings)
	if len(uncompared) > 0 {
		what := map[[2]bool]string{{true, false}: "rate-limited", {false, true}: "lossy", {true, true}: "rate-limited or lossy"}[[2]bool{rate, lossy}]
		sort.Strings(uncompared)
		rep.Note = fmt.Sprintf("%s links: round trips not compared with the request (%s)", what, strings.Join(uncompared, ", "))
	}
	return rep
}

func schedName(realtime bool) string {
	if realtime {
		return "SCHED_FIFO"
	}
	return "SCHED_OTHER"
}
