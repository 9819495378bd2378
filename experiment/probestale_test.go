package experiment

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/history"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/schema"
	"github.com/habench/habench/topology"
)

// staleHistory is a probe history from (node, sent, acknowledged, outcome) rows, times in
// seconds on samples.csv's clock with the probe started 1 s after its zero (epoch); seq
// is the row's number from 1.
func staleHistory(epoch time.Time, rows []struct {
	node      string
	sent, ack float64
	outcome   history.Outcome
}) (time.Time, []history.Op) {
	start := epoch.Add(time.Second)
	var ops []history.Op
	for i, r := range rows {
		ops = append(ops, history.Op{Index: i, Node: r.node, Start: int64((r.sent - 1) * 1e9), End: int64((r.ack - 1) * 1e9),
			Outcome: r.outcome, Value: []history.Mop{history.Append(probeKey, int64(i+1))}})
	}
	// the final read is not a commit
	ops = append(ops, history.Op{Index: len(rows), Node: "n2", Start: 40e9, End: 40.1e9, Outcome: history.OK, Value: []history.Mop{history.RL(probeKey, 1, 2)}})
	return start, ops
}

// An async source n1 promoted away at 10 s (n2 named by the 10.6 s poll, the poll before
// it asked at 10.0 s) and back at 20 s (the poll before n1's return asked at 20.1 s): the
// probe through the proxy kept committing on n1. Stale: the ok commits on n1 sent after
// 10.6 s and acknowledged by 20.1 s (11 s for the first promote, 20.05 s for the second);
// not the one sent at 10.3 s (n2 maybe not named yet), the failed one at 12 s, the one on
// n2, the one acknowledged at 20.2 s (n1 maybe the writer again) or those before and after.
func TestStaleCommitsWriter(t *testing.T) {
	epoch := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }
	start, ops := staleHistory(epoch, []struct {
		node      string
		sent, ack float64
		outcome   history.Outcome
	}{
		{"n1", 5, 5.01, history.OK}, {"n1", 10.3, 10.31, history.OK}, {"n1", 11, 11.01, history.OK},
		{"n1", 12, 12.01, history.Fail}, {"n2", 12.5, 12.51, history.OK}, {"n1", 20.05, 20.06, history.OK},
		{"n1", 20.08, 20.2, history.OK}, {"n1", 25, 25.01, history.OK},
	})
	seen := []writerSeen{{At: at(0.5), Node: "n1"}, {At: at(10.6), After: at(10), Node: "n2"}, {At: at(20.6), After: at(20.1), Node: "n1"}}
	faults := []schema.RunFault{{AtS: 10, FaultRecord: schema.FaultRecord{Action: "promote", Node: "n2"}}, {AtS: 20, FaultRecord: schema.FaultRecord{Action: "promote", Node: "n1"}}}
	fs := []schema.FaultSummary{{AtS: 10, Action: "promote", Node: "n2", Proxy: &schema.FaultProxy{}}, {AtS: 20, Action: "promote", Node: "n1", Proxy: &schema.FaultProxy{}}}
	commits := probeCommits(ops, start, epoch)
	if len(commits) != 7 {
		t.Fatalf("%d acknowledged commits, want 7 (not the failed one, not the final read): %+v", len(commits), commits)
	}
	n, seqs := countStale(commits, writerWindows(seen, []string{"n1", "n2", "n3"}, epoch), faults, fs, nil)
	if n != 2 || !slices.Equal(seqs, []int64{3, 6}) {
		t.Errorf("%d stale commits %v, want 2: seq 3 and 6", n, seqs)
	}
	for i, f := range fs {
		if p := f.Proxy; p.StaleCommits == nil || *p.StaleCommits != 1 || !slices.Equal(p.StaleOn, []string{"n1"}) {
			t.Errorf("fault %d: %s stale on %v, want 1 on n1", i, count(p.StaleCommits), p.StaleOn)
		}
	}
	p := &schema.ProbeSummary{Acknowledged: 7, StaleCommits: &n, Stale: seqs}
	if w := staleWarning(p, fs); !strings.Contains(w, "2 of 7 acknowledged commits through the proxy were stale commits (1 on n1 after promote n2 at 10.0 s; 1 on n1 after promote n1 at 20.0 s)") {
		t.Errorf("warning %q", w)
	}
	// The same commits with the proxy following the writer: none stale, and 0 is set.
	for i := range commits {
		if commits[i].SentS > 10.6 && commits[i].AckS < 20.1 {
			commits[i].Node = "n2"
		}
	}
	fs[0].Proxy, fs[1].Proxy = &schema.FaultProxy{}, &schema.FaultProxy{}
	if n, _ := countStale(commits, writerWindows(seen, []string{"n1", "n2"}, epoch), faults, fs, nil); n != 0 || fs[0].Proxy.StaleCommits == nil || *fs[0].Proxy.StaleCommits != 0 {
		t.Errorf("following the writer: %d stale, fault's count %s; want 0 and 0 (checked)", n, count(fs[0].Proxy.StaleCommits))
	}
	// A fault whose view was not seen is not counted (nil) when none of its commits was
	// stale; counted when one was (fault 1 after the first promote, with its stale commit).
	fs[0].Proxy, fs[1].Proxy = &schema.FaultProxy{}, &schema.FaultProxy{}
	countStale(commits, writerWindows(seen, []string{"n1", "n2"}, epoch), faults, fs, map[int]string{1: "not seen"})
	if fs[0].Proxy.StaleCommits == nil || fs[1].Proxy.StaleCommits != nil {
		t.Errorf("fault 1 not seen: counts %s, %s; want 0, none", count(fs[0].Proxy.StaleCommits), count(fs[1].Proxy.StaleCommits))
	}
	fs[0].Proxy, fs[1].Proxy = &schema.FaultProxy{}, &schema.FaultProxy{}
	countStale(probeCommits(ops, start, epoch), writerWindows(seen, []string{"n1", "n2", "n3"}, epoch), faults, fs, map[int]string{1: "not seen"})
	if fs[1].Proxy.StaleCommits == nil || *fs[1].Proxy.StaleCommits != 1 {
		t.Errorf("fault 1 not seen, a stale commit after it: count %s, want 1", count(fs[1].Proxy.StaleCommits))
	}
	zero := int64(0)
	if w := staleWarning(&schema.ProbeSummary{StaleCommits: &zero}, fs); w != "" {
		t.Errorf("warning without stale commits: %q", w)
	}
}

