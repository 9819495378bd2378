package experiment

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/habench/habench/schema"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/habench/habench/cluster"
	"github.com/habench/habench/sampler"
	"github.com/habench/habench/scenario"
	"github.com/habench/habench/workload"
)

// FaultsFile is the cluster directory's log of injected faults, one JSON object per
// line (schema.FaultRecord), appended by `habench fault` and read by the runs on the cluster.
const FaultsFile = "faults.jsonl"

// markScheduled sets Scheduled on the faults that are among the run's own records.
func markScheduled(faults []schema.RunFault, own []schema.FaultRecord) []schema.RunFault {
	for i, f := range faults {
		faults[i].Scheduled = slices.ContainsFunc(own, func(r schema.FaultRecord) bool {
			if f.Of != "" { // a step of a scheduled action: made while it ran
				end := r.At.Add(time.Duration(r.Took * float64(time.Second)))
				return r.Action == f.Of && !f.At.Before(r.At) && !f.At.After(end)
			}
			return r.At.Equal(f.At) && r.Action == f.Action && r.Node == f.Node
		})
	}
	return faults
}

// AppendFault appends r to the cluster's faults log.
func AppendFault(c *cluster.Cluster, r schema.FaultRecord) error {
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
func faultsDuring(c *cluster.Cluster, epoch, from, to time.Time) []schema.RunFault {
	if c == nil || c.Dir() == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(c.Dir(), FaultsFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []schema.RunFault
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r schema.FaultRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.At.Before(from) || r.At.After(to) {
			continue
		}
		if a := FaultActionOf(r.Action); a != nil && a.Steps {
			continue // its steps (schema.FaultRecord.Of) are listed instead
		}
		out = append(out, schema.RunFault{AtS: r.At.Sub(epoch).Seconds(), FaultRecord: r})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AtS < out[j].AtS })
	return out
}

// faultWarning is the run's WARNING for faults injected during it ("" when none): those
// of its own schedule (schema.RunFault.Scheduled) and those of another command (habench fault).
func faultWarning(faults []schema.RunFault) string {
	if len(faults) == 0 {
		return ""
	}
	var own, other []string
	for _, f := range faults {
		s := fmt.Sprintf("%s %s at %.1fs", f.Action, f.Node, f.AtS)
		if f.Error != "" {
			s += " (failed)"
		}
		if f.Escalated != "" {
			s += " (escalated to SIGKILL: a crash)"
		}
		if f.Scheduled {
			own = append(own, s)
		} else {
			other = append(other, s)
		}
	}
	var what []string
	if len(own) > 0 {
		what = append(what, "the scenario's faults were injected during the run: "+strings.Join(own, ", "))
	}
	if len(other) > 0 {
		what = append(what, "faults were injected during the run (habench fault): "+strings.Join(other, ", "))
	}
	return strings.Join(what, "; and ") + "; its numbers include them (samples.csv's clock)"
}

// escalationWarnings are the run's warnings for clean stops that took SIGKILL, one per
// fault: what the run measured after it is a crash of the node, not a clean stop.
func escalationWarnings(faults []schema.RunFault) []string {
	var out []string
	for _, f := range faults {
		if f.Escalated != "" {
			out = append(out, fmt.Sprintf("⚠ fault %s %s at %.1f s was NOT a clean stop: %s; what follows it in this run is a crash of %s", f.Action, f.Node, f.AtS, f.Escalated, f.Node))
		}
	}
	return out
}

// faultedDown returns the nodes that a kill or stop among faults left down (an action
// whose FaultAction.Leaves is NodeDown, with no later NodeUp action on the same node:
// start, restart).
func faultedDown(faults []schema.RunFault) map[string]bool {
	down := map[string]bool{}
	for _, f := range faults {
		if f.Error != "" {
			continue
		}
		switch scenario.Leaves(f.Action) {
		case scenario.NodeDown:
			down[f.Node] = true
		case scenario.NodeUp:
			delete(down, f.Node)
		}
	}
	return down
}

