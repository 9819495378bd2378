package experiment

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/topology"
)

// What a run does to its proxy's health checks depends on what the proxy runs now, the
// topology's own (the scenario's) and the run's: a run restarts the proxy whenever it
// runs others than the run wants, a run without checks of its own included (an earlier
// run's put-back failed), and puts the topology's own back when the run's are not them;
// the checks to put back are the topology's, never those the proxy runs.
func TestPlanProxyChecks(t *testing.T) {
	own := topology.ProxyChecks{CheckInterval: time.Second, Fall: 3, Rise: 2}
	other := topology.ProxyChecks{CheckInterval: 2 * time.Second, Fall: 2, Rise: 2}
	for _, c := range []struct {
		name                 string
		running, own, checks topology.ProxyChecks
		want                 topology.ProxyChecks
		restart, back        bool
	}{
		{"a plain run, the proxy as the topology has it", own, own, topology.ProxyChecks{}, own, false, false},
		{"a plain run after a put-back that failed", other, own, topology.ProxyChecks{}, own, true, false},
		{"a run with its checks", own, own, topology.ProxyChecks{CheckInterval: 2 * time.Second, Fall: 2}, other, true, true},
		{"a run with its checks, the proxy left with others", topology.ProxyChecks{CheckInterval: 5 * time.Second, Fall: 9, Rise: 9}, own, topology.ProxyChecks{Fall: 2}, topology.ProxyChecks{CheckInterval: time.Second, Fall: 2, Rise: 2}, true, true},
		{"a run with its checks, the proxy left with them", other, own, topology.ProxyChecks{CheckInterval: 2 * time.Second, Fall: 2}, other, false, true},
		{"a run with the topology's own checks", own, own, topology.ProxyChecks{Fall: 3}, own, false, false},
		{"no own known: the proxy's", other, topology.ProxyChecks{}, topology.ProxyChecks{}, other, false, false},
	} {
		p := planProxyChecks(c.running, c.own, c.checks)
		wantOwn := c.own
		if wantOwn.IsZero() {
			wantOwn = c.running
		}
		if p.want != c.want || p.own != wantOwn || p.restart != c.restart || p.back != c.back {
			t.Errorf("%s: %+v, want checks %s, own %s, restart %v, back %v", c.name, p, c.want, wantOwn, c.restart, c.back)
		}
	}
}

// A put-back of the proxy's own checks that fails (here: the store refuses, the proxy
// runs the user's configuration) when the run ends early is a WARNING in the run's output
// and part of the run's error, once, also when the closing phase returned it already.
func TestProxyBackErr(t *testing.T) {
	var out bytes.Buffer
	c := &cluster.Cluster{Name: "pb", Spec: topology.Spec{Proxy: topology.ProxySpec{Type: topology.HAProxy, Config: "my.cfg"}},
		Aux: []*cluster.Node{{Name: topology.ProxyName, Role: topology.RoleProxy, Program: topology.HAProxy}}}
	st := &runState{b: &Bench{Cluster: c, ProxyRestarter: &cluster.Store{}, Stdout: &out}, ctx: context.Background()}
	if err := st.proxyBackErr(nil); err != nil {
		t.Fatalf("before the proxy checks phase: %v", err)
	}
	st.putBackProxy(topology.ProxyChecks{CheckInterval: time.Second, Fall: 3, Rise: 2})
	st.cleanup()
	setup := errors.New("knobs: refused")
	err := st.proxyBackErr(setup)
	if !errors.Is(err, setup) || !strings.Contains(err.Error(), "the proxy's own health checks not put back") || !strings.Contains(err.Error(), "proxy.config") {
		t.Errorf("the run's error: %v, want the setup's and the put-back's", err)
	}
	if got := out.String(); strings.Count(got, "WARNING: ⚠ the proxy's own health checks not put back") != 1 {
		t.Errorf("output %q: want the put-back's failure once as a WARNING", got)
	}
	closing := st.restoreProxy()
	if err := st.proxyBackErr(closing); err != closing {
		t.Errorf("the closing phase's error %v became %v: want it once", closing, err)
	}
}
