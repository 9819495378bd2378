package workload

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// SysbenchVersion is the sysbench release whose output layout habench reproduces.
const SysbenchVersion = "1.0.20"

// PrintHeader writes sysbench's run header, from the version line to
// "Threads started!" and its blank line: PrintHeaderStart and PrintThreadsStarted,
// for a caller that prints nothing in between.
//
//	habench VERSION (sysbench 1.0.20 compatible)
//
//	Running the test with following options:
//	Number of threads: 4
//	Target transaction rate: 200/sec            (only with --rate)
//	Report intermediate results every 1 second(s) (only with --report-interval)
//	Initializing random number generator from current time
//	...
//	Threads started!
func PrintHeader(w io.Writer, o Options, version string) {
	PrintHeaderStart(w, o, version)
	PrintThreadsStarted(w, o)
}

// PrintHeaderStart writes the header up to "Initializing worker threads..." and its
// blank line: what sysbench prints before it connects its workers.
func PrintHeaderStart(w io.Writer, o Options, version string) {
	var b strings.Builder
	fmt.Fprintf(&b, "habench %s (sysbench %s compatible)\n\n", version, SysbenchVersion)
	b.WriteString("Running the test with following options:\n")
	fmt.Fprintf(&b, "Number of threads: %d\n", o.Threads)
	if o.Rate > 0 {
		fmt.Fprintf(&b, "Target transaction rate: %d/sec\n", o.Rate)
	}
	if o.ReportInterval > 0 {
		fmt.Fprintf(&b, "Report intermediate results every %s second(s)\n", secs(o.ReportInterval))
	}
	if o.RandSeed != 0 {
		fmt.Fprintf(&b, "Initializing random number generator from seed (%d).\n\n", o.RandSeed)
	} else {
		b.WriteString("Initializing random number generator from current time\n\n")
	}
	b.WriteString("\n")
	b.WriteString("Initializing worker threads...\n\n")
	io.WriteString(w, b.String())
}

// PrintThreadsStarted writes the rest of the header, "Warming up for N seconds..."
// (with a warm-up) and "Threads started!": what sysbench prints once every worker has
// connected (see StartReporter.Started).
func PrintThreadsStarted(w io.Writer, o Options) {
	var b strings.Builder
	if o.Warmup > 0 {
		fmt.Fprintf(&b, "Warming up for %s seconds...\n\n", secs(o.Warmup))
	}
	b.WriteString("Threads started!\n\n")
	io.WriteString(w, b.String())
}

