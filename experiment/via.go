package experiment

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// ProxyTarget makes a workload target of cluster c's proxy (topology.ProxySpec): every
// worker connects to the proxy's write endpoint, labelled topology.ProxyName, and stays
// there; the proxy picks the node. Like writer auto (Target.Follow, which answers the
// proxy's endpoint every time), connection failures and read-only refusals are retried,
// and an outage is the writer's as the application sees it through the proxy. Error
// (*topology.FieldError on field) when c has no proxy.
func ProxyTarget(c *cluster.Cluster, db, field string) (workload.Target, error) {
	t, err := ClusterTarget(c, db, nil)
	if err != nil {
		return t, err
	}
	p := c.Proxy()
	if p == nil {
		return t, &topology.FieldError{Field: field, Value: scenario.ViaProxy, Reason: fmt.Sprintf("cluster %s has no proxy (give its topology one: proxy: %s)", c.Name, topology.HAProxy)}
	}
	ep := workload.Endpoint{Name: topology.ProxyName, Host: p.Host, Port: c.ProxyPort("write")}
	t.Endpoints = []workload.Endpoint{ep}
	t.Follow = func(context.Context) (workload.Endpoint, error) { return ep, nil }
	return t, nil
}

// viaOf is Bench.Via for cell: scenario.ViaProxy through the proxy, "" direct.
func viaOf(cell *scenario.Cell) string {
	if cell.Via == scenario.ViaProxy {
		return cell.Via
	}
	return ""
}

// proxyRecord is manifest.json's proxy for c (nil without one): its type and version,
// endpoints and configuration in effect.
func proxyRecord(c *cluster.Cluster) *schema.ManifestProxy {
	p := c.Proxy()
	if p == nil {
		return nil
	}
	addr := func(name string) string {
		if port := c.ProxyPort(name); port > 0 {
			return net.JoinHostPort(p.Host, strconv.Itoa(port))
		}
		return ""
	}
	m := &schema.ManifestProxy{Type: c.Spec.Proxy.Type, Version: cluster.ProxyVersion(c), Write: addr("write"), Stats: addr("stats")}
	if c.Spec.Proxy.HasRead() {
		m.Read = addr("read")
	}
	cfg, err := cluster.ProxyConfig(c)
	if err != nil {
		m.ConfigError = err.Error()
	}
	m.Config = cfg
	return m
}

// ProxyReadLabel labels the proxy's read endpoint among a run's endpoints.
const ProxyReadLabel = topology.ProxyName + ".read"

// proxyReadEndpoint is the read endpoint of c's proxy when name is topology.ProxyName and
// the proxy has one (ok false otherwise).
func proxyReadEndpoint(c *cluster.Cluster, name string) (workload.Endpoint, bool) {
	p := c.Proxy()
	if name != topology.ProxyName || p == nil || c.ProxyPort("read") == 0 || !c.Spec.Proxy.HasRead() {
		return workload.Endpoint{}, false
	}
	return workload.Endpoint{Name: ProxyReadLabel, Host: p.Host, Port: c.ProxyPort("read")}, true
}

// probeVia is the endpoint the probe writer commits through: the proxy's write endpoint
// when b's workload goes through the proxy (Bench.Via), nil when it commits on the writer
// it resolves itself.
func probeVia(b *Bench) *workload.Endpoint {
	if b.Via != scenario.ViaProxy {
		return nil
	}
	for _, ep := range b.Target.Endpoints {
		if ep.Name == topology.ProxyName {
			return &ep
		}
	}
	return nil
}
