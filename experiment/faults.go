package experiment

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/workload"
)

// FaultsFile is the cluster directory's log of injected faults, one JSON object per
// line (FaultRecord), appended by `habench fault` and read by the runs on the cluster.
const FaultsFile = "faults.jsonl"

// FaultRecord is one injected fault.
type FaultRecord struct {
	// At is when the fault was injected (UTC); Took how long the action took, in seconds.
	At   time.Time `json:"at"`
	Took float64   `json:"took_s"`
	// Action is kill, stop, start, restart, partition, heal or promote; Node the node it
	// hit (the writer alias resolved); PID the server's process before the fault.
	Action string `json:"action"`
	Node   string `json:"node"`
	PID    int    `json:"pid,omitempty"`
	// Error is why the action failed ("" when it did not).
	Error string `json:"error,omitempty"`
}

// RunFault is a FaultRecord as a run saw it: AtS is the fault's time in seconds on
// samples.csv's clock.
type RunFault struct {
	AtS float64 `json:"at_s"`
	FaultRecord
}

// AppendFault appends r to the cluster's faults log.
func AppendFault(c *cluster.Cluster, r FaultRecord) error {
	if c.Dir() == "" {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(c.Dir(), FaultsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

// faultsDuring returns the faults of cluster c injected between from and to, with their
// times on the clock that starts at epoch. A missing log is no faults; unreadable lines
// are skipped.
func faultsDuring(c *cluster.Cluster, epoch, from, to time.Time) []RunFault {
	if c == nil || c.Dir() == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(c.Dir(), FaultsFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []RunFault
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r FaultRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.At.Before(from) || r.At.After(to) {
			continue
		}
		out = append(out, RunFault{AtS: r.At.Sub(epoch).Seconds(), FaultRecord: r})
	}
	return out
}

// faultWarning is the run's WARNING for faults injected during it ("" when none).
func faultWarning(faults []RunFault) string {
	if len(faults) == 0 {
		return ""
	}
	var parts []string
	for _, f := range faults {
		s := fmt.Sprintf("%s %s at %.1fs", f.Action, f.Node, f.AtS)
		if f.Error != "" {
			s += " (failed)"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("faults were injected during the run (habench fault): %s; its numbers include them (samples.csv's clock)", strings.Join(parts, ", "))
}

// faultedDown returns the nodes that a kill or stop among faults left down (no later
// start or restart of the same node).
func faultedDown(faults []RunFault) map[string]bool {
	down := map[string]bool{}
	for _, f := range faults {
		if f.Error != "" {
			continue
		}
		switch f.Action {
		case "kill", "stop":
			down[f.Node] = true
		case "start", "restart":
			delete(down, f.Node)
		}
	}
	return down
}

// FaultSummary is one fault of the run as summary.json's "faults" measures it.
type FaultSummary struct {
	// AtS is the fault's time on samples.csv's clock; Action, Node and Error as in
	// FaultRecord.
	AtS    float64 `json:"at_s"`
	Action string  `json:"action"`
	Node   string  `json:"node"`
	Error  string  `json:"error,omitempty"`
	// RecoveryS is the time from the fault to the first commit after it of the workers
	// it stopped: the end of the outage (OutageS on that node, or on the writer when the
	// workers follow it) that was open at the fault or began within 10 s after it. 0 when
	// no outage followed (the workload did not notice); nil when the outage was still
	// open at the end of the run.
	RecoveryS *float64 `json:"recovery_s"`
	// Outage is the node (or "writer") of that outage; ErrorsByCode its failed attempts.
	Outage       string           `json:"outage,omitempty"`
	ErrorsByCode map[string]int64 `json:"errors_by_code,omitempty"`
	// CaughtUpS, for start, restart, heal and promote: the time from the fault to the
	// first sample in which the node's visibility lag was back at or under 1 s (nil: not
	// seen). PeakLagS: the largest lag of any node from the fault to the end of the run.
	CaughtUpS *float64 `json:"caught_up_s,omitempty"`
	PeakLagS  *float64 `json:"peak_lag_s,omitempty"`
}

// faultSummaries measures each fault with the run's outages and lag samples.
func faultSummaries(faults []RunFault, outages []OutageSummary, samples []sampler.Sample) []FaultSummary {
	var out []FaultSummary
	for i, f := range faults {
		fs := FaultSummary{AtS: f.AtS, Action: f.Action, Node: f.Node, Error: f.Error}
		until := math.Inf(1)
		if i+1 < len(faults) {
			until = faults[i+1].AtS
		}
		zero := 0.0
		fs.RecoveryS = &zero
		// The outage of the fault's node or of the writer first, else any that began with
		// it (a Galera node's death stalls the others).
		for pass := 0; pass < 2 && fs.Outage == ""; pass++ {
			for _, o := range outages {
				started, err := time.Parse("2006-01-02T15:04:05.000Z07:00", o.StartedAt)
				if err != nil {
					continue
				}
				d := started.Sub(f.At).Seconds()
				if d > 10 || started.Add(time.Duration(o.DurationS*float64(time.Second))).Before(f.At) {
					continue // not this fault's
				}
				if pass == 0 && o.Node != f.Node && o.Node != workload.WriterLabel {
					continue
				}
				fs.Outage, fs.ErrorsByCode = o.Node, o.ErrorsByCode
				if o.Open {
					fs.RecoveryS = nil
				} else {
					r := math.Max(0, d+o.DurationS)
					fs.RecoveryS = &r
				}
				break
			}
		}
		var peak *float64
		for _, s := range samples {
			t := s.Elapsed.Seconds()
			if t < f.AtS || s.Metric != "lag_s" {
				continue
			}
			if peak == nil || s.Value > *peak {
				v := s.Value
				peak = &v
			}
			switch f.Action {
			case "start", "restart", "heal", "promote":
				if fs.CaughtUpS == nil && s.Node == f.Node && s.Value <= 1 && t < until {
					c := t - f.AtS
					fs.CaughtUpS = &c
				}
			}
		}
		fs.PeakLagS = peak
		out = append(out, fs)
	}
	return out
}

// FaultTable renders the faults as a Markdown table ("" when none).
func FaultTable(fs []FaultSummary) string {
	if len(fs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| at (s since samples start) | fault | node | recovered after s | outage of | failed attempts | caught up after s | peak lag s |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range fs {
		rec := "still out at the end"
		if f.RecoveryS != nil {
			rec = fmt.Sprintf("%.2f", *f.RecoveryS)
		}
		action := f.Action
		if f.Error != "" {
			action += " (failed)"
		}
		var codes []string
		for _, c := range slices.Sorted(maps.Keys(f.ErrorsByCode)) {
			codes = append(codes, fmt.Sprintf("%s x%d", c, f.ErrorsByCode[c]))
		}
		fmt.Fprintf(&b, "| %.2f | %s | %s | %s | %s | %s | %s | %s |\n", f.AtS, action, f.Node, rec, orDash(f.Outage), orDash(strings.Join(codes, ", ")),
			fmtOpt(f.CaughtUpS, "%.1f"), fmtOpt(f.PeakLagS, "%.2f"))
	}
	return b.String()
}

// FaultNote explains FaultTable's columns: "at" is a time on samples.csv's clock, the
// other seconds are durations from the fault.
const FaultNote = "at = when the fault was injected, in seconds since samples.csv's clock started (not since the start of measurement); " +
	"recovered after = seconds from the fault to the first commit of the workers it stopped (0: the workload did not notice); " +
	"outage of = the node (or writer) whose workers could not commit, failed attempts = their errors by code; " +
	"caught up after = seconds from the fault (start, restart, heal, promote) until the node's visibility lag was back at or under 1 s (n/a: not seen); " +
	"peak lag = the largest visibility lag of any node from the fault to the end of the run, in seconds."

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
