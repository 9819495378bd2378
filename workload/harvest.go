package workload

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// coordinate ends the warmup and produces interval reports until the
// workers are done. It is the only harvester while the workers run.
func (r *runner) coordinate(rep Reporter, workersDone <-chan struct{}) {
	wait := func(at time.Time) bool {
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-workersDone:
			return false
		}
	}
	start := r.t0.Add(r.warmup)
	if r.warmup > 0 {
		if !wait(start) {
			return
		}
		r.hv.collect(r, false)
		r.warming.Store(false)
		r.live.startMeasuring(r.hv.warmupCum)
		if r.o.Events > 0 {
			r.nevents.Store(0)
		}
	}
	r.hv.last = start
	if rep == nil || r.o.ReportInterval <= 0 {
		return
	}
	next := start.Add(r.o.ReportInterval)
	for {
		if !wait(next) {
			return
		}
		rep.Interval(r.interval(start))
		now := time.Now()
		for !next.After(now) {
			next = next.Add(r.o.ReportInterval)
		}
	}
}

// interval harvests every worker and builds one Interval.
func (r *runner) interval(start time.Time) Interval {
	now := time.Now()
	c, perEp, byCode := r.hv.collect(r, true)
	svc := r.hv.ivSvc
	length := now.Sub(r.hv.last)
	r.hv.last = now
	h := r.hv.ivHist
	iv := Interval{
		Elapsed: now.Sub(start), Length: length,
		Threads:      int(r.running.Load()),
		Transactions: c.events, Reads: c.reads, Writes: c.writes, Others: c.others,
		Errors: c.errors, Reconnects: c.reconnects,
		PerEndpoint: perEp, ErrorsByCode: byCode,
		Histogram: h.Clone(), Unknown: c.unknown, Started: start,
	}
	iv.Recorded = iv.Histogram
	iv.TPS = perSec(c.events, length)
	iv.QPS = perSec(c.reads+c.writes+c.others, length)
	iv.ReadsPerSec = perSec(c.reads, length)
	iv.WritesPerSec = perSec(c.writes, length)
	iv.OthersPerSec = perSec(c.others, length)
	iv.ErrPerSec = perSec(c.errors, length)
	iv.ReconnPerSec = perSec(c.reconnects, length)
	iv.LatencyPct = pctMs(h, r.o.Percentile, c.latMax)
	iv.LatencyP50 = pctMs(h, 50, c.latMax)
	iv.LatencyP95 = pctMs(h, 95, c.latMax)
	iv.LatencyP99 = pctMs(h, 99, c.latMax)
	iv.LatencyMax = nsToMs(c.latMax)
	if c.events > 0 {
		iv.LatencyAvg = nsToMs(c.latSum) / float64(c.events)
	}
	r.inFlight(&iv, now)
	if r.rt != nil {
		iv.QueueLength = r.queueLength(now)
		iv.Concurrency = int(r.rt.conc.Load())
		iv.Rate = r.rateInterval(now, &svc, r.hv.ivSvcHist)
	}
	return iv
}

// harvester merges worker statistics; one goroutine at a time uses it.
type harvester struct {
	spare     *hdrhistogram.Histogram
	ivHist    *hdrhistogram.Histogram
	totalHist *hdrhistogram.Histogram
	perWorker []counts
	// perWorkerSvc are the service times by worker (--rate only): Threads fairness.
	perWorkerSvc []counts
	total        counts
	byCode       map[uint16]int64
	perEp        map[string]EndpointStats
	last         time.Time

	// Service times (--rate only): the interval's and the run's, like ivHist/totalHist.
	spareSvc, ivSvcHist, totalSvcHist *hdrhistogram.Histogram
	ivSvc, totalSvc                   counts
	// warmupCum are the workers' cumulative counts at the end of the warm-up.
	warmupCum counts
}

func (h *harvester) init(n int) {
	h.spare = NewHistogram()
	h.ivHist = NewHistogram()
	h.totalHist = NewHistogram()
	h.perWorker = make([]counts, n)
	h.perWorkerSvc = make([]counts, n)
	h.byCode = map[uint16]int64{}
	h.perEp = map[string]EndpointStats{}
	h.spareSvc = NewHistogram()
	h.ivSvcHist = NewHistogram()
	h.totalSvcHist = NewHistogram()
}

