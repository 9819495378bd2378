package experiment

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/proxy"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// proxyDown says whether a status counts as marked down (DOWN, "DOWN n/m" with checks
// passing again, MAINT).
func proxyDown(status string) bool {
	return status == "DOWN" || strings.HasPrefix(status, "DOWN ") || strings.HasPrefix(status, "MAINT")
}

// serving marks in servers those an endpoint sends new connections to: the write
// endpoint's one (proxy.WriteServer), every up server of the read endpoint.
func serving(servers []proxy.Server) []bool {
	w := proxy.WriteServer(servers)
	out := make([]bool, len(servers))
	for i, s := range servers {
		out[i] = (s.Backend == "write" && s.Name == w) || (s.Backend == "read" && s.Up())
	}
	return out
}

// proxyWatch reads a proxy's state every schema.ProxyPollMs during a run and keeps every
// change as a schema.ProxyEvent on samples.csv's clock.
type proxyWatch struct {
	poll  func(ctx context.Context) ([]proxy.Server, error)
	epoch time.Time
	done  chan struct{}

	mu       sync.Mutex
	last     map[string]schema.ProxyEvent
	events   []schema.ProxyEvent
	polls    int
	errs     int
	firstErr string
	lastAtS  float64
}

// proxyPollTimeout bounds one read of the proxy's state. It is longer than the poll
// period: on a CPU-saturated host a read can take more than 100 ms without the proxy being
// in trouble, and a slow read only delays the next (the ticker drops the ticks it missed).
const proxyPollTimeout = time.Second