// pctLabel formats a percentile the way sysbench's %u does, keeping
// fractional percentiles (99.9) readable.
func pctLabel(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// PrintInterval writes one interval report in sysbench 1.0.20's layout:
//
//	[ 10s ] thds: 16 tps: 1164.17 qps: 23298.56 (r/w/o: 16311.12/4657.49/2329.95) lat (ms,95%): 20.37 err/s: 0.00 reconn/s: 0.00
//
// with, when workers sat in a statement for MinOutage or longer (Interval.InFlight), habench's
// clause appended to the line (its latencies then include their waits as lower bounds):
//
//	... reconn/s: 0.00 [in flight: 4 >= 1 s, longest 12.35 s; lat includes them as lower bounds]
//
// followed, with --rate, by "[ 10s ] queue length: X, concurrency: Y" and, only while
// the run is more than RateBehind behind its target (habench's line; a run that keeps up
// prints exactly sysbench's lines):
//
//	[ 10s ] behind --rate: the oldest queued arrival has waited 3.012 s, 151 queued; 50 arrived, 0 done in this interval
func PrintInterval(w io.Writer, iv Interval, o Options) {
	t := iv.Elapsed.Seconds()
	s := fmt.Sprintf("[ %.0fs ] thds: %d tps: %4.2f qps: %4.2f (r/w/o: %4.2f/%4.2f/%4.2f) lat (ms,%s%%): %4.2f err/s: %4.2f reconn/s: %4.2f",
		t, iv.Threads, iv.TPS, iv.QPS, iv.ReadsPerSec, iv.WritesPerSec, iv.OthersPerSec,
		pctLabel(o.Percentile), iv.LatencyPct, iv.ErrPerSec, iv.ReconnPerSec)
	if iv.InFlight > 0 {
		s += fmt.Sprintf(" [in flight: %d >= %s s, longest %.2f s; lat includes them as lower bounds]",
			iv.InFlight, secs(MinOutage), iv.LongestInFlight.Seconds())
	}
	s += "\n"
	if o.Rate > 0 {
		s += fmt.Sprintf("[ %.0fs ] queue length: %d, concurrency: %d\n", t, iv.QueueLength, iv.Concurrency)
		if ri := iv.Rate; ri != nil && ri.BacklogAge > RateBehind {
			s += fmt.Sprintf("[ %.0fs ] behind --rate: the oldest queued arrival has waited %.3f s, %d queued; %d arrived, %d done in this interval\n",
				t, ri.BacklogAge.Seconds(), iv.QueueLength, ri.Arrivals, iv.Transactions)
		}
	}
	io.WriteString(w, s)
}

// PrintSummary writes sysbench 1.0.20's final report, from "SQL statistics:"
// to the blank line after "Threads fairness:", with the same labels, column
// positions and units (latencies in ms, total and execution time in s). With
// o.Histogram it is preceded by the latency histogram (PrintHistogram), as in
// sysbench. Under --rate, habench adds a service time line after the latency block
// and its rate lines (and any WARNING) at the end.
func PrintSummary(w io.Writer, r *Result, o Options) {
	if o.Histogram {
		PrintHistogram(w, r.Histogram)
	}
	var b strings.Builder
	secs := r.TotalTime.Seconds()
	ps := func(n int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	b.WriteString("SQL statistics:\n")
	b.WriteString("    queries performed:\n")
	fmt.Fprintf(&b, "        read:                            %d\n", r.Reads)
	fmt.Fprintf(&b, "        write:                           %d\n", r.Writes)
	fmt.Fprintf(&b, "        other:                           %d\n", r.Others)
	fmt.Fprintf(&b, "        total:                           %d\n", r.Queries)
	fmt.Fprintf(&b, "    transactions:                        %-6d (%.2f per sec.)\n", r.Transactions, ps(r.Transactions))
	fmt.Fprintf(&b, "    queries:                             %-6d (%.2f per sec.)\n", r.Queries, ps(r.Queries))
	fmt.Fprintf(&b, "    ignored errors:                      %-6d (%.2f per sec.)\n", r.IgnoredErrors, ps(r.IgnoredErrors))
	fmt.Fprintf(&b, "    reconnects:                          %-6d (%.2f per sec.)\n", r.Reconnects, ps(r.Reconnects))
	b.WriteString("\n")
	b.WriteString("General statistics:\n")
	fmt.Fprintf(&b, "    total time:                          %.4fs\n", secs)
	fmt.Fprintf(&b, "    total number of events:              %d\n", r.Transactions)
	b.WriteString("\n")
	b.WriteString("Latency (ms):\n")
	fmt.Fprintf(&b, "         min: %39.2f\n", r.LatencyMin)
	fmt.Fprintf(&b, "         avg: %39.2f\n", r.LatencyAvg)
	fmt.Fprintf(&b, "         max: %39.2f\n", r.LatencyMax)
	if o.Percentile > 0 {
		// sysbench: "        %3dth percentile: %27.2f"; a wider label
		// (fractional percentile) narrows the value so it ends in the same column.
		pctLine(&b, o.Percentile, r.LatencyPct)
		for i, p := range o.ExtraPercentiles {
			if i < len(r.ExtraLatencyPct) {
				pctLine(&b, p, r.ExtraLatencyPct[i])
			}
		}
	} else {
		b.WriteString("         percentile stats:               disabled\n")
	}
	fmt.Fprintf(&b, "         sum: %39.2f\n", r.LatencySum)
	b.WriteString("\n")
	if r.Rate != nil {
		printServiceLine(&b, r, o)
	}
	printLowerBounds(&b, r)
	b.WriteString("Threads fairness:\n")
	fmt.Fprintf(&b, "    events (avg/stddev):           %.4f/%3.2f\n", r.EventsAvg, r.EventsStddev)
	fmt.Fprintf(&b, "    execution time (avg/stddev):   %.4f/%3.2f\n", r.ExecTimeAvg, r.ExecTimeStddev)
	b.WriteString("\n")
	printReadChecks(&b, r)
	if r.Rate != nil {
		printRateTail(&b, r)
	}
	io.WriteString(w, b.String())
}

// pctLine prints one "        95th percentile:      ..." line of the latency block.
func pctLine(b *strings.Builder, p, ms float64) {
	lbl := fmt.Sprintf("%3s", pctLabel(p))
	fmt.Fprintf(b, "        %sth percentile: %*.2f\n", lbl, max(27-(len(lbl)-3), 1), ms)
}

// printLowerBounds is habench's line after the latency block when transactions never
// completed (Result.Waits):
//
//	Lower bounds (habench): 8 transactions never completed (8 abandoned, outcome unknown; 0 in flight at the end), longest wait 32.10 s: in max and percentiles
func printLowerBounds(b *strings.Builder, r *Result) {
	if !r.LowerBounds() {
		return
	}
	fmt.Fprintf(b, "Lower bounds (habench): %d transactions never completed (%d abandoned, outcome unknown; %d in flight at the end), longest wait %.2f s: in max and percentiles\n\n",
		r.WaitCount, r.Unknown, int64(r.WaitCount)-r.Unknown, r.Waits[0].Waited.Seconds())
}

// printServiceLine is habench's line after sysbench's latency block under --rate:
//
//	Service time (ms, without the time queued): avg: 1.23 95th percentile: 2.34 max: 12.00
//
// Under --rate the latencies above run from each event's scheduled arrival (so time
// spent queued behind a slow server counts, as in sysbench); the service time runs from
// when a thread began the event.
func printServiceLine(b *strings.Builder, r *Result, o Options) {
	rr := r.Rate
	fmt.Fprintf(b, "Service time (ms, without the time queued): avg: %.2f", rr.ServiceAvg)
	if o.Percentile > 0 {
		fmt.Fprintf(b, " %sth percentile: %.2f", pctLabel(o.Percentile), rr.ServicePct)
	}
	fmt.Fprintf(b, " max: %.2f\n\n", rr.ServiceMax)
}

// printRateTail is habench's end of a --rate summary, after "Threads fairness:":
//
//	Rate (habench): target 200/sec, 1002 arrivals, 0 still queued at the end, longest queue wait 0.004 s
//	NOTE: 12 arrivals of the warm-up were dropped at its end (...)      (when any)
//	WARNING: the target rate was not met: ...                           (see RateResult.Met)
func printRateTail(b *strings.Builder, r *Result) {
	rr := r.Rate
	fmt.Fprintf(b, "Rate (habench): target %d/sec, %d arrivals, %d still queued at the end, longest queue wait %.3f s\n",
		rr.Target, rr.Arrivals, rr.Backlog, rr.MaxBacklogAge.Seconds())
	if rr.WarmupDropped > 0 || rr.WarmupUnmeasured > 0 {
		fmt.Fprintf(b, "NOTE: the warm-up's backlog was not carried into the measured run: %d arrivals queued during it were dropped, "+
			"%d events of its arrivals running at its end were not measured\n", rr.WarmupDropped, rr.WarmupUnmeasured)
	}
	if w := rr.Warning(r.TPS()); w != "" {
		fmt.Fprintf(b, "WARNING: %s\n", w)
	}
	b.WriteString("\n")
}

// printReadChecks adds habench's read-node block (not sysbench's) when reads went to
// read endpoints: per read node, the reads it served and the read-your-writes checks,
// e.g. "    n2: reads 112000, read-your-writes checks 8000, stale 412 (5.15%)".
func printReadChecks(b *strings.Builder, r *Result) {
	if len(r.ReadNodes) == 0 {
		return
	}
	names := slices.Clone(r.ReadNodes)
	sort.Strings(names)
	names = slices.Compact(names)
	b.WriteString("Read nodes (reads sent to them; a stale read missed the worker's own last commit):\n")
	for _, name := range names {
		e := r.PerEndpoint[name]
		if e.ReadChecks == 0 {
			fmt.Fprintf(b, "    %s: reads %d, read-your-writes checks 0 (no event changed a row)\n", name, e.Queries)
			continue
		}
		fmt.Fprintf(b, "    %s: reads %d, read-your-writes checks %d, stale %d (%.2f%%)\n",
			name, e.Queries, e.ReadChecks, e.StaleReads, 100*float64(e.StaleReads)/float64(e.ReadChecks))
	}
	b.WriteString("\n")
}

// sysbench's latency histogram: 1024 logarithmic buckets from 0.001 ms to 100000 ms
// (sysbench.c's sb_histogram_init(&sb_latency_histogram, 1024, 0.001, 100000)).
const (
	sbHistSize = 1024
	sbHistMin  = 0.001
	sbHistMax  = 100000.0
)

// PrintHistogram writes h (latencies in microseconds, as Result.Histogram holds them)
// in sysbench's --histogram layout (sb_histogram_print), re-bucketed into sysbench's
// 1024 logarithmic buckets from 0.001 to 100000 ms:
//
//	Latency histogram (values are in milliseconds)
//	       value  ------------- distribution ------------- count
//	       0.219 |**************************************** 1153
//	       0.223 |*********                                262
//	 (a line holding one space)
//
// Each line is a non-empty bucket: its value (ms, "%12.3f"), a bar of up to 40 '*'
// scaled to the largest bucket, and the count. Nothing but the title and the closing
// line is written when h is empty (as sysbench).
func PrintHistogram(w io.Writer, h *hdrhistogram.Histogram) {
	var b strings.Builder
	b.WriteString("Latency histogram (values are in milliseconds)\n")
	deduct := math.Log(sbHistMin)
	mult := (sbHistSize - 1) / (math.Log(sbHistMax) - deduct)
	var counts [sbHistSize]int64
	var maxcnt int64
	if h != nil {
		for _, bar := range h.Distribution() {
			if bar.Count == 0 {
				continue
			}
			ms := float64(bar.From+bar.To) / 2 / 1000
			i := 0
			if ms > 0 {
				i = int(math.Floor((math.Log(ms)-deduct)*mult + 0.5))
			}
			i = min(max(i, 0), sbHistSize-1)
			counts[i] += bar.Count
			maxcnt = max(maxcnt, counts[i])
		}
	}
	if maxcnt > 0 {
		b.WriteString("       value  ------------- distribution ------------- count\n")
		const stars = "****************************************"
		for i, n := range counts {
			if n == 0 {
				continue
			}
			width := int(math.Floor(float64(n)*40/float64(maxcnt) + 0.5))
			fmt.Fprintf(&b, "%12.3f |%-40s %d\n", math.Exp(float64(i)/mult+deduct), stars[:width], n)
		}
	}
	b.WriteString(" \n")
	io.WriteString(w, b.String())
}