// downBy says which of faults left node down ("fault kill at 3.0 s", on samples.csv's
// clock), "" when none did (none, or a later start or restart).
func downBy(faults []schema.RunFault, node string) string {
	if f := downFault(faults, node); f != nil {
		return fmt.Sprintf("fault %s at %.1f s", f.Action, f.AtS)
	}
	return ""
}

// downFault is the kill or stop (FaultAction.Leaves NodeDown) among faults that left
// node down (nil: none did).
func downFault(faults []schema.RunFault, node string) *schema.RunFault {
	var last *schema.RunFault
	for i, f := range faults {
		if f.Error != "" || f.Node != node {
			continue
		}
		switch scenario.Leaves(f.Action) {
		case scenario.NodeDown:
			last = &faults[i]
		case scenario.NodeUp:
			last = nil
		}
	}
	return last
}

// FaultInterval is one report interval of the workload (a row of intervals.csv) as the
// fault measures read it: EndS on samples.csv's clock (intervals.csv's elapsed_s plus
// manifest.json's intervals_offset_s), LengthS its length.
type FaultInterval struct {
	EndS, LengthS                    float64
	TPS                              float64
	Transactions, Errors, Reconnects int64
	// P99Ms is the interval's p99 latency in ms.
	P99Ms float64
}

// faultIntervals converts the workload's intervals for faultSummaries; offset is
// manifest.json's intervals_offset_s.
func faultIntervals(ivs []workload.Interval, offset float64) []FaultInterval {
	var out []FaultInterval
	for _, iv := range ivs {
		out = append(out, FaultInterval{EndS: iv.Elapsed.Seconds() + offset, LengthS: iv.Length.Seconds(), TPS: iv.TPS,
			Transactions: iv.Transactions, Errors: iv.Errors, Reconnects: iv.Reconnects, P99Ms: iv.LatencyP99})
	}
	return out
}

// intervalNorm is what the workload did before the run's first fault: the median TPS of
// the report intervals that ended before it and their largest error and reconnect counts
// (ok false when no interval ended before it).
type intervalNorm struct {
	medianTPS          float64
	maxErrs, maxReconn int64
	ok                 bool
}

func normBefore(ivs []FaultInterval, t float64) intervalNorm {
	var n intervalNorm
	var tps []float64
	for _, iv := range ivs {
		if iv.EndS > t {
			break
		}
		tps = append(tps, iv.TPS)
		n.maxErrs, n.maxReconn = max(n.maxErrs, iv.Errors), max(n.maxReconn, iv.Reconnects)
	}
	if len(tps) == 0 {
		return n
	}
	slices.Sort(tps)
	n.medianTPS = tps[len(tps)/2]
	if len(tps)%2 == 0 {
		n.medianTPS = (tps[len(tps)/2-1] + tps[len(tps)/2]) / 2
	}
	n.ok = true
	return n
}

// disturbed says whether a report interval shows a workload that was not committing as
// before the faults: no commit, TPS under half the median of the intervals before the
// first fault, or more failed attempts or reconnects than any of those intervals had
// (without intervals before the first fault: any failed attempt or reconnect).
func (n intervalNorm) disturbed(iv FaultInterval) bool {
	if iv.Transactions == 0 || iv.Errors > n.maxErrs || iv.Reconnects > n.maxReconn {
		return true
	}
	return n.ok && iv.TPS < n.medianTPS/2
}