// collect harvests every worker into the interval accumulators (returned,
// with the interval histogram in h.ivHist) and, when keep, into the run
// totals; without keep (end of warmup) the harvest is discarded.
func (h *harvester) collect(r *runner, keep bool) (c counts, perEp map[string]EndpointStats, byCode map[uint16]int64) {
	h.ivHist.Reset()
	h.ivSvcHist.Reset()
	h.ivSvc = counts{}
	if !keep {
		h.warmupCum = counts{}
	}
	perEp = map[string]EndpointStats{}
	byCode = map[uint16]int64{}
	for _, ep := range r.t.Endpoints {
		perEp[ep.Label()] = perEp[ep.Label()] // every endpoint appears, even idle
	}
	for _, wk := range r.workers {
		if wk.rd != nil {
			perEp[wk.rd.label] = perEp[wk.rd.label]
		}
	}
	addEp := func(label string, sc *counts, codes map[uint16]int64) {
		e := perEp[label]
		e.Transactions += sc.events
		e.Queries += sc.reads + sc.writes + sc.others - sc.rdQueries
		e.Errors += sc.errors
		e.Reconnects += sc.reconnects
		for code, n := range codes {
			byCode[code] += n
			if e.ErrorsByCode == nil {
				e.ErrorsByCode = map[uint16]int64{}
			}
			e.ErrorsByCode[code] += n
		}
		perEp[label] = e
	}
	for i, wk := range r.workers {
		sn := wk.st.harvest(h.spare, h.spareSvc)
		if keep {
			h.ivHist.Merge(sn.hist)
		}
		sn.hist.Reset()
		h.spare = sn.hist
		if sn.svcHist != nil {
			if keep {
				h.ivSvcHist.Merge(sn.svcHist)
			}
			sn.svcHist.Reset()
			h.spareSvc = sn.svcHist
		}
		if !keep {
			h.warmupCum.add(&sn.cum)
			continue
		}
		for label, cr := range sn.carry {
			sn.c.add(&cr.c) // the worker's totals; the endpoint's share below
			addEp(label, &cr.c, cr.byCode)
		}
		h.ivSvc.add(&sn.svc)
		h.perWorkerSvc[i].add(&sn.svc)
		c.add(&sn.c)
		h.perWorker[i].add(&sn.c)
		if wk.rd != nil {
			re := perEp[wk.rd.label]
			re.Queries += sn.c.rdQueries
			re.ReadChecks += sn.c.rdChecks
			re.StaleReads += sn.c.rdStale
			perEp[wk.rd.label] = re
		}
		for _, cr := range sn.carry {
			sn.c.sub(&cr.c)
		}
		addEp(sn.endpoint, &sn.c, sn.byCode)
	}
	if keep {
		h.total.add(&c)
		h.totalHist.Merge(h.ivHist)
		h.totalSvc.add(&h.ivSvc)
		h.totalSvcHist.Merge(h.ivSvcHist)
		for k, v := range perEp {
			t := h.perEp[k]
			t.Transactions += v.Transactions
			t.Queries += v.Queries
			t.Errors += v.Errors
			t.Reconnects += v.Reconnects
			t.ReadChecks += v.ReadChecks
			t.StaleReads += v.StaleReads
			addCodes(&t.ErrorsByCode, v.ErrorsByCode)
			h.perEp[k] = t
		}
		for k, v := range byCode {
			h.byCode[k] += v
		}
	}
	return c, perEp, byCode
}

// result harvests what is left and builds the Result of the measured part.
func (r *runner) result(end time.Time) *Result {
	start := r.t0.Add(r.warmup)
	measured := end.After(start)
	r.hv.collect(r, measured)
	tot := r.hv.total
	res := &Result{
		Workload: r.name, Threads: len(r.workers),
		Reads: tot.reads, Writes: tot.writes, Others: tot.others,
		Queries:      tot.reads + tot.writes + tot.others,
		Transactions: tot.events, IgnoredErrors: tot.errors, Reconnects: tot.reconnects,
		Unknown:    tot.unknown,
		Percentile: r.o.Percentile,
		Histogram:  r.hv.totalHist, PerEndpoint: r.hv.perEp, ErrorsByCode: r.hv.byCode,
		RandType: r.o.RandType, PSMode: r.o.PSMode,
	}
	for _, ep := range r.t.ReadEndpoints {
		res.ReadNodes = append(res.ReadNodes, ep.Label())
	}
	res.StartedAt = start
	if measured {
		res.TotalTime = end.Sub(start)
		// What collect left in ivHist came after the last interval report.
		res.Tail = r.hv.ivHist.Clone()
		res.TailFrom = max(r.hv.last.Sub(start), 0)
	}
	res.LatencyMin = nsToMs(tot.latMin)
	res.LatencyMax = nsToMs(tot.latMax)
	res.LatencySum = nsToMs(tot.latSum)
	if tot.events > 0 {
		res.LatencyAvg = res.LatencySum / float64(tot.events)
	}
	h := r.hv.totalHist
	res.LatencyPct = pctMs(h, r.o.Percentile, tot.latMax)
	res.LatencyP50 = pctMs(h, 50, tot.latMax)
	res.LatencyP95 = pctMs(h, 95, tot.latMax)
	res.LatencyP99 = pctMs(h, 99, tot.latMax)
	for _, p := range r.o.ExtraPercentiles {
		res.ExtraLatencyPct = append(res.ExtraLatencyPct, pctMs(h, p, tot.latMax))
	}

	r.fairness(res)
	if r.rt != nil {
		res.Rate = r.rateResult(end, &r.hv.totalSvc, r.hv.totalSvcHist)
	}
	r.live.finish()
	return res
}

// fairness fills sysbench's "Threads fairness": events and execution time per worker.
// Execution time is the time spent executing events: the latency sums without --rate and,
// with --rate, the service times (from when a worker began each event), so that it never
// exceeds the wall time. sysbench 1.0.20 adds each event's queue wait to its timer
// (sb_timer_stop: elapsed = end - start + queue_time) and takes the latency sum, so under
// --rate its execution time includes the time events sat queued and can exceed the run.
func (r *runner) fairness(res *Result) {
	n := float64(len(r.workers))
	exec := r.hv.perWorker
	if r.rt != nil {
		exec = r.hv.perWorkerSvc
	}
	var sum int64
	for _, pw := range exec {
		sum += pw.latSum
	}
	res.EventsAvg = float64(r.hv.total.events) / n
	res.ExecTimeAvg = float64(sum) / 1e9 / n
	var ev, et float64
	for i, pw := range r.hv.perWorker {
		d := res.EventsAvg - float64(pw.events)
		ev += d * d
		d = res.ExecTimeAvg - float64(exec[i].latSum)/1e9
		et += d * d
	}
	res.EventsStddev = math.Sqrt(ev / n)
	res.ExecTimeStddev = math.Sqrt(et / n)
}
