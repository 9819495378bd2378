package experiment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/habench/habench/schema"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// Client failover between writers. On a topology where every node takes writes (a Galera
// cluster, a multi-primary group) the workers are spread over the nodes; when the run's
// own faults take away a node they write to (or Bench.Failover asks for it: habench
// sysbench --failover), a worker whose node fails moves to another live node and goes
// back once its own is live again (workload.Target.Failover), as a client with a host list
// or a client-side balancer would. Which nodes are live is the cluster's own view, asked
// of each node every livePoll by a watch beside the workload (cluster.Cluster.NodeLive:
// Synced in the Primary component, ONLINE in a majority): the workers read it only after
// a failure, never per transaction. Each fault that took a node away is then measured by
// how long that node's workers took to commit elsewhere (client_failover_s) beside when
// the cluster's view lost the node (view_change_s).

// livePoll is how often the live watch asks each node whether it is live; liveTimeout
// bounds one answer (a node that does not answer in time, e.g. a paused server, is not
// live).
const (
	livePoll    = 250 * time.Millisecond
	liveTimeout = time.Second
)

// failoverPlan says whether b's workers fail over between their nodes, and why (the
// NOTE's reason; "" when they do not): b.Failover, or scheduled faults that take away a
// node they write to (failoverWhy); never with b.FailoverOff. Errors: b.Failover where
// failover cannot be (a usage error for the caller to show).
func (b *Bench) failoverPlan() (string, error) {
	if b.FailoverOff && !b.Failover {
		return "", nil
	}
	c := b.Cluster
	if c == nil {
		if b.Failover {
			return "", errors.New("--failover: needs a habench cluster (--cluster)")
		}
		return "", nil
	}
	why, ruledOut := failoverWhy(c.Spec, c.Name, endpointLabels(b.Target), b.Target.Follow != nil, b.Faults,
		func(action, node string) []string { return faultNodes(c, action, node) })
	switch {
	case b.Failover && ruledOut != "":
		return "", fmt.Errorf("--failover: %s", ruledOut)
	case b.Failover:
		return "asked for (--failover)", nil
	}
	return why, nil
}

// failoverWhy is failoverPlan's decision on what a plan knows as well as a run: the
// topology spec (its kind) called name, the labels of the endpoints the workers write to,
// whether they follow the writer, and the faults with the nodes each takes away
// (nodesOf). Client failover needs a kind that takes writes on every node and reports
// which are live (cluster.Cluster.NodeLive), two distinct endpoints or more, and no
// following; ruledOut says which is missing ("" when none is). why is the reason the
// workers fail over ("" when they do not): the faults that take away a node they write to.
func failoverWhy(spec topology.Spec, name string, endpoints []string, follow bool, faults []scenario.FaultEvent, nodesOf func(action, node string) []string) (why, ruledOut string) {
	distinct := map[string]bool{}
	for _, e := range endpoints {
		distinct[e] = true
	}
	switch {
	case scenario.CanFollow(spec) == "":
		return "", fmt.Sprintf("cluster %s (%s) has a single writer: its workers follow the writer instead (--writer auto)", name, spec.Kind)
	case len(distinct) < 2:
		return "", "the workers write to one node only: give two or more (--nodes), or none for every node"
	case follow:
		return "", "the workers follow the writer"
	case !(&cluster.Cluster{Spec: spec}).OffersLive():
		return "", fmt.Sprintf("kind %s does not report which nodes are live", spec.Kind)
	}
	var hit []string
	for _, ev := range faults {
		if slices.ContainsFunc(nodesOf(ev.Action, ev.Node), func(n string) bool { return distinct[n] }) {
			hit = append(hit, fmt.Sprintf("%s %s at %s", ev.Action, ev.Node, time.Duration(ev.At)))
		}
	}
	if len(hit) == 0 {
		return "", ""
	}
	return "the scenario's faults take away nodes the workers write to (" + strings.Join(hit, ", ") + ")", ""
}