// intervalRecovery measures a fault at atS with the report intervals: the disturbed
// intervals that begin with the interval containing the fault or the next one, and run
// until the first undisturbed interval. rec is from the fault to the end of the last
// disturbed one (0 when neither of the first two was disturbed); open when the run
// ended disturbed; found false when no interval covers the fault. errs, reconn and
// minTPS are of the disturbed intervals not yet in counted (by index), which it adds
// to counted: an interval's failed attempts belong to the first fault whose disturbed
// intervals it is in, not again to the next one (a promote after a kill).
func intervalRecovery(atS float64, ivs []FaultInterval, norm intervalNorm, counted map[int]bool) (rec float64, open, found bool, errs, reconn int64, minTPS *float64) {
	first := -1
	for i, iv := range ivs {
		if iv.EndS > atS {
			first = i
			break
		}
	}
	if first < 0 {
		return 0, false, false, 0, 0, nil
	}
	end := -1.0
	for i := first; i < len(ivs); i++ {
		iv := ivs[i]
		if !norm.disturbed(iv) {
			if end >= 0 || i > first {
				break // recovered, or the first two intervals were not disturbed
			}
			continue
		}
		end = iv.EndS
		if i == len(ivs)-1 {
			open = true
		}
		if counted[i] {
			continue
		}
		counted[i] = true
		errs, reconn = errs+iv.Errors, reconn+iv.Reconnects
		if minTPS == nil || iv.TPS < *minTPS {
			v := iv.TPS
			minTPS = &v
		}
	}
	if end < 0 {
		return 0, false, true, 0, 0, nil
	}
	return max(0, end-atS), open, true, errs, reconn, minTPS
}

// outageOwners attributes each outage to at most one fault (by index into faults and
// outages): first every fault takes the earliest free outage of its node or of the
// writer, then a fault still without one takes any free outage that began with it (a
// Galera node's death stalls the others). An outage belongs to a fault when it was
// open at the fault or began within 10 s after it; taken in fault order, the window
// of a kill is not also the promote's or the heal's that ended it.
func outageOwners(faults []schema.RunFault, outages []schema.OutageSummary) map[int]int {
	own, taken := map[int]int{}, map[int]bool{}
	for pass := 0; pass < 2; pass++ {
		for i, f := range faults {
			if _, ok := own[i]; ok {
				continue
			}
			for j, o := range outages {
				if taken[j] || (pass == 0 && o.Node != f.Node && o.Node != workload.WriterLabel) {
					continue
				}
				if _, ok := outageAfter(f, o); ok {
					own[i], taken[j] = j, true
					break
				}
			}
		}
	}
	return own
}

// otherOutages gives each fault with an outage of its own (owners) the nodes of the
// outages no fault owns that began within 10 s after it (the first such fault in order),
// each node once per fault: the nodes its fault stalled besides its own.
func otherOutages(faults []schema.RunFault, outages []schema.OutageSummary, owners map[int]int) map[int][]string {
	owned := map[int]bool{}
	for _, j := range owners {
		owned[j] = true
	}
	out := map[int][]string{}
	for j, o := range outages {
		if owned[j] {
			continue
		}
		for i, f := range faults {
			if own, ok := owners[i]; !ok || outages[own].Node == o.Node {
				continue
			}
			if d, ok := outageAfter(f, o); ok && d >= 0 {
				if !slices.Contains(out[i], o.Node) {
					out[i] = append(out[i], o.Node)
				}
				break
			}
		}
	}
	return out
}

// outageAfter is the time from fault f to the start of outage o, ok when o was open at
// f or began within 10 s after it.
func outageAfter(f schema.RunFault, o schema.OutageSummary) (float64, bool) {
	started, err := time.Parse("2006-01-02T15:04:05.000Z07:00", o.StartedAt)
	if err != nil {
		return 0, false
	}
	d := started.Sub(f.At).Seconds()
	if d > 10 || started.Add(time.Duration(o.DurationS*float64(time.Second))).Before(f.At) {
		return 0, false
	}
	return d, true
}

