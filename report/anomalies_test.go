package report

import (
	"strings"
	"testing"

	"github.com/habench/habench/schema"
)

// TestAnomaliesLine: the verdict line counts anomalies by type, or says none were found.
func TestAnomaliesLine(t *testing.T) {
	s := &schema.ChecksSummary{Workload: "register", Node: "n1", Ops: 10, OK: 9, Failed: 1}
	if got := AnomaliesLine(s); got != "Anomalies: none found (register on n1, 10 operations: 9 ok, 1 failed, 0 unknown)" {
		t.Errorf("none: %q", got)
	}
	s.AnomalyCount, s.LostUpdates, s.AnomalyTypes = 2, 3, map[string]int{"lost-update": 2}
	if got := AnomaliesLine(s); !strings.HasPrefix(got, "Anomalies: 2 lost-update (P4), 3 committed updates lost (register on n1") {
		t.Errorf("some: %q", got)
	}
}

// TestAnomaliesSectionInReport: a summary with checks gets report.md's "Anomalies" section
// with each explanation; one without has none.
func TestAnomaliesSectionInReport(t *testing.T) {
	var b strings.Builder
	AnomaliesSection(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no checks: %q", b.String())
	}
	s := &schema.ChecksSummary{Workload: "register", Node: "n1", Ops: 10, OK: 10, AnomalyCount: 1,
		AnomalyTypes: map[string]int{"lost-update": 1}, Anomalies: []schema.AnomalySummary{{Explanation: "lost update (P4) on key 1: T1 and T2"}}}
	AnomaliesSection(&b, s)
	if got := b.String(); !strings.Contains(got, "## Anomalies") || !strings.Contains(got, "- lost update (P4) on key 1: T1 and T2") {
		t.Errorf("section: %q", got)
	}
}
