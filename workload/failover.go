package workload

import (
	"context"
	"slices"
	"time"

	"github.com/habench/habench/internal/mysqlerr"
)

// Client failover between writers (Target.Failover): on a target whose every endpoint
// takes writes (a Galera cluster, a multi-primary group), a worker whose node fails moves
// to another live one, as a client with a host list or a client-side balancer does, and
// goes back to its own node once that is live again. Nothing here runs while a worker at
// home commits: a worker is sent away by a failure (eventWithRetry, reconnect) or by the
// hang watchdog (watchHangs), and only a worker away (worker.away) asks, at most every
// homeCheckEvery, whether its node is back.

// homeCheckEvery is how often a worker away from its own node asks Target.Failover
// whether that node is live again (between its transactions).
const homeCheckEvery = 100 * time.Millisecond

// refusedByNode reports whether code is the refusal of a node that no longer takes the
// worker's writes, which a following worker (Target.Follow: a read-only node,
// mysqlerr.ReadOnly) or a failing-over one (Target.Failover: a node out of its cluster,
// mysqlerr.NotPartOfCluster) leaves; false for other workers.
func (w *worker) refusedByNode(code uint16) bool {
	switch {
	case w.r.t.Follow != nil:
		return mysqlerr.ReadOnly(code)
	case w.r.t.Failover != nil:
		return mysqlerr.NotPartOfCluster(code)
	}
	return false
}

// failoverRound is reconnect's state for a failing-over worker: the endpoints whose
// connect failed in the current round (tried), and whether the last attempt stayed where
// the worker was because no endpoint was live (stayed). A round tries the live endpoints
// once each, in the worker's order (failoverTarget); when every one failed, the worker
// backs off and a new round begins.
type failoverRound struct {
	tried  map[string]bool
	stayed bool
}

// newFailoverRound is the first round of a reconnect; avoid (a node that refused the
// worker's writes; "" for none) counts as tried in it, so that it comes last.
func newFailoverRound(avoid string) *failoverRound {
	f := &failoverRound{}
	if avoid != "" {
		f.tried = map[string]bool{avoid: true}
	}
	return f
}

// next points w at the endpoint to connect to now (moveTo when it is another than the
// one it is on): the first of w's order that Target.Failover lists and that was not tried
// in this round; when the view is known and lists none (no quorum, every node down), the
// one w is on, with no move (a tour of nodes that all refuse is churn no client with a
// host list shows: it retries, then the cluster comes back). wait is true when every live
// one was tried: the caller backs off, and the next call begins a new round. Errors:
// moveTo's (a pool that cannot be opened).
func (f *failoverRound) next(w *worker) (wait bool, err error) {
	live, known := w.r.t.Failover(time.Time{})
	f.stayed = known && len(live) == 0
	if f.stayed {
		return false, nil
	}
	ep, ok := w.failoverTarget(live, known, f.tried)
	if !ok {
		f.tried = nil
		return true, nil
	}
	if ep.Label() != w.label {
		return false, w.moveTo(ep)
	}
	return false, nil
}

// failed notes that the connect to label failed in this round; true when the caller
// tries the next endpoint at once, false when it backs off first (it stayed: none live).
func (f *failoverRound) failed(label string) bool {
	if f.stayed {
		return false
	}
	if f.tried == nil {
		f.tried = map[string]bool{}
	}
	f.tried[label] = true
	return true
}

// noneLive reports whether a failing-over worker has nowhere to go: Target.Failover knows
// the view and lists no endpoint. A node's refusal (refusedByNode) is then retried on
// the same connection, with eventWithRetry's back-off, instead of a reconnect.
func (w *worker) noneLive() bool {
	if w.r.t.Failover == nil {
		return false
	}
	live, known := w.r.t.Failover(time.Time{})
	return known && len(live) == 0
}

// movedFrom keeps, after moveTo took a failing-over worker from endpoint from to w.label,
// whether it is away from its own endpoint and since when (leftHome: when it left it).
func (w *worker) movedFrom(from string) {
	if from == w.home.Label() {
		w.leftHome = time.Now()
	}
	w.away = w.label != w.home.Label()
}

// failoverTarget is the endpoint a failing-over worker connects to next, given the labels
// live now (Target.Failover; when not known, every endpoint counts as live) and the
// endpoints that failed in this round (tried): its own endpoint first, then the others in
// the order failoverOrder gives. ok is false when every live endpoint was tried (or, the
// view known, none is live).
func (w *worker) failoverTarget(live []string, known bool, tried map[string]bool) (Endpoint, bool) {
	eps := w.r.t.Endpoints
	for _, i := range failoverOrder(w.id, len(eps)) {
		l := eps[i].Label()
		if tried[l] || (known && !slices.Contains(live, l)) {
			continue
		}
		return eps[i], true
	}
	return Endpoint{}, false
}

// failoverOrder is the order in which worker id, of n endpoints, tries them (indexes): its
// own (id % n), then the others in turn from the one after it, starting (id / n) further,
// so that the workers of one endpoint spread over the others rather than all landing on
// the next one: with 3 endpoints, n3's workers 2, 5, 8 go to n1, n2, n1.
func failoverOrder(id, n int) []int {
	home := id % n
	out := []int{home}
	for k := 0; k < n-1; k++ {
		out = append(out, (home+1+(id/n+k)%(n-1))%n)
	}
	return out
}

// goHome takes a worker that failed over back to its own endpoint, between two
// transactions, once Target.Failover lists it again in an answer given after the worker
// left it (asked at most every homeCheckEvery, now being the last commit): a view from
// before the failure does not count. Its connection is closed and a new one made there, a move and
// a reconnect, no transaction given up. When its own endpoint refuses, the worker
// reconnects where failoverTarget says. It returns when the move began (zero: it stayed),
// with reconnect's error when none could be made.
func (w *worker) goHome(ctx context.Context, now time.Time) (time.Time, error) {
	if now.UnixNano() < w.homeCheck {
		return time.Time{}, nil
	}
	w.homeCheck = now.Add(homeCheckEvery).UnixNano()
	if live, _ := w.r.t.Failover(w.leftHome); !slices.Contains(live, w.home.Label()) {
		return time.Time{}, nil
	}
	began := time.Now()
	w.startNs = began.UnixNano()
	w.busySince.Store(w.startNs) // a return that hangs is seen by the watchdogs
	w.closeConn()
	err := w.moveTo(w.home)
	if err == nil {
		if err = w.connect(ctx); err != nil {
			code, _ := errorCode(err)
			w.failed(code)
			if w.aborting(ctx) {
				err = errAborted
			} else if code != 0 && (isClientCode(code) || connGoneCodes[code] || w.r.o.ignores(code) || w.refusedByNode(code)) {
				err = w.reconnect(ctx, w.home.Label()) // not back yet after all
			}
		}
	}
	// Not busy until the next transaction, which begins at began without --rate (the
	// move is part of it, as a reconnect is); under --rate the queued arrivals count it.
	w.busySince.Store(0)
	if err != nil {
		return began, err
	}
	w.abandonAt.Store(0)
	w.c.ev.reconnects++
	w.st.record(&w.c.ev, -1, 0)
	return began, nil
}
