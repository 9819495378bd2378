package workload

import "sync"

// Totals are the cumulative counts of a run: what live metrics export.
type Totals struct {
	// Transactions are completed events; Reads, Writes and Others statements by
	// sysbench's classes; Errors ignored errors; Reconnects re-established connections.
	Transactions, Reads, Writes, Others, Errors, Reconnects int64
	// ErrorsByCode counts the ignored errors by MySQL error code (nil when none).
	ErrorsByCode map[uint16]int64
}

// Live reads the counters of a run in progress at any moment, from any goroutine:
// every worker keeps cumulative counts that Totals sums (taking each worker's own
// statistics lock for the copy, never a lock shared between workers), so they move as
// transactions complete, not once per report interval.
type Live struct {
	r *runner

	mu       sync.Mutex
	base     counts           // the workers' counts at the end of the warm-up
	baseCode map[uint16]int64 // the same by error code
	final    *Totals          // set when the run is over
}

// LiveReporter is a Reporter that also wants the live counters of the run: Run calls
// Live once, after the workers connected and before they start.
type LiveReporter interface {
	Reporter
	Live(l *Live)
}

type liveReporter struct {
	Reporter
	f func(*Live)
}

func (lr liveReporter) Live(l *Live) { lr.f(l) }

// WithLive returns a LiveReporter that passes intervals to rep (which may be nil) and
// the run's Live to f.
func WithLive(rep Reporter, f func(*Live)) LiveReporter {
	if rep == nil {
		rep = ReporterFunc(func(Interval) {})
	}
	return liveReporter{Reporter: rep, f: f}
}

// Totals returns the counts of the measured part so far (after the warm-up; zeros
// during it). Once the run is over they are the Result's counts and stay fixed.
func (l *Live) Totals() Totals {
	l.mu.Lock()
	if l.final != nil {
		t := *l.final
		l.mu.Unlock()
		return t
	}
	base, baseCode := l.base, l.baseCode
	l.mu.Unlock()
	return l.sum(base, baseCode)
}

func (l *Live) sum(base counts, baseCode map[uint16]int64) Totals {
	var c counts
	var codes map[uint16]int64
	for _, wk := range l.r.workers {
		s := wk.st
		s.mu.Lock()
		c.add(&s.cum)
		addCodes(&codes, s.cumCodes)
		s.mu.Unlock()
	}
	t := Totals{
		Transactions: c.events - base.events, Reads: c.reads - base.reads, Writes: c.writes - base.writes,
		Others: c.others - base.others, Errors: c.errors - base.errors, Reconnects: c.reconnects - base.reconnects,
	}
	for code, n := range codes {
		if n -= baseCode[code]; n > 0 {
			if t.ErrorsByCode == nil {
				t.ErrorsByCode = map[uint16]int64{}
			}
			t.ErrorsByCode[code] = n
		}
	}
	return t
}

// startMeasuring sets the baseline at the end of the warm-up: cum are the workers'
// cumulative counts harvested with the warm-up's statistics.
func (l *Live) startMeasuring(cum counts) {
	codes := map[uint16]int64{}
	for _, wk := range l.r.workers {
		wk.st.mu.Lock()
		for code, n := range wk.st.cumCodes {
			codes[code] += n
		}
		wk.st.mu.Unlock()
	}
	l.mu.Lock()
	l.base, l.baseCode = cum, codes
	l.mu.Unlock()
}

// finish fixes the totals when the run is over.
func (l *Live) finish() {
	l.mu.Lock()
	base, baseCode := l.base, l.baseCode
	l.mu.Unlock()
	t := l.sum(base, baseCode)
	if l.r.warming.Load() {
		t = Totals{} // the run ended during the warm-up: nothing was measured
	}
	l.mu.Lock()
	l.final = &t
	l.mu.Unlock()
}
