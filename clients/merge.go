// Package clients merges the workload of one run driven from several client machines:
// each client runs its own workload engine (workload.Run) and streams its interval reports
// and its final Result to the coordinator (stream.go), which merges them exactly into one
// Result (Merge) and one Interval per report interval (IntervalMerger): histograms merged,
// counters summed, percentiles recomputed from the merged histograms as the engine
// computes them, never averaged.
package clients

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/habench/habench/workload"
)

// Part is one client's share of a run: its name (a client host) and the Result its
// workload engine returned.
type Part struct {
	Client string
	Result *workload.Result
}

// ClientRow is one client's line of a merged run: its own workers' numbers.
type ClientRow struct {
	// Client is the client's name; Threads its workers.
	Client  string
	Threads int
	// Transactions and TPS are its completed events and their rate over its TotalTime.
	Transactions int64
	TPS          float64
	// LatencyP95 and LatencyP99 are its own percentiles (ms).
	LatencyP95, LatencyP99 float64
	// CPUCores is the CPU its habench used (cores), CPUs the CPUs it can run on; Bound is
	// true when it used at least 90% of them (workload.Result.ClientBound).
	CPUCores float64
	CPUs     int
	Bound    bool
	// Partial is true for a client lost mid-run: its row (and its part of the merge) is
	// what its interval reports until then said (Run).
	Partial bool
}

// Outage is a workload.Outage seen by one client's workers, on the merged run's clock.
type Outage struct {
	Client string
	workload.Outage
}

// Wait is a workload.Wait of one client, on the merged run's clock; its Worker is
// numbered across the clients (see Merge).
type Wait struct {
	Client string
	workload.Wait
}

// WriterMove is a workload.WriterMove of one client's workers.
type WriterMove struct {
	Client string
	workload.WriterMove
}

// Merged is the merge of several clients' Results.
type Merged struct {
	// Result is the run as one: what a single client's Result would say had it run every
	// worker (see Merge for each field). Its Outages, Waits and WriterMoves are those below
	// without the client's name.
	Result *workload.Result
	// Clients are the clients' own rows, in the order of the parts.
	Clients []ClientRow
	// Outages (in order of Start), Waits (the longest workload.MaxWaits, longest first)
	// and WriterMoves (in order of At) are the clients', each with its client's name.
	Outages     []Outage
	Waits       []Wait
	WriterMoves []WriterMove
}

// ClientBoundWarning is the WARNING naming the clients whose habench used at least 90% of
// the CPUs it can run on ("" when none did).
func (m *Merged) ClientBoundWarning() string {
	var bound []string
	for _, c := range m.Clients {
		if c.Bound {
			bound = append(bound, fmt.Sprintf("%s (%.2f of %d CPUs)", c.Client, c.CPUCores, c.CPUs))
		}
	}
	if len(bound) == 0 {
		return ""
	}
	who := "client " + bound[0]
	if len(bound) > 1 {
		who = "clients " + strings.Join(bound, ", ")
	}
	return fmt.Sprintf("habench on %s used at least 90%% of the CPUs it can run on during the run: the clients, not the servers, may be the bottleneck (fewer threads on those clients, or more clients)", who)
}

