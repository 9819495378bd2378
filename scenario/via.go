package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/habench/habench/topology"
	"go.yaml.in/yaml/v3"
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

// viaOfValue is how a via axis value's workers reach the servers: ViaProxy for a value
// with health checks ("proxy check 2s"), else its label.
func viaOfValue(v AxisValue) string {
	if !v.Proxy.IsZero() {
		return ViaProxy
	}
	return v.Label
}

// proxyChecksNote is a dry run's note on a cell whose via value restarts the proxy with
// other health checks ("" when it does not): "the proxy restarted with checks every 2s,
// down after 3 failed, up after 2 passed; with the topology's own after the run".
func proxyChecksNote(c *Cell) string {
	if !c.RestartsProxy() {
		return ""
	}
	p := c.Deployment.Spec.Proxy.With(c.ProxyChecks)
	return fmt.Sprintf("the proxy restarted with checks every %s, down after %d failed, up after %d passed; with the topology's own after the run", p.CheckInterval, p.Fall, p.Rise)
}

// RestartsProxy reports whether the cell's via value changes its topology's proxy's
// health checks (ProxyChecks other than the topology's own): the proxy is restarted with
// them before the cell's run and with its own after.
func (c *Cell) RestartsProxy() bool {
	own := c.Deployment.Spec.Proxy
	return !c.ProxyChecks.IsZero() && own.With(c.ProxyChecks).Checks() != own.Checks()
}

// EstimateProxyRestart is a restart of proxy p: 1 s to start, then fall checks until the
// servers that are not the writer are down in its write endpoint (HAProxy counts every
// server up at its start).
func EstimateProxyRestart(p topology.ProxySpec) time.Duration {
	return time.Second + time.Duration(p.Fall)*p.CheckInterval
}

// viaRefusal says why via cannot be used with the scenario's topologies ("" when it
// can): a value other than direct and proxy; proxy on a topology without a proxy (those
// a topology axis names, every topology without one); health checks (a via value's,
// checks) on a proxy that has none habench sets or that runs the user's proxy.config, or
// that the proxy's own rules refuse; for every cell (workload.via, axis false) also with
// workload.nodes or writer auto (the proxy picks the node; in a via axis, they are the
// direct cells').
func (s *Scenario) viaRefusal(via string, checks topology.ProxyChecks, topologies *Axis, axis bool) string {
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
		if why := checksRefusal(t, checks); why != "" {
			return why
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

// checksRefusal says why topology t's proxy cannot take a via value's health checks ("" when
// it can, or checks gives none): a proxy without checks habench sets (MySQL Router's
// static routes), the user's proxy.config (habench does not change the user's file), what
// the proxy's own Validate refuses with them (ProxySQL's shortest interval).
func checksRefusal(t topology.Spec, checks topology.ProxyChecks) string {
	if checks.IsZero() {
		return ""
	}
	d := topology.ProxyOf(t.Proxy.Type)
	switch {
	case d == nil:
		return ""
	case d.NoChecks != "":
		return fmt.Sprintf("topology %s: %s", t.Name, d.NoChecks)
	case t.Proxy.Config != "":
		return fmt.Sprintf("topology %s's proxy runs your configuration (proxy.config %s): habench does not change its health checks", t.Name, t.Proxy.Config)
	case d.Validate != nil:
		with := t
		with.Proxy = t.Proxy.With(checks)
		if err := d.Validate(&with); err != nil {
			return fmt.Sprintf("topology %s with these checks: %v", t.Name, err)
		}
	}
	return ""
}

// viaChecksKeys are the fields of a topology's proxy: section a via value may change.
var viaChecksKeys = []string{"check_interval", "fall", "rise"}

// decodeViaAxis reads `via: [direct, proxy, {proxy: {check_interval: 2s, fall: 2}}]`:
// direct and proxy as they are (checked against the topologies by Plan), a mapping as
// proxy with the health checks it gives over the topology's proxy: section (restarted
// with them before the cell, put back after). A mapping's label is "proxy check 2s fall
// 2" (topology.ProxyChecks.String). Errors: a *topology.FieldError naming the line, the
// field (sweep.via.proxy.fall) and the value: a key other than proxy, or than
// check_interval, fall and rise in it; a duration without its unit; checks out of range
// (topology.ProxyChecks.Validate); a mapping that gives none.
func decodeViaAxis(a *Axis, v *yaml.Node, field string) error {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	const want = "want direct, proxy, or proxy with health checks: {proxy: {check_interval: 2s, fall: 3, rise: 2}}"
	for _, it := range items {
		switch {
		case it.Kind == yaml.ScalarNode && it.Value != "":
			a.Values = append(a.Values, AxisValue{Label: it.Value, Line: it.Line})
			continue
		case it.Kind != yaml.MappingNode || len(it.Content) != 2 || it.Content[0].Value != ViaProxy:
			key := ""
			if it.Kind == yaml.MappingNode && len(it.Content) > 0 {
				key = it.Content[0].Value
			}
			return LineError(it.Line, field, key, want)
		}
		m := it.Content[1]
		if m.Kind != yaml.MappingNode || len(m.Content) == 0 {
			return LineError(m.Line, field+".proxy", m.Value, "want the health checks to change: a mapping of check_interval, fall, rise")
		}
		var ck topology.ProxyChecks
		for j := 0; j+1 < len(m.Content); j += 2 {
			k, val := m.Content[j], m.Content[j+1]
			f := field + ".proxy." + k.Value
			if err := setViaCheck(&ck, k.Value, val, f); err != nil {
				return err
			}
		}
		if err := ck.Validate(field + ".proxy"); err != nil {
			return fmt.Errorf("line %d: %w", m.Line, err)
		}
		a.Values = append(a.Values, AxisValue{Label: ViaProxy + " " + ck.String(), Proxy: ck, Line: it.Line})
	}
	return nil
}

// setViaCheck sets the field of ck that key names from val (a given 0 is kept as
// topology.ZeroGivenInterval or ZeroGivenCount, which ProxyChecks.Validate refuses). Error: a *topology.FieldError on field naming the line:
// an unknown key, a duration without its unit, a count that is not a whole number.
func setViaCheck(ck *topology.ProxyChecks, key string, val *yaml.Node, field string) error {
	if !slices.Contains(viaChecksKeys, key) {
		return LineError(val.Line, field, val.Value, "a via value changes the proxy's health checks: want check_interval, fall or rise (its type, endpoints and configuration are the topology's)")
	}
	if val.Kind != yaml.ScalarNode {
		return LineError(val.Line, field, "", "want a plain value")
	}
	if key == "check_interval" {
		d, err := time.ParseDuration(val.Value)
		if err != nil {
			return LineError(val.Line, field, val.Value, "want a duration with its unit, like 200ms or 2s")
		}
		ck.CheckInterval = d
		if d == 0 {
			ck.CheckInterval = topology.ZeroGivenInterval
		}
		return nil
	}
	n, err := strconv.Atoi(val.Value)
	if err != nil {
		return LineError(val.Line, field, val.Value, "want a whole number of checks, 1 to 100")
	}
	if n == 0 {
		n = topology.ZeroGivenCount
	}
	if key == "fall" {
		ck.Fall = n
	} else {
		ck.Rise = n
	}
	return nil
}
