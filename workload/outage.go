package workload

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MinOutage is the shortest window without commits that a run reports as an outage of an
// endpoint (see Outage). Shorter windows (a deadlock retried, a lock wait) are ordinary
// ignored errors; they stay counted in the error counters.
const MinOutage = time.Second

// Outage is a window during which the workers of one endpoint could not commit: it opens at
// the first failed attempt (a statement, a reconnect or a prepare) after the endpoint's last
// commit, or, when its workers' statements hang without failing (a stall: a Galera cluster
// waiting to evict a dead node, a global read lock), at the endpoint's last commit once no
// worker busy on it has committed for MinOutage; it closes at the endpoint's next commit, by
// any of its workers. Windows shorter than MinOutage are not outages; a window still open
// when the run ends is reported (Open) when it lasted MinOutage or its failures include a
// connection failure (the endpoint was lost). An open window whose every failure was a lost
// conflict (Conflicts) is reported but does not make the endpoint lost: the server answered
// every attempt.
type Outage struct {
	// Endpoint is the endpoint's label (Endpoint.Label), a node name on a cluster.
	Endpoint string
	// Start and End are on the run's clock: time since the start of the measured part
	// (the Elapsed of the intervals), negative during warm-up. End is the next commit, or
	// the end of the run when Open.
	Start, End time.Duration
	// StartedAt is Start on the wall clock.
	StartedAt time.Time
	// Open is true when the endpoint had not committed again by the end of the run.
	Open bool
	// Failures counts the failed attempts in the window (0 for a stall without errors);
	// Codes counts them by MySQL error code (client codes 2002/2003/2006/2013 for
	// connection failures).
	Failures int64
	Codes    map[uint16]int64
}

// Duration is End - Start.
func (o Outage) Duration() time.Duration { return o.End - o.Start }

// conflictCodes are the errors of a transaction that lost a conflict with another and was
// rolled back for it: 1213 (a deadlock, or Galera's certification failure), 3101
// (ER_TRANSACTION_ROLLBACK_DURING_COMMIT: Group Replication's certification failure) and
// 1180 (ER_ERROR_DURING_COMMIT: a commit a remote transaction aborted in a multi-primary group).
var conflictCodes = map[uint16]bool{1213: true, 3101: true, 1180: true}

// Conflicts reports whether the window had failed attempts and every one of them lost a
// conflict (conflictCodes): the endpoint answered, but every transaction it was sent was
// rolled back for another's sake (a hot spot written from several primaries).
func (o Outage) Conflicts() bool {
	if o.Failures == 0 {
		return false
	}
	for c := range o.Codes {
		if !conflictCodes[c] {
			return false
		}
	}
	return true
}

// String describes the outage in one line, e.g. "n1 could not commit from 5.02 s to
// 9.87 s of the run (4.85 s; failed attempts: 2003 x212, 2013 x4)", or for an open one
// "n1 could not commit from 5.02 s of the run to its end at 15.00 s, still down (...)"
// ("..., every attempt lost a conflict (...)" when Conflicts).
func (o Outage) String() string {
	span := fmt.Sprintf("from %.2f s to %.2f s of the run", o.Start.Seconds(), o.End.Seconds())
	if o.Open {
		state := "still down"
		if o.Conflicts() {
			state = "every attempt lost a conflict"
		}
		span = fmt.Sprintf("from %.2f s of the run to its end at %.2f s, %s", o.Start.Seconds(), o.End.Seconds(), state)
	}
	if o.Failures == 0 {
		return fmt.Sprintf("%s could not commit %s (%.2f s; no failed attempt: its statements hung)",
			o.Endpoint, span, o.Duration().Seconds())
	}
	return fmt.Sprintf("%s could not commit %s (%.2f s; failed attempts: %s)",
		o.Endpoint, span, o.Duration().Seconds(), codeCounts(o.Codes))
}

// codeCounts formats counts by code as "2013 x4, 2003 x212" (codes in ascending order).
func codeCounts(m map[uint16]int64) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d x%d", c, m[c]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// PrintOutages writes one "WARNING: ..." line per outage of r (see Outage.String) and one
// for the transactions that never completed (Result.WaitWarning); nothing when there was
// none. Callers print it before the summary, so that it is seen first.
func PrintOutages(w io.Writer, r *Result) {
	if r == nil {
		return
	}
	var b strings.Builder
	for _, o := range r.Outages {
		fmt.Fprintf(&b, "WARNING: %s\n", o)
	}
	if w := r.WaitWarning(); w != "" {
		fmt.Fprintf(&b, "WARNING: %s\n", w)
	}
	io.WriteString(w, b.String())
}

// outageTracker follows one endpoint's windows without commits. Workers call failed on
// every failed attempt and committed after every commit; committed costs one atomic load
// unless a window is open.
type outageTracker struct {
	label string
	down  atomic.Bool // a window is open

	mu      sync.Mutex
	open    bool
	start   time.Time
	fails   int64
	codes   map[uint16]int64
	windows []Outage // closed windows >= MinOutage, Start/End still unset (wall times below)
	ends    []time.Time
}