// Merge merges the clients' Results of one run into one, exactly. The run's clock (the
// merged StartedAt, from which Outage.Start, Wait.At, Rate.BehindAt and TailFrom count) is
// the earliest client's start; each client's times are moved onto it. extra are the
// run's Options.ExtraPercentiles (a Result carries their latencies, not the percentiles).
//
// Summed: Threads, Reads, Writes, Others, Queries, Transactions, IgnoredErrors,
// Reconnects, Unknown, WaitCount, LatencySum, PerEndpoint and ErrorsByCode (by key).
// Merged histograms: Histogram, Tail, Rate.ServiceHistogram; every percentile is
// recomputed from them (workload.LatencyAt, clamped to the merged max). LatencyMin and
// LatencyMax are the extremes, LatencyAvg = LatencySum / Transactions. Threads fairness
// (EventsAvg, EventsStddev, ExecTimeAvg, ExecTimeStddev) is over all the clients' threads
// (the population mean and standard deviation, from each client's, exactly). TotalTime
// runs from the earliest start to the latest end, TailFrom is the latest (the tail begins
// after every client's last interval). ClientCPUCores and ClientCPUs are the busiest
// client's (the highest share of its CPUs), so that ClientBound says whether any client
// was bound; Clients has every client's and ClientBoundWarning names them. Workload,
// Percentile, RandType and ReadNodes must be the same on every client; PSMode too, unless
// a client fell back to client-side statements (PSFallback, the first client's that did,
// prefixed with its name): then the merged PSMode is that client's. Waits are renumbered
// (client k's worker i is worker i plus the threads of the clients before k). Rate: see
// mergeRate.
//
// Errors (one line, naming the client and the field): no part, a client without a name or
// Result, a name twice, a field that must be equal differing, a histogram of another
// geometry, --rate on some clients only.
func Merge(parts []Part, extra []float64) (*Merged, error) {
	if err := checkParts(parts, extra); err != nil {
		return nil, err
	}
	first := parts[0].Result
	base := first.StartedAt
	for _, p := range parts[1:] {
		if p.Result.StartedAt.Before(base) {
			base = p.Result.StartedAt
		}
	}
	out := &workload.Result{
		Workload: first.Workload, Percentile: first.Percentile, RandType: first.RandType,
		PSMode: first.PSMode, ReadNodes: slices.Clone(first.ReadNodes), StartedAt: base,
		Histogram: workload.NewHistogram(),
	}
	m := &Merged{Result: out}
	for _, p := range parts {
		r := p.Result
		sumCounts(out, r)
		if err := mergeHist(out.Histogram, r.Histogram, p.Client, "Histogram"); err != nil {
			return nil, err
		}
		if r.Tail != nil {
			if out.Tail == nil {
				out.Tail = workload.NewHistogram()
			}
			if err := mergeHist(out.Tail, r.Tail, p.Client, "Tail"); err != nil {
				return nil, err
			}
		}
		off := r.StartedAt.Sub(base)
		out.TotalTime = max(out.TotalTime, off+r.TotalTime)
		if r.Tail != nil {
			out.TailFrom = max(out.TailFrom, off+r.TailFrom)
		}
		if r.PSFallback != "" && out.PSFallback == "" {
			out.PSFallback = p.Client + ": " + r.PSFallback
			out.PSMode = r.PSMode
		}
		m.Clients = append(m.Clients, ClientRow{Client: p.Client, Threads: r.Threads, Transactions: r.Transactions,
			TPS: r.TPS(), LatencyP95: r.LatencyP95, LatencyP99: r.LatencyP99,
			CPUCores: r.ClientCPUCores, CPUs: r.ClientCPUs, Bound: r.ClientBound()})
	}
	out.TailFrom = min(out.TailFrom, out.TotalTime)
	latencies(out, parts, extra)
	fairness(out, parts)
	busiestClient(out, parts)
	rr, err := mergeRate(parts, base)
	if err != nil {
		return nil, err
	}
	out.Rate = rr
	m.events(parts, base)
	return m, nil
}

