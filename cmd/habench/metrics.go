package main

import (
	"fmt"
	"io"

	"github.com/habench/habench/experiment"
	"github.com/habench/habench/metrics"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
	"github.com/spf13/cobra"
)

const metricsAddrHelp = "serve live habench_* Prometheus metrics at http://ADDR/metrics while the run is in progress (e.g. 127.0.0.1:9099; :9099 listens on every interface)"

func addMetricsFlag(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, "metrics-addr", "", metricsAddrHelp)
}

// liveMetrics starts the metrics server for --metrics-addr (nil, no-op stop when addr is
// ""). A bad or busy address is bad input.
func liveMetrics(addr string, out io.Writer) (*metrics.Metrics, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	m := metrics.New()
	srv, err := m.Serve(addr)
	if err != nil {
		return nil, nil, &topology.FieldError{Field: "--metrics-addr", Value: addr, Reason: err.Error()}
	}
	fmt.Fprintf(out, "metrics: http://%s/metrics\n", srv.Addr())
	return m, func() { srv.Close() }, nil
}

// attachMetrics feeds b's intervals and samples to m and labels the run; the returned
// function marks the run as ended.
func attachMetrics(m *metrics.Metrics, b *experiment.Bench) func() {
	if m == nil {
		return nil
	}
	r := metrics.Run{Workload: b.Workload.Name()}
	if b.Cluster != nil {
		r.Topology, r.Kind, r.Flavor = b.Cluster.Name, string(b.Cluster.Spec.Kind), string(b.Cluster.Spec.Flavor)
	}
	if s, ok := b.Extra["scenario"].(string); ok {
		r.Scenario = s
	}
	if s, ok := b.Extra["topology"].(string); ok && s != "" {
		r.Topology = s
	}
	if s, ok := b.Extra["cell"].(string); ok {
		r.Cell = s
	}
	prevI, prevS, prevL := b.OnInterval, b.OnSamples, b.OnLive
	b.OnLive = func(l *workload.Live) {
		m.AttachLive(l)
		if prevL != nil {
			prevL(l)
		}
	}
	b.OnInterval = func(iv workload.Interval) {
		m.ObserveInterval(iv)
		if prevI != nil {
			prevI(iv)
		}
	}
	b.OnSamples = func(ss []sampler.Sample) {
		m.ObserveSamples(ss)
		if prevS != nil {
			prevS(ss)
		}
	}
	m.StartRun(r)
	return m.EndRun
}