func (t *outageTracker) failed(now time.Time, code uint16) {
	t.mu.Lock()
	if !t.open {
		t.open, t.start, t.fails, t.codes = true, now, 0, map[uint16]int64{}
		t.down.Store(true)
	}
	t.fails++
	t.codes[code]++
	t.mu.Unlock()
}

// stalled opens a window at from (no commit since then while a worker was busy) unless
// one is open. moved reports whether the endpoint committed after from: it is asked after
// the window is marked open, so that a commit racing with the watchdog is either seen
// here (no window) or closes the window itself (committed sees down).
func (t *outageTracker) stalled(from time.Time, moved func() bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open {
		return
	}
	t.open, t.start, t.fails, t.codes = true, from, 0, map[uint16]int64{}
	t.down.Store(true)
	if moved() {
		t.open = false
		t.down.Store(false)
	}
}

func (t *outageTracker) committed(now time.Time) {
	if !t.down.Load() {
		return
	}
	t.mu.Lock()
	if t.open {
		if now.Sub(t.start) >= MinOutage {
			t.windows = append(t.windows, Outage{Endpoint: t.label, StartedAt: t.start, Failures: t.fails, Codes: t.codes})
			t.ends = append(t.ends, now)
		}
		t.open = false
		t.down.Store(false)
	}
	t.mu.Unlock()
}

// outages returns the endpoint's outages on the clock that starts at zero, with a window
// still open at end reported as Open (see Outage).
func (t *outageTracker) outages(zero, end time.Time) []Outage {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Outage
	for i, o := range t.windows {
		o.Start, o.End = o.StartedAt.Sub(zero), t.ends[i].Sub(zero)
		out = append(out, o)
	}
	if t.open && end.After(t.start) {
		lost := false
		for c := range t.codes {
			lost = lost || isClientCode(c) || connGoneCodes[c]
		}
		if end.Sub(t.start) >= MinOutage || lost {
			out = append(out, Outage{Endpoint: t.label, StartedAt: t.start, Start: t.start.Sub(zero), End: end.Sub(zero),
				Open: true, Failures: t.fails, Codes: maps.Clone(t.codes)})
		}
	}
	return out
}

// EndpointLostError is returned by Run, with the Result, when an endpoint's workers had
// not committed again by the end of a run that ignored its errors (an Outage still open,
// unless it only lost conflicts: see Outage.Conflicts): a run that lost an endpoint does not
// end as a success.
type EndpointLostError struct {
	Outages []Outage // the open ones
}

// Error names each lost endpoint and since when.
func (e *EndpointLostError) Error() string {
	var parts []string
	for _, o := range e.Outages {
		parts = append(parts, o.String())
	}
	return "endpoint lost: " + strings.Join(parts, "; ")
}

// outageList collects every endpoint's outages on the run's clock (zero at the start of
// the measured part), ordered by Start.
func (r *runner) outageList(end time.Time) []Outage {
	zero := r.t0.Add(r.warmup)
	var out []Outage
	for _, label := range slices.Sorted(maps.Keys(r.outages)) {
		out = append(out, r.outages[label].outages(zero, end)...)
	}
	slices.SortStableFunc(out, func(a, b Outage) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// openOutages returns an *EndpointLostError for the outages still open that did more than
// lose conflicts, nil when there is none.
func openOutages(all []Outage) error {
	var open []Outage
	for _, o := range all {
		if o.Open && !o.Conflicts() {
			open = append(open, o)
		}
	}
	if len(open) == 0 {
		return nil
	}
	return &EndpointLostError{Outages: open}
}

// stallCheck is how often watchStalls looks at the workers.
const stallCheck = 100 * time.Millisecond

// watchStalls opens an outage window for an endpoint whose busy workers have not committed
// for MinOutage (see Outage), from its last commit (or the start of the oldest event in
// progress, when its workers were idle in between), until the run stops.
func (r *runner) watchStalls() {
	byTrk := map[*outageTracker][]*worker{}
	for _, wk := range r.workers {
		byTrk[wk.trk] = append(byTrk[wk.trk], wk)
	}
	t0 := r.t0.UnixNano()
	lastCommit := func(ws []*worker) int64 {
		last := t0
		for _, wk := range ws {
			last = max(last, wk.lastCommit.Load())
		}
		return last
	}
	tk := time.NewTicker(stallCheck)
	defer tk.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-tk.C:
		}
		now := time.Now().UnixNano()
		for trk, ws := range byTrk {
			if trk.down.Load() {
				continue
			}
			var busy int64
			for _, wk := range ws {
				if b := wk.busySince.Load(); b != 0 && (busy == 0 || b < busy) {
					busy = b
				}
			}
			if busy == 0 {
				continue
			}
			from := max(lastCommit(ws), busy)
			if now-from >= int64(MinOutage) {
				trk.stalled(time.Unix(0, from), func() bool { return lastCommit(ws) > from })
			}
		}
	}
}