// planFailover is the dry run's lines on client failover (scenario.Plan.Failover): for
// each topology of p's scenario whose kind takes writes on every node, whether its
// workers will fail over and why, as failoverPlan decides at the run, from the nodes as
// planned (n1..nN, the writer n1); a topology of the state directory (cluster:) is known
// only at the run. None without faults.
func planFailover(p *scenario.Plan) []string {
	s := p.Scenario
	if len(s.Faults) == 0 {
		return nil
	}
	var out []string
	for _, t := range s.Topologies {
		if t.Cluster != "" || scenario.CanFollow(t) == "" {
			continue
		}
		size := t.Nodes
		if !scenario.Deploys(t) {
			size = len(t.DSNs)
		}
		var all []string
		for i := 1; i <= size; i++ {
			all = append(all, topology.NodeName(i))
		}
		eps := s.Workload.Nodes.For(t.Name)
		if len(eps) == 0 {
			eps = all
		}
		why, ruledOut := failoverWhy(t, t.Name, eps, false, s.Faults,
			func(action, node string) []string {
				return disrupted(action, node, all, func() string { return topology.NodeName(1) }, t.Sites)
			})
		via := ""
		if p.AxisOf(scenario.AxisVia).Name != "" {
			via = " (in its direct cells; through the proxy, the proxy picks the node)"
		}
		switch {
		case s.Workload.Via == scenario.ViaProxy && via == "":
			out = append(out, fmt.Sprintf("client failover in %s: off (workload.via proxy: the proxy picks the node)", t.Name))
		case ruledOut != "":
			out = append(out, fmt.Sprintf("client failover in %s: off (%s)", t.Name, ruledOut))
		case why == "":
			out = append(out, fmt.Sprintf("client failover in %s: off (no fault takes away a node its workers write to: as sysbench, an error not ignored ends the cell)", t.Name))
		case s.Workload.Failover == scenario.FailoverOff:
			out = append(out, fmt.Sprintf("client failover in %s: off (workload.failover: off), though %s: a node's failure ends the cell unless its error is in --mysql-ignore-errors, as in sysbench", t.Name, why))
		default:
			out = append(out, fmt.Sprintf("client failover in %s: on%s, %s: a worker whose node fails moves to another live node and goes back once its own is live again, those failures retried whatever --mysql-ignore-errors says (workload.failover: off turns it off)", t.Name, via, why))
		}
	}
	return out
}

// faultNodes are the nodes fault action on node takes away from c's clients (disrupted,
// with c's nodes and its recorded writer).
func faultNodes(c *cluster.Cluster, action, node string) []string {
	var all []string
	for _, n := range c.Nodes {
		all = append(all, n.Name)
	}
	writer := func() string {
		if len(c.Nodes) == 0 {
			return ""
		}
		return c.Writer().Name
	}
	return disrupted(action, node, all, writer, c.Spec.Sites)
}

// disrupted are the nodes fault action on node takes away from the clients
// (FaultAction.Disrupts): none, every node (all), or the node (writer() for "writer", ""
// when not known; a site's members for a site of sites).
func disrupted(action, node string, all []string, writer func() string, sites topology.Sites) []string {
	a := FaultActionOf(action)
	if a == nil {
		return nil
	}
	switch a.Disrupts {
	case DisruptsEvery:
		return all
	case DisruptsNode:
		if site := sites.Site(node); site != nil {
			return site.Nodes
		}
		if node == "writer" {
			if w := writer(); w != "" {
				return []string{w}
			}
		}
		return []string{node}
	}
	return nil
}

// clientFailover (a setup phase) turns the workers' failover on when failoverPlan says so:
// the live watch starts (its first answers in hand before the workload, at most 2 s), the
// target gets its view, a NOTE says why and how, and the manifest records it
// (workload.failover).
func (st *runState) clientFailover() error {
	b := st.b
	why, err := b.failoverPlan()
	if err != nil || why == "" {
		return err
	}
	var nodes []*cluster.Node
	for _, ep := range b.Target.Endpoints {
		n := b.Cluster.Node(ep.Label())
		if n == nil {
			return fmt.Errorf("failover: endpoint %s is not a node of cluster %s", ep.Label(), b.Cluster.Name)
		}
		nodes = append(nodes, n)
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(st.ctx))
	lw, err := watchLive(ctx, b.Cluster, nodes)
	if err != nil {
		stop()
		return err
	}
	st.onCleanup(func() { stop(); lw.wait() })
	st.liveWatch = lw
	select {
	case <-lw.answered:
	case <-time.After(2 * time.Second):
	}
	b.Target.Failover = lw.live
	note := fmt.Sprintf("client failover: %s; a worker whose node fails (lost connection, a refusal of a node out of its cluster: 1047, 1290, 1792, 3100, or a transaction hung %s s while the cluster does not count its node live) moves to another live node of %s and goes back once its own is live again; those failures are retried whatever --mysql-ignore-errors says",
		why, hangSecs(b.Options.WriterHang), strings.Join(endpointLabels(b.Target), ", "))
	st.man.Workload.Failover = note
	st.printf("NOTE: %s\n", note)
	return st.writeManifest()
}

