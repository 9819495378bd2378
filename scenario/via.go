package scenario

import (
	"fmt"
	"slices"

	"github.com/habench/habench/topology"
)

// How a run's workers reach the servers (workload.via, a via axis, --via).
const (
	// ViaDirect: the workers connect to the nodes (workload.nodes, the writer).
	ViaDirect = "direct"
	// ViaProxy: the workers connect to the topology's proxy's write endpoint
	// (topology.ProxySpec), which passes them to the node it picks.
	ViaProxy = "proxy"
)

// ViaOrDefault is workload.via, ViaDirect when not given.
func (w ScenarioWorkload) ViaOrDefault() string {
	if w.Via == "" {
		return ViaDirect
	}
	return w.Via
}

// viaRefusal says why via cannot be used with the scenario's topologies ("" when it
// can): a value other than direct and proxy; proxy on a topology without a proxy (those
// a topology axis names, every topology without one); for every cell (workload.via, axis
// false) also with workload.nodes or writer auto (the proxy picks the node; in a via
// axis, they are the direct cells').
func (s *Scenario) viaRefusal(via string, topologies *Axis, axis bool) string {
	switch via {
	case ViaDirect:
		return ""
	case ViaProxy:
	default:
		return "want direct or proxy"
	}
	for _, t := range s.Topologies {
		if topologies != nil && !slices.Contains(topologies.Labels(), t.Name) {
			continue
		}
		if t.Proxy.Type == "" {
			return fmt.Sprintf("topology %s has no proxy (give it one: proxy: %s)", t.Name, topology.HAProxy)
		}
		if len(s.Workload.Nodes.For(t.Name)) > 0 && !axis {
			return fmt.Sprintf("topology %s: workload.nodes chooses the nodes; through the proxy the proxy does", t.Name)
		}
	}
	if s.Workload.Writer == WriterAuto && !axis {
		return "workload.writer auto follows the writer on the nodes; through the proxy the proxy does"
	}
	return ""
}

// proxyLine is a dry run's line on a topology's proxy ("" without one): "proxy haproxy
// (checks every 1s, down after 3, up after 2; write and read endpoints)".
func proxyLine(p topology.ProxySpec) string {
	if p.Type == "" {
		return ""
	}
	ends := "a write endpoint"
	if p.HasRead() {
		ends = "write and read endpoints"
	}
	cfg := ""
	if p.Config != "" {
		cfg = ", the configuration of " + p.Config
	}
	untried := ""
	if d := topology.ProxyOf(p.Type); d != nil && d.Untried != "" {
		untried = " (" + d.Untried + ")"
	}
	return fmt.Sprintf("proxy %s%s: checks every %s, a backend down after %d failed, up after %d passed; %s%s",
		p.Type, untried, p.CheckInterval, p.Fall, p.Rise, ends, cfg)
}