// checkParts checks what Merge needs of its parts (see Merge's errors).
func checkParts(parts []Part, extra []float64) error {
	if len(parts) == 0 {
		return fmt.Errorf("merge: no client's result")
	}
	seen := map[string]bool{}
	for i, p := range parts {
		if p.Client == "" {
			return fmt.Errorf("merge: client %d has no name", i+1)
		}
		if seen[p.Client] {
			return fmt.Errorf("merge: client %s twice", p.Client)
		}
		seen[p.Client] = true
		if p.Result == nil {
			return fmt.Errorf("merge: client %s: no result", p.Client)
		}
		if len(p.Result.ExtraLatencyPct) != len(extra) {
			return fmt.Errorf("merge: client %s: %d extra percentiles, the run has %d", p.Client, len(p.Result.ExtraLatencyPct), len(extra))
		}
	}
	r0, c0 := parts[0].Result, parts[0].Client
	for _, p := range parts[1:] {
		r := p.Result
		for _, f := range []struct{ name, a, b string }{
			{"Workload", r0.Workload, r.Workload},
			{"Percentile", fmt.Sprint(r0.Percentile), fmt.Sprint(r.Percentile)},
			{"RandType", r0.RandType, r.RandType},
			{"ReadNodes", strings.Join(r0.ReadNodes, ","), strings.Join(r.ReadNodes, ",")},
			{"PSMode", r0.PSMode, r.PSMode},
		} {
			if f.a != f.b && !(f.name == "PSMode" && (r0.PSFallback != "" || r.PSFallback != "")) {
				return fmt.Errorf("merge: client %s: %s %q, client %s's is %q", p.Client, f.name, f.b, c0, f.a)
			}
		}
		if (r0.Rate == nil) != (r.Rate == nil) {
			return fmt.Errorf("merge: client %s ran with --rate %v, client %s with %v", p.Client, r.Rate != nil, c0, r0.Rate != nil)
		}
	}
	return nil
}

// mergeHist adds src into dst (nil src: nothing); an error when values were dropped (a
// histogram of another geometry than workload.NewHistogram's).
func mergeHist(dst, src *hdrhistogram.Histogram, client, field string) error {
	if src == nil {
		return nil
	}
	if dropped := dst.Merge(src); dropped != 0 {
		return fmt.Errorf("merge: client %s: %s: %d values outside the histogram's range (another geometry)", client, field, dropped)
	}
	return nil
}

// sumCounts adds r's additive counters and maps into out.
func sumCounts(out, r *workload.Result) {
	out.Threads += r.Threads
	out.Reads += r.Reads
	out.Writes += r.Writes
	out.Others += r.Others
	out.Queries += r.Queries
	out.Transactions += r.Transactions
	out.IgnoredErrors += r.IgnoredErrors
	out.Reconnects += r.Reconnects
	out.Unknown += r.Unknown
	out.WaitCount += r.WaitCount
	out.LatencySum += r.LatencySum
	if r.Transactions > 0 && r.LatencyMin > 0 && (out.LatencyMin == 0 || r.LatencyMin < out.LatencyMin) {
		out.LatencyMin = r.LatencyMin
	}
	out.LatencyMax = max(out.LatencyMax, r.LatencyMax)
	out.PerEndpoint = addEndpoints(out.PerEndpoint, r.PerEndpoint)
	out.ErrorsByCode = addCodes(out.ErrorsByCode, r.ErrorsByCode)
}

// addEndpoints adds src's counts into dst by endpoint label (allocating dst when needed;
// an endpoint without any count still appears, as the engine lists every endpoint).
func addEndpoints(dst, src map[string]workload.EndpointStats) map[string]workload.EndpointStats {
	for k, v := range src {
		if dst == nil {
			dst = map[string]workload.EndpointStats{}
		}
		e := dst[k]
		e.Transactions += v.Transactions
		e.Queries += v.Queries
		e.Errors += v.Errors
		e.Reconnects += v.Reconnects
		e.ReadChecks += v.ReadChecks
		e.StaleReads += v.StaleReads
		e.ErrorsByCode = addCodes(e.ErrorsByCode, v.ErrorsByCode)
		dst[k] = e
	}
	return dst
}

// addCodes adds src's counts by error code into dst (allocating it when needed).
func addCodes(dst, src map[uint16]int64) map[uint16]int64 {
	for code, n := range src {
		if dst == nil {
			dst = map[uint16]int64{}
		}
		dst[code] += n
	}
	return dst
}