// hangSecs is --writer-hang d in seconds ("2"), the default when d is 0.
func hangSecs(d time.Duration) string {
	if d <= 0 {
		d = workload.DefaultWriterHang
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".")
}

// endpointLabels are the labels of t's endpoints (node names on a cluster), in the
// target's order; nil when it has none.
func endpointLabels(t workload.Target) []string {
	var out []string
	for _, ep := range t.Endpoints {
		out = append(out, ep.Label())
	}
	return out
}

// liveWatch keeps which nodes are live, each asked every livePoll over an admin pool of
// its own (cluster.Cluster.NodeLive within liveTimeout), and when each changed.
type liveWatch struct {
	mu       sync.Mutex
	order    []string             // node names, in the target's order
	last     map[string]liveState // node -> its latest answer
	changes  map[string][]liveState
	answered chan struct{} // closed once every node was asked once
	wg       sync.WaitGroup
}

// liveState is one answer of a node: live or not, to the question asked at At.
type liveState struct {
	At   time.Time
	Live bool
}

// watchLive starts asking nodes of c until ctx ends (wait waits for it). Error: an admin
// pool that cannot be opened (nothing is left running then).
func watchLive(ctx context.Context, c *cluster.Cluster, nodes []*cluster.Node) (*liveWatch, error) {
	w := &liveWatch{last: map[string]liveState{}, changes: map[string][]liveState{}, answered: make(chan struct{})}
	var dbs []*sql.DB
	for _, n := range nodes {
		db, err := c.OpenAdmin(n)
		if err != nil {
			for _, d := range dbs {
				d.Close()
			}
			return nil, err
		}
		dbs = append(dbs, db)
		w.order = append(w.order, n.Name)
	}
	for i, n := range nodes {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer dbs[i].Close()
			tk := time.NewTicker(livePoll)
			defer tk.Stop()
			for {
				asked := time.Now()
				qctx, cancel := context.WithTimeout(ctx, liveTimeout)
				why, _ := c.NodeLive(qctx, n, dbs[i])
				cancel()
				if ctx.Err() != nil {
					return
				}
				w.set(n.Name, liveState{At: asked, Live: why == ""})
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
				}
			}
		}()
	}
	return w, nil
}

// set records st, node's latest answer: a change of its liveness (or its first answer)
// is kept in changes (for back); once every node of order answered once, answered is
// closed. Safe for concurrent use (the watch's goroutines, one per node).
func (w *liveWatch) set(node string, st liveState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, seen := w.last[node]
	w.last[node] = st
	if !seen || prev.Live != st.Live {
		w.changes[node] = append(w.changes[node], st)
	}
	if !seen && len(w.last) == len(w.order) {
		close(w.answered)
	}
}

// live is the target's Failover: the nodes whose latest answer, to a question asked at
// or after since, said live, in the target's order; known is false until every node
// answered once (then none listed means none live: a cluster without quorum, every node
// down).
func (w *liveWatch) live(since time.Time) (live []string, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.order {
		if st := w.last[n]; st.Live && !st.At.Before(since) {
			live = append(live, n)
		}
	}
	return live, len(w.last) == len(w.order)
}

// back is when node was seen live again after from: its first live answer after it was
// seen not live (at from, or in an answer asked after it); from itself when it was not
// seen down then (nothing to come back from), the zero time when it was not seen live
// again.
func (w *liveWatch) back(node string, from time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	down := false // at from, then after it
	for _, st := range w.changes[node] {
		switch {
		case st.At.Before(from):
			down = !st.Live
		case !st.Live:
			down = true
		case down:
			return st.At
		}
	}
	if !down {
		return from
	}
	return time.Time{}
}

// wait returns once every goroutine of the watch ended (after its context ended) and
// closed its node's admin pool.
func (w *liveWatch) wait() { w.wg.Wait() }