// faultSummaries measures each fault with the run's report intervals (on samples.csv's
// clock, see FaultInterval), its outages and lag samples. Each outage and each disturbed
// interval's failed attempts are counted for one fault only (outageOwners,
// intervalRecovery).
func faultSummaries(faults []schema.RunFault, outages []schema.OutageSummary, samples []sampler.Sample, ivs []FaultInterval) []schema.FaultSummary {
	var out []schema.FaultSummary
	var norm intervalNorm
	if len(faults) > 0 {
		norm = normBefore(ivs, faults[0].AtS)
	}
	owners := outageOwners(faults, outages)
	also := otherOutages(faults, outages, owners)
	counted := map[int]bool{}
	for i, f := range faults {
		fs := schema.FaultSummary{AtS: f.AtS, Action: f.Action, Node: f.Node, Error: f.Error, Escalated: f.Escalated, Outcome: f.Outcome, Rows: f.Rows, Bytes: f.Bytes, Detail: f.Detail}
		if a := FaultActionOf(f.Action); a != nil && a.Lasting {
			fs.During = faultDuring(f, samples, ivs)
		}
		rec, open, _, errs, reconn, minTPS := intervalRecovery(f.AtS, ivs, norm, counted)
		fs.Errors, fs.Reconnects, fs.MinTPS = errs, reconn, minTPS
		if j, ok := owners[i]; ok {
			o := outages[j]
			d, _ := outageAfter(f, o)
			fs.Outage, fs.ErrorsByCode, fs.ClientDownS = o.Node, o.ErrorsByCode, &d
			fs.AlsoOutages = also[i]
			open = open || o.Open
			rec = max(rec, d+o.DurationS)
		}
		if !open {
			r := max(0, rec)
			fs.RecoveryS = &r
		}
		fs.CaughtUpS = caughtUp(faults, i, samples)
		fs.PeakLagS, fs.PeakLagUnknown = faultPeakLag(samples, f.AtS)
		out = append(out, fs)
	}
	return out
}

// caughtUp is the time in seconds from faults[i] to the first sample in which its node,
// readable again and inside its cluster (not outside the Galera Primary component, ONLINE
// for the group's majority: lagStats), showed a known visibility lag (lag_s, not NaN or
// negative) at or under 1 s, before
// the node's next fault (nil: not seen, or not a fault that brings a node back). The
// action's FaultAction.CaughtUp says how: CaughtUpAfterAction (start, restart, heal,
// promote) from the end of the action (At + Took: the node is up and rejoined, healed or
// promoted), so a sample from before a restart's stop does not count; CaughtUpAfterDown
// (kill, stop) only when the node came back without a fault of its own (node_up 0, then
// a lag sample).
func caughtUp(faults []schema.RunFault, i int, samples []sampler.Sample) *float64 {
	f := faults[i]
	from, needDown := f.AtS, false
	a := FaultActionOf(f.Action)
	if a == nil {
		return nil
	}
	switch a.CaughtUp {
	case CaughtUpAfterAction:
		from += f.Took
	case CaughtUpAfterDown:
		needDown = true
	default:
		return nil
	}
	until := math.Inf(1)
	for _, g := range faults[i+1:] {
		if g.Node == f.Node {
			until = g.AtS
			break
		}
	}
	downAt := math.Inf(1)
	for _, s := range samples {
		if t := s.Elapsed.Seconds(); needDown && t >= from && t < until && s.Node == f.Node && s.Metric == sampler.MetricNodeUp && s.Value == 0 {
			downAt = min(downAt, t)
		}
	}
	ticks, _ := lagTicks(samples)
	times := slices.Sorted(maps.Keys(ticks))
	for _, t := range times {
		if t < from || t >= until || (needDown && t <= downAt) {
			continue
		}
		// NaN, negative: unknown; outside (non-Primary, not ONLINE for the group's
		// majority): the lag read cannot show what the node was not sent.
		if lt := ticks[t][f.Node]; lt != nil && lt.lag != nil && *lt.lag >= 0 && *lt.lag <= 1 && !lt.outside {
			c := t - f.AtS
			return &c
		}
	}
	return nil
}
