package experiment

import (
	"github.com/habench/habench/schema"
	"strings"
	"testing"
	"time"

	"github.com/habench/habench/report"

	"github.com/habench/habench/sampler"
)

// semiSyncRun is a source n1's semi-sync samples, one per second for n seconds: OFF in
// the seconds for which off says so, yes and no the yes_tx and no_tx deltas of a second.
func semiSyncRun(n int, off func(s int) bool, yes, no func(s int) float64) []sampler.Sample {
	var ss []sampler.Sample
	for s := 0; s < n; s++ {
		at := time.Duration(s) * time.Second
		on := 1.0
		if off(s) {
			on = 0
		}
		ss = append(ss, sampler.Sample{Elapsed: at, Node: "n1", Metric: "semisync_on", Value: on},
			sampler.Sample{Elapsed: at, Node: "n1", Metric: "semisync_yes_tx", Value: yes(s)},
			sampler.Sample{Elapsed: at, Node: "n1", Metric: "semisync_no_tx", Value: no(s)})
	}
	return ss
}

// TestSemiSyncDegradedWarning: both replicas killed, the source OFF from 12 s to 26 s
// (14 samples) with 500 commits a second acknowledged without a replica, and 200 more in
// the sample that saw it ON again (its delta covers the second before): the summary is
// degraded with that period, and the WARNING says how long, when, and how many commits
// of all (and what share) had no replica. A run that kept semi-sync ON has none.
func TestSemiSyncDegradedWarning(t *testing.T) {
	off := func(s int) bool { return s >= 12 && s < 26 }
	yes := func(s int) float64 {
		if off(s) {
			return 0
		}
		return 520
	}
	no := func(s int) float64 {
		switch {
		case off(s):
			return 500
		case s == 26: // the tick semi-sync came back ON in
			return 200
		}
		return 0
	}
	samples := semiSyncRun(30, off, yes, no)
	ss := summarize(t, nil, samples).SemiSync
	if !ss.Degraded || len(ss.Off) != 1 || ss.Off[0].FromS != 12 || ss.Off[0].ToS != 26 || ss.Off[0].NoTx != 7200 || ss.Off[0].Open {
		t.Errorf("semi-sync summary %+v, want degraded, OFF from 12 to 26 s with 7200 no_tx", ss)
	}
	for _, want := range []string{"semi-sync fell back to async: OFF for 14.0 s in all, n1 from 12.0 s to 26.0 s (7200 commits without a replica)",
		"7200 of 15520 commits (46.4%) were acknowledged to clients without any replica having them"} {
		if !strings.Contains(ss.Warning, want) {
			t.Errorf("warning %q lacks %q", ss.Warning, want)
		}
	}
	md := Report(&schema.Manifest{Warnings: []string{ss.Warning}}, &schema.Summary{SemiSync: ss})
	if !strings.Contains(md, "**WARNING: semi-sync fell back to async") || !strings.Contains(md, "| n1 | 12.0 | 26.0 | 7200 |") {
		t.Errorf("report.md:\n%s", md)
	}
	// Still OFF at the end: open, to the last sample plus the interval.
	samples = semiSyncRun(20, func(s int) bool { return s >= 12 }, yes, no)
	ss = summarize(t, nil, samples).SemiSync
	if len(ss.Off) != 1 || !ss.Off[0].Open || ss.Off[0].ToS != 20 || !strings.Contains(ss.Warning, "n1 from 12.0 s to the end, still OFF") {
		t.Errorf("still OFF at the end: %+v", ss)
	}
	// Semi-sync held: no warning.
	samples = semiSyncRun(30, func(int) bool { return false }, yes, func(int) float64 { return 0 })
	ss = summarize(t, nil, samples).SemiSync
	if ss.Degraded || ss.Warning != "" || len(ss.Off) != 0 {
		t.Errorf("semi-sync held: %+v", ss)
	}
}

// TestSweepListsDegradedGuarantees: a cell whose semi-sync fell back to async, or whose
// --rate was not met, has that WARNING in its sweep record and so in sweep.md.
func TestSweepListsDegradedGuarantees(t *testing.T) {
	ss := summarize(t, nil, semiSyncRun(1, func(int) bool { return false }, func(int) float64 { return 95 }, func(int) float64 { return 5 })).SemiSync
	rate := &schema.RateSummary{Warning: "the target rate was not met (more than 1s behind --rate 100): ..."}
	var rec schema.CellRecord
	fillRecord(&rec, &schema.Summary{SemiSync: ss, Rate: rate})
	md := report.SweepMarkdown(&schema.SweepFile{Cells: []schema.CellRecord{{Index: 1}, rec}})
	for _, want := range []string{"cell 0: semi-sync on n1 did not hold: 5 of 100 commits (5.0%) were acknowledged", "cell 0: the target rate was not met"} {
		if !strings.Contains(md, want) {
			t.Errorf("sweep.md warnings lack %q:\n%s", want, md)
		}
	}
	rec = schema.CellRecord{}
	fillRecord(&rec, &schema.Summary{SemiSync: &schema.SemiSyncSummary{Node: "n1", YesTx: 100}, Rate: &schema.RateSummary{Met: true}})
	if len(rec.Warnings) != 0 {
		t.Errorf("guarantees held, warnings %q", rec.Warnings)
	}
}

// summarize is the summary sections the registered samplers compute from samples (one a
// second) of nodes (sampler.Summarize, as a run does).
func summarize(t *testing.T, nodes []sampler.Node, samples []sampler.Sample) *schema.Summary {
	t.Helper()
	var s schema.Summary
	if err := sampler.Summarize(sampler.SummaryInput{Nodes: nodes, Samples: samples, Every: time.Second}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}
