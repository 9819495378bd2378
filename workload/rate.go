package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Open-loop --rate (sysbench's event generator, with the arrival times kept).
//
// One generator goroutine draws a Poisson process of Options.Rate arrivals per second
// (exponential inter-arrival times) and queues each arrival's intended start time; a
// worker takes the oldest queued arrival when it is free. An event's latency runs from
// its intended start, so the time it waited in the queue counts (as in sysbench, whose
// queue holds the times the generator queued the events); its service time, from when a
// worker began it, is kept apart (RateResult, RateInterval). The queue is bounded by
// sysbench's MAX_QUEUE_LEN: an overflow ends the run with errQueueFull, like sysbench.
//
// Arrivals queued during the warm-up are dropped when it ends, and events whose arrival
// lies in the warm-up are not measured even when they finish after it, so the measured
// run does not inherit the warm-up's backlog (RateResult.WarmupDropped says how many).

// maxQueueLen is sysbench's MAX_QUEUE_LEN for --rate.
const maxQueueLen = 131072

// RateBehind is how far behind its target a --rate run may be before it is reported as
// not having met the target rate (RateResult.Met): at the end, more than RateBehind worth
// of arrivals still queued or the oldest queued arrival waiting longer than RateBehind;
// during the run, behind (arrivals waiting longer than RateBehind) for longer than
// RateBehind and the report interval.
const RateBehind = time.Second

// RateInterval is the --rate part of an Interval (nil without --rate).
type RateInterval struct {
	// Arrivals are the events the generator scheduled within the interval (the
	// offered load; compare with Interval.Transactions).
	Arrivals int64
	// BacklogAge is how long the oldest queued arrival had waited at the end of the
	// interval, 0 when the queue was empty: how far behind the target the run is.
	BacklogAge time.Duration
	// ServiceAvg, ServicePct (at Options.Percentile), ServiceP95, ServiceP99 and
	// ServiceMax are the interval's service times in ms: from when a worker began an
	// event to its end, without the time the event waited in the queue.
	ServiceAvg, ServicePct, ServiceP95, ServiceP99, ServiceMax float64
}

// RateResult is the --rate part of a Result (nil without --rate).
type RateResult struct {
	// Target is Options.Rate, events per second.
	Target int
	// Arrivals are the events the generator scheduled during the measured part.
	Arrivals int64
	// Backlog is the number of arrivals still queued (never started) at the end of
	// the run, and BacklogAge how long the oldest of them had waited (0 when none).
	Backlog    int64
	BacklogAge time.Duration
	// MaxBacklogAge is the longest any arrival of the measured part waited in the
	// queue before a worker took it, or the age of the oldest one left at the end.
	MaxBacklogAge time.Duration
	// WarmupDropped are arrivals of the warm-up still queued at its end, dropped;
	// WarmupUnmeasured are events whose arrival was in the warm-up that a worker
	// was running at its end (finished, not measured).
	WarmupDropped, WarmupUnmeasured int64
	// Behind is the longest period the run was behind its target: the union of the
	// queue waits [intended start, taken] of the arrivals that waited longer than
	// RateBehind (and of the oldest one left at the end), 0 when none did. BehindAt is
	// when it began, since the start of measurement; MaxBacklog the most measured
	// arrivals queued at once while behind (at such an arrival's take, or at the end).
	Behind, BehindAt time.Duration
	MaxBacklog       int64
	// Met is false when the run ended more than RateBehind behind its target
	// (Backlog > Target x RateBehind or BacklogAge > RateBehind) or was behind for
	// longer than RateBehind and the report interval (Behind): the average rate alone
	// hides a stall the queue caught up with.
	Met bool
	// ServiceMin, ServiceAvg, ServiceMax, ServiceSum (exact) and ServicePct (at
	// Options.Percentile), ServiceP50, ServiceP95, ServiceP99 (from
	// ServiceHistogram) are service times in ms: from when a worker began an event
	// to its end. The Result's latencies include the time queued; these do not.
	ServiceMin, ServiceAvg, ServiceMax, ServiceSum float64
	ServicePct, ServiceP50, ServiceP95, ServiceP99 float64
	ServiceHistogram                               *hdrhistogram.Histogram
}

// Warning is the text of the WARNING a run that did not meet its target rate gets
// (see Met), "" when it met it. tps is the Result's achieved rate.
func (rr *RateResult) Warning(tps float64) string {
	if rr == nil || rr.Met {
		return ""
	}
	var what []string
	if rr.Behind > 0 {
		what = append(what, fmt.Sprintf("the run was behind for %.2f s (from %.2f s to %.2f s of the measured run), up to %d arrivals queued, the longest queue wait %.3f s",
			rr.Behind.Seconds(), rr.BehindAt.Seconds(), (rr.BehindAt+rr.Behind).Seconds(), rr.MaxBacklog, rr.MaxBacklogAge.Seconds()))
	}
	if rr.endBehind() {
		what = append(what, fmt.Sprintf("at the end %d arrivals were still queued, the oldest waiting %.3f s", rr.Backlog, rr.BacklogAge.Seconds()))
	}
	if len(what) == 0 {
		// A merge of several clients' runs (package clients) is met only when every
		// client met its own share: one lost mid-run, or behind for less than its own
		// run showed here, did not.
		what = append(what, "not every client of the run met its share of it (a client lost mid-run or behind: see the clients)")
	}
	return fmt.Sprintf("the target rate was not met (more than %s behind --rate %d): %s; achieved %.2f of %d events/s. Latencies count the time queued; the service times do not",
		RateBehind, rr.Target, strings.Join(what, "; "), tps, rr.Target)
}

// endBehind: the run ended more than RateBehind behind its target.
func (rr *RateResult) endBehind() bool {
	return float64(rr.Backlog) > float64(rr.Target)*RateBehind.Seconds() || rr.BacklogAge > RateBehind
}

// rateState is the --rate machinery of one run. The generator is the only writer of
// ring, gen and first; a worker increments deq after taking an arrival.
type rateState struct {
	rate     int
	queue    chan int64     // intended start of each queued arrival, ns since t0
	ring     []atomic.Int64 // intended start of arrival number n at n % maxQueueLen
	gen, deq atomic.Int64   // arrivals generated, arrivals taken from the queue
	conc     atomic.Int32   // events in progress
	warmupNs int64          // arrivals before this (ns since t0) belong to the warm-up
	// first is the number of the first arrival of the measured part (stamps grow with
	// the number, so the warm-up's arrivals are those below it); -1 until generated.
	first      atomic.Int64
	dropped    atomic.Int64 // warm-up arrivals taken after the warm-up, not run
	unmeasured atomic.Int64 // warm-up arrivals running at its end, not measured
	maxWaitNs  atomic.Int64 // longest queue wait of a measured arrival
	lastGen    int64        // measured arrivals at the previous interval (coordinator only)
	// behind: the periods the run was behind (late), under mu (taken only for an
	// arrival that waited longer than RateBehind).
	mu           sync.Mutex
	cur, longest behindSpan
	open         bool  // cur is a period
	peak         int64 // most measured arrivals queued at once while behind
}

// behindSpan is a period the run was behind, in ns since t0: from the intended start
// of its first late arrival to the take of its last.
type behindSpan struct{ from, to int64 }

// late records a measured arrival with intended start arr taken at now (ns since t0)
// after waiting longer than RateBehind, queued arrivals still queued behind it (itself
// included): periods that overlap are one.
func (rs *rateState) late(arr, now, queued int64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.open || arr > rs.cur.to {
		rs.closeSpan()
		rs.cur, rs.open = behindSpan{from: arr, to: now}, true
	}
	rs.cur.to = max(rs.cur.to, now)
	rs.peak = max(rs.peak, queued)
}

// closeSpan keeps the current period if it is the longest (mu held).
func (rs *rateState) closeSpan() {
	if rs.open && rs.cur.to-rs.cur.from > rs.longest.to-rs.longest.from {
		rs.longest = rs.cur
	}
	rs.open = false
}

func newRateState(o *Options) *rateState {
	rs := &rateState{
		rate:     o.Rate,
		queue:    make(chan int64, maxQueueLen),
		ring:     make([]atomic.Int64, maxQueueLen),
		warmupNs: int64(o.Warmup),
	}
	rs.first.Store(-1)
	if o.Warmup <= 0 {
		rs.first.Store(0)
	}
	return rs
}

// generate is sysbench's event generator for --rate: exponentially distributed
// inter-arrival times (a Poisson process of Rate events/s) from t0, each arrival queued
// with its intended start. A full queue ends the run at once with errQueueFull.
func (r *runner) generate() {
	rs := r.rt
	g := rand.New(rand.NewPCG(seedOf(&r.o), 0x5eed))
	lambda := 1e9 / float64(rs.rate)
	next := time.Since(r.t0)
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	for {
		next += time.Duration(-lambda * math.Log(1-g.Float64()))
		now := time.Since(r.t0)
		if r.limit > 0 && next >= r.limit {
			return
		}
		if next > now {
			tm.Reset(next - now)
			select {
			case <-tm.C:
			case <-r.done:
				return
			}
		}
		n := rs.gen.Load()
		if int64(next) >= rs.warmupNs && rs.first.Load() < 0 {
			rs.first.Store(n)
		}
		rs.ring[n%maxQueueLen].Store(int64(next))
		select {
		case rs.queue <- int64(next):
			rs.gen.Add(1)
		case <-r.done:
			return
		default:
			// Fatal at once, like sysbench: events blocked on a stalled server are
			// abandoned (their sockets closed), not waited for.
			r.fail(errQueueFull)
			for _, wk := range r.workers {
				wk.slot.kill()
				if wk.rd != nil {
					wk.rd.slot.kill()
				}
			}
			return
		}
	}
}

// take blocks until an arrival is queued and returns its intended start, or false
// when the run stops first. Arrivals of the warm-up taken after it ended are dropped
// (counted, not run).
func (r *runner) take() (time.Time, bool) {
	rs := r.rt
	for {
		select {
		case ns := <-rs.queue:
			rs.deq.Add(1)
			if ns < rs.warmupNs && time.Since(r.t0) >= r.warmup {
				rs.dropped.Add(1)
				continue
			}
			rs.conc.Add(1)
			if ns >= rs.warmupNs {
				w := int64(time.Since(r.t0)) - ns
				if w > rs.maxWaitNs.Load() {
					rs.maxWaitNs.Store(w) // racy max: a lost update is within a few ns of another
				}
				if w > int64(RateBehind) {
					rs.late(ns, ns+w, rs.gen.Load()-rs.deq.Load()+1)
				}
			}
			return r.t0.Add(time.Duration(ns)), true
		case <-r.done:
			return time.Time{}, false
		}
	}
}

// warmupArrival reports whether an event with intended start arr that ends now, after
// the warm-up, belongs to the warm-up (and so is not measured), counting it. An event that
// ends before the warm-up's end is recorded as usual: the warm-up's statistics, harvested
// after its end, are discarded with it.
func (r *runner) warmupArrival(arr time.Time) bool {
	if r.rt == nil || r.warmup == 0 || arr.Sub(r.t0) >= r.warmup || time.Since(r.t0) < r.warmup {
		return false
	}
	r.rt.unmeasured.Add(1)
	return true
}

// backlog returns the number of queued arrivals of the measured part and how long the
// oldest of them has waited at now (ns since t0). Warm-up arrivals still queued (to be
// dropped) are not counted.
func (rs *rateState) backlog(nowNs int64) (n int64, age time.Duration) {
	first := rs.first.Load()
	if first < 0 {
		return 0, 0
	}
	gen, head := rs.gen.Load(), max(rs.deq.Load(), first)
	if gen <= head {
		return 0, 0
	}
	oldest := rs.ring[head%maxQueueLen].Load()
	return gen - head, time.Duration(max(nowNs-oldest, 0))
}

// measuredArrivals is the number of arrivals of the measured part generated so far.
func (rs *rateState) measuredArrivals() int64 {
	if first := rs.first.Load(); first >= 0 {
		return rs.gen.Load() - first
	}
	return 0
}

// rateInterval builds the --rate part of an Interval ending at now; svc and hist are
// the interval's service-time counts and histogram.
func (r *runner) rateInterval(now time.Time, svc *counts, hist *hdrhistogram.Histogram) *RateInterval {
	rs := r.rt
	gen := rs.measuredArrivals()
	ri := &RateInterval{Arrivals: gen - rs.lastGen}
	rs.lastGen = gen
	_, ri.BacklogAge = rs.backlog(int64(now.Sub(r.t0)))
	ri.ServiceMax = nsToMs(svc.latMax)
	if svc.events > 0 {
		ri.ServiceAvg = nsToMs(svc.latSum) / float64(svc.events)
	}
	ri.ServicePct = pctMs(hist, r.o.Percentile, svc.latMax)
	ri.ServiceP95 = pctMs(hist, 95, svc.latMax)
	ri.ServiceP99 = pctMs(hist, 99, svc.latMax)
	return ri
}

// behind sets rr's Behind, BehindAt and MaxBacklog from the periods the run was behind,
// the oldest arrival still queued at end (ns since t0) included when it is late.
func (rs *rateState) behind(rr *RateResult, end int64) {
	if rr.BacklogAge > RateBehind {
		rs.late(end-int64(rr.BacklogAge), end, rr.Backlog)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.closeSpan()
	if l := rs.longest; l.to > l.from {
		rr.Behind, rr.BehindAt = time.Duration(l.to-l.from), time.Duration(max(l.from-rs.warmupNs, 0))
		rr.MaxBacklog = rs.peak
	}
}

// queueLength is sysbench's "queue length": arrivals of the measured part queued.
func (r *runner) queueLength(now time.Time) int {
	n, _ := r.rt.backlog(int64(now.Sub(r.t0)))
	return int(n)
}

// rateResult builds the --rate part of the Result of a run that ended at end.
func (r *runner) rateResult(end time.Time, svc *counts, hist *hdrhistogram.Histogram) *RateResult {
	rs := r.rt
	rr := &RateResult{Target: rs.rate, ServiceHistogram: hist, Arrivals: rs.measuredArrivals(),
		WarmupDropped: rs.dropped.Load(), WarmupUnmeasured: rs.unmeasured.Load()}
	if first := rs.first.Load(); r.warmup > 0 {
		// Warm-up arrivals never taken are dropped too.
		if first < 0 {
			first = rs.gen.Load()
		}
		rr.WarmupDropped += max(first-rs.deq.Load(), 0)
	}
	rr.Backlog, rr.BacklogAge = rs.backlog(int64(end.Sub(r.t0)))
	rr.MaxBacklogAge = max(time.Duration(rs.maxWaitNs.Load()), rr.BacklogAge)
	rs.behind(rr, int64(end.Sub(r.t0)))
	rr.Met = !rr.endBehind() && rr.Behind <= max(RateBehind, r.o.ReportInterval)
	rr.ServiceMin = nsToMs(svc.latMin)
	rr.ServiceMax = nsToMs(svc.latMax)
	rr.ServiceSum = nsToMs(svc.latSum)
	if svc.events > 0 {
		rr.ServiceAvg = rr.ServiceSum / float64(svc.events)
	}
	rr.ServicePct = pctMs(hist, r.o.Percentile, svc.latMax)
	rr.ServiceP50 = pctMs(hist, 50, svc.latMax)
	rr.ServiceP95 = pctMs(hist, 95, svc.latMax)
	rr.ServiceP99 = pctMs(hist, 99, svc.latMax)
	return rr
}