// clientFailoverSummary gives each fault that took nodes away (FaultAction.Disrupts) the
// cluster's view change (from the samples) and, when the workers failed over between
// writers, their failover time (from their moves).
func (st *runState) clientFailoverSummary(sum *schema.Summary) {
	c := st.b.Cluster
	if c == nil || len(sum.Faults) != len(st.man.Faults) {
		return
	}
	nodesOf := func(f schema.RunFault) []string {
		if f.Error != "" {
			return nil
		}
		return faultNodes(c, f.Action, f.Node)
	}
	setViewChanges(sum.Faults, st.man.Faults, st.allSamples, nodesOf)
	if st.liveWatch != nil && st.result != nil {
		setClientFailover(sum.Faults, st.man.Faults, st.result.WriterMoves, nodesOf, st.liveWatch.back)
	}
}

// nextOn is the index of the first fault after faults[i] on one of nodes (len(faults):
// none).
func nextOn(faults []schema.RunFault, i int, nodes []string, nodesOf func(schema.RunFault) []string) int {
	for j := i + 1; j < len(faults); j++ {
		g := faults[j]
		if slices.Contains(nodes, g.Node) || slices.ContainsFunc(nodesOf(g), func(n string) bool { return slices.Contains(nodes, n) }) {
			return j
		}
	}
	return len(faults)
}

// setViewChanges sets ViewChangeS of each fault that took nodes away (nodesOf: none for
// the others): the first sample tick of its view drop (viewDrop), in which the largest
// membership any other node reported (membership) was below the largest they reported in
// the 3 s before the fault, without those nodes.
func setViewChanges(fs []schema.FaultSummary, faults []schema.RunFault, samples []sampler.Sample, nodesOf func(schema.RunFault) []string) {
	views := membership(samples)
	ticks := slices.Sorted(maps.Keys(views))
	for i, f := range faults {
		nodes := nodesOf(f)
		if len(nodes) == 0 {
			continue
		}
		if first, _ := viewDrop(views, ticks, faults, i, nodes, nodesOf, func(l, before float64) bool { return true }); first >= 0 {
			d := ticks[first].Seconds() - f.AtS
			fs[i].ViewChangeS = &d
		}
	}
}

// viewChangeWithinS bounds, in seconds, how long after a fault ended (its time plus its
// took_s) the view change it made can begin, two sample ticks more: a silent node is
// suspected after about 5 s (Galera's evs.suspect_timeout, PT5S; a group's failure
// detector) and the new view follows (the first sample showing it came 5.3-7.9 s after a
// partition in docs/links.md's measurements); 10 s leaves room on a loaded machine. A
// later drop is another fault's.
const viewChangeWithinS = 10.0

// viewDrop is the first run of sample ticks (indices into ticks; -1, -1: none) after
// faults[i], which took nodes away, in which the others' view was without those nodes:
// the largest membership any node but nodes reported (othersView), l, was below the
// largest in the 3 s before the fault (viewBefore, before) and drop(l, before) holds,
// while no node of nodes reported l itself (a node of the fault that reports the others'
// membership is in their component: another node left). The run begins from the fault
// on, by its end plus viewChangeWithinS and two ticks, and before the end of the next
// fault on those nodes (untilNextOn, a start takes seconds: a killed Galera node is
// evicted after evs.suspect_timeout, maybe while it is being started again); it ends at
// the first tick after it that is not such a tick.
func viewDrop(views map[time.Duration]map[string]float64, ticks []time.Duration, faults []schema.RunFault, i int, nodes []string, nodesOf func(schema.RunFault) []string, drop func(l, before float64) bool) (first, last int) {
	f := faults[i]
	until := untilNextOn(faults, i, nodes, nodesOf)
	by := f.AtS + f.Took + viewChangeWithinS + 2*tickS(ticks)
	before := viewBefore(views, ticks, f.AtS, nodes)
	first, last = -1, -1
	if before == 0 {
		return first, last
	}
	for k, tick := range ticks {
		t := tick.Seconds()
		if t < f.AtS {
			continue
		}
		if t >= until || (first < 0 && t > by) {
			break
		}
		l := othersView(views, tick, nodes)
		in := slices.ContainsFunc(nodes, func(n string) bool { v, ok := views[tick][n]; return ok && v == l })
		if l < before && drop(l, before) && !in {
			if first < 0 {
				first = k
			}
			last = k
		} else if first >= 0 {
			break
		}
	}
	return first, last
}

