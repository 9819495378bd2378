package experiment

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/history"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
)

// Stale commits: commits of the probe writer, through the proxy, that a node acknowledged
// while the cluster's own view no longer counted it as the writer: the old source after a
// promote, the old PRIMARY after an election, a Galera node outside the Primary component.
// The application saw them succeed; the cluster went on without them (a split brain).
// They are counted against windows in which a node was out by that view, known for
// certain: a commit counts only when it was sent (its operation's start) after the window
// began and acknowledged before it ended, so the uncertainty of each view (polled every
// 0.5 s, sampled every second) never makes a commit stale.

// staleWindow is a time in which Node was not the writer by the cluster's own view, from
// FromS to ToS (seconds on samples.csv's clock, both included; ToS +Inf: to the end).
type staleWindow struct {
	Node       string
	FromS, ToS float64
}

// probeCommit is an acknowledged commit of the probe: its sequence number, the node that
// acknowledged it, when it was sent and acknowledged (seconds on samples.csv's clock).
type probeCommit struct {
	Seq         int64
	Node        string
	SentS, AckS float64
}

// probeCommits are the acknowledged commits of ops, a probe history whose clock started
// at start, on the clock that starts at epoch (samples.csv's).
func probeCommits(ops []history.Op, start, epoch time.Time) []probeCommit {
	off := start.Sub(epoch).Seconds()
	var out []probeCommit
	for _, op := range ops {
		if op.Outcome != history.OK || !isCommit(op) {
			continue
		}
		var seq int64
		for _, m := range op.Value {
			if m.F == "append" && m.Value != nil {
				seq = *m.Value
			}
		}
		out = append(out, probeCommit{Seq: seq, Node: op.Node, SentS: off + float64(op.Start)/1e9, AckS: off + float64(op.End)/1e9})
	}
	return out
}

// writerWindows are the windows of a kind with a single writer, from the writers the
// cluster named (seen, each from its At, changed after its After): every node of nodes
// but seen[k].Node is out from seen[k].At until the earliest After of a later change to
// it (+Inf: none).
func writerWindows(seen []writerSeen, nodes []string, epoch time.Time) []staleWindow {
	var out []staleWindow
	for k, w := range seen {
		for _, n := range nodes {
			if n == w.Node {
				continue
			}
			to := math.Inf(1)
			for _, later := range seen[k+1:] {
				if later.Node == n {
					to = later.After.Sub(epoch).Seconds()
					break
				}
			}
			out = append(out, staleWindow{Node: n, FromS: w.At.Sub(epoch).Seconds(), ToS: to})
		}
	}
	return out
}

// viewWindows are the windows of a Galera cluster or a multi-primary group: for each
// fault that took nodes away (nodesOf), the first run of ticks after it in which the
// largest membership the other nodes reported was below the largest in the 3 s before it
// and a majority of that, without the fault's nodes (the others formed the Primary
// component, the quorum, without them; viewDrop: a drop that began soon enough after the
// fault, while no node of the fault reported the others' membership). A tick's view was
// read between it and the next tick, so a window is from the tick after its first to its
// last, and a single tick makes none. unseen are the faults (by index) whose view was not
// seen, with why: no other node's membership sampled in the 3 s before it, or none from
// it until the end of the next fault on its nodes.
func viewWindows(faults []schema.RunFault, samples []sampler.Sample, nodesOf func(schema.RunFault) []string) (windows []staleWindow, unseen map[int]string) {
	views := membership(samples)
	ticks := slices.Sorted(maps.Keys(views))
	unseen = map[int]string{}
	for i, f := range faults {
		nodes := nodesOf(f)
		if len(nodes) == 0 {
			continue
		}
		until := untilNextOn(faults, i, nodes, nodesOf)
		if viewBefore(views, ticks, f.AtS, nodes) == 0 || !slices.ContainsFunc(ticks, func(tick time.Duration) bool {
			t := tick.Seconds()
			return t >= f.AtS && t < until && othersView(views, tick, nodes) > 0
		}) {
			unseen[i] = "no membership samples of the other nodes before and after it"
			continue
		}
		first, last := viewDrop(views, ticks, faults, i, nodes, nodesOf, func(l, before float64) bool { return 2*l > before })
		if first < 0 || first+1 > last {
			continue
		}
		for _, n := range nodes {
			windows = append(windows, staleWindow{Node: n, FromS: ticks[first+1].Seconds(), ToS: ticks[last].Seconds()})
		}
	}
	return windows, unseen
}