// A Galera node n1 partitioned at 5 s: the other two count 3 members until the 7 s tick,
// 2 (a Primary component without n1) from the 8 s tick to the 14 s tick, 3 again from 15 s.
// n1 is out from 9 s (the 8 s view was read by then) to 14 s: the commit on n1 sent at 9.5 s
// is stale, not those sent at 8.5 s or acknowledged after 14 s, nor n2's. A partition of
// n1 and n2 at 30 s leaves n3 alone with 1 member, a minority: no window.
func TestStaleCommitsView(t *testing.T) {
	epoch := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var samples []sampler.Sample
	for s := 0; s <= 40; s++ {
		size := 3.0
		switch {
		case s >= 8 && s <= 14:
			size = 2
		case s >= 33:
			size = 1
		}
		for _, n := range []string{"n2", "n3"} {
			v := size
			if n == "n2" && s >= 33 {
				v = 2 // n2 is with n1, on the majority side
			}
			samples = append(samples, sampler.Sample{Elapsed: time.Duration(s) * time.Second, Node: n, Metric: sampler.MetricGaleraClusterSize, Value: v})
		}
		samples = append(samples, sampler.Sample{Elapsed: time.Duration(s) * time.Second, Node: "n1", Metric: sampler.MetricGaleraClusterSize, Value: 1})
	}
	faults := []schema.RunFault{{AtS: 5, FaultRecord: schema.FaultRecord{Action: "partition", Node: "n1"}}, {AtS: 30, FaultRecord: schema.FaultRecord{Action: "partition", Node: "n1,n2"}}}
	nodesOf := func(f schema.RunFault) []string { return strings.Split(f.Node, ",") }
	windows, unseen := viewWindows(faults, samples, nodesOf)
	if len(windows) != 1 || windows[0] != (staleWindow{Node: "n1", FromS: 9, ToS: 14}) || len(unseen) > 0 {
		t.Fatalf("windows %+v, unseen %v; want n1 from 9 s to 14 s only, every fault seen", windows, unseen)
	}
	start, ops := staleHistory(epoch, []struct {
		node      string
		sent, ack float64
		outcome   history.Outcome
	}{{"n1", 8.5, 8.6, history.OK}, {"n1", 9.5, 9.6, history.OK}, {"n1", 13.9, 14.1, history.OK}, {"n2", 10, 10.1, history.OK}, {"n1", 35, 35.1, history.OK}})
	fs := []schema.FaultSummary{{Proxy: &schema.FaultProxy{}}, {Proxy: &schema.FaultProxy{}}}
	n, seqs := countStale(probeCommits(ops, start, epoch), windows, faults, fs, unseen)
	if n != 1 || !slices.Equal(seqs, []int64{2}) || *fs[0].Proxy.StaleCommits != 1 || *fs[1].Proxy.StaleCommits != 0 {
		t.Errorf("%d stale %v (faults %d, %d), want 1: seq 2, for the first fault", n, seqs, *fs[0].Proxy.StaleCommits, *fs[1].Proxy.StaleCommits)
	}
}