// startProxyWatch starts polling with poll until ctx ends; epoch is samples.csv's zero.
func startProxyWatch(ctx context.Context, poll func(context.Context) ([]proxy.Server, error), epoch time.Time) *proxyWatch {
	w := &proxyWatch{poll: poll, epoch: epoch, done: make(chan struct{}), last: map[string]schema.ProxyEvent{}}
	go func() {
		defer close(w.done)
		every := time.Duration(schema.ProxyPollMs) * time.Millisecond
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			pctx, cancel := context.WithTimeout(ctx, proxyPollTimeout)
			rows, err := w.poll(pctx)
			cancel()
			w.record(time.Since(w.epoch).Seconds(), rows, err)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// record adds one read at atS: the changes of rows, or the error.
func (w *proxyWatch) record(atS float64, rows []proxy.Server, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	w.lastAtS = atS
	if err != nil {
		w.errs++
		if w.firstErr == "" {
			w.firstErr = err.Error()
		}
		return
	}
	srv := serving(rows)
	for i, r := range rows {
		ev := schema.ProxyEvent{AtS: atS, Endpoint: r.Backend, Server: r.Name, Status: r.Status, Serving: srv[i], Sessions: r.Sessions}
		key := r.Backend + "/" + r.Name
		if prev, ok := w.last[key]; ok && prev.Status == ev.Status && prev.Serving == ev.Serving && prev.Sessions == ev.Sessions {
			continue
		}
		w.last[key] = ev
		w.events = append(w.events, ev)
	}
}

// result waits for the watch to end (its ctx ended) and returns its events in time order,
// the summary's counts and the first read's error ("" when every read worked).
func (w *proxyWatch) result() ([]schema.ProxyEvent, *schema.ProxySummary, string) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	evs := slices.Clone(w.events)
	slices.SortStableFunc(evs, func(a, b schema.ProxyEvent) int { return cmp.Compare(a.AtS, b.AtS) })
	s := &schema.ProxySummary{Polls: w.polls, PollErrors: w.errs, Events: len(evs)}
	if w.errs == w.polls && w.firstErr != "" {
		s.Error = w.firstErr
	}
	s.WriteServers, s.NoWriterS = writeServers(evs, w.lastAtS)
	return evs, s, w.firstErr
}

// writeServers is the sequence of the write endpoint's serving servers in evs (a server
// again after another is listed again) and the seconds, up to endS, in which none served.
func writeServers(evs []schema.ProxyEvent, endS float64) ([]string, float64) {
	var seq []string
	serving := map[string]bool{}
	none, since := 0.0, -1.0
	for _, e := range evs {
		if e.Endpoint != "write" {
			continue
		}
		serving[e.Server] = e.Serving
		cur := ""
		for s, on := range serving {
			if on {
				cur = s
			}
		}
		switch {
		case cur == "" && since < 0:
			since = e.AtS
		case cur != "":
			if since >= 0 {
				none += e.AtS - since
				since = -1
			}
			if len(seq) == 0 || seq[len(seq)-1] != cur {
				seq = append(seq, cur)
			}
		}
	}
	if since >= 0 && endS > since {
		none += endS - since
	}
	return seq, none
}

// proxyFaults sets each fault's Proxy from the events: the write endpoint's server at
// the fault, when the proxy marked it down (and its sessions then, and when they were
// gone), and the next server it sent connections to; each looked for from the fault
// to the next fault's start (or the end).
func proxyFaults(fs []schema.FaultSummary, faults []schema.RunFault, evs []schema.ProxyEvent) {
	for i, f := range faults {
		until := float64(1 << 30)
		if i+1 < len(faults) {
			until = faults[i+1].AtS
		}
		fp := &schema.FaultProxy{}
		sessions := map[string]int{} // each write server's sessions at its latest change
		for _, e := range evs {
			if e.AtS > f.AtS {
				break
			}
			if e.Endpoint == "write" {
				sessions[e.Server] = e.Sessions
			}
			if e.Endpoint == "write" && e.Serving {
				fp.Server = e.Server
			} else if e.Endpoint == "write" && e.Server == fp.Server {
				fp.Server = ""
			}
		}
		for _, e := range evs {
			if e.AtS <= f.AtS || e.AtS >= until || e.Endpoint != "write" {
				continue
			}
			if !proxyDown(e.Status) && e.Server == fp.Server && fp.DownS == nil {
				sessions[e.Server] = e.Sessions
			}
			d := e.AtS - f.AtS
			switch {
			case e.Server == fp.Server && fp.DownS == nil && proxyDown(e.Status):
				// Its sessions before the proxy gave up on it (HAProxy closes them as it
				// marks the server down: the read that sees DOWN sees none).
				fp.DownS, fp.SessionsAtDown = &d, max(sessions[e.Server], e.Sessions)
				if e.Sessions == 0 {
					fp.LeftS = &d
				}
			case e.Server == fp.Server && fp.DownS != nil && fp.LeftS == nil && e.Sessions == 0:
				fp.LeftS = &d
			case e.Server != fp.Server && e.Serving && fp.NewServerS == nil:
				fp.NewServer, fp.NewServerS = e.Server, &d
			}
		}
		fs[i].Proxy = fp
	}
}

// proxyNode is the proxy member of c as a sampler node (no SQL: the host sampler reads its
// process's CPU and its namespace's traffic), or nil when c has none or habench does not
// run it.
func proxyNode(c *cluster.Cluster) *sampler.Node {
	p := c.Proxy()
	if p == nil || !c.Deployed() {
		return nil
	}
	h := c.Host(p)
	if h == nil {
		return nil
	}
	name := p.Name
	return &sampler.Node{Name: name, Role: topology.RoleProxy, Host: h, HostName: c.Provider().HostName(c, p),
		Netns: p.Netns, PID: p.PID, StartTicks: p.StartTicks,
		Server: func() (int, uint64, error) { return c.ServerProcess(name) }}
}

// proxyCPU is the proxy's mean CPU in cores over the samples (nil: none).
func proxyCPU(samples []sampler.Sample) *float64 {
	sum, n := 0.0, 0
	for _, s := range samples {
		if s.Node == topology.ProxyName && s.Metric == sampler.MetricServerCPU {
			sum += s.Value
			n++
		}
	}
	if n == 0 {
		return nil
	}
	v := sum / float64(n)
	return &v
}

// proxyEventsCSV renders events as proxy_events.csv.
func proxyEventsCSV(evs []schema.ProxyEvent) string {
	var b strings.Builder
	b.WriteString("at_s,endpoint,server,status,serving,sessions\n")
	for _, e := range evs {
		fmt.Fprintf(&b, "%.3f,%s,%s,%s,%t,%d\n", e.AtS, e.Endpoint, e.Server, e.Status, e.Serving, e.Sessions)
	}
	return b.String()
}

// proxyPoll returns the function that reads c's proxy's state (Cluster.ProxyState: its
// program's, HAProxy's statistics). Error when c has no proxy.
func proxyPoll(c *cluster.Cluster) (func(context.Context) ([]proxy.Server, error), error) {
	if c.Proxy() == nil {
		return nil, fmt.Errorf("cluster %s has no proxy", c.Name)
	}
	return func(ctx context.Context) ([]proxy.Server, error) {
		servers, err := c.ProxyState(ctx)
		if err != nil {
			return nil, err
		}
		return slices.DeleteFunc(servers, func(s proxy.Server) bool { return s.Backend != "write" && s.Backend != "read" }), nil
	}, nil
}