// countStale counts the commits stale by windows: sent at or after a window of their
// node began and acknowledged by its end. Each counts for the last fault at or before
// it was sent (faults, fs: the run's and summary.json's, in the same order), in its
// Proxy's StaleCommits and StaleOn; those before the first fault count in the total
// only. StaleCommits is set to 0 first in every fault with a Proxy but those of unseen
// (their view not seen: nil, not counted, unless a stale commit counts for them). It
// returns the total and up to 20 of their sequence numbers.
func countStale(commits []probeCommit, windows []staleWindow, faults []schema.RunFault, fs []schema.FaultSummary, unseen map[int]string) (int64, []int64) {
	for i := range fs {
		if _, blind := unseen[i]; fs[i].Proxy != nil && !blind {
			fs[i].Proxy.StaleCommits = new(int64)
		}
	}
	var total int64
	var seqs []int64
	for _, c := range commits {
		if !slices.ContainsFunc(windows, func(w staleWindow) bool { return w.Node == c.Node && w.FromS <= c.SentS && c.AckS <= w.ToS }) {
			continue
		}
		total++
		if len(seqs) < 20 {
			seqs = append(seqs, c.Seq)
		}
		i := -1
		for j, f := range faults {
			if f.AtS <= c.SentS {
				i = j
			}
		}
		if i < 0 || i >= len(fs) || fs[i].Proxy == nil {
			continue
		}
		p := fs[i].Proxy
		if p.StaleCommits == nil {
			p.StaleCommits = new(int64)
		}
		*p.StaleCommits++
		if !slices.Contains(p.StaleOn, c.Node) {
			p.StaleOn = append(p.StaleOn, c.Node)
		}
	}
	return total, seqs
}

// probeStale counts the probe's stale commits (sum.Probe.StaleCommits, each fault's
// Proxy.StaleCommits) when it went through the proxy, and warns when there are any:
// against the writers the cluster named (watchWriters) on a kind with a single writer,
// against the view changes of the faults (viewWindows) otherwise. Where the view was not
// seen (staleWindows) the counts stay nil (not counted; the run's too when it found none)
// and a NOTE says why.
func (st *runState) probeStale(sum *schema.Summary) {
	p, c := sum.Probe, st.b.Cluster
	if st.probe == nil || p == nil || p.Via != scenario.ViaProxy || c == nil {
		return
	}
	windows, unseen, none := st.staleWindows(c, sum)
	if none != "" {
		st.printf("NOTE: stale commits not counted: %s\n", none)
		return
	}
	for i, f := range st.man.Faults {
		if why, ok := unseen[i]; ok {
			st.printf("NOTE: stale commits not counted after %s %s at %.1f s: %s\n", f.Action, f.Node, f.AtS, why)
		}
	}
	n, seqs := countStale(probeCommits(st.probe.ops(), st.probe.h.Start(), st.sampleStart), windows, st.man.Faults, sum.Faults, unseen)
	if n == 0 && len(unseen) > 0 {
		st.printf("stale commits: none found, not counted (probe writer through the proxy: the view around a fault was not seen)\n")
		return
	}
	p.StaleCommits, p.Stale = &n, seqs
	st.printf("stale commits: %d of %d (probe writer through the proxy: acknowledged by a node that was no longer the writer)\n", n, p.Acknowledged)
	if w := staleWarning(p, sum.Faults); w != "" {
		st.warn(w, "stale commits", "stale", n)
	}
}

// staleWindows are the windows st's probe is counted against, the faults (indices into
// sum.Faults) whose view was not seen, with why, and why none could be counted at all
// ("" when some could): the writer watch never named a writer; summary.json's faults not
// the run's.
func (st *runState) staleWindows(c *cluster.Cluster, sum *schema.Summary) ([]staleWindow, map[int]string, string) {
	if st.writers != nil {
		seen, last := st.writers.changes(), st.writers.lastAsked()
		if len(seen) == 0 {
			return nil, nil, "the writer watch never named a writer (every poll failed)"
		}
		unseen := map[int]string{}
		for i, f := range st.man.Faults {
			if !last.After(f.At) {
				unseen[i] = "no poll of the writer watch named a writer after it"
			}
		}
		var nodes []string
		for _, n := range c.Nodes {
			nodes = append(nodes, n.Name)
		}
		return writerWindows(seen, nodes, st.sampleStart), unseen, ""
	}
	if len(sum.Faults) != len(st.man.Faults) {
		return nil, nil, fmt.Sprintf("summary.json has %d faults, the run %d", len(sum.Faults), len(st.man.Faults))
	}
	windows, unseen := viewWindows(st.man.Faults, st.allSamples, func(f schema.RunFault) []string {
		if f.Error != "" {
			return nil
		}
		return faultNodes(c, f.Action, f.Node)
	})
	return windows, unseen, ""
}

// staleWarning is the run's WARNING when the probe had stale commits ("" otherwise).
func staleWarning(p *schema.ProbeSummary, fs []schema.FaultSummary) string {
	if p == nil || p.StaleCommits == nil || *p.StaleCommits == 0 {
		return ""
	}
	var per []string
	for _, f := range fs {
		if f.Proxy != nil && f.Proxy.StaleCommits != nil && *f.Proxy.StaleCommits > 0 {
			per = append(per, fmt.Sprintf("%d on %s after %s %s at %.1f s", *f.Proxy.StaleCommits, strings.Join(f.Proxy.StaleOn, ","), f.Action, f.Node, f.AtS))
		}
	}
	where := ""
	if len(per) > 0 {
		where = " (" + strings.Join(per, "; ") + ")"
	}
	first := make([]string, len(p.Stale))
	for i, s := range p.Stale {
		first[i] = fmt.Sprint(s)
	}
	return fmt.Sprintf("⚠ probe writer: %d of %d acknowledged commits through the proxy were stale commits%s: acknowledged by a node the cluster no longer counted as the writer, a split brain the application saw succeed (first: %s)",
		*p.StaleCommits, p.Acknowledged, where, strings.Join(first, ", "))
}