// tickS is the sampling interval of ticks in seconds: their smallest gap (1 s with fewer
// than two).
func tickS(ticks []time.Duration) float64 {
	gap := time.Duration(0)
	for k := 1; k < len(ticks); k++ {
		if d := ticks[k] - ticks[k-1]; d > 0 && (gap == 0 || d < gap) {
			gap = d
		}
	}
	if gap == 0 {
		return 1
	}
	return gap.Seconds()
}

// untilNextOn is the end (its time plus its duration: a start takes seconds) of the next
// fault after faults[i] on nodes, in seconds on samples.csv's clock (+Inf: none).
func untilNextOn(faults []schema.RunFault, i int, nodes []string, nodesOf func(schema.RunFault) []string) float64 {
	if j := nextOn(faults, i, nodes, nodesOf); j < len(faults) {
		return faults[j].AtS + faults[j].Took
	}
	return math.Inf(1)
}

// othersView is the largest membership any node but nodes reported at tick (0: none).
func othersView(views map[time.Duration]map[string]float64, tick time.Duration, nodes []string) float64 {
	v := 0.0
	for n, m := range views[tick] {
		if !slices.Contains(nodes, n) {
			v = max(v, m)
		}
	}
	return v
}

// viewBefore is the largest membership any node but nodes reported in the 3 s before atS
// (0: none).
func viewBefore(views map[time.Duration]map[string]float64, ticks []time.Duration, atS float64, nodes []string) float64 {
	before := 0.0
	for _, tick := range ticks {
		if t := tick.Seconds(); t < atS && t >= atS-3 {
			before = max(before, othersView(views, tick, nodes))
		}
	}
	return before
}

// membership is each node's view of its cluster's membership at each sample tick: a
// Galera node's galera_cluster_size (its component), a group member's rows of its view
// less those UNREACHABLE (gr_members_total - gr_members_unreachable: a member that left
// is no row, one that died is UNREACHABLE until expelled).
func membership(samples []sampler.Sample) map[time.Duration]map[string]float64 {
	type key struct {
		tick time.Duration
		node string
	}
	total, unreachable := map[key]float64{}, map[key]float64{}
	out := map[time.Duration]map[string]float64{}
	put := func(k key, v float64) {
		if out[k.tick] == nil {
			out[k.tick] = map[string]float64{}
		}
		out[k.tick][k.node] = v
	}
	for _, s := range samples {
		k := key{s.Elapsed, s.Node}
		switch s.Metric {
		case sampler.MetricGaleraClusterSize:
			put(k, s.Value)
		case sampler.MetricGRMembersTotal:
			total[k] = s.Value
		case sampler.MetricGRMembersUnreachable:
			unreachable[k] = s.Value
		}
	}
	for k, v := range total {
		put(k, v-unreachable[k])
	}
	return out
}

// setClientFailover sets FailoverWorkers and ClientFailoverS of each fault that took
// nodes away (nodesOf): the workers that left one of its nodes (WriterMove.Left) while the
// node was away (from the fault until back, the live watch's, says it was live again, and
// before the next fault on those nodes), and the time from the fault until the last of
// them committed again (WriterMove.Settled; nil when one had not).
func setClientFailover(fs []schema.FaultSummary, faults []schema.RunFault, moves []workload.WriterMove, nodesOf func(schema.RunFault) []string, back func(node string, from time.Time) time.Time) {
	for i, f := range faults {
		nodes := nodesOf(f)
		if len(nodes) == 0 {
			continue
		}
		next := time.Time{}
		if j := nextOn(faults, i, nodes, nodesOf); j < len(faults) {
			next = faults[j].At
		}
		away := func(m workload.WriterMove) bool {
			if m.At.Before(f.At) || (!next.IsZero() && !m.At.Before(next)) {
				return false
			}
			b := back(m.From, f.At)
			return b.IsZero() || m.At.Before(b)
		}
		var last time.Time
		settled := true
		for _, m := range moves {
			if m.Left == 0 || !slices.Contains(nodes, m.From) || !away(m) {
				continue
			}
			fs[i].FailoverWorkers += m.Left
			if m.Settled.IsZero() {
				settled = false
			} else if m.Settled.After(last) {
				last = m.Settled
			}
		}
		if fs[i].FailoverWorkers > 0 && settled {
			d := last.Sub(f.At).Seconds()
			fs[i].ClientFailoverS = &d
		}
	}
}
