package clients

import (
	"fmt"
	"time"

	"github.com/habench/habench/workload"
)

// Interval is one merged interval report: the clients' reports number N merged
// (MergeInterval), and which clients they came from.
type Interval struct {
	N int
	// Interval is the merge of the reports of Clients.
	workload.Interval
	// Clients are those whose report N it merges, in the merger's order of clients.
	Clients []string
	// Missing are the clients still running whose report N had not come within the
	// merger's wait (late: their counts of this interval are in no merged interval,
	// only in the run's Result); Lost those lost (their stream broke) before their report N;
	// Ended those whose run ended before it (the clients' runs end a few milliseconds
	// apart, so the last interval may be one client's and not another's).
	Missing, Lost, Ended []string
}

// Complete reports whether every client still running when the interval ended is in it.
func (iv *Interval) Complete() bool { return len(iv.Missing) == 0 && len(iv.Lost) == 0 }

// IntervalMerger merges the clients' interval reports as they arrive, one merged Interval
// per interval number, in order: an interval is merged as soon as every client still
// running has reported it, or once Wait has passed since the first client reported it
// (then the others are Missing). A client lost mid-run (Lost) is not waited for any more:
// the intervals it reported are kept, the following are marked with it. A client that
// ended its run (Ended) is not waited for either, nor marked. The merged intervals' clock
// (their Started, from which Elapsed counts) is the earliest start among the reports of
// the first interval merged: Merge's StartedAt too when every client reported it. Not
// safe for concurrent use.
type IntervalMerger struct {
	// Wait is how long an interval waits for late clients after the first report of it.
	Wait time.Duration
	// Percentile is the run's Options.Percentile (an Interval's LatencyPct).
	Percentile float64

	clients []string
	state   map[string]*clientState
	pending map[int]*pendingInterval
	next    int       // the number of the next interval to merge
	base    time.Time // the run's clock (set by the first merged interval)
	late    map[string]int
}

// clientState is what an IntervalMerger knows of one client.
type clientState struct {
	last        int // its last report's number
	lost, ended bool
}

// pendingInterval is an interval some clients have reported, not merged yet.
type pendingInterval struct {
	parts map[string]ClientInterval
	first time.Time // when its first report came
}

// NewIntervalMerger returns a merger of the reports of clients (their names, the order of
// Interval.Clients), waiting up to wait for a late client; percentile is the run's
// Options.Percentile. An error when a name is empty or twice, or wait is not positive.
func NewIntervalMerger(clients []string, percentile float64, wait time.Duration) (*IntervalMerger, error) {
	if wait <= 0 {
		return nil, fmt.Errorf("interval merger: wait %v, want > 0", wait)
	}
	m := &IntervalMerger{Wait: wait, Percentile: percentile, state: map[string]*clientState{},
		pending: map[int]*pendingInterval{}, next: 1, late: map[string]int{}}
	for _, c := range clients {
		if c == "" || m.state[c] != nil {
			return nil, fmt.Errorf("interval merger: client name %q empty or twice", c)
		}
		m.state[c] = &clientState{}
		m.clients = append(m.clients, c)
	}
	return m, nil
}

// Add takes client ci.Client's report ci.N, received at now, and returns the intervals it
// completes. A report of an interval already merged (the client was late beyond Wait) is
// counted in Late and dropped. Errors: an unknown client, a client lost or ended, a
// number not after the client's previous one.
func (m *IntervalMerger) Add(ci ClientInterval, now time.Time) ([]Interval, error) {
	st := m.state[ci.Client]
	switch {
	case st == nil:
		return nil, fmt.Errorf("interval merger: unknown client %q", ci.Client)
	case st.lost || st.ended:
		return nil, fmt.Errorf("client %s: interval %d after its end", ci.Client, ci.N)
	case ci.N <= st.last:
		return nil, fmt.Errorf("client %s: interval %d after interval %d", ci.Client, ci.N, st.last)
	}
	st.last = ci.N
	if ci.N < m.next {
		m.late[ci.Client]++
		return m.ready(now, false), nil
	}
	p := m.pending[ci.N]
	if p == nil {
		p = &pendingInterval{parts: map[string]ClientInterval{}, first: now}
		m.pending[ci.N] = p
	}
	p.parts[ci.Client] = ci
	return m.ready(now, false), nil
}

// Lost marks client as lost at now (its stream broke before its result): it is not waited
// for any more. It returns the intervals that completes.
func (m *IntervalMerger) Lost(client string, now time.Time) []Interval {
	if st := m.state[client]; st != nil && !st.ended {
		st.lost = true
	}
	return m.ready(now, false)
}

// Ended marks client as having ended its run (its result came): it is not waited for any
// more, nor marked missing. It returns the intervals that completes.
func (m *IntervalMerger) Ended(client string, now time.Time) []Interval {
	if st := m.state[client]; st != nil && !st.lost {
		st.ended = true
	}
	return m.ready(now, false)
}

// Tick returns the intervals whose wait for late clients has passed at now.
func (m *IntervalMerger) Tick(now time.Time) []Interval { return m.ready(now, false) }

// Flush merges every interval still pending, without waiting (the run is over).
func (m *IntervalMerger) Flush() []Interval { return m.ready(time.Time{}, true) }

// Last returns client's last report's number (0 before its first, or for an unknown
// client).
func (m *IntervalMerger) Last(client string) int {
	if st := m.state[client]; st != nil {
		return st.last
	}
	return 0
}

// Late returns, by client, how many of its reports came after their interval was merged.
func (m *IntervalMerger) Late() map[string]int { return m.late }

// ready merges the pending intervals in order while each is complete, or waited long
// enough at now, or flush.
func (m *IntervalMerger) ready(now time.Time, flush bool) []Interval {
	var out []Interval
	for {
		p := m.pending[m.next]
		if p == nil {
			return out
		}
		var missing, lost, ended []string
		for _, c := range m.clients {
			if _, ok := p.parts[c]; ok {
				continue
			}
			switch st := m.state[c]; {
			case st.lost:
				lost = append(lost, c)
			case st.ended:
				ended = append(ended, c)
			default:
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 && !flush && now.Sub(p.first) < m.Wait {
			return out
		}
		iv := m.merge(p, missing, lost)
		iv.Ended = ended
		out = append(out, iv)
		delete(m.pending, m.next)
		m.next++
	}
}

// merge merges p's reports in the order of clients.
func (m *IntervalMerger) merge(p *pendingInterval, missing, lost []string) Interval {
	var parts []ClientInterval
	var names []string
	for _, c := range m.clients {
		if ci, ok := p.parts[c]; ok {
			parts = append(parts, ci)
			names = append(names, c)
		}
	}
	if m.base.IsZero() {
		for _, ci := range parts {
			if m.base.IsZero() || ci.Started.Before(m.base) {
				m.base = ci.Started
			}
		}
	}
	return Interval{N: m.next, Interval: MergeInterval(parts, m.base, m.Percentile), Clients: names, Missing: missing, Lost: lost}
}
