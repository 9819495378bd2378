package experiment

import (
	"context"
	"fmt"
	"github.com/habench/habench/schema"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/host"
	"github.com/habench/habench/links"
	"github.com/habench/habench/netem"
	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
)

// clockTimeout bounds the clock measurement of all the hosts at the start of a run.
const clockTimeout = 20 * time.Second

// remoteHost reports whether h is a machine other than this one (not a host.Local).
func remoteHost(h host.Host) bool {
	switch h.(type) {
	case nil, host.Local, *host.Local:
		return false
	}
	return true
}

// measureClocks measures the clock of every distinct remote host of nodes once, all at
// once (host.ClockOffset, host.DefaultClockRounds rounds each, within clockTimeout), sets
// each node's ClockOffset and ClockUncertainty, and fills hosts' OffsetMs, UncertaintyMs
// or ClockError (hosts as hostInfos lists them). Nodes on this machine are left at zero.
// It returns the hosts whose clock could not be read, one message each.
func measureClocks(ctx context.Context, nodes []sampler.Node, hosts []schema.HostInfo) []string {
	type res struct {
		off, unc time.Duration
		err      error
	}
	byName := map[string]*res{}
	var wg sync.WaitGroup
	cctx, cancel := context.WithTimeout(ctx, clockTimeout)
	defer cancel()
	for _, n := range nodes {
		if !remoteHost(n.Host) || byName[n.HostName] != nil {
			continue
		}
		r := &res{}
		byName[n.HostName] = r
		wg.Add(1)
		go func(h host.Host) {
			defer wg.Done()
			r.off, r.unc, r.err = host.ClockOffset(cctx, h, host.DefaultClockRounds)
		}(n.Host)
	}
	wg.Wait()
	for i := range nodes {
		if r := byName[nodes[i].HostName]; r != nil && r.err == nil && remoteHost(nodes[i].Host) {
			nodes[i].ClockOffset, nodes[i].ClockUncertainty = r.off, r.unc
		}
	}
	var failed []string
	for i := range hosts {
		r := byName[hosts[i].Name]
		switch {
		case r == nil:
		case r.err != nil:
			hosts[i].ClockError = r.err.Error()
			failed = append(failed, fmt.Sprintf("clock of host %s not measured (%v): applier_lag_s of %s is not corrected for it", hosts[i].Name, r.err, strings.Join(hosts[i].Nodes, ", ")))
		default:
			off, unc := ms(r.off), ms(r.unc)
			hosts[i].OffsetMs, hosts[i].UncertaintyMs = &off, &unc
		}
	}
	return failed
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// hostServers fills each remote host's Server: what the hosts provider recorded for the
// host of its first node (cluster.HostsState.Servers), else the distinct versions its
// nodes report (infos, the manifest's nodes).
func hostServers(c *cluster.Cluster, hosts []schema.HostInfo, nodes []sampler.Node, infos []schema.NodeInfo) {
	remote := map[string]bool{}
	for _, n := range nodes {
		if remoteHost(n.Host) {
			remote[n.HostName] = true
		}
	}
	version := map[string]string{}
	for _, n := range infos {
		version[n.Name] = n.Version
	}
	for i := range hosts {
		h := &hosts[i]
		if !remote[h.Name] || len(h.Nodes) == 0 {
			continue
		}
		if c != nil && c.Hosts != nil {
			if j := slices.IndexFunc(c.Nodes, func(n *cluster.Node) bool { return n.Name == h.Nodes[0] }); j >= 0 && j < len(c.Hosts.Dests) {
				if s := c.Hosts.Servers[c.Hosts.Dests[j]]; s != "" {
					h.Server = s
					continue
				}
			}
		}
		var vs []string
		for _, n := range h.Nodes {
			if v := version[n]; v != "" && !slices.Contains(vs, v) {
				vs = append(vs, v)
			}
		}
		h.Server = strings.Join(vs, ", ")
	}
}

// hostInfos lists the distinct hosts of the sampled nodes, in node order.
func hostInfos(nodes []sampler.Node) []schema.HostInfo {
	var out []schema.HostInfo
	for _, n := range nodes {
		if n.Host == nil {
			continue
		}
		i := slices.IndexFunc(out, func(h schema.HostInfo) bool { return h.Name == n.HostName })
		if i < 0 {
			out = append(out, schema.HostInfo{Name: n.HostName})
			i = len(out) - 1
		}
		out[i].Nodes = append(out[i].Nodes, n.Name)
	}
	return out
}

// hostSummary summarises the host sampler's samples per host over the measured window
// [from, to] on the samples' clock (to <= from: every sample). nil without hosts.
func hostSummary(hosts []schema.HostInfo, samples []sampler.Sample, from, to time.Duration) []schema.HostSummary {
	if len(hosts) == 0 {
		return nil
	}
	in := func(e time.Duration) bool { return to <= from || e > from && e <= to }
	type acc struct {
		sum, max float64
		n        int
	}
	var out []schema.HostSummary
	for _, h := range hosts {
		node := sampler.HostNode(h.Name)
		by := map[string]*acc{}
		server := map[string]*acc{}
		var busy []float64
		hs := schema.HostSummary{Host: h.Name, Nodes: h.Nodes}
		for _, s := range samples {
			if !in(s.Elapsed) {
				continue
			}
			var a *acc
			switch {
			case s.Node == node:
				if s.Metric == sampler.MetricHostCPUs {
					hs.CPUs = int(s.Value)
				}
				if s.Metric == sampler.MetricHostCPUBusy {
					busy = append(busy, s.Value)
				}
				if by[s.Metric] == nil {
					by[s.Metric] = &acc{max: s.Value}
				}
				a = by[s.Metric]
			case s.Metric == sampler.MetricServerCPU && slices.Contains(h.Nodes, s.Node):
				if server[s.Node] == nil {
					server[s.Node] = &acc{}
				}
				a = server[s.Node]
			default:
				continue
			}
			a.sum += s.Value
			a.max = max(a.max, s.Value)
			a.n++
		}
		mean := func(m string) *float64 {
			if a := by[m]; a != nil && a.n > 0 {
				v := a.sum / float64(a.n)
				return &v
			}
			return nil
		}
		mx := func(m string) *float64 {
			if a := by[m]; a != nil && a.n > 0 {
				v := a.max
				return &v
			}
			return nil
		}
		hs.Samples = len(busy)
		hs.CPUBusyMean, hs.CPUBusyMax = mean(sampler.MetricHostCPUBusy), mx(sampler.MetricHostCPUBusy)
		hs.IOWaitMean, hs.StealMean = mean(sampler.MetricHostCPUIOWait), mean(sampler.MetricHostCPUSteal)
		hs.ProcsRunningMean, hs.ProcsRunningMax = mean(sampler.MetricHostProcsRunning), mx(sampler.MetricHostProcsRunning)
		hs.DiskReadMean, hs.DiskWriteMean = mean(sampler.MetricHostDiskRead), mean(sampler.MetricHostDiskWrite)
		hs.NetRxMean, hs.NetTxMean = mean(sampler.MetricNetRx), mean(sampler.MetricNetTx)
		hs.CPUSaturated, hs.SaturatedShare = sampler.CPUSaturated(busy)
		for n, a := range server {
			if hs.ServerCPU == nil {
				hs.ServerCPU = map[string]float64{}
			}
			hs.ServerCPU[n] = a.sum / float64(a.n)
		}
		out = append(out, hs)
	}
	return out
}

// cpuSaturationWarnings are the run's warnings for CPU-saturated hosts (see
// sampler.CPUSaturated).
func cpuSaturationWarnings(hs []schema.HostSummary) []string {
	var out []string
	for _, h := range hs {
		if !h.CPUSaturated {
			continue
		}
		out = append(out, fmt.Sprintf("host %s (nodes %s) was CPU-saturated: busy >= %.0f%% in %.0f%% of the %d measured seconds (mean %s, max %s): the results measure that host's CPU as much as the topology",
			h.Host, strings.Join(h.Nodes, ", "), sampler.CPUSaturatedBusy*100, h.SaturatedShare*100, h.Samples, report.PctText(h.CPUBusyMean), report.PctText(h.CPUBusyMax)))
	}
	return out
}

// checkHostsNetem refuses, before anything is deployed, a deployment on hosts whose cells
// to run (torun) impair links with delay, jitter or loss when one of its hosts lacks
// both sch_netem and a TUN device for the link agent, or a TUN device while another host
// lacks sch_netem (then every host runs the agent; netem.CheckHost over SSH), or when the
// agents cannot carry the links (agentLinksRefusal: nodes sharing a host):
// otherwise each such cell would fail after the deploy. Rate limits and partitions need no netem. Nil for other deployments. Errors:
// *topology.FieldError on sweep.links naming the topology, the host and the reason; a
// host that cannot be checked, naming it.
func checkHostsNetem(ctx context.Context, d *scenario.Deployment, torun func(*scenario.Cell) bool) error {
	sp := d.Spec
	if !sp.IsHosts() || sp.Nodes < 2 {
		return nil
	}
	var need []*scenario.Cell
	var specs []*netem.Spec
	for _, c := range d.Cells {
		if !torun(c) || c.Links.IsZero() {
			continue
		}
		spec, err := c.Links.WithSites(links.Sites(sp.Sites)).Build(sp.MemberNames())
		if err == nil && slices.ContainsFunc(slices.Collect(maps.Values(spec.Links)), netem.NeedsNetem) {
			need, specs = append(need, c), append(specs, spec)
		}
	}
	if need == nil {
		return nil
	}
	var checks []netem.HostCheck
	agents := false
	for i, h := range cluster.HostsAccess(sp) {
		hc, err := netem.CheckHost(ctx, h)
		if err != nil {
			return fmt.Errorf("topology %s: hosts[%d] %s: %w", sp.Name, i, sp.Hosts[i], err)
		}
		checks = append(checks, hc)
		agents = agents || hc.NoNetem != ""
	}
	if i, why := agentHostRefusal(sp.Hosts, checks); why != "" {
		return cellLinksError(need[0], fmt.Sprintf("topology %s: host %s: %s; delay, jitter and loss need sch_netem or the link agent on the hosts (rate limits and partitions do not): nothing deployed", sp.Name, sp.Hosts[i], why))
	}
	for k, spec := range specs {
		if _, why := links.AgentRefusal(sp.MemberNames(), sp.Hosts, spec); agents && why != "" {
			return cellLinksError(need[k], fmt.Sprintf("topology %s: a host lacks sch_netem, so the links go to the link agent: %s; nothing deployed", sp.Name, why))
		}
	}
	return nil
}

// cellLinksError is a *topology.FieldError on cell c's links (sweep.links with the axis
// value, or the scenario's links: when every cell has them) with reason.
func cellLinksError(c *scenario.Cell, reason string) error {
	field, value := "sweep.links", c.Values[string(scenario.AxisLinks)]
	if value == "" {
		field, value = "links", c.Links.String()
	}
	return &topology.FieldError{Field: field, Value: value, Reason: reason}
}

// agentHostRefusal applies the link agent's rule (links: sshLinks.useAgents) to the checks of
// hosts (same order): when any host lacks sch_netem every host gets the agent, so every host
// needs a TUN device. It returns the index of the first host that cannot take the links
// and why, or -1 and "" when all can.
func agentHostRefusal(hosts []string, checks []netem.HostCheck) (int, string) {
	noNetem := -1
	for i, hc := range checks {
		if hc.NoNetem != "" {
			noNetem = i
			break
		}
	}
	if noNetem < 0 {
		return -1, ""
	}
	for i, hc := range checks {
		if hc.NoTUN == "" {
			continue
		}
		if i == noNetem || hc.NoNetem != "" {
			return i, fmt.Sprintf("%s, and %s", hc.NoNetem, hc.NoTUN)
		}
		return i, fmt.Sprintf("%s, and host %s lacks sch_netem (%s), so every host needs the link agent", hc.NoTUN, hosts[noNetem], checks[noNetem].NoNetem)
	}
	return -1, ""
}
