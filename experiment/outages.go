package experiment

import (
	"fmt"
	"github.com/habench/habench/schema"

	"github.com/habench/habench/workload"
)

// outageSummaries converts the run's outages for summary.json (nil when none).
func outageSummaries(r *workload.Result) []schema.OutageSummary {
	if r == nil {
		return nil
	}
	var out []schema.OutageSummary
	for _, o := range r.Outages {
		codes := map[string]int64{}
		for c, n := range o.Codes {
			codes[fmt.Sprint(c)] = n
		}
		out = append(out, schema.OutageSummary{Node: o.Endpoint, StartS: o.Start.Seconds(), EndS: o.End.Seconds(),
			DurationS: o.Duration().Seconds(), Open: o.Open, StartedAt: o.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			FailedAttempts: o.Failures, ErrorsByCode: codes, Text: o.String()})
	}
	return out
}

// outageWarnings are the manifest warnings for the run's outages, one per outage.
func outageWarnings(r *workload.Result) []string {
	if r == nil {
		return nil
	}
	var ws []string
	for _, o := range r.Outages {
		ws = append(ws, "outage: "+o.String())
	}
	if w := r.WaitWarning(); w != "" {
		ws = append(ws, w)
	}
	return ws
}

// benchReporter is the Bench's workload.StartReporter: interval lines and results,
// pre-flight notes, and "Threads started!" once the workers are connected.
type benchReporter struct {
	interval func(workload.Interval)
	note     func(string)
	started  func()
}

func (r benchReporter) Interval(iv workload.Interval) { r.interval(iv) }
func (r benchReporter) Note(msg string)               { r.note(msg) }
func (r benchReporter) Started()                      { r.started() }
