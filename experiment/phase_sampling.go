package experiment

import (
	"context"
	"slices"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/links"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
)

// sampling starts the samplers for the run's duration; sampleStart is time zero of
// samples.csv. Standing links applied or cleared by another command are watched.
func (st *runState) sampling() error {
	b := st.b
	sctx, stop := context.WithCancel(context.WithoutCancel(st.ctx))
	st.stopSampling = stop
	st.onCleanup(func() { stop(); st.swg.Wait() }) // stop first: Wait returns after it
	st.sampleStart = time.Now()
	if b.Cluster != nil && b.Cluster.Dir() != "" {
		st.linkWatch = links.StartWatch(sctx, b.Cluster, st.sampleStart, st.standing)
	}
	if b.Cluster == nil || len(st.nodes) == 0 {
		return nil
	}
	st.man.SamplesStarted = st.sampleStart.UTC()
	kind := b.Cluster.Spec.Kind
	samplers := sampler.Default(kind)
	for _, s := range samplers {
		st.man.Samplers = append(st.man.Samplers, s.Name())
	}
	cfg := sampler.Config{Interval: b.SampleInterval, Logger: b.log(), Kind: kind, Epoch: st.sampleStart,
		Expected: st.expectedDown, Note: func(msg string) {
			b.log().Info(msg)
			st.printf("NOTE: %s\n", msg)
		}}
	if b.Cluster.Dir() != "" && b.Cluster.Deployed() {
		cfg.Roles = clusterRoles(b.Cluster)
	}
	nodes := st.nodes
	if pn := proxyNode(b.Cluster); pn != nil { // its process's CPU, like a node's
		nodes = append(slices.Clone(nodes), *pn)
	}
	st.sampler = sampler.NewRunner(cfg, nodes, samplers)
	st.swg.Add(1)
	go func() {
		defer st.swg.Done()
		st.samplerErr = st.sampler.Run(sctx, func(ss []sampler.Sample) {
			st.smu.Lock()
			st.allSamples = append(st.allSamples, ss...)
			if len(ss) > 0 && ss[0].Elapsed > st.lastTick {
				st.lastTick = ss[0].Elapsed
			}
			st.smu.Unlock()
			if st.res != nil {
				st.res.Samples(ss)
			}
			if b.OnSamples != nil {
				b.OnSamples(ss)
			}
		})
	}()
	// The samplers' baselines (counters for deltas) are read before the workload starts,
	// so the deltas cover all of it. Bounded: a stalled setup (heartbeat DDL behind a
	// stalled source) must not hold the run.
	select {
	case <-st.sampler.Started():
	case <-st.ctx.Done():
	case <-time.After(20 * time.Second):
	}
	return nil
}

// clusterRoles is a sampler.Config.Roles: the nodes' roles in c's state file, which
// Promote updates.
func clusterRoles(c *cluster.Cluster) func(context.Context) (map[string]topology.Role, error) {
	return func(context.Context) (map[string]topology.Role, error) {
		now, err := c.Reload()
		if err != nil {
			return nil, err
		}
		roles := map[string]topology.Role{}
		for _, n := range now.Nodes {
			roles[n.Name] = n.Role
		}
		return roles, nil
	}
}

// expectedDown is a sampler.Config.Expected: why node is down by one of the run's own
// faults ("fault kill at 3.0 s"), "" when it is not.
func (st *runState) expectedDown(node string) string {
	c := st.b.Cluster
	if c == nil {
		return ""
	}
	return downBy(faultsDuring(c, st.sampleStart, st.started, time.Now()), node)
}
