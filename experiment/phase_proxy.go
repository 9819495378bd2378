package experiment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// ProxyRestarter restarts a cluster's proxy with other health checks (cluster.Store).
type ProxyRestarter interface {
	RestartProxy(ctx context.Context, c *cluster.Cluster, checks topology.ProxyChecks) error
}

// proxyChecksPlan is what a run does to its cluster's proxy's health checks (pure):
// running are those the proxy runs with now (its cluster's spec), own the topology's own
// (Bench.ProxyOwn; zero: running), checks the run's (Bench.ProxyChecks; zero: own).
type proxyChecksPlan struct {
	own, want topology.ProxyChecks // every field given
	// restart: the proxy is restarted with want before the run, as it runs with others
	// (the run's are not the topology's, or an earlier run's were not put back).
	restart bool
	// back: own are put back after the run (want are not own).
	back bool
}

func planProxyChecks(running, own, checks topology.ProxyChecks) proxyChecksPlan {
	p := topology.ProxySpec{}.With(running).With(own)
	want := p.With(checks).Checks()
	return proxyChecksPlan{own: p.Checks(), want: want, restart: want != running, back: want != p.Checks()}
}

// proxyChecks restarts the cluster's proxy with the run's health checks (Bench.ProxyChecks
// over the topology's own, Bench.ProxyOwn) when it runs with others, before anything is
// set or written: the manifest's proxy configuration and the summary's checks are the
// run's. A run without checks of its own restarts the proxy too when it does not run the
// topology's own (an earlier run's not put back). What puts the proxy's own checks back
// (restoreProxy) runs after the results are written (a closing phase) and on the cleanup
// stack (a setup that fails later, an interrupt: on a fresh context); its failure is a
// WARNING and part of the run's error (Run). Errors: checks without a cluster with a proxy
// or without a ProxyRestarter, the restart's.
func (st *runState) proxyChecks() error {
	b := st.b
	st.restoreProxy = func() error { return nil }
	c := b.Cluster
	if c == nil || c.Proxy() == nil || b.ProxyRestarter == nil {
		if b.ProxyChecks.IsZero() {
			return nil
		}
		return &topology.FieldError{Field: "via", Value: scenario.ViaProxy + " " + b.ProxyChecks.String(), Reason: "other health checks need a habench cluster with a proxy (and its store to restart it)"}
	}
	running := c.Spec.Proxy.Checks()
	plan := planProxyChecks(running, b.ProxyOwn, b.ProxyChecks)
	if plan.back {
		st.putBackProxy(plan.own)
	}
	if !plan.restart {
		return nil
	}
	t0 := time.Now()
	if err := b.ProxyRestarter.RestartProxy(st.ctx, c, plan.want); err != nil {
		return err
	}
	w := plan.want
	after := " (the topology's own again after the run)"
	if !plan.back {
		after = fmt.Sprintf(", the topology's own (it ran with every %s, down after %d failed, up after %d passed: an earlier run's, not put back)",
			running.CheckInterval, running.Fall, running.Rise)
	}
	st.printf("proxy restarted in %.1f s with checks every %s, down after %d failed, up after %d passed%s\n",
		time.Since(t0).Seconds(), w.CheckInterval, w.Fall, w.Rise, after)
	return nil
}

// putBackProxy sets restoreProxy to restart the cluster's proxy with own (once; a failure
// is said as a WARNING and returned each time) and pushes it onto the cleanup stack
// (also when the restart with the run's checks fails half-way).
func (st *runState) putBackProxy(own topology.ProxyChecks) {
	b := st.b
	var once sync.Once
	var restoreErr error
	st.restoreProxy = func() error {
		once.Do(func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(st.ctx), 3*time.Minute)
			defer cancel()
			t0 := time.Now()
			if err := b.ProxyRestarter.RestartProxy(rctx, b.Cluster, own); err != nil {
				restoreErr = fmt.Errorf("the proxy's own health checks not put back: %w", err)
				st.say("⚠ "+restoreErr.Error(), "proxy checks not restored", "err", err)
				return
			}
			st.printf("proxy restarted in %.1f s with its own checks again: every %s, down after %d failed, up after %d passed\n",
				time.Since(t0).Seconds(), own.CheckInterval, own.Fall, own.Rise)
		})
		return restoreErr
	}
	st.onCleanup(func() { st.restoreProxy() }) // its error: Run's (proxyBackErr)
}