// galeraSizes are galera_cluster_size samples of n1, n2, n3 every second from 0 to 40 s:
// size(node, second) is the node's view, false for a second it was not sampled.
func galeraSizes(size func(node string, s int) (float64, bool)) []sampler.Sample {
	var out []sampler.Sample
	for s := 0; s <= 40; s++ {
		for _, n := range []string{"n1", "n2", "n3"} {
			if v, ok := size(n, s); ok {
				out = append(out, sampler.Sample{Elapsed: time.Duration(s) * time.Second, Node: n, Metric: sampler.MetricGaleraClusterSize, Value: v})
			}
		}
	}
	return out
}

// TestStaleCommitsViewOtherNodesFault: a view change another node's fault made is not the
// fault's of a node still in the others' component. Galera, 3 nodes: n1 paused for 2 s
// at 5 s (shorter than the eviction: no view change), n2 killed later and evicted 6 s
// after its kill (n1 and n3 at 2 members). n1 gets no window and no view change; n2 both.
// First n2 killed at 8 s, within the eviction time of the pause's end: n1 reports the
// same 2 members as n3 (it is in their component). Then n2 killed at 20 s, n1 not sampled
// from 25 s on (its sampler's queries failing): the drop at 26 s began too long after the
// pause ended (eviction time and two ticks) to be the pause's.
func TestStaleCommitsViewOtherNodesFault(t *testing.T) {
	nodesOf := func(f schema.RunFault) []string { return strings.Split(f.Node, ",") }
	for _, c := range []struct {
		name  string
		killS int
		n1    func(s int) bool // n1 sampled at second s
	}{
		{"n1 reports the others' view", 8, func(s int) bool { return s < 5 || s >= 7 }},
		{"n1 not sampled", 20, func(s int) bool { return (s < 5 || s >= 7) && s < 25 }},
	} {
		samples := galeraSizes(func(n string, s int) (float64, bool) {
			switch {
			case n == "n1" && !c.n1(s), n == "n2" && s >= c.killS:
				return 0, false
			case s >= c.killS+6:
				return 2, true
			}
			return 3, true
		})
		faults := []schema.RunFault{
			{AtS: 5, FaultRecord: schema.FaultRecord{Took: 2, Action: "pause", Node: "n1"}},
			{AtS: float64(c.killS), FaultRecord: schema.FaultRecord{Took: 0.01, Action: "kill", Node: "n2"}},
		}
		windows, _ := viewWindows(faults, samples, nodesOf)
		want := staleWindow{Node: "n2", FromS: float64(c.killS + 7), ToS: 40}
		if len(windows) != 1 || windows[0] != want {
			t.Errorf("%s: windows %+v, want only %+v (none for the pause of n1)", c.name, windows, want)
		}
		fs := make([]schema.FaultSummary, 2)
		setViewChanges(fs, faults, samples, nodesOf)
		if fs[0].ViewChangeS != nil || fs[1].ViewChangeS == nil || *fs[1].ViewChangeS != 6 {
			t.Errorf("%s: view changes after the pause %s, after the kill %s; want none, 6",
				c.name, fmtOpt(fs[0].ViewChangeS, "%.1f"), fmtOpt(fs[1].ViewChangeS, "%.1f"))
		}
	}
}

