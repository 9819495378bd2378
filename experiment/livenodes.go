package experiment

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/habench/habench/report"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/topology"
	"github.com/habench/habench/workload"
)

// LiveNodes prints, after each report interval's line, one line with every node's
// newest samples: visibility lag (s), backlog (transactions), queues (transactions) and
// flow control (paused fraction 0..1, throttling), by sampler.Classify, so a run on a
// cluster can be watched without Prometheus:
//
//	[ 5s ] nodes: n1 (writer) | n2 lag 0.120 s, backlog 35 | n3 lag 0.080 s, galera_recv_queue 3, galera_fc_paused_fraction 0.05
//
// Nodes without such a sample are listed by name alone. A node whose lag the last tick
// could not measure (lagStats: unreadable, outside the Primary component, not ONLINE for
// the group's majority) shows "lag unknown for N s" (since its last measured lag), never
// its last value. "(writer)" follows a promote (the role samples) and a new group primary
// (gr_majority_role); the writer's lag is shown only when it is not 0.
// Off unless attached; nothing is printed for a single node or without a report interval
// (the sysbench layout is kept).
type LiveNodes struct {
	W io.Writer

	mu        sync.Mutex
	latest    map[string]map[string]float64
	nodes     []string
	writer    string             // the writer now: the first writable node, then as the roles say
	hb        bool               // a lag_s sample was seen: the run has a heartbeat
	lastKnown map[string]float64 // node -> elapsed s of its last tick with a known lag
	unknownS  map[string]float64 // node -> seconds its lag has been unknown (0: known)
}

// Attach chains l onto b's OnInterval and OnSamples (the hooks already there still run).
func (l *LiveNodes) Attach(b *Bench) {
	if b.Cluster == nil || len(b.Cluster.Nodes) < 2 || b.Options.ReportInterval <= 0 {
		return
	}
	l.latest = map[string]map[string]float64{}
	l.lastKnown, l.unknownS = map[string]float64{}, map[string]float64{}
	for _, n := range b.Cluster.Nodes {
		l.nodes = append(l.nodes, n.Name)
	}
	for _, n := range b.Cluster.Nodes {
		if l.writer == "" && n.Role.Writable() {
			l.writer = n.Name
		}
	}
	prevI, prevS := b.OnInterval, b.OnSamples
	b.OnSamples = func(ss []sampler.Sample) {
		l.observe(ss)
		if prevS != nil {
			prevS(ss)
		}
	}
	b.OnInterval = func(iv workload.Interval) {
		fmt.Fprintln(l.W, l.line(iv))
		if prevI != nil {
			prevI(iv)
		}
	}
}

func (l *LiveNodes) observe(ss []sampler.Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range ss {
		if r := sampler.RoleOfCode(s.Value); (s.Metric == sampler.MetricGRMajorityRole && s.Value == 1) ||
			(s.Metric == sampler.MetricRole && (r == topology.RoleSource || r == topology.RolePrimary)) {
			l.writer = s.Node // a promote, a new group primary as the majority says
		}
		switch sampler.Classify(s.Metric) {
		case sampler.ClassLag, sampler.ClassQueue, sampler.ClassPaused, sampler.ClassThrottle:
		default:
			continue
		}
		if l.latest[s.Node] == nil {
			l.latest[s.Node] = map[string]float64{}
		}
		l.latest[s.Node][s.Metric] = s.Value
	}
	ticks, hb := lagTicks(ss)
	l.hb = l.hb || hb
	for t, nodes := range ticks {
		for n, lt := range nodes {
			if !lt.present {
				continue
			}
			if lt.unknown(l.hb) {
				l.unknownS[n] = t - l.lastKnown[n]
				delete(l.latest[n], sampler.MetricLag)
				continue
			}
			l.lastKnown[n], l.unknownS[n] = t, 0
		}
	}
}

// line is one interval's node line.
func (l *LiveNodes) line(iv workload.Interval) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	writer := l.writer
	var parts []string
	for _, n := range l.nodes {
		var fs []string
		m := l.latest[n]
		if u := l.unknownS[n]; u > 0 {
			fs = append(fs, "lag "+report.UnknownFor(u))
		} else if v, ok := m[sampler.MetricLag]; ok && (n != writer || v > 0) {
			fs = append(fs, fmt.Sprintf("lag %.3f s", v))
		}
		if v, ok := m[sampler.MetricBacklog]; ok && n != writer {
			fs = append(fs, fmt.Sprintf("backlog %.0f", v))
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch c := sampler.Classify(k); {
			case k == sampler.MetricLag || k == sampler.MetricBacklog:
			case c == sampler.ClassQueue:
				fs = append(fs, fmt.Sprintf("%s %.0f", k, m[k]))
			case c == sampler.ClassPaused || c == sampler.ClassThrottle:
				fs = append(fs, fmt.Sprintf("%s %.2f", k, m[k]))
			}
		}
		p := n
		if n == writer {
			p += " (writer)"
		}
		if len(fs) > 0 {
			p += " " + strings.Join(fs, ", ")
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("[ %.0fs ] nodes: %s", iv.Elapsed.Seconds(), strings.Join(parts, " | "))
}