// proxyBackErr is err with the failure to put the proxy's own checks back joined to it
// when the closing phase did not return it already (a setup or closing phase failed
// before it, an interrupt): a run never ends quietly with other checks left on the proxy.
func (st *runState) proxyBackErr(err error) error {
	if st.restoreProxy == nil {
		return err
	}
	rerr := st.restoreProxy()
	if rerr == nil || errors.Is(err, rerr) {
		return err
	}
	return errors.Join(err, rerr)
}

// proxyChecksBack is the closing phase that puts the proxy's own health checks back after
// the results are written (see proxyChecks); its error is the run's.
func (st *runState) proxyChecksBack() error { return st.restoreProxy() }

// proxy starts reading the state of the cluster's proxy every schema.ProxyPollMs (when it
// has one) until the samplers stop; proxySummary reads what it saw.
func (st *runState) proxy() error {
	c := st.b.Cluster
	if c == nil || c.Proxy() == nil {
		return nil
	}
	poll, err := proxyPoll(c)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(st.ctx))
	st.proxyWatch = startProxyWatch(ctx, poll, st.sampleStart)
	prev := st.stopSampling
	st.stopSampling = func() { prev(); stop() }
	st.onCleanup(stop)
	return nil
}

// proxySummary sets sum.Proxy and each fault's Proxy from what the proxy watch saw, writes
// proxy_events.csv (an error names the file) and warns when the proxy's state could not
// be read or the write endpoint had no server.
func (st *runState) proxySummary(sum *schema.Summary) error {
	if st.proxyWatch == nil {
		return nil
	}
	st.stopSampling()
	evs, ps, firstErr := st.proxyWatch.result()
	p := st.b.Cluster.Spec.Proxy
	ps.Type, ps.CheckIntervalMs, ps.Fall, ps.Rise = p.Type, float64(p.CheckInterval.Microseconds())/1000, p.Fall, p.Rise
	ps.CPUCores = proxyCPU(measuredSamples(st.allSamples, st.man.IntervalsOffsetS))
	sum.Proxy = ps
	proxyFaults(sum.Faults, st.man.Faults, evs)
	switch {
	case ps.Error != "":
		st.warn(fmt.Sprintf("⚠ the proxy's state could not be read (%d tries): %s", ps.Polls, ps.Error), "proxy state unreadable", "err", ps.Error)
	case ps.PollErrors > 0:
		st.warn(fmt.Sprintf("⚠ the proxy's state could not be read %d times of %d (the first: %s)", ps.PollErrors, ps.Polls, firstErr), "proxy state reads failed", "errors", ps.PollErrors, "first", firstErr)
	}
	if err := st.proxyGone(); err != nil {
		st.runErr = err
	}
	if ps.NoWriterS > 0 {
		st.warn(fmt.Sprintf("⚠ the proxy's write endpoint had no server up for %.1f s", ps.NoWriterS), "proxy without a writer", "seconds", ps.NoWriterS)
	}
	if st.res == nil {
		return nil
	}
	if err := st.res.WriteFile(schema.ProxyEventsFile, proxyEventsCSV(evs)); err != nil {
		return fmt.Errorf("results %s: %s: %w", st.res.Dir, schema.ProxyEventsFile, err)
	}
	return nil
}

// proxyGone is the run's error when the cluster's proxy is not running after the run and
// none of the run's faults took it down: a proxy that died is a failure the numbers
// cannot hide (they went through it), named with its process, wrapping the run's error
// (the workers' lost endpoint) when it has one.
func (st *runState) proxyGone() error {
	c := st.b.Cluster
	if c.Dir() != "" { // the proxy as the state file has it now (a fault may have started it again)
		if now, err := c.Reload(); err == nil {
			c = now
		}
	}
	p := c.Proxy()
	if p == nil || !c.NodeDown(p) || faultedDown(st.man.Faults)[p.Name] {
		return nil
	}
	st.warn(fmt.Sprintf("⚠ the proxy (%s, pid %d) is not running after the run, and no fault of the run stopped it", c.Spec.Proxy.Type, p.PID), "proxy died", "pid", p.PID)
	if st.runErr != nil {
		return fmt.Errorf("the proxy (%s, pid %d) died during the run: %w", c.Spec.Proxy.Type, p.PID, st.runErr)
	}
	return fmt.Errorf("the proxy (%s, pid %d) died during the run", c.Spec.Proxy.Type, p.PID)
}