// TestStaleCommitsNotCounted: stale commits are not counted (nil, not 0: 0 says "checked,
// none") where habench did not see the cluster's view, with a NOTE saying why. The probe
// through the proxy committed on n1 at 2 s and 12 s, faults at 5 s (kill n2) and 10 s
// (kill n3). On async: a writer watch that never named a writer (every poll failed): the
// run's and both faults' counts nil; one that named n1 only at 1 s (asked at 0.5 s): both
// faults came after its last answer, nil. On Galera: no membership samples: nil; samples
// of n1 and n3 from 0 to 9 s: the first fault checked (0), the second not (nil), and
// the run's count nil (a fault not checked, none found).
func TestStaleCommitsNotCounted(t *testing.T) {
	epoch := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }
	faults := []schema.RunFault{
		{AtS: 5, FaultRecord: schema.FaultRecord{At: at(5), Took: 0.01, Action: "kill", Node: "n2"}},
		{AtS: 10, FaultRecord: schema.FaultRecord{At: at(10), Took: 0.01, Action: "kill", Node: "n3"}},
	}
	h := history.New()
	for i, sent := range []float64{2, 12} {
		h.Add(history.Op{Node: "n1", Start: h.Since(at(sent)), End: h.Since(at(sent + 0.01)), Outcome: history.OK, Value: []history.Mop{history.Append(probeKey, int64(i+1))}})
	}
	var sizes []sampler.Sample
	for s := 0; s <= 9; s++ {
		for _, n := range []string{"n1", "n3"} {
			sizes = append(sizes, sampler.Sample{Elapsed: time.Duration(s) * time.Second, Node: n, Metric: sampler.MetricGaleraClusterSize, Value: 3})
		}
	}
	for _, c := range []struct {
		name    string
		kind    topology.Kind
		writers *writerWatch
		samples []sampler.Sample
		faults  []bool // each fault's count wanted: checked (0) or not (nil)
		note    string
	}{
		{"async, no writer named", topology.Async, &writerWatch{}, nil, []bool{false, false}, "NOTE: stale commits not counted: the writer watch never named a writer (every poll failed)"},
		{"async, no writer named after the faults", topology.Async, &writerWatch{seen: []writerSeen{{At: at(1), Node: "n1"}}, asked: at(0.5)}, nil, []bool{false, false},
			"NOTE: stale commits not counted after kill n2 at 5.0 s: no poll of the writer watch named a writer after it"},
		{"galera, no samples", topology.Galera, nil, nil, []bool{false, false}, "NOTE: stale commits not counted after kill n2 at 5.0 s: no membership samples of the other nodes before and after it"},
		{"galera, samples until 9 s", topology.Galera, nil, sizes, []bool{true, false}, "NOTE: stale commits not counted after kill n3 at 10.0 s: no membership samples"},
	} {
		cl := &cluster.Cluster{Spec: topology.Spec{Kind: c.kind}, Nodes: []*cluster.Node{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}}
		var out bytes.Buffer
		st := &runState{b: &Bench{Cluster: cl, Stdout: &out}, man: &schema.Manifest{Faults: faults}, probe: &probe{h: h}, writers: c.writers, allSamples: c.samples, sampleStart: epoch}
		sum := &schema.Summary{Probe: &schema.ProbeSummary{Via: scenario.ViaProxy, Acknowledged: 2}, Faults: []schema.FaultSummary{{Proxy: &schema.FaultProxy{}}, {Proxy: &schema.FaultProxy{}}}}
		st.probeStale(sum)
		if sum.Probe.StaleCommits != nil {
			t.Errorf("%s: stale commits %s, want not counted (nil)", c.name, count(sum.Probe.StaleCommits))
		}
		for i, checked := range c.faults {
			if got := sum.Faults[i].Proxy.StaleCommits; (got != nil) != checked || (got != nil && *got != 0) {
				t.Errorf("%s: fault %d's stale commits %s, want counted %v", c.name, i, count(got), checked)
			}
		}
		if !strings.Contains(out.String(), c.note) || len(st.man.Warnings) > 0 {
			t.Errorf("%s: output lacks %q, or warnings %q:\n%s", c.name, c.note, st.man.Warnings, out.String())
		}
	}
}

// count is a count that may be absent, for messages.
func count(n *int64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(*n)
}
