package workload

import (
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: microseconds from 1 us to 1 hour, 3 significant digits.
// Longer latencies are recorded as 1 hour.
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// NewHistogram returns an empty latency histogram with the geometry Run uses
// (microseconds, 1 us .. 1 h, 3 significant digits).
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histSigFigs)
}

// Reporter receives interval statistics. Interval is called from a single
// goroutine, in order, every Options.ReportInterval of measured time.
type Reporter interface {
	Interval(iv Interval)
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(Interval)

// Interval calls f(iv).
func (f ReporterFunc) Interval(iv Interval) { f(iv) }

// EndpointStats are the counts of one endpoint (summed over the workers
// connected to it) within an interval or a whole run.
type EndpointStats struct {
	// Transactions are completed events.
	Transactions int64 `json:"transactions"`
	// Queries are statements counted as read, write or other.
	Queries int64 `json:"queries"`
	// Errors are failed attempts: statements whose error was ignored (the transaction was
	// rolled back and retried), lost connections and failed reconnects, and the error that
	// ended the run.
	Errors int64 `json:"errors"`
	// Reconnects are re-established connections after a lost connection.
	Reconnects int64 `json:"reconnects"`
	// ReadChecks and StaleReads are, for a read endpoint (Target.ReadEndpoints), the
	// read-your-writes checks made on it and those that missed the worker's own last
	// commit; their Queries are the reads it served.
	ReadChecks int64 `json:"read_checks,omitempty"`
	StaleReads int64 `json:"stale_reads,omitempty"`
	// ErrorsByCode counts the failed attempts by MySQL error code (nil when none): the
	// server's codes, e.g. the certification failures of a multi-primary group per member
	// (3101, 1180, 1213), and the client codes of connection failures (2002 socket, 2003
	// TCP connect, 2006 gone away, 2013 lost during a statement).
	ErrorsByCode map[uint16]int64 `json:"errors_by_code,omitempty"`
}

// addCodes adds counts by error code into *m, allocating it when needed.
func addCodes(m *map[uint16]int64, codes map[uint16]int64) {
	for code, n := range codes {
		if *m == nil {
			*m = map[uint16]int64{}
		}
		(*m)[code] += n
	}
}

// Interval is one interval report, what sysbench prints in a
// "[ 10s ] thds: ..." line plus more. Rates are per second of the interval's
// actual length; latencies are in milliseconds.
type Interval struct {
	// Elapsed is the measured time since the start of the run (after warmup)
	// at the end of this interval; Length is the interval's actual length.
	Elapsed, Length time.Duration
	// Threads is the number of workers still running.
	Threads int
	// TPS, QPS and the per-class rates are per second.
	TPS, QPS, ReadsPerSec, WritesPerSec, OthersPerSec, ErrPerSec, ReconnPerSec float64
	// LatencyPct is the latency at Options.Percentile in ms (0 when no event
	// completed or the percentile is off).
	LatencyPct float64
	// LatencyP50, LatencyP95, LatencyP99, LatencyMax and LatencyAvg are in ms.
	LatencyP50, LatencyP95, LatencyP99, LatencyMax, LatencyAvg float64
	// Counts within the interval.
	Transactions, Reads, Writes, Others, Errors, Reconnects int64
	// QueueLength is the number of queued arrivals of the measured part (sysbench's
	// "queue length"; warm-up arrivals still queued, to be dropped, are not counted)
	// and Concurrency the number of events in progress (only with Options.Rate > 0).
	QueueLength, Concurrency int
	// PerEndpoint holds the interval's counts by Endpoint label.
	PerEndpoint map[string]EndpointStats
	// ErrorsByCode counts the interval's failed attempts by MySQL error code (see
	// EndpointStats.ErrorsByCode).
	ErrorsByCode map[uint16]int64
	// Histogram holds the interval's event latencies in microseconds (a copy
	// the receiver may keep, not modify), with the waits of InFlight.
	Histogram *hdrhistogram.Histogram
	// Recorded is Histogram without the waits of InFlight (the same *Histogram when
	// InFlight is 0): what the run's Result.Histogram counts of this interval, each
	// event once, in microseconds. The intervals' Recorded and Result.Tail add up to
	// Result.Histogram (latency.hlog's lines).
	Recorded *hdrhistogram.Histogram
	// Started is when the measured part began, on the wall clock (Result.StartedAt):
	// Elapsed counts from it.
	Started time.Time
	// InFlight counts the events in progress at the interval's end that had waited at
	// least MinOutage (from their intended start), LongestInFlight the longest wait: their
	// waits are in Histogram, the percentiles and LatencyMax as lower bounds (an interval
	// copy only: the run's totals count them once, when they complete or are given up).
	InFlight        int
	LongestInFlight time.Duration
	// Unknown counts the transactions abandoned in the interval (see Result.Unknown).
	Unknown int64
	// Rate is what --rate adds: arrivals, how far behind the target the run is,
	// service times (nil without --rate; see rate.go).
	Rate *RateInterval
}

// Result is the whole measured run (after warmup): what sysbench's final
// summary prints, plus more. Latencies are in milliseconds.
type Result struct {
	// Workload is the test name; Threads the number of workers.
	Workload string
	Threads  int
	// Counts of statements by sysbench's classes: a statement returning rows
	// is a read, one changing rows is a write, anything else (BEGIN, COMMIT, a
	// DML changing no row) is other. Queries = Reads + Writes + Others.
	Reads, Writes, Others, Queries int64
	// Transactions are completed events.
	Transactions int64
	// IgnoredErrors are failed attempts (sysbench's "ignored errors"): errors in the ignore
	// list (transaction retried), failed reconnects, and the error that ended the run.
	IgnoredErrors int64
	// Reconnects are re-established connections.
	Reconnects int64
	// TotalTime is the measured wall time (sysbench's "total time").
	TotalTime time.Duration
	// StartedAt is when the measured part started (wall clock): zero of the run's clock
	// (Outage.Start, Wait.At).
	StartedAt time.Time
	// LatencyMin, LatencyAvg, LatencyMax and LatencySum are exact (ms);
	// LatencyPct is at Percentile, from Histogram (ms).
	LatencyMin, LatencyAvg, LatencyMax, LatencyPct, LatencySum float64
	// Percentile is Options.Percentile.
	Percentile float64
	// ExtraLatencyPct are the latencies (ms, from Histogram) at
	// Options.ExtraPercentiles, in the same order.
	ExtraLatencyPct []float64
	// LatencyP50, LatencyP95, LatencyP99 come from Histogram (ms).
	LatencyP50, LatencyP95, LatencyP99 float64
	// EventsAvg and EventsStddev are events per thread; ExecTimeAvg and
	// ExecTimeStddev are seconds of event execution per thread (sysbench's
	// "Threads fairness").
	EventsAvg, EventsStddev, ExecTimeAvg, ExecTimeStddev float64
	// Histogram holds every event latency in microseconds.
	Histogram *hdrhistogram.Histogram
	// Tail holds what Histogram counts after the last Interval reported (microseconds,
	// see Interval.Recorded): the events that completed from TailFrom (the measured
	// clock) until the end, and the waits of the transactions in flight at the end. nil
	// when nothing was measured.
	Tail     *hdrhistogram.Histogram
	TailFrom time.Duration
	// PerEndpoint holds the run's counts by Endpoint label.
	PerEndpoint map[string]EndpointStats
	// ErrorsByCode counts failed attempts by MySQL error code (see EndpointStats).
	ErrorsByCode map[uint16]int64
	// Outages are the windows during which an endpoint's workers could not commit (see
	// Outage), in order of Start; nil when there was none.
	Outages []Outage
	// PSFallback is set when pre-flight found that the prepared statements would not fit
	// (max_prepared_stmt_count) and the run used client-side statements instead: the NOTE.
	PSFallback string
	// RandType and PSMode record the distribution and statement mode used.
	RandType, PSMode string
	// ClientCPUCores is the CPU this process used during the run, in cores (user+system
	// seconds per second of wall time); ClientCPUs the CPUs it can run on. See ClientBound.
	ClientCPUCores float64
	ClientCPUs     int
	// ReadNodes are the labels of Target.ReadEndpoints (nil without read nodes); their
	// reads and read-your-writes checks are in PerEndpoint.
	ReadNodes []string
	// Rate is what --rate adds: target, arrivals, backlog at the end, warm-up
	// arrivals dropped, service times, whether the target was met (nil without
	// --rate; see rate.go).
	Rate *RateResult
	// Unknown counts the transactions whose outcome is unknown (they may or may not have
	// committed), given up by a following or failing-over worker (Target.Follow,
	// Target.Failover): hung while the cluster named another writer or did not count the
	// node live, with COMMIT possibly sent, or whose connection was lost during their
	// COMMIT (or, without transactions, during a write). They are not in Transactions.
	Unknown int64
	// Waits are the transactions that never completed (still in flight at the end of the
	// run after waiting at least MinOutage, or abandoned) with how long they had waited:
	// their latencies are lower bounds, counted in Histogram, the percentiles and
	// LatencyMax (not in Transactions, LatencyAvg, LatencyMin or LatencySum). The longest
	// 100, longest first; nil when none. WaitCount counts them all.
	Waits     []Wait
	WaitCount int
	// WriterMoves are the following or failing-over workers' moves to another writer
	// (Target.Follow, Target.Failover: also their moves back to their own node), in order
	// of At; nil when none.
	WriterMoves []WriterMove
}

// Wait is a transaction that did not complete: its latency is at least Waited.
type Wait struct {
	// Endpoint is the label of the node it waited on; Worker the worker's index.
	Endpoint string
	Worker   int
	// Start is its intended start (the arrival under --rate) on the wall clock, At the
	// same on the run's clock (see Outage.Start); Waited the time from Start until the run
	// ended or the worker abandoned it.
	Start  time.Time
	At     time.Duration
	Waited time.Duration
	// Abandoned is true when the worker gave it up (an unknown outcome, Result.Unknown:
	// hung on a node it left, or its connection lost during its COMMIT), false when it was
	// still in flight at the end of the run.
	Abandoned bool
}

// WriterMove is the following (Target.Follow) or failing-over (Target.Failover) workers'
// move from one writer to another: when the first of them moved, when the first commit on
// the new writer came, and when all of them had committed again.
type WriterMove struct {
	// From and To are endpoint labels (node names on a cluster).
	From, To string
	// At is when the first worker moved to To (wall clock); FirstCommit when the first
	// transaction committed there after At (zero: none before the run ended).
	At, FirstCommit time.Time
	// Workers is how many workers moved from From to To; Abandoned how many of them left a
	// transaction of unknown outcome behind (hung, or its COMMIT's connection lost;
	// counted in Result.Unknown).
	Workers, Abandoned int
	// Left is how many of Workers left From having last committed there (the others
	// moved on from a node they had not committed on yet); Settled is when every one of
	// those had committed again, on To or on a node it moved on to: the clients' failover
	// done; zero when one had not by the end of the run (or Left is 0).
	Left    int
	Settled time.Time

	pending int // workers of the move still to commit again (Settled)
}

// TPS returns transactions per second of TotalTime.
func (r *Result) TPS() float64 { return perSec(r.Transactions, r.TotalTime) }

// QPS returns queries per second of TotalTime.
func (r *Result) QPS() float64 { return perSec(r.Queries, r.TotalTime) }

func perSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// counts are the counters one worker accumulates between harvests.
type counts struct {
	events, reads, writes, others, errors, reconnects int64
	// unknown counts the transactions abandoned with an unknown outcome (Result.Unknown).
	unknown int64
	// rdQueries, rdChecks and rdStale are the reads served by the worker's read
	// endpoint, its read-your-writes checks and the stale ones among them.
	rdQueries, rdChecks, rdStale int64
	latSum, latMin, latMax       int64 // ns; latMin 0 = none yet
}

// sub takes o's additive counters off c (not the latency extremes).
func (c *counts) sub(o *counts) {
	c.events -= o.events
	c.reads -= o.reads
	c.writes -= o.writes
	c.others -= o.others
	c.errors -= o.errors
	c.reconnects -= o.reconnects
	c.unknown -= o.unknown
	c.rdQueries -= o.rdQueries
	c.rdChecks -= o.rdChecks
	c.rdStale -= o.rdStale
	c.latSum -= o.latSum
}

func (c *counts) add(o *counts) {
	c.events += o.events
	c.reads += o.reads
	c.writes += o.writes
	c.others += o.others
	c.errors += o.errors
	c.reconnects += o.reconnects
	c.unknown += o.unknown
	c.rdQueries += o.rdQueries
	c.rdChecks += o.rdChecks
	c.rdStale += o.rdStale
	c.latSum += o.latSum
	if o.latMin > 0 && (c.latMin == 0 || o.latMin < c.latMin) {
		c.latMin = o.latMin
	}
	c.latMax = max(c.latMax, o.latMax)
}

// workerStats is what one worker shares with the harvester. Only its own
// worker, the (single) harvester and a live-metrics scrape (Live.Totals) take mu:
// there is no lock shared between workers, and the others hold it only to swap
// pointers and copy counters.
type workerStats struct {
	mu     sync.Mutex
	c      counts
	byCode map[uint16]int64
	hist   *hdrhistogram.Histogram
	// svc and svcHist are the service times (event end minus the moment the worker
	// began it) since the previous harvest; svcHist is nil without --rate, where the
	// service time is the latency.
	svc     counts
	svcHist *hdrhistogram.Histogram
	// cum and cumCodes are cumulative since the workers started, never reset by a
	// harvest: what live metrics read (Live).
	cum      counts
	cumCodes map[uint16]int64
	endpoint string
	carry    map[string]*carried // see switchTo
}

// snapshot is the harvest of one worker: c and byCode were counted on endpoint, carry
// on the endpoints the worker left since the previous harvest (Target.Follow).
type snapshot struct {
	c        counts
	byCode   map[uint16]int64
	hist     *hdrhistogram.Histogram
	endpoint string
	carry    map[string]*carried
	svc      counts
	svcHist  *hdrhistogram.Histogram // nil without --rate
	cum      counts                  // the cumulative counts at the harvest
}

// carried are the counts of an endpoint a following worker left.
type carried struct {
	c      counts
	byCode map[uint16]int64
}

// harvest takes the worker's counters and histograms since the previous
// harvest, leaving it fresh ones; spare and spareSvc are the empty histograms to
// swap in (spareSvc is ignored without --rate).
func (s *workerStats) harvest(spare, spareSvc *hdrhistogram.Histogram) snapshot {
	s.mu.Lock()
	sn := snapshot{c: s.c, byCode: s.byCode, hist: s.hist, endpoint: s.endpoint, carry: s.carry, svc: s.svc, svcHist: s.svcHist, cum: s.cum}
	s.c = counts{}
	s.svc = counts{}
	s.byCode = nil
	s.carry = nil
	s.hist = spare
	if s.svcHist != nil {
		s.svcHist = spareSvc
	}
	s.mu.Unlock()
	return sn
}

// switchTo makes label the endpoint of the counts recorded from now on; what was counted
// on the previous one since the last harvest is kept for it.
func (s *workerStats) switchTo(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if label == s.endpoint {
		return
	}
	if s.carry == nil {
		s.carry = map[string]*carried{}
	}
	cr := s.carry[s.endpoint]
	if cr == nil {
		cr = &carried{}
		s.carry[s.endpoint] = cr
	}
	cr.c.add(&s.c)
	addCodes(&cr.byCode, s.byCode)
	s.c, s.byCode, s.endpoint = counts{}, nil, label
}

// record adds one finished event (or a failed attempt when lat < 0) with the
// statement counts in ev.
func (s *workerStats) record(ev *counts, lat time.Duration, code uint16) {
	s.mu.Lock()
	s.addLocked(ev, lat, code)
	s.mu.Unlock()
	*ev = counts{}
}

// recordEvent adds one finished event with latency lat (from its intended start,
// its arrival under --rate) and service time svc (from when the worker began it;
// only kept when the worker has a service histogram, i.e. with --rate).
func (s *workerStats) recordEvent(ev *counts, lat, svc time.Duration) {
	s.mu.Lock()
	s.addLocked(ev, lat, 0)
	if s.svcHist != nil {
		s.svc.addLatency(svc)
		_ = s.svcHist.RecordValue(min(max(int64(svc), 1)/1000, histHighest))
	}
	s.mu.Unlock()
	*ev = counts{}
}

func (s *workerStats) addLocked(ev *counts, lat time.Duration, code uint16) {
	for _, c := range []*counts{&s.c, &s.cum} {
		c.reads += ev.reads
		c.writes += ev.writes
		c.others += ev.others
		c.errors += ev.errors
		c.reconnects += ev.reconnects
		c.unknown += ev.unknown
		c.rdQueries += ev.rdQueries
		c.rdChecks += ev.rdChecks
		c.rdStale += ev.rdStale
	}
	if code != 0 {
		if s.byCode == nil {
			s.byCode = make(map[uint16]int64)
		}
		s.byCode[code]++
		if s.cumCodes == nil {
			s.cumCodes = make(map[uint16]int64)
		}
		s.cumCodes[code]++
	}
	if lat >= 0 {
		s.c.addLatency(lat)
		s.cum.events++
		us := min(max(int64(lat), 1)/1000, histHighest)
		_ = s.hist.RecordValue(us)
	}
}

// addLatency counts one event of latency d.
func (c *counts) addLatency(d time.Duration) {
	ns := max(int64(d), 1)
	c.events++
	c.latSum += ns
	if c.latMin == 0 || ns < c.latMin {
		c.latMin = ns
	}
	c.latMax = max(c.latMax, ns)
}

// ms converts a histogram value (us) to milliseconds.
func usToMs(v int64) float64 { return float64(v) / 1000 }

func nsToMs(v int64) float64 { return float64(v) / 1e6 }

// pctMs returns the latency at percentile p (0..100) in ms, clamped to maxNs.
func pctMs(h *hdrhistogram.Histogram, p float64, maxNs int64) float64 {
	return LatencyAt(h, p, nsToMs(maxNs))
}

// LatencyAt returns the latency at percentile p (0..100) of h (microseconds, the
// geometry of NewHistogram) in ms, clamped to maxMs, the exact maximum latency (ms): how
// Run computes a Result's and an Interval's percentiles from their histograms, so that
// a merge of several runs' histograms can compute them the same way. 0 when h is empty
// or p <= 0.
func LatencyAt(h *hdrhistogram.Histogram, p, maxMs float64) float64 {
	if h.TotalCount() == 0 || p <= 0 {
		return 0
	}
	return math.Min(usToMs(h.ValueAtPercentile(p)), maxMs)
}