// latencies sets out's average and percentiles from its sums and merged histogram.
func latencies(out *workload.Result, parts []Part, extra []float64) {
	if out.Transactions > 0 {
		out.LatencyAvg = out.LatencySum / float64(out.Transactions)
	}
	h, mx := out.Histogram, out.LatencyMax
	out.LatencyPct = workload.LatencyAt(h, out.Percentile, mx)
	out.LatencyP50 = workload.LatencyAt(h, 50, mx)
	out.LatencyP95 = workload.LatencyAt(h, 95, mx)
	out.LatencyP99 = workload.LatencyAt(h, 99, mx)
	for _, p := range extra {
		out.ExtraLatencyPct = append(out.ExtraLatencyPct, workload.LatencyAt(h, p, mx))
	}
}

// fairness sets sysbench's Threads fairness over every client's threads: the population
// mean and standard deviation of the union, from each client's (n, mean, stddev):
// variance = sum of n_i * (stddev_i^2 + (mean_i - mean)^2), over n.
func fairness(out *workload.Result, parts []Part) {
	n := float64(out.Threads)
	if n == 0 {
		return
	}
	var execSum float64
	for _, p := range parts {
		execSum += float64(p.Result.Threads) * p.Result.ExecTimeAvg
	}
	out.EventsAvg = float64(out.Transactions) / n
	out.ExecTimeAvg = execSum / n
	var ev, et float64
	for _, p := range parts {
		r, k := p.Result, float64(p.Result.Threads)
		d := r.EventsAvg - out.EventsAvg
		ev += k * (r.EventsStddev*r.EventsStddev + d*d)
		d = r.ExecTimeAvg - out.ExecTimeAvg
		et += k * (r.ExecTimeStddev*r.ExecTimeStddev + d*d)
	}
	out.EventsStddev = math.Sqrt(ev / n)
	out.ExecTimeStddev = math.Sqrt(et / n)
}

// busiestClient sets out's ClientCPUCores and ClientCPUs to those of the client that used
// the largest share of its CPUs.
func busiestClient(out *workload.Result, parts []Part) {
	best := -1.0
	for _, p := range parts {
		r := p.Result
		if r.ClientCPUs <= 0 {
			continue
		}
		if share := r.ClientCPUCores / float64(r.ClientCPUs); share > best {
			best, out.ClientCPUCores, out.ClientCPUs = share, r.ClientCPUCores, r.ClientCPUs
		}
	}
}

// events merges the clients' outages, waits and writer moves, labelled with their
// client, onto the run's clock base, into m and (unlabelled) m.Result.
func (m *Merged) events(parts []Part, base time.Time) {
	worker := 0
	for _, p := range parts {
		r := p.Result
		off := r.StartedAt.Sub(base)
		for _, o := range r.Outages {
			o.Start += off
			o.End += off
			m.Outages = append(m.Outages, Outage{Client: p.Client, Outage: o})
		}
		for _, w := range r.Waits {
			w.At += off
			w.Worker += worker
			m.Waits = append(m.Waits, Wait{Client: p.Client, Wait: w})
		}
		for _, mv := range r.WriterMoves {
			m.WriterMoves = append(m.WriterMoves, WriterMove{Client: p.Client, WriterMove: mv})
		}
		worker += r.Threads
	}
	slices.SortStableFunc(m.Outages, func(a, b Outage) int { return cmp.Compare(a.Start, b.Start) })
	slices.SortStableFunc(m.Waits, func(a, b Wait) int { return cmp.Compare(b.Waited, a.Waited) })
	m.Waits = m.Waits[:min(len(m.Waits), workload.MaxWaits)]
	slices.SortStableFunc(m.WriterMoves, func(a, b WriterMove) int { return a.At.Compare(b.At) })
	for _, o := range m.Outages {
		m.Result.Outages = append(m.Result.Outages, o.Outage)
	}
	for _, w := range m.Waits {
		m.Result.Waits = append(m.Result.Waits, w.Wait)
	}
	for _, mv := range m.WriterMoves {
		m.Result.WriterMoves = append(m.Result.WriterMoves, mv.WriterMove)
	}
}
